package door

import (
	"context"
	"net/http"
	"net/netip"

	"github.com/filemill/filemill/domain"
)

// Authenticator finds who a request acts for from one kind of credential: an API key
// (APIKeys), or — the console's — a session cookie. Another principal plugs in by
// implementing it; the door asks each in turn.
type Authenticator interface {
	// Authenticate returns who r, from the client address ip, acts for. (nil, nil): r
	// carries no credential of this kind, and the next authenticator is asked. A
	// refusal carries the domain's code (invalid_api_key, ip_not_allowed, …); an error
	// without one is a dependency that failed (the request is not counted against its
	// address: domain.RateLimits.Charge).
	Authenticate(r *http.Request, ip netip.Addr) (*Identity, error)
}

// InitAuthenticator is an Authenticator that also takes its credential from the first
// message of a websocket whose upgrade carried none (GraphQL's connection_init payload).
type InitAuthenticator interface {
	Authenticator
	// AuthenticateInit is Authenticate for the payload of a websocket's first message.
	AuthenticateInit(ctx context.Context, payload map[string]any, ip netip.Addr) (*Identity, error)
}

// Identity is who an authenticated request acts for: its principal (organization,
// environment, projects, scopes, limits), and the means to ask later whether the
// credential still holds.
type Identity struct {
	Principal *domain.Principal
	// Recheck authenticates the credential again, for a connection that outlives a
	// request (a websocket ends when its key is revoked or expires, its organization
	// suspended): nil while it holds, a contract error once it no longer does, another
	// error when it could not be checked.
	Recheck func(ctx context.Context) error
}

// APIKeys authenticates a bearer API key, "Authorization: Bearer <key>" (and in a
// websocket's connection_init, {"authorization": "Bearer <key>"}).
type APIKeys struct {
	Keys *domain.Keys
}

var _ InitAuthenticator = APIKeys{}

// Authenticate reads the key of the request's one Authorization header. Codes: those of
// domain.AuthorizationSecret and domain.Keys.Authenticate.
func (k APIKeys) Authenticate(r *http.Request, ip netip.Addr) (*Identity, error) {
	secret, err := domain.AuthorizationSecret(r.Header.Values("Authorization"))
	if err != nil || secret == "" {
		return nil, err
	}
	return k.key(r.Context(), secret, ip)
}

// AuthenticateInit reads the key of a connection_init payload's authorization (either
// case of the name). Codes: those of domain.BearerSecret and domain.Keys.Authenticate.
func (k APIKeys) AuthenticateInit(ctx context.Context, payload map[string]any, ip netip.Addr) (*Identity, error) {
	v, _ := payload["authorization"].(string)
	if v == "" {
		v, _ = payload["Authorization"].(string)
	}
	secret, err := domain.BearerSecret(v)
	if err != nil || secret == "" {
		return nil, err
	}
	return k.key(ctx, secret, ip)
}

func (k APIKeys) key(ctx context.Context, secret string, ip netip.Addr) (*Identity, error) {
	p, err := k.Keys.Authenticate(ctx, secret, ip)
	if err != nil {
		return nil, err
	}
	return &Identity{Principal: p, Recheck: func(ctx context.Context) error {
		_, err := k.Keys.Authenticate(ctx, secret, ip)
		return err
	}}, nil
}
