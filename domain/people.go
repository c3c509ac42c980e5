package domain

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"net/mail"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/argon2"
)

// People are the console's users: a person signs in with an email and a password and
// acts in an organization with a role. A role is a set of scopes, so a session's
// requests are decided by the same rules as a key's (Principal).

// Roles of a member of an organization, from most to least powerful.
const (
	RoleOwner     = "owner"
	RoleAdmin     = "admin"
	RoleDeveloper = "developer"
	RoleViewer    = "viewer"
)

// Roles lists the roles, most powerful first.
var Roles = []string{RoleOwner, RoleAdmin, RoleDeveloper, RoleViewer}

// roleScopes: a viewer reads; a developer also changes files, jobs and webhooks; an
// admin also manages keys, projects and members; an owner also roles and the
// organization itself.
var roleScopes = map[string][]string{
	RoleViewer:    {ScopeFilesRead, ScopeJobsRead, ScopeWebhooksRead, ScopeUsageRead},
	RoleDeveloper: {ScopeFilesRead, ScopeFilesWrite, ScopeJobsRead, ScopeJobsWrite, ScopeWebhooksRead, ScopeWebhooksWrite, ScopeUsageRead},
	RoleAdmin: {ScopeFilesRead, ScopeFilesWrite, ScopeJobsRead, ScopeJobsWrite, ScopeWebhooksRead, ScopeWebhooksWrite, ScopeUsageRead,
		ScopeManage},
	RoleOwner: {ScopeFilesRead, ScopeFilesWrite, ScopeJobsRead, ScopeJobsWrite, ScopeWebhooksRead, ScopeWebhooksWrite, ScopeUsageRead,
		ScopeManage, ScopeOrganization},
}

// RoleScopes returns the scopes a role grants; nil for an unknown role.
func RoleScopes(role string) []string { return slices.Clone(roleScopes[role]) }

// ValidRole reports whether role is one of Roles.
func ValidRole(role string) bool { return slices.Contains(Roles, role) }

// User is a person who signs in to the console. Email is kept lower-case and is unique.
type User struct {
	ID    string `bun:"id,pk"`
	Email string `bun:"email,notnull"`
	// PasswordHash is the argon2id hash in PHC form; "" until a password is set.
	PasswordHash  string     `bun:"password_hash,notnull"`
	PasswordSetAt *time.Time `bun:"password_set_at"`
	CreatedAt     time.Time  `bun:"created_at,notnull"`
}

// Membership is a user's place in an organization.
type Membership struct {
	ID             string    `bun:"id,pk"`
	OrganizationID string    `bun:"organization_id,notnull"`
	UserID         string    `bun:"user_id,notnull"`
	Role           string    `bun:"role,notnull"`
	CreatedAt      time.Time `bun:"created_at,notnull"`
	// Email is the user's, read with the membership when it is listed.
	Email string `bun:"-"`
}

// Session is a signed-in browser. The browser holds the token (an HttpOnly cookie) and
// the CSRF token every request repeats in a header; only their hashes are stored.
type Session struct {
	ID             string     `bun:"id,pk"`
	UserID         string     `bun:"user_id,notnull"`
	OrganizationID string     `bun:"organization_id,notnull"`
	TokenHash      string     `bun:"token_hash,notnull"`
	CSRFHash       string     `bun:"csrf_hash,notnull"`
	IP             string     `bun:"ip,notnull"`
	UserAgent      string     `bun:"user_agent,notnull"`
	CreatedAt      time.Time  `bun:"created_at,notnull"`
	LastSeenAt     time.Time  `bun:"last_seen_at,notnull"`
	ExpiresAt      time.Time  `bun:"expires_at,notnull"` // the absolute end, whatever its use
	RevokedAt      *time.Time `bun:"revoked_at"`
}

// Invitation is a one-time link that makes whoever opens it a member with a role.
type Invitation struct {
	ID             string     `bun:"id,pk"`
	OrganizationID string     `bun:"organization_id,notnull"`
	Email          string     `bun:"email,notnull"`
	Role           string     `bun:"role,notnull"`
	TokenHash      string     `bun:"token_hash,notnull"`
	InvitedBy      string     `bun:"invited_by,notnull"` // a user or key id
	CreatedAt      time.Time  `bun:"created_at,notnull"`
	ExpiresAt      time.Time  `bun:"expires_at,notnull"`
	AcceptedAt     *time.Time `bun:"accepted_at"`
	RevokedAt      *time.Time `bun:"revoked_at"`
}

// Pending reports whether the invitation can still be accepted at now.
func (i *Invitation) Pending(now time.Time) bool {
	return i.AcceptedAt == nil && i.RevokedAt == nil && now.Before(i.ExpiresAt)
}

// PasswordToken is a one-time link to set a user's password: printed by the admin CLI
// for a user created without one (no mail server is needed).
type PasswordToken struct {
	ID        string     `bun:"id,pk"`
	UserID    string     `bun:"user_id,notnull"`
	TokenHash string     `bun:"token_hash,notnull"`
	CreatedAt time.Time  `bun:"created_at,notnull"`
	ExpiresAt time.Time  `bun:"expires_at,notnull"`
	UsedAt    *time.Time `bun:"used_at"`
}

// SignInThrottle counts the failed sign-ins of one email, whether or not an account
// has it, so a lockout tells nothing about which emails exist.
type SignInThrottle struct {
	Key         string     `bun:"key,pk"`
	Failures    int        `bun:"failures,notnull"`
	WindowStart time.Time  `bun:"window_start,notnull"`
	LockedUntil *time.Time `bun:"locked_until"`
}

// Id prefixes of the console's people, and the shapes of their secrets.
const (
	PrefixUser          = "usr_"
	PrefixMembership    = "mem_"
	PrefixSession       = "ses_"
	PrefixInvitation    = "inv_"
	PrefixPasswordToken = "pwt_"

	sessionTokenPrefix    = "fms_"
	invitationTokenPrefix = "fmi_"
	passwordTokenPrefix   = "fmp_"
)

// newToken returns prefix followed by 160 random bits, base32: like a key secret, safe
// to store as a plain SHA-256.
func newToken(prefix string) string {
	b := make([]byte, 20)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return prefix + keyEncoding.EncodeToString(b)
}

// wellFormedToken reports whether s has the shape newToken(prefix) makes, so a
// malformed cookie or link costs no database round-trip.
func wellFormedToken(prefix, s string) bool {
	rest, ok := strings.CutPrefix(s, prefix)
	if !ok || len(rest) != keyRandomLen {
		return false
	}
	_, err := keyEncoding.DecodeString(rest)
	return err == nil
}

// sameHash compares a secret against a stored hash in constant time.
func sameHash(secret, hash string) bool {
	return subtle.ConstantTimeCompare([]byte(HashKey(secret)), []byte(hash)) == 1
}

// NormalizeEmail trims and lower-cases an email and checks its shape. Codes:
// invalid_request (param email).
func NormalizeEmail(s string) (string, error) {
	e := strings.ToLower(strings.TrimSpace(s))
	if e == "" {
		return "", InvalidParam("email", "an email is required")
	}
	if len(e) > 254 {
		return "", InvalidParam("email", "an email has at most 254 characters")
	}
	a, err := mail.ParseAddress(e)
	if err != nil || a.Address != e {
		return "", InvalidParam("email", "%q is not an email address", s)
	}
	return e, nil
}

// Password bounds: long enough to resist guessing, short enough that hashing one costs
// a bounded amount.
const (
	MinPasswordLength = 10
	MaxPasswordLength = 256
)

// checkPassword refuses a password out of bounds. Codes: invalid_request (param password).
func checkPassword(param, pw string) error {
	if n := len([]rune(pw)); n < MinPasswordLength || len(pw) > MaxPasswordLength {
		return InvalidParam(param, "a password has %d to %d characters", MinPasswordLength, MaxPasswordLength)
	}
	return nil
}

// argon2id parameters: RFC 9106's second recommended option scaled to OWASP's minimum
// for a server (19 MiB, 2 passes, 1 lane): 68 ms a hash on the shared 2-core test
// machine (go test -bench, 30 hashes).
const (
	argonMemory  = 19 * 1024 // KiB
	argonTime    = 2
	argonThreads = 1
	argonKeyLen  = 32
	argonSaltLen = 16
)

// hashSlots bounds the hashes computed at once: each holds argonMemory, so a burst of
// sign-ins queues instead of exhausting memory.
var hashSlots = make(chan struct{}, max(2, runtime.GOMAXPROCS(0)))

// HashPassword returns the argon2id hash of pw in PHC string form.
func HashPassword(pw string) string {
	salt := make([]byte, argonSaltLen)
	if _, err := rand.Read(salt); err != nil {
		panic(err)
	}
	hashSlots <- struct{}{}
	key := argon2.IDKey([]byte(pw), salt, argonTime, argonMemory, argonThreads, argonKeyLen)
	<-hashSlots
	enc := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemory, argonTime, argonThreads,
		enc.EncodeToString(salt), enc.EncodeToString(key))
}

// VerifyPassword reports whether pw matches a hash made by HashPassword (with whatever
// parameters it was made with). A malformed hash matches nothing.
func VerifyPassword(pw, hash string) bool {
	parts := strings.Split(hash, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return false
	}
	var version int
	var mem, iters uint32
	var threads uint8
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return false
	}
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &mem, &iters, &threads); err != nil ||
		mem == 0 || mem > 256*1024 || iters == 0 || iters > 10 || threads == 0 {
		return false // bounded: a stored hash cannot make a check arbitrarily costly
	}
	enc := base64.RawStdEncoding
	salt, err1 := enc.DecodeString(parts[4])
	want, err2 := enc.DecodeString(parts[5])
	if err1 != nil || err2 != nil || len(want) == 0 || len(want) > 64 {
		return false
	}
	hashSlots <- struct{}{}
	got := argon2.IDKey([]byte(pw), salt, iters, mem, threads, uint32(len(want)))
	<-hashSlots
	return subtle.ConstantTimeCompare(got, want) == 1
}

// decoyHash is checked when a sign-in names no account (or one without a password), so
// a wrong email takes as long as a wrong password.
var decoyHash = sync.OnceValue(func() string { return HashPassword(newToken("decoy_")) })

// Paths of the console's one-time links, below the deployment's public URL. The token
// travels in the fragment, which browsers never send to a server (nor to its logs).
const (
	InvitationPath  = "/console/invitation#token="
	SetPasswordPath = "/console/set-password#token="
)

// idSum is a short stable digest, for rate-limit buckets named after what a client typed.
func idSum(s string) string {
	sum := sha256.Sum256([]byte(s))
	return base64.RawURLEncoding.EncodeToString(sum[:12])
}
