package domain

import (
	"context"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// What every front door does with a request before it reaches a service: find the key
// and the client's address, refuse when its rate-limit bucket is empty. Both doors call
// these, so a request is judged the same through either.

// QueryKeyParams are query parameters that look like a credential: a key in a URL ends
// up in logs and browser history, so it is refused even next to a valid header.
var QueryKeyParams = []string{"api_key", "key", "access_token"}

// CheckQueryForKey refuses a request whose query string carries a credential.
// Codes: api_key_in_query.
func CheckQueryForKey(has func(name string) bool) error {
	for _, name := range QueryKeyParams {
		if has(name) {
			return &Error{Code: CodeAPIKeyInQuery, Param: name,
				Message: "API keys must not be sent in the query string; use the Authorization header (and rotate the key: URLs get logged)"}
		}
	}
	return nil
}

// AuthorizationSecret returns the key of a request's Authorization values: exactly one,
// "Bearer <key>" (the scheme in any case); "" when there is none. Codes:
// invalid_api_key.
func AuthorizationSecret(values []string) (string, error) {
	if len(values) > 1 {
		// Which one counts would be up to whichever proxy reads it: none does.
		return "", Errorf(CodeInvalidAPIKey, "send exactly one Authorization header")
	}
	if len(values) == 0 {
		return "", nil
	}
	return BearerSecret(values[0])
}

// BearerSecret returns the key of one Authorization value, "Bearer <key>" (the scheme
// in any case); "" when the value is empty. Codes: invalid_api_key.
func BearerSecret(authorization string) (string, error) {
	if authorization == "" {
		return "", nil
	}
	scheme, token, ok := strings.Cut(authorization, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
		return "", Errorf(CodeInvalidAPIKey, "the Authorization header must be 'Bearer <key>'")
	}
	return strings.TrimSpace(token), nil
}

// RateLimited is the refusal of a request whose bucket is empty. Codes: rate_limited.
func RateLimited(d RateDecision) *Error {
	retry := int((d.RetryAfter + time.Second - 1) / time.Second)
	if retry < 1 {
		retry = 1
	}
	return &Error{Code: CodeRateLimited, RetryAfter: retry,
		Message: "too many requests: the limit is " + strconv.Itoa(d.Limit) + " per minute"}
}

// ClientAddr is the address of a request's peer (host:port or a bare address).
// Forwarded headers are not trusted: a deployment behind a proxy terminates there and
// allow-lists apply to the proxy's view.
func ClientAddr(remoteAddr string) netip.Addr {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.IPv4Unspecified()
	}
	return a.Unmap()
}

// Run makes a mutating request without an idempotency key: authorized as Do authorizes
// it, its effect run, nothing claimed or stored. The GraphQL door's mutations come this
// way when the client sends no idempotencyKey (REST requires the key).
func (s *Services) Run(ctx context.Context, p *Principal, req Request) (*Answer, error) {
	g, err := req.authorize(ctx, s, p)
	if err != nil {
		return nil, err
	}
	return g.run(ctx, nil)
}

// NoCredentials is the refusal of a request that carries no credential at all.
// Codes: missing_credentials.
func NoCredentials() *Error {
	return Errorf(CodeMissingCredentials, "no API key: send Authorization: Bearer <key>")
}

// Admit decides whether an authenticated request (or one authentication refused, with
// authErr) goes on, in the one order every door keeps: the rate limit is charged first
// (Charge) and its refusal comes before any other, so a client trying keys is slowed as
// any other is; then authentication's own refusal. The decision is the rate-limit state
// every answer reports, a refusal included. p is nil (and authErr nil) for a request
// that needs no principal, or that authenticates later (a websocket, in its first
// message): it counts against the client address. Codes: rate_limited, those of authErr.
func (r *RateLimits) Admit(ctx context.Context, p *Principal, authErr error, ip netip.Addr) (RateDecision, error) {
	d := r.Charge(ctx, p, authErr, ip)
	if !d.Allowed {
		return d, RateLimited(d)
	}
	return d, authErr
}

// Charge takes a request's token after authentication: from the key's bucket, or from
// the client address's when no key was accepted. A request whose key could not be
// checked at all (authErr without a contract code: a dependency is down) takes none —
// its answer only reports the address's bucket — so clients behind one address are not
// locked out by an outage.
func (r *RateLimits) Charge(ctx context.Context, p *Principal, authErr error, ip netip.Addr) RateDecision {
	switch {
	case authErr == nil:
		return r.Allow(ctx, p, ip)
	case AsError(authErr) == nil:
		d := r.Peek(ctx, ip)
		d.Allowed = true // the outage is the answer
		return d
	}
	return r.Allow(ctx, nil, ip)
}
