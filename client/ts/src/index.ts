// The TypeScript SDK of filemill's /v1 API: types from rest/openapi.yaml
// (openapi-typescript, src/openapi.d.ts), requests through openapi-fetch, and the layer
// generators do not write: retries with backoff honouring Retry-After, an
// Idempotency-Key per POST kept across its retries, typed errors, paging, uploads
// (browser and Node) and webhook verification. Node helpers are in ./node.
export * from "./client.js";
export { FilemillError, type ErrorCode, type ErrorDetails } from "./errors.js";
export { defaultRetryPolicy, type RetryPolicy, type RetryInfo } from "./retry.js";
export { upload, defaultMultipartThreshold, type UploadClient, type UploadOptions, type UploadProgress, type UploadState, type UploadStateStore } from "./upload.js";
export type { JobProgress, WaitOptions } from "./wait.js";
export * from "./webhook.js";
export type { components, paths } from "./openapi.js";
