package domain_test

import (
	"context"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/db/dbtest"
	"github.com/filemill/filemill/domain"
)

const testPassword = "correct horse battery"

var clientIP = netip.MustParseAddr("192.0.2.10")

// person adds a user with a password and a role to the env's organization.
func (e *env) person(email, role string) *domain.CreatedUser {
	e.t.Helper()
	u, err := e.svc.People.CreateUser(context.Background(), domain.NewUser{OrganizationID: e.org.Organization.ID,
		Email: email, Role: role, Password: testPassword})
	require.NoError(e.t, err)
	return u
}

// signIn signs email in and returns the session's principal.
func (e *env) signIn(email string) (*domain.SignedIn, *domain.Principal) {
	e.t.Helper()
	in, err := e.svc.People.SignIn(context.Background(), domain.SignInRequest{Email: email, Password: testPassword, IP: clientIP})
	require.NoError(e.t, err)
	return in, e.session(in)
}

func (e *env) session(in *domain.SignedIn) *domain.Principal {
	e.t.Helper()
	p, err := e.svc.People.Authenticate(context.Background(), domain.SessionRequest{Token: in.Token, CSRFToken: in.CSRFToken, IP: clientIP})
	require.NoError(e.t, err)
	return p
}

// TestRoleScopes: a role is a set of scopes, each role the one below it and more; a key
// without scopes holds the data scopes but never the management ones.
func TestRoleScopes(t *testing.T) {
	t.Parallel()
	writes := []string{domain.ScopeFilesWrite, domain.ScopeJobsWrite, domain.ScopeWebhooksWrite}
	reads := []string{domain.ScopeFilesRead, domain.ScopeJobsRead, domain.ScopeWebhooksRead, domain.ScopeUsageRead}
	want := map[string][]string{
		domain.RoleViewer:    reads,
		domain.RoleDeveloper: append(slices.Clone(reads), writes...),
		domain.RoleAdmin:     append(append(slices.Clone(reads), writes...), domain.ScopeManage),
		domain.RoleOwner:     append(append(slices.Clone(reads), writes...), domain.ScopeManage, domain.ScopeOrganization),
	}
	for role, scopes := range want {
		p := &domain.Principal{Key: &domain.APIKey{Scopes: domain.RoleScopes(role)}, Role: role, Session: &domain.Session{}}
		for _, sc := range domain.AllScopes {
			err := p.RequireScope(sc)
			if slices.Contains(scopes, sc) {
				require.NoError(t, err, "%s holds %s", role, sc)
			} else {
				requireCode(t, err, domain.CodeInsufficientScope)
				require.Contains(t, err.Error(), "your role ("+role+")")
			}
		}
	}
	require.Nil(t, domain.RoleScopes("superuser"))
	all := &domain.Principal{Key: &domain.APIKey{}}
	for _, sc := range domain.DataScopes {
		require.True(t, all.HasScope(sc), sc)
	}
	require.False(t, all.HasScope(domain.ScopeManage), "a key listing no scopes cannot manage")
	require.False(t, all.HasScope(domain.ScopeOrganization))
}

func TestPasswordHash(t *testing.T) {
	t.Parallel()
	h := domain.HashPassword(testPassword)
	require.Regexp(t, `^\$argon2id\$v=19\$m=19456,t=2,p=1\$[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{43}$`, h)
	require.True(t, domain.VerifyPassword(testPassword, h))
	require.False(t, domain.VerifyPassword(testPassword+"!", h))
	require.NotEqual(t, h, domain.HashPassword(testPassword), "a salt of its own")
	require.False(t, domain.VerifyPassword(testPassword, "$argon2id$v=19$m=99999999,t=2,p=1$c2FsdHNhbHRzYWx0c2FsdA$aGFzaA"), "an unbounded cost matches nothing")
	require.False(t, domain.VerifyPassword(testPassword, "plain"))
}

// TestSignIn: a wrong password and an unknown email get the same answer; failures lock
// an email, whether or not an account has it, until the lockout ends; a session needs
// its CSRF token, ends when signed out, idle or old, and is listed and revoked by its
// person only.
func TestSignIn(t *testing.T) {
	t.Parallel()
	for _, dialect := range []struct {
		name string
		url  func(testing.TB) string
	}{{"SQLite", dbtest.SQLite}, {"Postgres", dbtest.Postgres}} {
		t.Run(dialect.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			e := newEnv(t, dbtest.Open(t, dialect.url(t)), envOpts{cfg: func(c *domain.Config) {
				c.SignInMaxFailures = 3
				c.SignInLockout = 10 * time.Minute
				c.SessionIdleTimeout = time.Hour
				c.SessionLifetime = 3 * time.Hour
			}})
			e.person("Ada@Example.com", domain.RoleDeveloper)
			e.person("bob@example.com", domain.RoleViewer)
			signIn := func(email, pw string) (*domain.SignedIn, error) {
				return e.svc.People.SignIn(ctx, domain.SignInRequest{Email: email, Password: pw, IP: clientIP})
			}

			t.Run("WrongPasswordAndUnknownEmailAnswerAlike", func(t *testing.T) {
				_, errPw := signIn("ada@example.com", "wrong password!")
				_, errEmail := signIn("nobody@example.com", testPassword)
				a, b := requireCode(t, errPw, domain.CodeInvalidCredentials), requireCode(t, errEmail, domain.CodeInvalidCredentials)
				require.Equal(t, a.Message, b.Message)
				require.Equal(t, a.Param, b.Param)
				// A success clears the count: the earlier failure does not carry over.
				in, err := signIn(" ADA@example.com ", testPassword)
				require.NoError(t, err, "emails are matched without case or spaces")
				require.Equal(t, "ada@example.com", in.User.Email)
				require.Equal(t, domain.RoleDeveloper, in.Membership.Role)
			})

			t.Run("LockoutAlikeForAccountsAndUnknownEmails", func(t *testing.T) {
				for _, email := range []string{"bob@example.com", "ghost@example.com"} {
					for range 2 {
						_, err := signIn(email, "not the password")
						requireCode(t, err, domain.CodeInvalidCredentials)
					}
					_, err := signIn(email, "not the password")
					locked := requireCode(t, err, domain.CodeSignInLocked)
					require.Equal(t, 600, locked.RetryAfter)
					_, err = signIn(email, testPassword)
					requireCode(t, err, domain.CodeSignInLocked)
				}
				e.clock.advance(10*time.Minute + time.Second)
				_, err := signIn("bob@example.com", testPassword)
				require.NoError(t, err, "the lock ends")
			})

			t.Run("SessionNeedsItsCSRFToken", func(t *testing.T) {
				in, p := e.signIn("ada@example.com")
				require.Equal(t, domain.RoleDeveloper, p.Role)
				require.Equal(t, p.User.ID, p.Key.ID, "the grant acts as the person")
				require.Equal(t, domain.EnvLive, p.Environment())
				require.Equal(t, e.org.Project.ID, p.Project.ID, "the organization's first project by default")
				require.Equal(t, e.svc.Config.ConsoleRateLimit, p.Key.RateLimit, "the console's rate limit")
				for _, csrf := range []string{"", in.Token, in.CSRFToken + "a"} {
					_, err := e.svc.People.Authenticate(ctx, domain.SessionRequest{Token: in.Token, CSRFToken: csrf})
					requireCode(t, err, domain.CodeInvalidSession)
				}
				_, err := e.svc.People.Authenticate(ctx, domain.SessionRequest{Token: in.Token, CSRFToken: in.CSRFToken,
					Environment: domain.EnvTest, ProjectID: e.org.Project.ID})
				require.NoError(t, err)
				other := newEnv(t, dbtest.Open(t, dbtest.SQLite(t)))
				_, err = e.svc.People.Authenticate(ctx, domain.SessionRequest{Token: in.Token, CSRFToken: in.CSRFToken, ProjectID: other.org.Project.ID})
				requireCode(t, err, domain.CodeNotFound)
			})

			t.Run("IdleAndAbsoluteExpiry", func(t *testing.T) {
				in, _ := e.signIn("ada@example.com")
				for range 3 {
					e.clock.advance(50 * time.Minute)
					e.session(in) // used within the idle timeout: it lives on
				}
				e.clock.advance(31 * time.Minute) // 3h01 after sign-in
				_, err := e.svc.People.Authenticate(ctx, domain.SessionRequest{Token: in.Token, CSRFToken: in.CSRFToken})
				requireCode(t, err, domain.CodeInvalidSession)

				in, _ = e.signIn("ada@example.com")
				e.clock.advance(time.Hour + time.Minute)
				_, err = e.svc.People.Authenticate(ctx, domain.SessionRequest{Token: in.Token, CSRFToken: in.CSRFToken})
				requireCode(t, err, domain.CodeInvalidSession)
			})

			t.Run("SessionsRevoked", func(t *testing.T) {
				in1, p1 := e.signIn("ada@example.com")
				in2, p2 := e.signIn("ada@example.com")
				_, bob := e.signIn("bob@example.com")
				list, err := e.svc.People.ListSessions(ctx, p1)
				require.NoError(t, err)
				var ids []string
				for _, s := range list {
					ids = append(ids, s.ID)
				}
				require.Contains(t, ids, in1.Session.ID)
				require.Contains(t, ids, in2.Session.ID)
				requireCode(t, e.svc.People.RevokeSession(ctx, bob, in1.Session.ID), domain.CodeNotFound)
				require.NoError(t, e.svc.People.RevokeSession(ctx, p1, in2.Session.ID))
				_, err = e.svc.People.Authenticate(ctx, domain.SessionRequest{Token: in2.Token, CSRFToken: in2.CSRFToken})
				requireCode(t, err, domain.CodeInvalidSession)
				_ = p2

				require.NoError(t, e.svc.People.SignOut(ctx, p1))
				_, err = e.svc.People.Authenticate(ctx, domain.SessionRequest{Token: in1.Token, CSRFToken: in1.CSRFToken})
				requireCode(t, err, domain.CodeInvalidSession)

				a, pa := e.signIn("ada@example.com")
				b, _ := e.signIn("ada@example.com")
				requireCode(t, e.svc.People.ChangePassword(ctx, pa, "wrong current!", "a new password 1"), domain.CodeInvalidCredentials)
				require.NoError(t, e.svc.People.ChangePassword(ctx, pa, testPassword, "a new password 1"))
				e.session(a) // the one that changed it lives on
				_, err = e.svc.People.Authenticate(ctx, domain.SessionRequest{Token: b.Token, CSRFToken: b.CSRFToken})
				requireCode(t, err, domain.CodeInvalidSession) // the others end
				n, err := e.svc.People.SignOutEverywhere(ctx, pa)
				require.NoError(t, err)
				require.Equal(t, 1, n)
				_, err = e.svc.People.Authenticate(ctx, domain.SessionRequest{Token: a.Token, CSRFToken: a.CSRFToken})
				requireCode(t, err, domain.CodeInvalidSession)
				_, err = signIn("ada@example.com", "a new password 1")
				require.NoError(t, err)

				requireCode(t, e.svc.People.SignOut(ctx, e.p), domain.CodeForbidden)
			})
		})
	}
}

// TestMembers: invitations with a role, accepted once; an admin manages members but not
// roles or owners; the last owner can neither leave nor stop being one, even when two
// owners try to step down at once; a removed member's sessions end.
func TestMembers(t *testing.T) {
	t.Parallel()
	for _, dialect := range []struct {
		name string
		url  func(testing.TB) string
	}{{"SQLite", dbtest.SQLite}, {"Postgres", dbtest.Postgres}} {
		t.Run(dialect.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			e := newEnv(t, dbtest.Open(t, dialect.url(t)))
			owner := e.person("owner@example.com", domain.RoleOwner)
			e.person("admin@example.com", domain.RoleAdmin)
			_, po := e.signIn("owner@example.com")
			_, pa := e.signIn("admin@example.com")

			// The last owner stays.
			_, err := e.svc.People.ChangeRole(ctx, po, owner.Membership.ID, domain.RoleAdmin)
			requireCode(t, err, domain.CodeConflict)
			_, err = e.svc.People.RemoveMember(ctx, po, owner.Membership.ID)
			requireCode(t, err, domain.CodeConflict)

			// An admin invites, but not an owner; changes no role; removes no owner.
			_, _, err = e.svc.People.Invite(ctx, pa, "new@example.com", domain.RoleOwner)
			requireCode(t, err, domain.CodeInsufficientScope)
			inv, token, err := e.svc.People.Invite(ctx, pa, "New@Example.com", domain.RoleViewer)
			require.NoError(t, err)
			require.Equal(t, "new@example.com", inv.Email)
			_, _, err = e.svc.People.Invite(ctx, pa, "admin@example.com", domain.RoleViewer)
			requireCode(t, err, domain.CodeConflict)
			_, err = e.svc.People.ChangeRole(ctx, pa, owner.Membership.ID, domain.RoleViewer)
			requireCode(t, err, domain.CodeInsufficientScope)
			_, err = e.svc.People.RemoveMember(ctx, pa, owner.Membership.ID)
			requireCode(t, err, domain.CodeInsufficientScope)

			pv, err := e.svc.People.PreviewInvitation(ctx, token)
			require.NoError(t, err)
			require.False(t, pv.HasPassword)
			require.Equal(t, e.org.Organization.ID, pv.Organization.ID)
			_, err = e.svc.People.AcceptInvitation(ctx, token, "short", clientIP, "")
			requireCode(t, err, domain.CodeInvalidRequest)
			in, err := e.svc.People.AcceptInvitation(ctx, token, testPassword, clientIP, "test")
			require.NoError(t, err)
			require.Equal(t, domain.RoleViewer, in.Membership.Role)
			_, err = e.svc.People.AcceptInvitation(ctx, token, testPassword, clientIP, "")
			requireCode(t, err, domain.CodeNotFound)
			pending, err := e.svc.People.ListInvitations(ctx, pa)
			require.NoError(t, err)
			require.Empty(t, pending)
			viewer := e.session(in)
			_, err = e.svc.People.ListMembers(ctx, viewer)
			requireCode(t, err, domain.CodeInsufficientScope)
			members, err := e.svc.People.ListMembers(ctx, pa)
			require.NoError(t, err)
			require.Len(t, members, 3)

			// An invitation for an email with an account asks for its password.
			_, tok2, err := e.svc.People.Invite(ctx, po, "admin2@example.com", domain.RoleOwner)
			require.NoError(t, err)
			_, err = e.svc.People.CreateUser(ctx, domain.NewUser{OrganizationID: e.org.Organization.ID, Email: "admin2@example.com",
				Role: domain.RoleViewer, Password: testPassword})
			require.NoError(t, err)
			_, err = e.svc.People.AcceptInvitation(ctx, tok2, "somebody else's guess", clientIP, "")
			requireCode(t, err, domain.CodeInvalidCredentials)
			in2, err := e.svc.People.AcceptInvitation(ctx, tok2, testPassword, clientIP, "")
			require.NoError(t, err)
			require.Equal(t, domain.RoleViewer, in2.Membership.Role, "a member already keeps the role")

			// A removed member's session ends.
			_, err = e.svc.People.RemoveMember(ctx, pa, in.Membership.ID)
			require.NoError(t, err)
			_, err = e.svc.People.Authenticate(ctx, domain.SessionRequest{Token: in.Token, CSRFToken: in.CSRFToken})
			requireCode(t, err, domain.CodeInvalidSession)

			// With a second owner, either may step down — but not both at once.
			second := e.person("second@example.com", domain.RoleOwner)
			_, ps := e.signIn("second@example.com")
			var wg sync.WaitGroup
			errs := make([]error, 2)
			for i, x := range []struct {
				p  *domain.Principal
				id string
			}{{po, owner.Membership.ID}, {ps, second.Membership.ID}} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, errs[i] = e.svc.People.ChangeRole(ctx, x.p, x.id, domain.RoleAdmin)
				}()
			}
			wg.Wait()
			codes := []string{domain.ErrorCode(errs[0]), domain.ErrorCode(errs[1])}
			if errs[0] == nil {
				codes[0] = ""
			}
			if errs[1] == nil {
				codes[1] = ""
			}
			slices.Sort(codes)
			require.Contains(t, [][]string{{"", domain.CodeConflict}, {"", domain.CodeInsufficientScope}}, codes,
				"one steps down; the other is refused: %v", errs)
			n, err := e.db.CountMembers(ctx, e.org.Organization.ID, domain.RoleOwner)
			require.NoError(t, err)
			require.Equal(t, 1, n, "an owner remains")
		})
	}
}

// TestManageAsPrincipal: projects and keys need the manage scope, whoever asks; a key
// cannot be granted more than its maker holds; keys are listed masked with their last
// use, and a revoked key is refused at once.
func TestManageAsPrincipal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, dbtest.Open(t, dbtest.SQLite(t)))
	e.person("admin@example.com", domain.RoleAdmin)
	e.person("dev@example.com", domain.RoleDeveloper)
	_, admin := e.signIn("admin@example.com")
	_, dev := e.signIn("dev@example.com")

	_, err := e.svc.Organizations.CreateProjectAs(ctx, dev, "side", 0)
	requireCode(t, err, domain.CodeInsufficientScope)
	_, err = e.svc.Organizations.CreateProjectAs(ctx, e.p, "side", 0)
	requireCode(t, err, domain.CodeInsufficientScope) // a key listing no scopes cannot manage
	prj, err := e.svc.Organizations.CreateProjectAs(ctx, admin, " side ", 5)
	require.NoError(t, err)
	require.Equal(t, "side", prj.Name)
	_, err = e.svc.Organizations.CreateProjectAs(ctx, admin, "side", 0)
	requireCode(t, err, domain.CodeConflict)
	prj, err = e.svc.Organizations.UpdateProject(ctx, admin, prj.ID, domain.ProjectChange{Name: ptr("side b"), ConcurrencyLimit: ptr(0)})
	require.NoError(t, err)
	require.Equal(t, "side b", prj.Name)
	_, err = e.svc.Organizations.UpdateProject(ctx, admin, prj.ID, domain.ProjectChange{Name: ptr(e.org.Project.Name)})
	requireCode(t, err, domain.CodeConflict)
	projects, err := e.svc.Organizations.ListProjects(ctx, dev)
	require.NoError(t, err)
	require.Len(t, projects, 2)

	_, _, err = e.svc.Keys.CreateKeyAs(ctx, admin, domain.NewKey{Name: "k", Scopes: []string{domain.ScopeOrganization}}, 10)
	requireCode(t, err, domain.CodeInsufficientScope)
	key, secret, err := e.svc.Keys.CreateKeyAs(ctx, admin, domain.NewKey{Name: "ci", Scopes: []string{domain.ScopeFilesRead, domain.ScopeManage},
		AllowedProjects: []string{prj.ID}, ProjectID: prj.ID}, 10)
	require.NoError(t, err)
	require.Equal(t, domain.EnvLive, key.Environment, "the maker's environment")
	kp := e.principal(secret)
	_, _, err = e.svc.Keys.CreateKeyAs(ctx, kp, domain.NewKey{Name: "wider", Scopes: []string{domain.ScopeFilesWrite}}, 10)
	requireCode(t, err, domain.CodeInsufficientScope)
	_, _, err = e.svc.Keys.CreateKeyAs(ctx, kp, domain.NewKey{Name: "elsewhere", Scopes: []string{domain.ScopeFilesRead},
		ProjectID: e.org.Project.ID}, 10)
	requireCode(t, err, domain.CodeKeyRestricted)
	narrow, _, err := e.svc.Keys.CreateKeyAs(ctx, kp, domain.NewKey{Name: "narrow", Scopes: []string{domain.ScopeFilesRead}}, 10)
	require.NoError(t, err)
	require.Equal(t, []string{prj.ID}, narrow.AllowedProjects, "a restricted maker mints restricted keys")

	list, err := e.svc.Keys.ListKeysAs(ctx, admin, "", domain.Page{Limit: 2})
	require.NoError(t, err)
	require.Len(t, list.Data, 2)
	require.True(t, list.HasMore)
	require.Equal(t, narrow.ID, list.Data[0].ID, "newest first")
	got, err := e.db.FindAPIKeyByID(ctx, key.ID)
	require.NoError(t, err)
	require.NotNil(t, got.LastUsedAt, "the key's use is recorded")

	_, err = e.svc.Keys.RevokeKeyAs(ctx, dev, key.ID)
	requireCode(t, err, domain.CodeInsufficientScope)
	other := newEnv(t, dbtest.Open(t, dbtest.SQLite(t)))
	_, err = e.svc.Keys.RevokeKeyAs(ctx, admin, other.org.LiveKey.ID)
	requireCode(t, err, domain.CodeNotFound)
	revoked, err := e.svc.Keys.RevokeKeyAs(ctx, admin, key.ID)
	require.NoError(t, err)
	require.NotNil(t, revoked.RevokedAt)
	_, err = e.svc.Keys.Authenticate(ctx, secret, clientIP)
	requireCode(t, err, domain.CodeRevokedAPIKey)
	_, _, err = e.svc.Keys.CreateKeyAs(ctx, admin, domain.NewKey{Name: "one too many"}, 3)
	requireCode(t, err, domain.CodeConflict)
}
