package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/filemill/filemill/client/api"
)

// Every POST below takes one Idempotency-Key for the whole call: made before the first
// attempt (or taken from WithIdempotencyKey), kept by each retry, so a retried call has
// the effect of one.

// CreateUpload opens an upload session for bytes the client PUTs (filename and
// byte_size); UploadFile does the whole upload. For from_url use ImportURL.
func (c *Client) CreateUpload(ctx context.Context, req api.CreateUploadRequest) (*api.Upload, error) {
	if req.FromUrl != nil {
		return nil, errors.New("filemill: CreateUpload with from_url answers a file: use ImportURL")
	}
	return decode[api.Upload](c.api.CreateUpload(ctx, &api.CreateUploadParams{IdempotencyKey: idempotencyKey(ctx)}, req))
}

// ImportURL has the platform fetch a public HTTPS URL (req.FromUrl) and answers the
// completed, validated file.
func (c *Client) ImportURL(ctx context.Context, req api.CreateUploadRequest) (*api.File, error) {
	if req.FromUrl == nil {
		return nil, errors.New("filemill: ImportURL needs from_url")
	}
	return decode[api.File](c.api.CreateUpload(ctx, &api.CreateUploadParams{IdempotencyKey: idempotencyKey(ctx)}, req))
}

// GetUpload returns an upload session, with fresh URLs while it is open.
func (c *Client) GetUpload(ctx context.Context, uploadID string) (*api.Upload, error) {
	return decode[api.Upload](c.api.GetUpload(ctx, uploadID))
}

// RemintUploadParts answers a multipart session with a fresh URL for every part: the
// resume path.
func (c *Client) RemintUploadParts(ctx context.Context, uploadID string) (*api.Upload, error) {
	return decode[api.Upload](c.api.RemintUploadParts(ctx, uploadID, &api.RemintUploadPartsParams{IdempotencyKey: idempotencyKey(ctx)}))
}

// PartETag is one uploaded part: its number and the ETag its PUT answered.
type PartETag struct {
	PartNumber int    `json:"part_number"`
	ETag       string `json:"etag"`
}

// CompleteUploadParts assembles the parts of a multipart session and completes the
// file (detection, validation policy, SHA-256, duplicate detection).
func (c *Client) CompleteUploadParts(ctx context.Context, uploadID string, parts []PartETag) (*api.File, error) {
	body, err := json.Marshal(struct {
		Parts []PartETag `json:"parts"`
	}{parts})
	if err != nil {
		return nil, err
	}
	return decode[api.File](c.api.CompleteUploadPartsWithBody(ctx, uploadID,
		&api.CompleteUploadPartsParams{IdempotencyKey: idempotencyKey(ctx)}, "application/json", bytes.NewReader(body)))
}

// AbortUpload discards a session and its uploaded parts.
func (c *Client) AbortUpload(ctx context.Context, uploadID string) error {
	return noContent(c.api.AbortUpload(ctx, uploadID, &api.AbortUploadParams{IdempotencyKey: idempotencyKey(ctx)}))
}

// Complete declares that the bytes of a single-PUT upload have landed, and answers the
// file once detected, validated and hashed. A file failing its policy is an *APIError
// with code validation_failed and the findings in Details.
func (c *Client) Complete(ctx context.Context, fileID string) (*api.File, error) {
	return decode[api.File](c.api.CompleteFile(ctx, fileID, &api.CompleteFileParams{IdempotencyKey: idempotencyKey(ctx)}))
}

// GetFile returns a file with its artifacts.
func (c *Client) GetFile(ctx context.Context, fileID string) (*api.File, error) {
	return decode[api.File](c.api.GetFile(ctx, fileID))
}

// DeleteFile deletes a file and its artifacts.
func (c *Client) DeleteFile(ctx context.Context, fileID string) error {
	return noContent(c.api.DeleteFile(ctx, fileID))
}

// CreateDownloadURL mints a short-lived URL for the file (or one of its artifacts, by
// req.ArtifactId).
func (c *Client) CreateDownloadURL(ctx context.Context, fileID string, req api.DownloadUrlRequest) (*api.DownloadUrl, error) {
	return decode[api.DownloadUrl](c.api.CreateDownloadUrl(ctx, fileID, &api.CreateDownloadUrlParams{IdempotencyKey: idempotencyKey(ctx)}, req))
}

// CreateJob runs an operation or a preset on a file; the job is queued, its credits
// reserved. WaitJob follows it to its end.
func (c *Client) CreateJob(ctx context.Context, req api.CreateJobRequest) (*api.Job, error) {
	return decode[api.Job](c.api.CreateJob(ctx, &api.CreateJobParams{IdempotencyKey: idempotencyKey(ctx)}, req))
}

// GetJob returns a job.
func (c *Client) GetJob(ctx context.Context, jobID string) (*api.Job, error) {
	return decode[api.Job](c.api.GetJob(ctx, jobID))
}

// CancelJob cancels a queued job. A job a worker already claimed keeps running: an
// *APIError with code conflict and its state in Details.State.
func (c *Client) CancelJob(ctx context.Context, jobID string) (*api.Job, error) {
	return decode[api.Job](c.api.CancelJob(ctx, jobID, &api.CancelJobParams{IdempotencyKey: idempotencyKey(ctx)}))
}

// CreateBatch applies one operation or preset to 1 to 100 files.
func (c *Client) CreateBatch(ctx context.Context, req api.CreateBatchRequest) (*api.Batch, error) {
	return decode[api.Batch](c.api.CreateBatch(ctx, &api.CreateBatchParams{IdempotencyKey: idempotencyKey(ctx)}, req))
}

// GetBatch returns a batch with its members.
func (c *Client) GetBatch(ctx context.Context, batchID string) (*api.Batch, error) {
	return decode[api.Batch](c.api.GetBatch(ctx, batchID))
}

// CreateWebhookEndpoint registers an HTTPS endpoint; the answer holds its signing
// secret, shown this once.
func (c *Client) CreateWebhookEndpoint(ctx context.Context, req api.CreateWebhookEndpointRequest) (*api.CreatedWebhookEndpoint, error) {
	return decode[api.CreatedWebhookEndpoint](c.api.CreateWebhookEndpoint(ctx,
		&api.CreateWebhookEndpointParams{IdempotencyKey: idempotencyKey(ctx)}, req))
}

// GetWebhookEndpoint returns an endpoint (without its secret).
func (c *Client) GetWebhookEndpoint(ctx context.Context, endpointID string) (*api.WebhookEndpoint, error) {
	return decode[api.WebhookEndpoint](c.api.GetWebhookEndpoint(ctx, endpointID))
}

// DeleteWebhookEndpoint stops deliveries to an endpoint and removes it.
func (c *Client) DeleteWebhookEndpoint(ctx context.Context, endpointID string) error {
	return noContent(c.api.DeleteWebhookEndpoint(ctx, endpointID))
}

// TestWebhookEndpoint queues a signed webhook.test event to an endpoint.
func (c *Client) TestWebhookEndpoint(ctx context.Context, endpointID string) (*api.Event, error) {
	return decode[api.Event](c.api.TestWebhookEndpoint(ctx, endpointID, &api.TestWebhookEndpointParams{IdempotencyKey: idempotencyKey(ctx)}))
}

// RotateWebhookSecret gives an endpoint a new secret (in the answer); the previous
// one keeps signing beside it for a while.
func (c *Client) RotateWebhookSecret(ctx context.Context, endpointID string) (*api.CreatedWebhookEndpoint, error) {
	return decode[api.CreatedWebhookEndpoint](c.api.RotateWebhookSecret(ctx, endpointID, &api.RotateWebhookSecretParams{IdempotencyKey: idempotencyKey(ctx)}))
}

// RetryWebhookDelivery makes a new attempt of a delivery now.
func (c *Client) RetryWebhookDelivery(ctx context.Context, endpointID, deliveryID string) (*api.WebhookDelivery, error) {
	return decode[api.WebhookDelivery](c.api.RetryWebhookDelivery(ctx, endpointID, deliveryID,
		&api.RetryWebhookDeliveryParams{IdempotencyKey: idempotencyKey(ctx)}))
}

// GetEvent returns an event.
func (c *Client) GetEvent(ctx context.Context, eventID string) (*api.Event, error) {
	return decode[api.Event](c.api.GetEvent(ctx, eventID))
}

// GetUsage returns the credits, storage and egress of the current period of the
// key's project (or params.ProjectId).
func (c *Client) GetUsage(ctx context.Context, params *api.GetUsageParams) (*api.Usage, error) {
	if params == nil {
		params = &api.GetUsageParams{}
	}
	return decode[api.Usage](c.api.GetUsage(ctx, params))
}

// errorf wraps an error of the hand-written layer.
func errorf(format string, args ...any) error {
	return fmt.Errorf("filemill: "+format, args...)
}
