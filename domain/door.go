package domain

import (
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// What every front door does with a request before it reaches a service: find the key,
// pick its rate-limit bucket, refuse when the bucket is empty. Both doors call these, so
// a request is judged the same through either.

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

// BearerSecret returns the key of an Authorization value, "Bearer <key>" (the scheme
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

// RateBucket names the rate-limit bucket of a request and its size per minute: the
// key's own (its limit, or the deployment's), or the client address's when no key was
// accepted (p nil).
func (c Config) RateBucket(p *Principal, ip netip.Addr) (bucket string, perMinute int) {
	if p == nil {
		return "ip:" + ip.String(), c.DefaultRateLimit
	}
	if p.Key.RateLimit > 0 {
		return "key:" + p.Key.ID, p.Key.RateLimit
	}
	return "key:" + p.Key.ID, c.DefaultRateLimit
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

// OptionalPositive reads an optional count that must be at least 1 when it is given;
// absent is 0. Codes: invalid_request naming param.
func OptionalPositive(param string, v *int64) (int64, error) {
	if v == nil {
		return 0, nil
	}
	if *v < 1 {
		return 0, InvalidParam(param, "%s must be at least 1", param)
	}
	return *v, nil
}
