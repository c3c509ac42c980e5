// Package api is the generated half of the Go SDK: the types and requests of the /v1
// contract, made by oapi-codegen from rest/openapi.yaml (see oapi-codegen.yaml). Do not
// edit openapi.gen.go; run `make generate`.
//
// Most programs use package client, which sends these requests with retries,
// idempotency keys, paging, uploads and waiting. Client and ClientWithResponses here
// are the plain requests, for a call the hand-written layer does not wrap.
//
// It imports nothing of the server: only the standard library and oapi-codegen's runtime.
package api

//go:generate go tool oapi-codegen -config oapi-codegen.yaml ../../rest/openapi.yaml
