package domain

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"
)

// Key secrets look like fm_live_<32 base32 chars> or fm_test_<…>: the environment is
// visible in the key, and 160 random bits make a plain SHA-256 a safe stored form.
const (
	keyPrefixLive = "fm_live_"
	keyPrefixTest = "fm_test_"
	keyRandomLen  = 32
)

var keyEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// HashKey returns the stored form of a key secret.
func HashKey(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

func newKeySecret(env Environment) string {
	b := make([]byte, 20)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	prefix := keyPrefixLive
	if env == EnvTest {
		prefix = keyPrefixTest
	}
	return prefix + keyEncoding.EncodeToString(b)
}

// wellFormedKey reports whether s has the shape of a key, so a malformed bearer token
// costs no database round-trip.
func wellFormedKey(s string) bool {
	var rest string
	switch {
	case strings.HasPrefix(s, keyPrefixLive):
		rest = s[len(keyPrefixLive):]
	case strings.HasPrefix(s, keyPrefixTest):
		rest = s[len(keyPrefixTest):]
	default:
		return false
	}
	if len(rest) != keyRandomLen {
		return false
	}
	_, err := keyEncoding.DecodeString(rest)
	return err == nil
}

// NewKey describes a key to create.
type NewKey struct {
	OrganizationID    string
	ProjectID         string
	Environment       Environment
	Name              string
	Scopes            []string
	IPAllowList       []string // CIDRs or single addresses
	AllowedOperations []string
	AllowedProjects   []string
	SpendLimit        int64
	RateLimit         int
	ExpiresAt         *time.Time
}

// Keys issues, lists, revokes and checks API keys: organizations, their projects and
// keys are all it reads and writes.
type Keys struct {
	Store TenantStore
	Clock Clock
	cache *authCache

	mu      sync.Mutex
	touched map[string]time.Time // when this process last wrote a key's last use
}

// KeyUseResolution is how often a key's last use is written at most: a busy key costs
// one write a minute, not one per request.
const KeyUseResolution = time.Minute

// noteUse records that key authenticated a request at now, at most once per
// KeyUseResolution. Best effort: a failed write leaves the older time.
func (k *Keys) noteUse(ctx context.Context, key *APIKey, now time.Time) {
	if key.LastUsedAt != nil && now.Sub(*key.LastUsedAt) < KeyUseResolution {
		return
	}
	k.mu.Lock()
	if last, ok := k.touched[key.ID]; ok && now.Sub(last) < KeyUseResolution {
		k.mu.Unlock()
		return
	}
	if k.touched == nil || len(k.touched) >= 10000 {
		k.touched = map[string]time.Time{} // bounded: forgetting costs one more write
	}
	k.touched[key.ID] = now
	k.mu.Unlock()
	_ = k.Store.TouchAPIKey(context.WithoutCancel(ctx), key.ID, now)
}

// CreateKey mints a key and returns it with its secret, which is never shown again.
// Codes: invalid_request (bad scope, CIDR, environment), not_found (project).
func (k *Keys) CreateKey(ctx context.Context, nk NewKey) (*APIKey, string, error) {
	if !nk.Environment.Valid() {
		return nil, "", InvalidParam("environment", "environment must be live or test")
	}
	for _, s := range nk.Scopes {
		if !slices.Contains(AllScopes, s) {
			return nil, "", InvalidParam("scopes", "unknown scope %q (known: %s)", s, strings.Join(AllScopes, ", "))
		}
	}
	allow, err := normalizeCIDRs(nk.IPAllowList)
	if err != nil {
		return nil, "", err
	}
	if nk.SpendLimit < 0 || nk.RateLimit < 0 {
		return nil, "", InvalidParam("spend_limit", "limits must not be negative")
	}
	prj, err := k.Store.FindProjectByID(ctx, nk.ProjectID)
	if err != nil || prj.OrganizationID != nk.OrganizationID {
		return nil, "", NotFound("project")
	}
	for _, p := range nk.AllowedProjects {
		ap, err := k.Store.FindProjectByID(ctx, p)
		if err != nil || ap.OrganizationID != nk.OrganizationID {
			return nil, "", &Error{Code: CodeNotFound, Message: "no such project " + p, Param: "allowed_projects"}
		}
	}
	secret := newKeySecret(nk.Environment)
	key := &APIKey{
		ID:                NewID(PrefixAPIKey),
		OrganizationID:    nk.OrganizationID,
		ProjectID:         nk.ProjectID,
		Environment:       nk.Environment,
		Name:              nk.Name,
		Hash:              HashKey(secret),
		Hint:              secret[:len(keyPrefixLive)+4],
		Scopes:            orEmpty(nk.Scopes),
		IPAllowList:       allow,
		AllowedOperations: orEmpty(nk.AllowedOperations),
		AllowedProjects:   orEmpty(nk.AllowedProjects),
		SpendLimit:        nk.SpendLimit,
		RateLimit:         nk.RateLimit,
		ExpiresAt:         nk.ExpiresAt,
		CreatedAt:         k.Clock.Now(),
	}
	if err := k.Store.CreateAPIKey(ctx, key); err != nil {
		return nil, "", fmt.Errorf("create key: %w", err)
	}
	return key, secret, nil
}

// ListKeys returns an organization's keys (optionally one project's).
func (k *Keys) ListKeys(ctx context.Context, f APIKeyFilter) ([]*APIKey, error) {
	return k.Store.FindAPIKeys(ctx, f)
}

// RevokeKey revokes a key at once. Codes: not_found.
func (k *Keys) RevokeKey(ctx context.Context, id string) error {
	if _, err := k.Store.FindAPIKeyByID(ctx, id); err != nil {
		if errors.Is(err, ErrNotFound) {
			return NotFound("key")
		}
		return err
	}
	if err := k.Store.RevokeAPIKey(ctx, id, k.Clock.Now()); err != nil {
		return err
	}
	k.cache.forget(func(key *APIKey) bool { return key.ID == id })
	return nil
}

// Authenticate turns a bearer secret and the caller's address into a Principal.
// Codes: missing_credentials, invalid_api_key, revoked_api_key, expired_api_key,
// organization_suspended, ip_not_allowed.
func (k *Keys) Authenticate(ctx context.Context, secret string, ip netip.Addr) (*Principal, error) {
	if secret == "" {
		return nil, NoCredentials()
	}
	if !wellFormedKey(secret) {
		return nil, Errorf(CodeInvalidAPIKey, "the API key is not valid")
	}
	hash, now := HashKey(secret), k.Clock.Now()
	p, ok := k.cache.get(hash, now)
	if !ok {
		key, org, prj, err := k.Store.FindAPIKeyByHash(ctx, hash)
		if errors.Is(err, ErrNotFound) {
			return nil, Errorf(CodeInvalidAPIKey, "the API key is not valid")
		}
		if err != nil {
			return nil, fmt.Errorf("find key: %w", err)
		}
		p = &Principal{Key: key, Organization: org, Project: prj}
		k.cache.put(hash, p, now)
	}
	key, org := p.Key, p.Organization
	if key.RevokedAt != nil {
		return nil, Errorf(CodeRevokedAPIKey, "the API key was revoked")
	}
	if key.ExpiresAt != nil && !now.Before(*key.ExpiresAt) {
		return nil, Errorf(CodeExpiredAPIKey, "the API key expired at %s", key.ExpiresAt.UTC().Format(time.RFC3339))
	}
	if org.Status == OrgSuspended {
		return nil, Errorf(CodeOrganizationSuspended, "the organization is suspended")
	}
	if !ipAllowed(key.IPAllowList, ip) {
		return nil, Errorf(CodeIPNotAllowed, "requests from %s are not allowed for this key", ip)
	}
	k.noteUse(ctx, key, now)
	return p, nil
}

func normalizeCIDRs(in []string) ([]string, error) {
	out := make([]string, 0, len(in))
	for _, s := range in {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if !strings.Contains(s, "/") {
			a, err := netip.ParseAddr(s)
			if err != nil {
				return nil, InvalidParam("ip_allow_list", "%q is not an IP address or CIDR", s)
			}
			out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()).String())
			continue
		}
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, InvalidParam("ip_allow_list", "%q is not an IP address or CIDR", s)
		}
		out = append(out, p.Masked().String())
	}
	return out, nil
}

func ipAllowed(allow []string, ip netip.Addr) bool {
	if len(allow) == 0 {
		return true
	}
	ip = ip.Unmap()
	for _, s := range allow {
		if p, err := netip.ParsePrefix(s); err == nil && p.Contains(ip) {
			return true
		}
	}
	return false
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// Principal is who a request acts for: an API key, or a person signed in to the
// console, with its organization. Every rule reads Key, so both are decided alike: for
// a session, Key is the grant of the person's role — never stored, its ID the user's,
// its scopes the role's, its project and environment those the console chose, its
// rate limit the console's.
type Principal struct {
	Key          *APIKey
	Organization *Organization
	// Project is the key's own project as read at authentication (at most
	// AuthCacheTTL old); nil when the principal was built without it.
	Project *Project
	// Session, User and Role are set for a console session, nil and "" for a key.
	Session *Session
	User    *User
	Role    string
}

// Actor names who acts, for messages: "this key", or "your role (viewer)".
func (p *Principal) actor() string {
	if p.Session != nil {
		return "your role (" + p.Role + ")"
	}
	return "this key"
}

// Environment is the environment the key acts in.
func (p *Principal) Environment() Environment { return p.Key.Environment }

// HasScope reports whether the principal holds scope. A key with no scopes has the
// data scopes, never the management ones.
func (p *Principal) HasScope(scope string) bool {
	if len(p.Key.Scopes) == 0 {
		return !slices.Contains(ManageScopes, scope)
	}
	return slices.Contains(p.Key.Scopes, scope)
}

// Scopes lists the scopes the principal holds.
func (p *Principal) Scopes() []string {
	if len(p.Key.Scopes) == 0 {
		return slices.Clone(DataScopes)
	}
	return slices.Clone(p.Key.Scopes)
}

// RequireScope refuses a principal that lacks scope. Codes: insufficient_scope.
func (p *Principal) RequireScope(scope string) error {
	if p.HasScope(scope) {
		return nil
	}
	msg := "this key lacks the scope " + scope
	if p.Session != nil {
		msg = p.actor() + " does not allow this (it lacks the scope " + scope + ")"
	}
	return &Error{Code: CodeInsufficientScope, Message: msg, Details: map[string]any{"required_scope": scope}}
}

// RequireOperation refuses a key restricted to other operations. Codes: operation_not_allowed.
func (p *Principal) RequireOperation(name string) error {
	if len(p.Key.AllowedOperations) == 0 || slices.Contains(p.Key.AllowedOperations, name) {
		return nil
	}
	return &Error{Code: CodeOperationNotAllowed, Message: "this key may not run " + name}
}

// CheckProject refuses a project outside a restricted key's allowed projects; an
// unrestricted key may act on every project of its organization. Codes: key_restricted.
func (p *Principal) CheckProject(projectID string) error {
	// A key may always act on its own project; allowed projects widen nothing else.
	if len(p.Key.AllowedProjects) == 0 || projectID == p.Key.ProjectID ||
		slices.Contains(p.Key.AllowedProjects, projectID) {
		return nil
	}
	return &Error{Code: CodeKeyRestricted, Message: "this key may not act on project " + projectID, Param: "project_id"}
}

// CheckResource decides whether the key may see a resource: another organization's
// resource does not exist for it (404), the other environment is 403
// environment_mismatch, a project outside the key's restriction is 403 key_restricted.
func (p *Principal) CheckResource(kind, orgID, projectID string, env Environment) error {
	if orgID != p.Organization.ID {
		return NotFound(kind)
	}
	if env != p.Key.Environment {
		return &Error{Code: CodeEnvironmentMismatch,
			Message: fmt.Sprintf("this %s belongs to the %s environment; the key is a %s key", kind, env, p.Key.Environment)}
	}
	return p.CheckProject(projectID)
}

// ResolveProject returns the project a request acts on: the requested one, or the
// key's own. Codes: not_found (unknown or another organization's), key_restricted.
func (p *Principal) ResolveProject(ctx context.Context, store TenantStore, requested string) (*Project, error) {
	id := requested
	if id == "" {
		id = p.Key.ProjectID
	}
	if id == p.Key.ProjectID && p.Project != nil {
		// Read with the key: projects never move between organizations.
		if err := p.CheckProject(id); err != nil {
			return nil, err
		}
		prj := *p.Project
		return &prj, nil
	}
	prj, err := store.FindProjectByID(ctx, id)
	if errors.Is(err, ErrNotFound) || (err == nil && prj.OrganizationID != p.Organization.ID) {
		return nil, &Error{Code: CodeNotFound, Message: "no such project", Param: "project_id"}
	}
	if err != nil {
		return nil, fmt.Errorf("find project: %w", err)
	}
	if err := p.CheckProject(prj.ID); err != nil {
		return nil, err
	}
	return prj, nil
}
