// Package door is the plumbing every front door mounts, written once: a request id and
// a logger carrying it, one access-log line per request, authentication by a list of
// Authenticators (an API key in the Authorization header, or the console's session
// cookie with its CSRF token: session.go), the rate limit charged before any refusal, and the X-RateLimit-* headers on
// every answer. The REST door and the GraphQL door (HTTP and websocket) both mount it,
// so a request is received the same way through either.
//
// The rules it applies are the domain's (domain/door.go: what counts as a credential,
// the order of charging and refusing, the refusals themselves): this package only reads
// them off an HTTP request. Each door renders a refusal in its own shape (Config.Refuse).
// It opens each request's server span (OpenTelemetry; a no-op unless the process
// traces), with the request id, organization and project as attributes.
// It imports domain, the OpenTelemetry API and the standard library, and must never
// import rest, graph, db, storage or jobs.
package door
