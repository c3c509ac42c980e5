// Package rest is the /v1 front door: handlers that decode a request, call one domain
// service method and encode its answer; the routes mounted on the shared door plumbing
// (package door: request id, access log, authentication, rate limit), with metrics and
// a timeout of their own; the one table that maps error codes to HTTP statuses; and the
// OpenAPI document of the contract. What a principal may do — scopes included — and the
// Idempotency-Key are decided by the domain call a handler makes, never by a route.
//
// It imports domain and door and must never import db, storage, jobs or graph: those
// arrive through domain interfaces, wired in cmd.
package rest
