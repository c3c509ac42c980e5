package domain

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"
)

// NewUser describes a user an operator adds to an organization (filemill admin users
// create).
type NewUser struct {
	OrganizationID string
	Email          string
	Role           string
	// Password is set when given; otherwise the answer carries a one-time link to set it.
	Password string
}

// CreatedUser is a user added to an organization; PasswordToken is the one-time
// set-password token when no password was given ("" otherwise).
type CreatedUser struct {
	User          *User
	Membership    *Membership
	PasswordToken string
}

// CreateUser adds a person to an organization with a role, creating their account
// when the email has none. An operator action: no principal decides it. Without a
// password it mints a one-time link to set one (which also serves as a reset for an
// existing account). Codes: invalid_request, not_found (organization), conflict
// (already a member).
func (s *People) CreateUser(ctx context.Context, nu NewUser) (*CreatedUser, error) {
	email, err := NormalizeEmail(nu.Email)
	if err != nil {
		return nil, err
	}
	if !ValidRole(nu.Role) {
		return nil, InvalidParam("role", "role must be one of owner, admin, developer, viewer")
	}
	hash := ""
	if nu.Password != "" {
		if err := checkPassword("password", nu.Password); err != nil {
			return nil, err
		}
		hash = HashPassword(nu.Password)
	}
	var out CreatedUser
	err = s.inTx(ctx, func(tx PeoplePorts) error {
		now := s.Clock.Now()
		if _, err := tx.FindOrganizationByID(ctx, nu.OrganizationID); errors.Is(err, ErrNotFound) {
			return NotFound("organization")
		} else if err != nil {
			return err
		}
		if n, err := tx.CountMembers(ctx, nu.OrganizationID, ""); err != nil {
			return err
		} else if n >= s.Config.MaxMembers {
			return Errorf(CodeConflict, "an organization has at most %d members", s.Config.MaxMembers)
		}
		u, err := s.ensureUser(ctx, tx, email, hash, now)
		if err != nil {
			return err
		}
		m := &Membership{ID: NewID(PrefixMembership), OrganizationID: nu.OrganizationID, UserID: u.ID, Role: nu.Role, CreatedAt: now, Email: email}
		if err := tx.CreateMembership(ctx, m); errors.Is(err, ErrDuplicate) {
			return &Error{Code: CodeConflict, Message: email + " is a member of this organization already", Param: "email"}
		} else if err != nil {
			return err
		}
		out.User, out.Membership = u, m
		if hash == "" {
			out.PasswordToken, err = s.newPasswordToken(ctx, tx, u.ID, now)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// ensureUser finds the account of email, creating it (with hash as its password, "" for
// none) when there is none; a given hash replaces an existing account's password.
func (s *People) ensureUser(ctx context.Context, tx PeopleStore, email, hash string, now time.Time) (*User, error) {
	u, err := tx.FindUserByEmail(ctx, email)
	if errors.Is(err, ErrNotFound) {
		u = &User{ID: NewID(PrefixUser), Email: email, PasswordHash: hash, CreatedAt: now}
		if hash != "" {
			u.PasswordSetAt = &now
		}
		return u, tx.CreateUser(ctx, u)
	}
	if err != nil {
		return nil, err
	}
	if hash != "" {
		if err := tx.SetUserPassword(ctx, u.ID, hash, now); err != nil {
			return nil, err
		}
		u.PasswordHash, u.PasswordSetAt = hash, &now
	}
	return u, nil
}

func (s *People) newPasswordToken(ctx context.Context, tx PeopleStore, userID string, now time.Time) (string, error) {
	token := newToken(passwordTokenPrefix)
	t := &PasswordToken{ID: NewID(PrefixPasswordToken), UserID: userID, TokenHash: HashKey(token), CreatedAt: now,
		ExpiresAt: now.Add(s.Config.PasswordLinkTTL)}
	if err := tx.CreatePasswordToken(ctx, t); err != nil {
		return "", err
	}
	return token, nil
}

// ListMembers lists the principal's organization's members, oldest first. Codes:
// insufficient_scope.
func (s *People) ListMembers(ctx context.Context, p *Principal) ([]*Membership, error) {
	if err := p.RequireScope(ScopeManage); err != nil {
		return nil, err
	}
	return s.Store.FindMemberships(ctx, p.Organization.ID, s.Config.MaxMembers)
}

// Invite creates a one-time invitation link for email with a role; its token is shown
// this once. Inviting an owner takes the organization scope. Codes:
// insufficient_scope, invalid_request, conflict (a member already, or too many).
func (s *People) Invite(ctx context.Context, p *Principal, email, role string) (*Invitation, string, error) {
	if err := p.RequireScope(ScopeManage); err != nil {
		return nil, "", err
	}
	if !ValidRole(role) {
		return nil, "", InvalidParam("role", "role must be one of owner, admin, developer, viewer")
	}
	if role == RoleOwner {
		if err := p.RequireScope(ScopeOrganization); err != nil {
			return nil, "", err
		}
	}
	email, err := NormalizeEmail(email)
	if err != nil {
		return nil, "", err
	}
	token := newToken(invitationTokenPrefix)
	now := s.Clock.Now()
	inv := &Invitation{ID: NewID(PrefixInvitation), OrganizationID: p.Organization.ID, Email: email, Role: role,
		TokenHash: HashKey(token), InvitedBy: p.Key.ID, CreatedAt: now, ExpiresAt: now.Add(s.Config.InvitationTTL)}
	err = s.inTx(ctx, func(tx PeoplePorts) error {
		if err := tx.LockOrganization(ctx, p.Organization.ID); err != nil {
			return err
		}
		if u, err := tx.FindUserByEmail(ctx, email); err == nil {
			if _, err := tx.FindMembership(ctx, p.Organization.ID, u.ID); err == nil {
				return &Error{Code: CodeConflict, Message: email + " is a member already", Param: "email"}
			}
		}
		members, err := tx.CountMembers(ctx, p.Organization.ID, "")
		if err != nil {
			return err
		}
		pending, err := tx.FindPendingInvitations(ctx, p.Organization.ID, now, s.Config.MaxMembers)
		if err != nil {
			return err
		}
		if members+len(pending) >= s.Config.MaxMembers {
			return Errorf(CodeConflict, "an organization has at most %d members and pending invitations", s.Config.MaxMembers)
		}
		return tx.CreateInvitation(ctx, inv)
	})
	if err != nil {
		return nil, "", err
	}
	return inv, token, nil
}

// ListInvitations lists the organization's pending invitations, newest first. Codes:
// insufficient_scope.
func (s *People) ListInvitations(ctx context.Context, p *Principal) ([]*Invitation, error) {
	if err := p.RequireScope(ScopeManage); err != nil {
		return nil, err
	}
	return s.Store.FindPendingInvitations(ctx, p.Organization.ID, s.Clock.Now(), s.Config.MaxMembers)
}

// RevokeInvitation withdraws a pending invitation. Codes: insufficient_scope,
// not_found, conflict (accepted or ended already).
func (s *People) RevokeInvitation(ctx context.Context, p *Principal, id string) (*Invitation, error) {
	if err := p.RequireScope(ScopeManage); err != nil {
		return nil, err
	}
	inv, err := s.findInvitation(ctx, p, id)
	if err != nil {
		return nil, err
	}
	if inv.Role == RoleOwner {
		if err := p.RequireScope(ScopeOrganization); err != nil {
			return nil, err
		}
	}
	now := s.Clock.Now()
	ok, err := s.Store.EndInvitation(ctx, inv.ID, false, now)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, Errorf(CodeConflict, "this invitation was accepted, revoked or has expired")
	}
	inv.RevokedAt = &now
	return inv, nil
}

func (s *People) findInvitation(ctx context.Context, p *Principal, id string) (*Invitation, error) {
	if !ValidID(PrefixInvitation, id) {
		return nil, NotFound("invitation")
	}
	inv, err := s.Store.FindInvitationByID(ctx, id)
	if errors.Is(err, ErrNotFound) || err == nil && inv.OrganizationID != p.Organization.ID {
		return nil, NotFound("invitation")
	}
	return inv, err
}

// InvitationPreview is what the invitation link shows before it is accepted.
type InvitationPreview struct {
	Invitation   *Invitation
	Organization *Organization
	// HasPassword tells whether the invited email has an account with a password:
	// accepting then asks for it, otherwise for a new one.
	HasPassword bool
}

// PreviewInvitation reads a pending invitation by its token (no principal: the token
// is the proof). Codes: not_found (unknown, used, revoked or expired).
func (s *People) PreviewInvitation(ctx context.Context, token string) (*InvitationPreview, error) {
	inv, err := s.pendingInvitation(ctx, s.Store, token)
	if err != nil {
		return nil, err
	}
	org, err := s.Store.FindOrganizationByID(ctx, inv.OrganizationID)
	if err != nil {
		return nil, err
	}
	pv := &InvitationPreview{Invitation: inv, Organization: org}
	if u, err := s.Store.FindUserByEmail(ctx, inv.Email); err == nil {
		pv.HasPassword = u.PasswordHash != ""
	} else if !errors.Is(err, ErrNotFound) {
		return nil, err
	}
	return pv, nil
}

func (s *People) pendingInvitation(ctx context.Context, tx PeopleStore, token string) (*Invitation, error) {
	gone := &Error{Code: CodeNotFound, Message: "this invitation is not valid: it was used, revoked or has expired", Param: "token"}
	if !wellFormedToken(invitationTokenPrefix, token) {
		return nil, gone
	}
	inv, err := tx.FindInvitationByHash(ctx, HashKey(token))
	if errors.Is(err, ErrNotFound) || err == nil && !inv.Pending(s.Clock.Now()) {
		return nil, gone
	}
	return inv, err
}

// AcceptInvitation makes the invited person a member and signs them in. An email that
// has an account with a password must give it (the link alone does not take over an
// account); otherwise the password given becomes the account's. Codes:
// invalid_request, not_found (the link), sign_in_locked, invalid_credentials,
// organization_suspended.
func (s *People) AcceptInvitation(ctx context.Context, token, password string, ip netip.Addr, ua string) (*SignedIn, error) {
	inv, err := s.pendingInvitation(ctx, s.Store, token)
	if err != nil {
		return nil, err
	}
	if password == "" {
		return nil, InvalidParam("password", "a password is required")
	}
	existing, err := s.Store.FindUserByEmail(ctx, inv.Email)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return nil, err
	}
	hash := ""
	if existing != nil && existing.PasswordHash != "" {
		if d := s.Limits.AllowNamed(ctx, "signin:ip:"+ip.String(), s.Config.SignInPerIP); !d.Allowed {
			return nil, RateLimited(d)
		}
		if _, err := s.checkPassword(ctx, inv.Email, password); err != nil {
			return nil, err
		}
	} else {
		if err := checkPassword("password", password); err != nil {
			return nil, err
		}
		hash = HashPassword(password)
	}
	var in *SignedIn
	err = s.inTx(ctx, func(tx PeoplePorts) error {
		now := s.Clock.Now()
		if err := tx.LockOrganization(ctx, inv.OrganizationID); err != nil {
			return err
		}
		ok, err := tx.EndInvitation(ctx, inv.ID, true, now)
		if err != nil {
			return err
		}
		if !ok {
			return &Error{Code: CodeNotFound, Message: "this invitation is not valid: it was used, revoked or has expired", Param: "token"}
		}
		u, err := s.ensureUser(ctx, tx, inv.Email, hash, now)
		if err != nil {
			return err
		}
		// A member already (added meanwhile) keeps the role; the invitation is spent.
		if _, err := tx.FindMembership(ctx, inv.OrganizationID, u.ID); errors.Is(err, ErrNotFound) {
			m := &Membership{ID: NewID(PrefixMembership), OrganizationID: inv.OrganizationID, UserID: u.ID, Role: inv.Role, CreatedAt: now, Email: u.Email}
			if err := tx.CreateMembership(ctx, m); err != nil {
				return err
			}
		} else if err != nil {
			return err
		}
		people := &People{Store: tx, Clock: s.Clock, Config: s.Config}
		m, org, err := people.chooseOrganization(ctx, u, inv.OrganizationID)
		if err != nil {
			return err
		}
		in, err = people.startSession(ctx, tx, u, m, org, ip, ua)
		return err
	})
	if err != nil {
		return nil, err
	}
	return in, nil
}

// findMember finds a membership of the principal's organization. Codes: not_found.
func (s *People) findMember(ctx context.Context, tx PeopleStore, p *Principal, id string) (*Membership, error) {
	if !ValidID(PrefixMembership, id) {
		return nil, NotFound("member")
	}
	m, err := tx.FindMembershipByID(ctx, id)
	if errors.Is(err, ErrNotFound) || err == nil && m.OrganizationID != p.Organization.ID {
		return nil, NotFound("member")
	}
	return m, err
}

func lastOwner() *Error {
	return Errorf(CodeConflict, "the organization's last owner cannot leave or stop being an owner: make another member an owner first")
}

// ChangeRole gives a member another role: the owners' power (scope organization). The
// last owner keeps the role. Codes: insufficient_scope, invalid_request, not_found,
// conflict (the last owner).
func (s *People) ChangeRole(ctx context.Context, p *Principal, id, role string) (*Membership, error) {
	if err := p.RequireScope(ScopeOrganization); err != nil {
		return nil, err
	}
	if !ValidRole(role) {
		return nil, InvalidParam("role", "role must be one of owner, admin, developer, viewer")
	}
	var out *Membership
	err := s.inTx(ctx, func(tx PeoplePorts) error {
		if err := tx.LockOrganization(ctx, p.Organization.ID); err != nil {
			return err
		}
		m, err := s.findMember(ctx, tx, p, id)
		if err != nil {
			return err
		}
		if m.Role == RoleOwner && role != RoleOwner {
			if n, err := tx.CountMembers(ctx, p.Organization.ID, RoleOwner); err != nil {
				return err
			} else if n <= 1 {
				return lastOwner()
			}
		}
		if err := tx.SetMembershipRole(ctx, m.ID, role); err != nil {
			return err
		}
		m.Role, out = role, m
		return nil
	})
	return out, err
}

// RemoveMember takes a member out of the organization and ends their sessions in it.
// Anyone may leave (remove themself); removing another takes the manage scope, and an
// owner the organization scope. The last owner stays. Codes: insufficient_scope,
// not_found, conflict (the last owner).
func (s *People) RemoveMember(ctx context.Context, p *Principal, id string) (*Membership, error) {
	if p.User == nil {
		// A key is no member: it may only remove others.
		if err := p.RequireScope(ScopeManage); err != nil {
			return nil, err
		}
	}
	var out *Membership
	err := s.inTx(ctx, func(tx PeoplePorts) error {
		if err := tx.LockOrganization(ctx, p.Organization.ID); err != nil {
			return err
		}
		m, err := s.findMember(ctx, tx, p, id)
		if err != nil {
			return err
		}
		self := p.User != nil && m.UserID == p.User.ID
		if !self {
			if err := p.RequireScope(ScopeManage); err != nil {
				return err
			}
			if m.Role == RoleOwner {
				if err := p.RequireScope(ScopeOrganization); err != nil {
					return err
				}
			}
		}
		if m.Role == RoleOwner {
			if n, err := tx.CountMembers(ctx, p.Organization.ID, RoleOwner); err != nil {
				return err
			} else if n <= 1 {
				return lastOwner()
			}
		}
		if err := tx.DeleteMembership(ctx, m.ID); err != nil {
			return err
		}
		if _, err := tx.RevokeSessions(ctx, m.UserID, p.Organization.ID, "", s.Clock.Now()); err != nil {
			return err
		}
		out = m
		return nil
	})
	return out, err
}

// Sweep deletes what ended a while ago: sessions, invitations, set-password links and
// sign-in counts, at most limit of each kind; it returns how many went.
func (s *People) Sweep(ctx context.Context, limit int) (int, error) {
	now := s.Clock.Now()
	total := 0
	for _, f := range []func() (int, error){
		func() (int, error) { return s.Store.DeleteSessionsEndedBefore(ctx, now.Add(-24*time.Hour), limit) },
		func() (int, error) {
			return s.Store.DeleteInvitationsEndedBefore(ctx, now.Add(-30*24*time.Hour), limit)
		},
		func() (int, error) {
			return s.Store.DeletePasswordTokensEndedBefore(ctx, now.Add(-24*time.Hour), limit)
		},
		func() (int, error) {
			return s.Store.DeleteSignInThrottlesBefore(ctx, now.Add(-s.Config.SignInLockout), limit)
		},
	} {
		n, err := f()
		total += n
		if err != nil {
			return total, fmt.Errorf("sweep people: %w", err)
		}
	}
	return total, nil
}
