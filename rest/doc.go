// Package rest is the /v1 front door: handlers that decode a request, call one domain
// service method and encode its answer; the middleware every request passes (request
// id, authentication, rate limiting, idempotency, metrics, logs); the one table that
// maps error codes to HTTP statuses; and the OpenAPI document of the contract.
//
// It imports domain (and go-redis for the shared rate limiter) and must never import
// db, storage, jobs or graph: those arrive through domain interfaces, wired in cmd.
package rest
