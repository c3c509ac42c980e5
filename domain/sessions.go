package domain

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"time"
)

// PeoplePorts is what People uses of the Store: users, memberships, sessions,
// invitations and sign-in throttles, and the organizations and projects they belong to
// (a change to an organization's members holds its lock).
type PeoplePorts interface {
	Transactor
	PeopleStore
	TenantStore
}

// People signs people in and out of the console, authenticates their sessions, and
// manages members, invitations and the users behind them.
type People struct {
	Store  PeoplePorts
	Clock  Clock
	Config Config
	Limits *RateLimits
}

// inTx runs fn in one transaction, on the ports People declares.
func (s *People) inTx(ctx context.Context, fn func(tx PeoplePorts) error) error {
	return s.Store.InTx(ctx, func(tx Store) error { return fn(tx) })
}

// SessionTouchEvery is how often a session's last use is written at most; its idle
// expiry is judged to within it.
const SessionTouchEvery = time.Minute

// MaxSessionsListed bounds the sessions shown to a person.
const MaxSessionsListed = 100

// SignInRequest is a person signing in.
type SignInRequest struct {
	Email, Password string
	// OrganizationID chooses among the person's organizations; "" for the first they
	// joined.
	OrganizationID string
	IP             netip.Addr
	UserAgent      string
}

// SignedIn is a new session: the token and CSRF token are shown this once.
type SignedIn struct {
	Session      *Session
	Token        string
	CSRFToken    string
	User         *User
	Membership   *Membership
	Organization *Organization
}

func invalidCredentials() *Error {
	return Errorf(CodeInvalidCredentials, "the email or the password is wrong")
}

func signInLocked(d time.Duration) *Error {
	secs := max(int((d+time.Second-1)/time.Second), 1)
	return &Error{Code: CodeSignInLocked, RetryAfter: secs,
		Message: fmt.Sprintf("too many failed sign-ins for this email: it is locked for %s", roundUp(d))}
}

// roundUp says a wait in whole minutes (seconds below one).
func roundUp(d time.Duration) string {
	if d < time.Minute {
		return plural(int((d+time.Second-1)/time.Second), "second", "seconds")
	}
	return plural(int((d+time.Minute-1)/time.Minute), "minute", "minutes")
}

// SignIn checks an email and password and opens a session. A wrong email and a wrong
// password get the same answer and take the same time; failures are counted per email
// (whether or not an account has it) and lock it after Config.SignInMaxFailures within
// Config.SignInLockout; attempts are also limited per client address. Codes:
// invalid_request, rate_limited, sign_in_locked, invalid_credentials, forbidden (no
// organization), not_found (organization_id), organization_suspended.
func (s *People) SignIn(ctx context.Context, r SignInRequest) (*SignedIn, error) {
	if d := s.Limits.AllowNamed(ctx, "signin:ip:"+r.IP.String(), s.Config.SignInPerIP); !d.Allowed {
		e := RateLimited(d)
		e.Message = "too many sign-in attempts from this address: the limit is " + strconv.Itoa(d.Limit) + " per minute"
		return nil, e
	}
	email, err := NormalizeEmail(r.Email)
	if err != nil {
		return nil, err
	}
	if r.Password == "" {
		return nil, InvalidParam("password", "a password is required")
	}
	u, err := s.checkPassword(ctx, email, r.Password)
	if err != nil {
		return nil, err
	}
	m, org, err := s.chooseOrganization(ctx, u, r.OrganizationID)
	if err != nil {
		return nil, err
	}
	return s.startSession(ctx, s.Store, u, m, org, r.IP, r.UserAgent)
}

// checkPassword finds the account of email and checks its password, counting a
// failure against the email. Codes: sign_in_locked, invalid_credentials.
func (s *People) checkPassword(ctx context.Context, email, password string) (*User, error) {
	key, now := "email:"+email, s.Clock.Now()
	t, err := s.Store.FindSignInThrottle(ctx, key)
	switch {
	case err == nil && t.LockedUntil != nil && now.Before(*t.LockedUntil):
		return nil, signInLocked(t.LockedUntil.Sub(now))
	case err != nil && !errors.Is(err, ErrNotFound):
		return nil, err
	}
	u, err := s.Store.FindUserByEmail(ctx, email)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return nil, err
	}
	hash := decoyHash()
	if u != nil && u.PasswordHash != "" {
		hash = u.PasswordHash
	}
	// The hash is checked even when there is no account, so both answers take as long.
	if !VerifyPassword(password, hash) || u == nil || u.PasswordHash == "" {
		return nil, s.failSignIn(ctx, key, now)
	}
	if t != nil {
		if err := s.Store.ClearSignInThrottle(ctx, key); err != nil {
			return nil, err
		}
	}
	return u, nil
}

// failSignIn counts a failed sign-in and answers it: invalid_credentials, or
// sign_in_locked for the failure that reaches the limit.
func (s *People) failSignIn(ctx context.Context, key string, now time.Time) error {
	t, err := s.Store.RecordSignInFailure(ctx, key, now, now.Add(-s.Config.SignInLockout))
	if err != nil {
		return err
	}
	if t.Failures >= s.Config.SignInMaxFailures {
		if err := s.Store.LockSignIn(ctx, key, now.Add(s.Config.SignInLockout)); err != nil {
			return err
		}
		return signInLocked(s.Config.SignInLockout)
	}
	return invalidCredentials()
}

// chooseOrganization finds the membership a session opens in: of orgID, or the first
// the user joined. Codes: forbidden, not_found, organization_suspended.
func (s *People) chooseOrganization(ctx context.Context, u *User, orgID string) (*Membership, *Organization, error) {
	var m *Membership
	if orgID != "" {
		var err error
		if m, err = s.Store.FindMembership(ctx, orgID, u.ID); errors.Is(err, ErrNotFound) {
			return nil, nil, &Error{Code: CodeNotFound, Message: "you are not a member of this organization", Param: "organizationId"}
		} else if err != nil {
			return nil, nil, err
		}
	} else {
		ms, err := s.Store.FindUserMemberships(ctx, u.ID)
		if err != nil {
			return nil, nil, err
		}
		if len(ms) == 0 {
			return nil, nil, Errorf(CodeForbidden, "this account is a member of no organization")
		}
		m = ms[0]
	}
	org, err := s.Store.FindOrganizationByID(ctx, m.OrganizationID)
	if err != nil {
		return nil, nil, err
	}
	if org.Status == OrgSuspended {
		return nil, nil, Errorf(CodeOrganizationSuspended, "the organization is suspended")
	}
	return m, org, nil
}

// startSession opens a session for u in org.
func (s *People) startSession(ctx context.Context, tx PeopleStore, u *User, m *Membership, org *Organization, ip netip.Addr, ua string) (*SignedIn, error) {
	now := s.Clock.Now()
	token, csrf := newToken(sessionTokenPrefix), newToken("")
	if len(ua) > 512 {
		ua = ua[:512]
	}
	sess := &Session{ID: NewID(PrefixSession), UserID: u.ID, OrganizationID: org.ID, TokenHash: HashKey(token),
		CSRFHash: HashKey(csrf), IP: ip.String(), UserAgent: ua, CreatedAt: now, LastSeenAt: now,
		ExpiresAt: now.Add(s.Config.SessionLifetime)}
	if err := tx.CreateSession(ctx, sess); err != nil {
		return nil, fmt.Errorf("create session: %w", err)
	}
	return &SignedIn{Session: sess, Token: token, CSRFToken: csrf, User: u, Membership: m, Organization: org}, nil
}

// SessionRequest is what a request of the console presents.
type SessionRequest struct {
	Token     string // the session cookie
	CSRFToken string // repeated by the console in a header (in connection_init on a websocket)
	// ProjectID and Environment are what the console acts on: "" for the organization's
	// first project, and for live.
	ProjectID   string
	Environment Environment
	IP          netip.Addr
}

// Authenticate turns a session's cookie and CSRF token into a Principal: the person's
// role as a grant, on the project and environment the console chose. A request of a
// session must carry its CSRF token, which no other site can read. Codes:
// invalid_session, organization_suspended, invalid_request (environment, project),
// not_found (project).
func (s *People) Authenticate(ctx context.Context, r SessionRequest) (*Principal, error) {
	if !wellFormedToken(sessionTokenPrefix, r.Token) {
		return nil, Errorf(CodeInvalidSession, "the session is not valid: sign in again")
	}
	sess, u, m, org, err := s.Store.FindSessionByHash(ctx, HashKey(r.Token))
	if errors.Is(err, ErrNotFound) {
		return nil, Errorf(CodeInvalidSession, "the session is not valid: sign in again")
	}
	if err != nil {
		return nil, fmt.Errorf("find session: %w", err)
	}
	now := s.Clock.Now()
	switch {
	case sess.RevokedAt != nil:
		return nil, Errorf(CodeInvalidSession, "this session was signed out: sign in again")
	case !now.Before(sess.ExpiresAt) || !now.Before(sess.LastSeenAt.Add(s.Config.SessionIdleTimeout)):
		return nil, Errorf(CodeInvalidSession, "the session expired: sign in again")
	case r.CSRFToken == "" || !sameHash(r.CSRFToken, sess.CSRFHash):
		return nil, Errorf(CodeInvalidSession, "the request lacks the session's CSRF token")
	case org.Status == OrgSuspended:
		return nil, Errorf(CodeOrganizationSuspended, "the organization is suspended")
	}
	env := r.Environment
	if env == "" {
		env = EnvLive
	}
	if !env.Valid() {
		return nil, InvalidParam("environment", "environment must be live or test")
	}
	prj, err := s.sessionProject(ctx, org.ID, r.ProjectID)
	if err != nil {
		return nil, err
	}
	if now.Sub(sess.LastSeenAt) >= SessionTouchEvery {
		if err := s.Store.TouchSession(ctx, sess.ID, now); err != nil {
			return nil, err
		}
		sess.LastSeenAt = now
	}
	grant := &APIKey{ID: u.ID, OrganizationID: org.ID, ProjectID: prj.ID, Environment: env, Name: u.Email,
		Scopes: RoleScopes(m.Role), IPAllowList: []string{}, AllowedOperations: []string{}, AllowedProjects: []string{},
		RateLimit: s.Config.ConsoleRateLimit, CreatedAt: sess.CreatedAt}
	return &Principal{Key: grant, Organization: org, Project: prj, Session: sess, User: u, Role: m.Role}, nil
}

// sessionProject is the project a session acts on. Codes: invalid_request, not_found.
func (s *People) sessionProject(ctx context.Context, orgID, id string) (*Project, error) {
	if id == "" {
		ps, err := s.Store.FindProjects(ctx, orgID, 1)
		if err != nil {
			return nil, err
		}
		if len(ps) == 0 {
			return nil, &Error{Code: CodeNotFound, Message: "the organization has no project yet", Param: "project"}
		}
		return ps[0], nil
	}
	if !ValidID(PrefixProject, id) {
		return nil, InvalidParam("project", "project must be a project id (prj_ followed by 26 characters)")
	}
	prj, err := s.Store.FindProjectByID(ctx, id)
	if errors.Is(err, ErrNotFound) || err == nil && prj.OrganizationID != orgID {
		return nil, &Error{Code: CodeNotFound, Message: "no such project", Param: "project"}
	}
	return prj, err
}

// requireSession refuses a principal that is no console session. Codes: forbidden.
func requireSession(p *Principal) error {
	if p.Session == nil {
		return Errorf(CodeForbidden, "only a person signed in to the console can do this; an API key cannot")
	}
	return nil
}

// SignOut ends the principal's session. Codes: forbidden (a key).
func (s *People) SignOut(ctx context.Context, p *Principal) error {
	if err := requireSession(p); err != nil {
		return err
	}
	_, err := s.Store.RevokeSession(ctx, p.Session.ID, s.Clock.Now())
	return err
}

// EndSession signs out the session a token names, if it names one: a browser that signs
// in again replaces its session.
func (s *People) EndSession(ctx context.Context, token string) error {
	if !wellFormedToken(sessionTokenPrefix, token) {
		return nil
	}
	sess, _, _, _, err := s.Store.FindSessionByHash(ctx, HashKey(token))
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	_, err = s.Store.RevokeSession(ctx, sess.ID, s.Clock.Now())
	return err
}

// ListSessions lists the principal's person's live sessions, newest first. Codes:
// forbidden (a key).
func (s *People) ListSessions(ctx context.Context, p *Principal) ([]*Session, error) {
	if err := requireSession(p); err != nil {
		return nil, err
	}
	now := s.Clock.Now()
	all, err := s.Store.FindUserSessions(ctx, p.User.ID, now, MaxSessionsListed)
	if err != nil {
		return nil, err
	}
	live := all[:0]
	for _, x := range all {
		if now.Before(x.LastSeenAt.Add(s.Config.SessionIdleTimeout)) {
			live = append(live, x)
		}
	}
	return live, nil
}

// RevokeSession signs out one of the principal's person's sessions. Codes: forbidden
// (a key), not_found.
func (s *People) RevokeSession(ctx context.Context, p *Principal, id string) error {
	if err := requireSession(p); err != nil {
		return err
	}
	if !ValidID(PrefixSession, id) {
		return NotFound("session")
	}
	sess, err := s.Store.FindSessionByID(ctx, id)
	if errors.Is(err, ErrNotFound) || err == nil && sess.UserID != p.User.ID {
		return NotFound("session")
	}
	if err != nil {
		return err
	}
	_, err = s.Store.RevokeSession(ctx, sess.ID, s.Clock.Now())
	return err
}

// SignOutEverywhere ends every session of the principal's person, this one included;
// it returns how many ended. Codes: forbidden (a key).
func (s *People) SignOutEverywhere(ctx context.Context, p *Principal) (int, error) {
	if err := requireSession(p); err != nil {
		return 0, err
	}
	return s.Store.RevokeSessions(ctx, p.User.ID, "", "", s.Clock.Now())
}

// ChangePassword sets a new password after checking the current one, and ends the
// person's other sessions. Codes: forbidden (a key), invalid_request, sign_in_locked,
// invalid_credentials.
func (s *People) ChangePassword(ctx context.Context, p *Principal, current, next string) error {
	if err := requireSession(p); err != nil {
		return err
	}
	if err := checkPassword("newPassword", next); err != nil {
		return err
	}
	if _, err := s.checkPassword(ctx, p.User.Email, current); err != nil {
		if ErrorCode(err) == CodeInvalidCredentials {
			return &Error{Code: CodeInvalidCredentials, Message: "the current password is wrong", Param: "currentPassword"}
		}
		return err
	}
	now := s.Clock.Now()
	return s.inTx(ctx, func(tx PeoplePorts) error {
		if err := tx.SetUserPassword(ctx, p.User.ID, HashPassword(next), now); err != nil {
			return err
		}
		_, err := tx.RevokeSessions(ctx, p.User.ID, "", p.Session.ID, now)
		return err
	})
}

// SetPassword sets a password through a one-time link, ends the person's other
// sessions and signs them in. Codes: invalid_request, not_found (the link is unknown,
// used or expired), forbidden (no organization), organization_suspended.
func (s *People) SetPassword(ctx context.Context, token, password string, ip netip.Addr, ua string) (*SignedIn, error) {
	if !wellFormedToken(passwordTokenPrefix, token) {
		return nil, &Error{Code: CodeNotFound, Message: "this link is not valid; ask for a new one", Param: "token"}
	}
	if err := checkPassword("password", password); err != nil {
		return nil, err
	}
	hash := HashPassword(password)
	var in *SignedIn
	err := s.inTx(ctx, func(tx PeoplePorts) error {
		now := s.Clock.Now()
		t, err := tx.UsePasswordToken(ctx, HashKey(token), now)
		if errors.Is(err, ErrNotFound) {
			return &Error{Code: CodeNotFound, Message: "this link was used or has expired; ask for a new one", Param: "token"}
		}
		if err != nil {
			return err
		}
		u, err := tx.FindUserByID(ctx, t.UserID)
		if err != nil {
			return err
		}
		if err := tx.SetUserPassword(ctx, u.ID, hash, now); err != nil {
			return err
		}
		u.PasswordHash, u.PasswordSetAt = hash, &now
		if _, err := tx.RevokeSessions(ctx, u.ID, "", "", now); err != nil {
			return err
		}
		people := &People{Store: tx, Clock: s.Clock, Config: s.Config}
		m, org, err := people.chooseOrganization(ctx, u, "")
		if err != nil {
			return err
		}
		in, err = people.startSession(ctx, tx, u, m, org, ip, ua)
		return err
	})
	if err != nil {
		return nil, err
	}
	_ = s.Store.ClearSignInThrottle(ctx, "email:"+in.User.Email)
	return in, nil
}
