// Package client is the Go SDK of filemill's /v1 API.
//
// The types and requests are generated from rest/openapi.yaml into package api
// (oapi-codegen; `make generate`). This package is the small layer on top that
// generators do not write:
//
//   - Retries: a connection error, 429, 502, 503, 504, or an idempotency conflict whose
//     first request is still running, is tried again with exponential backoff and
//     jitter, honouring Retry-After, within the context's deadline (RetryPolicy).
//   - Idempotency: every POST carries an Idempotency-Key made once per call and kept
//     by all its retries, so a retried call has the effect of one
//     (WithIdempotencyKey to choose it).
//   - Errors: a non-2xx answer is an *APIError with the status, code, param and
//     request id; match it with errors.As.
//   - Paging: Files, Jobs, JobArtifacts, Events, WebhookEndpoints and
//     WebhookDeliveries are iter.Seq2 iterators that follow next_cursor; Pages walks
//     any list called through API(), and Decode reads any of its answers (into
//     json.RawMessage to keep the API's JSON as it came).
//   - Uploads: UploadFile sends a file straight to storage, in one PUT or in parallel
//     parts with bounded memory, reports progress, resumes a multipart session from a
//     small state file after a crash, and completes the file.
//   - Waiting: WaitJob follows a job over the GraphQL jobUpdated subscription and polls
//     when websockets are refused.
//   - Events: SubscribeEvents follows a project's events as they happen (the GraphQL
//     events subscription).
//   - Downloads: Download writes a file or an artifact through a minted URL.
//   - Webhooks: package webhook verifies a signed delivery and decodes its event, and
//     signs one the same way (for a local forwarder or a receiver's tests).
//
// It imports its own generated code (package api), the standard library, oapi-codegen's
// runtime, gorilla/websocket and x/sync; never the server's packages.
package client
