package db

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/filemill/filemill/domain"
)

// The console's people: users, memberships, sessions, invitations, set-password links
// and sign-in throttles.

// CreateUser inserts u; domain.ErrDuplicate when the email is taken.
func (s *Store) CreateUser(ctx context.Context, u *domain.User) error {
	return insert(ctx, s.w(), "user", u.ID, u)
}

// FindUserByID returns the user, or domain.ErrNotFound.
func (s *Store) FindUserByID(ctx context.Context, id string) (*domain.User, error) {
	return findOne[domain.User](ctx, s.r(), "user "+id, func(q *bun.SelectQuery) *bun.SelectQuery {
		return q.Where("id = ?", id)
	})
}

// FindUserByEmail returns the user with this (lower-case) email, or domain.ErrNotFound.
func (s *Store) FindUserByEmail(ctx context.Context, email string) (*domain.User, error) {
	return findOne[domain.User](ctx, s.r(), "user by email", func(q *bun.SelectQuery) *bun.SelectQuery {
		return q.Where("email = ?", email)
	})
}

// SetUserPassword sets a user's password hash; domain.ErrNotFound when there is no such
// user.
func (s *Store) SetUserPassword(ctx context.Context, id, hash string, at time.Time) error {
	n, err := affected(s.w().NewUpdate().Model((*domain.User)(nil)).
		Set("password_hash = ?", hash).Set("password_set_at = ?", at.UTC()).Where("id = ?", id).Exec(ctx))
	if err != nil {
		return fmt.Errorf("set password of user %s: %w", id, err)
	}
	if n == 0 {
		return fmt.Errorf("user %s: %w", id, domain.ErrNotFound)
	}
	return nil
}

// CreateMembership inserts m; domain.ErrDuplicate when the user is a member already.
func (s *Store) CreateMembership(ctx context.Context, m *domain.Membership) error {
	return insert(ctx, s.w(), "membership", m.ID, m)
}

// memberRow is a membership with its user's email.
type memberRow struct {
	bun.BaseModel `bun:"table:memberships,alias:m"`
	domain.Membership
	UserEmail string `bun:"user_email"`
}

func (r *memberRow) membership() *domain.Membership {
	m := r.Membership
	m.Email = r.UserEmail
	m.CreatedAt = m.CreatedAt.UTC()
	return &m
}

func selectMembers(q *bun.SelectQuery) *bun.SelectQuery {
	return q.ColumnExpr("m.*").ColumnExpr("u.email AS user_email").Join("JOIN users AS u ON u.id = m.user_id")
}

// FindMembershipByID returns the membership with its user's email, or
// domain.ErrNotFound.
func (s *Store) FindMembershipByID(ctx context.Context, id string) (*domain.Membership, error) {
	row, err := findOne[memberRow](ctx, s.r(), "membership "+id, func(q *bun.SelectQuery) *bun.SelectQuery {
		return selectMembers(q).Where("m.id = ?", id)
	})
	if err != nil {
		return nil, err
	}
	return row.membership(), nil
}

// FindMembership returns a user's membership in an organization, or domain.ErrNotFound.
func (s *Store) FindMembership(ctx context.Context, orgID, userID string) (*domain.Membership, error) {
	row, err := findOne[memberRow](ctx, s.r(), "membership", func(q *bun.SelectQuery) *bun.SelectQuery {
		return selectMembers(q).Where("m.organization_id = ?", orgID).Where("m.user_id = ?", userID)
	})
	if err != nil {
		return nil, err
	}
	return row.membership(), nil
}

// FindMemberships returns up to limit of an organization's members, oldest first.
func (s *Store) FindMemberships(ctx context.Context, orgID string, limit int) ([]*domain.Membership, error) {
	rows, err := findAll[memberRow](ctx, s.r(), "memberships", func(q *bun.SelectQuery) *bun.SelectQuery {
		return selectMembers(q).Where("m.organization_id = ?", orgID).Order("m.id").Limit(int64(max(limit, 1)))
	})
	if err != nil {
		return nil, err
	}
	out := make([]*domain.Membership, len(rows))
	for i, r := range rows {
		out[i] = r.membership()
	}
	return out, nil
}

// FindUserMemberships returns a user's memberships, oldest first.
func (s *Store) FindUserMemberships(ctx context.Context, userID string) ([]*domain.Membership, error) {
	rows, err := findAll[memberRow](ctx, s.r(), "memberships of user", func(q *bun.SelectQuery) *bun.SelectQuery {
		return selectMembers(q).Where("m.user_id = ?", userID).Order("m.id")
	})
	if err != nil {
		return nil, err
	}
	out := make([]*domain.Membership, len(rows))
	for i, r := range rows {
		out[i] = r.membership()
	}
	return out, nil
}

// CountMembers counts an organization's members of one role ("" for all).
func (s *Store) CountMembers(ctx context.Context, orgID, role string) (int, error) {
	q := s.r().NewSelect().Model((*domain.Membership)(nil)).Where("organization_id = ?", orgID)
	if role != "" {
		q = q.Where("role = ?", role)
	}
	n, err := q.Count(ctx)
	if err != nil {
		return 0, fmt.Errorf("count members of %s: %w", orgID, err)
	}
	return int(n), nil
}

// SetMembershipRole changes a member's role; domain.ErrNotFound when there is no such
// membership.
func (s *Store) SetMembershipRole(ctx context.Context, id, role string) error {
	n, err := affected(s.w().NewUpdate().Model((*domain.Membership)(nil)).Set("role = ?", role).Where("id = ?", id).Exec(ctx))
	if err != nil {
		return fmt.Errorf("set role of membership %s: %w", id, err)
	}
	if n == 0 {
		return fmt.Errorf("membership %s: %w", id, domain.ErrNotFound)
	}
	return nil
}

// DeleteMembership deletes a membership; domain.ErrNotFound when there is none.
func (s *Store) DeleteMembership(ctx context.Context, id string) error {
	n, err := affected(s.w().NewDelete().Model((*domain.Membership)(nil)).Where("id = ?", id).Exec(ctx))
	if err != nil {
		return fmt.Errorf("delete membership %s: %w", id, err)
	}
	if n == 0 {
		return fmt.Errorf("membership %s: %w", id, domain.ErrNotFound)
	}
	return nil
}

// LockOrganization holds the organization's row until the transaction ends. On SQLite
// a transaction holds the database's write lock from its start, so there is nothing
// more to take.
func (s *Store) LockOrganization(ctx context.Context, id string) error {
	if s.tx == nil {
		return errors.New("db: LockOrganization outside a transaction")
	}
	if s.dialect != DialectPostgres {
		return nil
	}
	var got string
	err := s.tx.NewSelect().Model((*domain.Organization)(nil)).Column("id").Where("id = ?", id).For("UPDATE").Scan(ctx, &got)
	if err != nil {
		return fmt.Errorf("lock organization %s: %w", id, err)
	}
	return nil
}

// CreateSession inserts a session.
func (s *Store) CreateSession(ctx context.Context, sess *domain.Session) error {
	return insert(ctx, s.w(), "session", sess.ID, sess)
}

// sessionRow is a session with its user, the user's membership in its organization,
// and that organization.
type sessionRow struct {
	bun.BaseModel `bun:"table:sessions,alias:s"`
	domain.Session
	UserEmail         string     `bun:"user_email"`
	UserPasswordHash  string     `bun:"user_password_hash"`
	UserPasswordSetAt *time.Time `bun:"user_password_set_at"`
	UserCreatedAt     time.Time  `bun:"user_created_at"`
	MemberID          string     `bun:"member_id"`
	MemberRole        string     `bun:"member_role"`
	MemberCreatedAt   time.Time  `bun:"member_created_at"`
	OrgName           string     `bun:"org_name"`
	OrgStatus         string     `bun:"org_status"`
	OrgCreatedAt      time.Time  `bun:"org_created_at"`
}

// FindSessionByHash returns the session with this token hash, its user, the user's
// membership in its organization and the organization, in one round trip (it runs on
// every request of the console); domain.ErrNotFound when any is missing (a member who
// was removed has no session).
func (s *Store) FindSessionByHash(ctx context.Context, hash string) (*domain.Session, *domain.User, *domain.Membership, *domain.Organization, error) {
	row, err := findOne[sessionRow](ctx, s.r(), "session by hash", func(q *bun.SelectQuery) *bun.SelectQuery {
		return q.ColumnExpr("s.*").
			ColumnExpr("u.email AS user_email, u.password_hash AS user_password_hash, u.password_set_at AS user_password_set_at, u.created_at AS user_created_at").
			ColumnExpr("m.id AS member_id, m.role AS member_role, m.created_at AS member_created_at").
			ColumnExpr("o.name AS org_name, o.status AS org_status, o.created_at AS org_created_at").
			Join("JOIN users AS u ON u.id = s.user_id").
			Join("JOIN memberships AS m ON m.user_id = s.user_id AND m.organization_id = s.organization_id").
			Join("JOIN organizations AS o ON o.id = s.organization_id").
			Where("s.token_hash = ?", hash)
	})
	if err != nil {
		return nil, nil, nil, nil, err
	}
	sess := inUTC(&row.Session)
	u := inUTC(&domain.User{ID: sess.UserID, Email: row.UserEmail, PasswordHash: row.UserPasswordHash,
		PasswordSetAt: row.UserPasswordSetAt, CreatedAt: row.UserCreatedAt})
	m := &domain.Membership{ID: row.MemberID, OrganizationID: sess.OrganizationID, UserID: sess.UserID, Role: row.MemberRole,
		CreatedAt: row.MemberCreatedAt.UTC(), Email: row.UserEmail}
	org := &domain.Organization{ID: sess.OrganizationID, Name: row.OrgName, Status: row.OrgStatus, CreatedAt: row.OrgCreatedAt.UTC()}
	return sess, u, m, org, nil
}

// FindSessionByID returns the session, or domain.ErrNotFound.
func (s *Store) FindSessionByID(ctx context.Context, id string) (*domain.Session, error) {
	return findOne[domain.Session](ctx, s.r(), "session "+id, func(q *bun.SelectQuery) *bun.SelectQuery {
		return q.Where("id = ?", id)
	})
}

// FindUserSessions returns up to limit of a user's sessions neither revoked nor past
// their absolute end at now, newest first.
func (s *Store) FindUserSessions(ctx context.Context, userID string, now time.Time, limit int) ([]*domain.Session, error) {
	return findAll[domain.Session](ctx, s.r(), "sessions of user", func(q *bun.SelectQuery) *bun.SelectQuery {
		return q.Where("user_id = ?", userID).Where("revoked_at IS NULL").Where("expires_at > ?", now.UTC()).
			Order("id DESC").Limit(int64(max(limit, 1)))
	})
}

// TouchSession sets a session's last use.
func (s *Store) TouchSession(ctx context.Context, id string, at time.Time) error {
	if _, err := s.w().NewUpdate().Model((*domain.Session)(nil)).Set("last_seen_at = ?", at.UTC()).Where("id = ?", id).Exec(ctx); err != nil {
		return fmt.Errorf("touch session %s: %w", id, err)
	}
	return nil
}

// RevokeSession revokes a session not revoked yet; false when it was (or is unknown).
func (s *Store) RevokeSession(ctx context.Context, id string, at time.Time) (bool, error) {
	n, err := affected(s.w().NewUpdate().Model((*domain.Session)(nil)).Set("revoked_at = ?", at.UTC()).
		Where("id = ?", id).Where("revoked_at IS NULL").Exec(ctx))
	if err != nil {
		return false, fmt.Errorf("revoke session %s: %w", id, err)
	}
	return n == 1, nil
}

// RevokeSessions revokes a user's sessions not revoked yet — of one organization when
// orgID is set — but exceptID, and returns how many.
func (s *Store) RevokeSessions(ctx context.Context, userID, orgID, exceptID string, at time.Time) (int, error) {
	q := s.w().NewUpdate().Model((*domain.Session)(nil)).Set("revoked_at = ?", at.UTC()).
		Where("user_id = ?", userID).Where("revoked_at IS NULL")
	if orgID != "" {
		q = q.Where("organization_id = ?", orgID)
	}
	if exceptID != "" {
		q = q.Where("id <> ?", exceptID)
	}
	n, err := affected(q.Exec(ctx))
	if err != nil {
		return 0, fmt.Errorf("revoke sessions of user %s: %w", userID, err)
	}
	return int(n), nil
}

// DeleteSessionsEndedBefore deletes up to limit sessions revoked, or past their
// absolute end, before a moment.
func (s *Store) DeleteSessionsEndedBefore(ctx context.Context, before time.Time, limit int) (int, error) {
	return s.deleteSome(ctx, "sessions", orBatch(limit), "revoked_at < ? OR expires_at < ?", before.UTC(), before.UTC())
}

// deleteSome deletes up to limit rows of table matching where, by id.
func (s *Store) deleteSome(ctx context.Context, table string, limit int64, where string, args ...any) (int, error) {
	sub := s.w().NewSelect().TableExpr(table).Column("id").Where(where, args...).Limit(limit)
	n, err := affected(s.w().NewDelete().TableExpr(table).Where("id IN (?)", sub).Exec(ctx))
	if err != nil {
		return 0, fmt.Errorf("delete ended %s: %w", table, err)
	}
	return int(n), nil
}

// CreateInvitation inserts an invitation.
func (s *Store) CreateInvitation(ctx context.Context, inv *domain.Invitation) error {
	return insert(ctx, s.w(), "invitation", inv.ID, inv)
}

// FindInvitationByID returns the invitation, or domain.ErrNotFound.
func (s *Store) FindInvitationByID(ctx context.Context, id string) (*domain.Invitation, error) {
	return findOne[domain.Invitation](ctx, s.r(), "invitation "+id, func(q *bun.SelectQuery) *bun.SelectQuery {
		return q.Where("id = ?", id)
	})
}

// FindInvitationByHash returns the invitation with this token hash, or
// domain.ErrNotFound.
func (s *Store) FindInvitationByHash(ctx context.Context, hash string) (*domain.Invitation, error) {
	return findOne[domain.Invitation](ctx, s.r(), "invitation by hash", func(q *bun.SelectQuery) *bun.SelectQuery {
		return q.Where("token_hash = ?", hash)
	})
}

// FindPendingInvitations returns up to limit invitations of an organization still
// pending at now, newest first.
func (s *Store) FindPendingInvitations(ctx context.Context, orgID string, now time.Time, limit int) ([]*domain.Invitation, error) {
	return findAll[domain.Invitation](ctx, s.r(), "invitations", func(q *bun.SelectQuery) *bun.SelectQuery {
		return q.Where("organization_id = ?", orgID).Where("accepted_at IS NULL").Where("revoked_at IS NULL").
			Where("expires_at > ?", now.UTC()).Order("id DESC").Limit(int64(max(limit, 1)))
	})
}

// EndInvitation marks an invitation still pending at at accepted, or revoked; false
// when it was pending no longer.
func (s *Store) EndInvitation(ctx context.Context, id string, accepted bool, at time.Time) (bool, error) {
	col := "revoked_at"
	if accepted {
		col = "accepted_at"
	}
	n, err := affected(s.w().NewUpdate().Model((*domain.Invitation)(nil)).Set("? = ?", bun.Ident(col), at.UTC()).
		Where("id = ?", id).Where("accepted_at IS NULL").Where("revoked_at IS NULL").Where("expires_at > ?", at.UTC()).Exec(ctx))
	if err != nil {
		return false, fmt.Errorf("end invitation %s: %w", id, err)
	}
	return n == 1, nil
}

// DeleteInvitationsEndedBefore deletes up to limit invitations accepted, revoked or
// expired before a moment.
func (s *Store) DeleteInvitationsEndedBefore(ctx context.Context, before time.Time, limit int) (int, error) {
	b := before.UTC()
	return s.deleteSome(ctx, "invitations", orBatch(limit), "accepted_at < ? OR revoked_at < ? OR expires_at < ?", b, b, b)
}

// CreatePasswordToken inserts a set-password link.
func (s *Store) CreatePasswordToken(ctx context.Context, t *domain.PasswordToken) error {
	return insert(ctx, s.w(), "password token", t.ID, t)
}

// UsePasswordToken marks the unused token with this hash, unexpired at at, used and
// returns it; domain.ErrNotFound when there is none. Of two uses at once one wins.
func (s *Store) UsePasswordToken(ctx context.Context, hash string, at time.Time) (*domain.PasswordToken, error) {
	n, err := affected(s.w().NewUpdate().Model((*domain.PasswordToken)(nil)).Set("used_at = ?", at.UTC()).
		Where("token_hash = ?", hash).Where("used_at IS NULL").Where("expires_at > ?", at.UTC()).Exec(ctx))
	if err != nil {
		return nil, fmt.Errorf("use password token: %w", err)
	}
	if n == 0 {
		return nil, fmt.Errorf("password token: %w", domain.ErrNotFound)
	}
	return findOne[domain.PasswordToken](ctx, s.w(), "password token", func(q *bun.SelectQuery) *bun.SelectQuery {
		return q.Where("token_hash = ?", hash)
	})
}

// DeletePasswordTokensEndedBefore deletes up to limit tokens used or expired before a
// moment.
func (s *Store) DeletePasswordTokensEndedBefore(ctx context.Context, before time.Time, limit int) (int, error) {
	b := before.UTC()
	return s.deleteSome(ctx, "password_tokens", orBatch(limit), "used_at < ? OR expires_at < ?", b, b)
}

// FindSignInThrottle returns the throttle of key, or domain.ErrNotFound.
func (s *Store) FindSignInThrottle(ctx context.Context, key string) (*domain.SignInThrottle, error) {
	return findOne[domain.SignInThrottle](ctx, s.r(), "sign-in throttle", func(q *bun.SelectQuery) *bun.SelectQuery {
		return q.Where("key = ?", key)
	})
}

// RecordSignInFailure counts a failure in one statement, so concurrent failures all
// count: in the current window, or in a new one from now when it began before
// windowStart.
func (s *Store) RecordSignInFailure(ctx context.Context, key string, now, windowStart time.Time) (*domain.SignInThrottle, error) {
	t := new(domain.SignInThrottle)
	err := s.w().NewRaw(`INSERT INTO sign_in_throttles AS t (key, failures, window_start, locked_until) VALUES (?, 1, ?, NULL)
		ON CONFLICT (key) DO UPDATE SET
			failures = CASE WHEN t.window_start < ? THEN 1 ELSE t.failures + 1 END,
			window_start = CASE WHEN t.window_start < ? THEN excluded.window_start ELSE t.window_start END
		RETURNING key, failures, window_start, locked_until`,
		key, now.UTC(), windowStart.UTC(), windowStart.UTC()).Scan(ctx, t)
	if err != nil {
		return nil, fmt.Errorf("count failed sign-in: %w", err)
	}
	return inUTC(t), nil
}

// LockSignIn locks key until a moment and starts its count again.
func (s *Store) LockSignIn(ctx context.Context, key string, until time.Time) error {
	_, err := s.w().NewUpdate().Model((*domain.SignInThrottle)(nil)).Set("locked_until = ?", until.UTC()).
		Set("failures = 0").Where("key = ?", key).Exec(ctx)
	if err != nil {
		return fmt.Errorf("lock sign-in: %w", err)
	}
	return nil
}

// ClearSignInThrottle forgets key's failures.
func (s *Store) ClearSignInThrottle(ctx context.Context, key string) error {
	if _, err := s.w().NewDelete().Model((*domain.SignInThrottle)(nil)).Where("key = ?", key).Exec(ctx); err != nil {
		return fmt.Errorf("clear sign-in throttle: %w", err)
	}
	return nil
}

// DeleteSignInThrottlesBefore deletes up to limit throttles whose window began, and
// whose lock ended, before a moment.
func (s *Store) DeleteSignInThrottlesBefore(ctx context.Context, before time.Time, limit int) (int, error) {
	b := before.UTC()
	sub := s.w().NewSelect().TableExpr("sign_in_throttles").Column("key").
		Where("window_start < ?", b).Where("locked_until IS NULL OR locked_until < ?", b).Limit(orBatch(limit))
	n, err := affected(s.w().NewDelete().TableExpr("sign_in_throttles").Where("key IN (?)", sub).Exec(ctx))
	if err != nil {
		return 0, fmt.Errorf("delete sign-in throttles: %w", err)
	}
	return int(n), nil
}
