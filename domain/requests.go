package domain

import "context"

// The mutating requests of the contract other than jobs and batches (joblife.go,
// batches.go), as both doors hand them to Services.Do. Each decides who may make it
// before its claim, and checks the rest of its input in its effect.

// UploadRequest is the body of POST /v1/uploads. Absent numbers are nil: a field given
// as 0 is refused, one not given is not.
type UploadRequest struct {
	Filename   string             `json:"filename"`
	ByteSize   *int64             `json:"byte_size"`
	FromURL    string             `json:"from_url"`
	MIMEType   string             `json:"mime_type"`
	Multipart  bool               `json:"multipart"`
	ProjectID  string             `json:"project_id"`
	Validation *ValidationRequest `json:"validation"`
}

// ValidationRequest is the validation policy of an UploadRequest.
type ValidationRequest struct {
	Formats  []string `json:"formats"`
	MaxBytes *int64   `json:"max_bytes"`
	MinBytes *int64   `json:"min_bytes"`
	Scan     bool     `json:"scan"`
}

// Action scopes the request's Idempotency-Key.
func (UploadRequest) Action() string { return "uploads.create" }

// The session's answer holds its signed PUT URLs.
func (UploadRequest) answerHoldsCredential() {}

func (r UploadRequest) authorize(ctx context.Context, s *Services, p *Principal) (grant, error) {
	if err := p.RequireScope(ScopeFilesWrite); err != nil {
		return grant{}, err
	}
	if r.ProjectID != "" && !ValidID(PrefixProject, r.ProjectID) {
		return grant{}, InvalidParam("project_id", "project_id must be a project id (prj_ followed by 26 characters)")
	}
	prj, err := p.ResolveProject(ctx, s.Store, r.ProjectID)
	if err != nil {
		return grant{}, err
	}
	return grant{projectID: prj.ID, run: func(ctx context.Context, _ *claim) (*Answer, error) {
		nu, err := r.newUpload()
		if err != nil {
			return nil, err
		}
		t, err := s.Uploads.CreateUpload(ctx, p, nu)
		if err != nil {
			return nil, err
		}
		if r.FromURL != "" {
			return NewAnswer(ResultOK, t.File.View())
		}
		return NewAnswer(ResultCreated, t.View())
	}}, nil
}

// newUpload is the upload the request asks for, once the numbers it gives are at least
// 1. Codes: invalid_request.
func (r UploadRequest) newUpload() (NewUpload, error) {
	nu := NewUpload{Filename: r.Filename, FromURL: r.FromURL, MIMEType: r.MIMEType, Multipart: r.Multipart, ProjectID: r.ProjectID}
	if r.ByteSize != nil {
		if *r.ByteSize < 1 {
			return nu, InvalidParam("byte_size", "byte_size must be at least 1")
		}
		nu.ByteSize = *r.ByteSize
	}
	if v := r.Validation; v != nil {
		if v.Formats != nil && len(v.Formats) == 0 {
			return nu, InvalidParam("validation.formats", "validation.formats takes 1 to 32 items")
		}
		nu.Validation = &Validation{Formats: v.Formats, Scan: v.Scan}
		for _, b := range []struct {
			name string
			v    *int64
			dst  *int64
		}{{"validation.max_bytes", v.MaxBytes, &nu.Validation.MaxBytes}, {"validation.min_bytes", v.MinBytes, &nu.Validation.MinBytes}} {
			if b.v != nil {
				if *b.v < 1 {
					return nu, InvalidParam(b.name, "%s must be at least 1", b.name)
				}
				*b.dst = *b.v
			}
		}
	}
	return nu, nil
}

// CompleteFileRequest is POST /v1/files/{file_id}/complete.
type CompleteFileRequest struct {
	FileID string `json:"file_id"`
}

// Action scopes the request's Idempotency-Key.
func (CompleteFileRequest) Action() string { return "files.complete" }

func (r CompleteFileRequest) authorize(ctx context.Context, s *Services, p *Principal) (grant, error) {
	if err := p.RequireScope(ScopeFilesWrite); err != nil {
		return grant{}, err
	}
	f, err := s.Files.findFile(ctx, p, r.FileID)
	if err != nil {
		return grant{}, err
	}
	return grant{projectID: f.ProjectID, run: func(ctx context.Context, _ *claim) (*Answer, error) {
		f, err := s.Files.CompleteFile(ctx, p, r.FileID)
		if err != nil {
			return nil, err
		}
		return NewAnswer(ResultOK, f.View())
	}}, nil
}

// DownloadURLRequest is POST /v1/files/{file_id}/download-url. ExpiresIn is nil when
// not given (the default lifetime); 0 is out of range.
type DownloadURLRequest struct {
	FileID     string `json:"file_id"`
	ArtifactID string `json:"artifact_id"`
	ExpiresIn  *int   `json:"expires_in"`
}

// Action scopes the request's Idempotency-Key.
func (DownloadURLRequest) Action() string { return "files.download_url" }

// The answer is a signed download URL.
func (DownloadURLRequest) answerHoldsCredential() {}

func (r DownloadURLRequest) authorize(ctx context.Context, s *Services, p *Principal) (grant, error) {
	if err := p.RequireScope(ScopeFilesRead); err != nil {
		return grant{}, err
	}
	f, err := s.Files.findFile(ctx, p, r.FileID)
	if err != nil {
		return grant{}, err
	}
	return grant{projectID: f.ProjectID, run: func(ctx context.Context, _ *claim) (*Answer, error) {
		expires := 0 // the default
		if r.ExpiresIn != nil {
			if *r.ExpiresIn == 0 {
				return nil, InvalidParam("expires_in", "expires_in must be between %d and %d seconds", MinDownloadTTL, MaxDownloadTTL)
			}
			expires = *r.ExpiresIn
		}
		d, err := s.Files.MintDownloadURL(ctx, p, r.FileID, r.ArtifactID, expires)
		if err != nil {
			return nil, err
		}
		return NewAnswer(ResultCreated, d.View())
	}}, nil
}

// authorizeUpload decides a request on an upload session: scope files:write, and the
// key may see the session; it returns the session's project. Codes:
// insufficient_scope, not_found, environment_mismatch, key_restricted.
func authorizeUpload(ctx context.Context, s *Services, p *Principal, id string) (string, error) {
	if err := p.RequireScope(ScopeFilesWrite); err != nil {
		return "", err
	}
	u, _, err := s.Uploads.findUpload(ctx, p, id)
	if err != nil {
		return "", err
	}
	return u.ProjectID, nil
}

// RemintPartsRequest is POST /v1/uploads/{upload_id}/parts.
type RemintPartsRequest struct {
	UploadID string `json:"upload_id"`
}

// Action scopes the request's Idempotency-Key.
func (RemintPartsRequest) Action() string { return "uploads.remint_parts" }

func (r RemintPartsRequest) authorize(ctx context.Context, s *Services, p *Principal) (grant, error) {
	prj, err := authorizeUpload(ctx, s, p, r.UploadID)
	if err != nil {
		return grant{}, err
	}
	return grant{projectID: prj, run: func(ctx context.Context, _ *claim) (*Answer, error) {
		t, err := s.Uploads.RemintParts(ctx, p, r.UploadID)
		if err != nil {
			return nil, err
		}
		return NewAnswer(ResultOK, t.View())
	}}, nil
}

// The answer holds the parts' new signed URLs.
func (RemintPartsRequest) answerHoldsCredential() {}

// CompletePartsRequest is POST /v1/uploads/{upload_id}/complete-parts.
type CompletePartsRequest struct {
	UploadID string        `json:"upload_id"`
	Parts    []PartRequest `json:"parts"`
}

// PartRequest is one part of a CompletePartsRequest; absent fields are nil.
type PartRequest struct {
	PartNumber *int    `json:"part_number"`
	ETag       *string `json:"etag"`
}

// Action scopes the request's Idempotency-Key.
func (CompletePartsRequest) Action() string { return "uploads.complete_parts" }

func (r CompletePartsRequest) authorize(ctx context.Context, s *Services, p *Principal) (grant, error) {
	prj, err := authorizeUpload(ctx, s, p, r.UploadID)
	if err != nil {
		return grant{}, err
	}
	return grant{projectID: prj, run: func(ctx context.Context, _ *claim) (*Answer, error) {
		if len(r.Parts) == 0 {
			return nil, InvalidParam("parts", "parts must list at least one part")
		}
		parts := make([]PartETag, 0, len(r.Parts))
		for _, pt := range r.Parts {
			if pt.PartNumber == nil || *pt.PartNumber < 1 {
				return nil, InvalidParam("parts.part_number", "every part needs a part_number of at least 1")
			}
			if pt.ETag == nil || *pt.ETag == "" {
				return nil, InvalidParam("parts.etag", "every part needs the etag its PUT answered")
			}
			parts = append(parts, PartETag{PartNumber: *pt.PartNumber, ETag: *pt.ETag})
		}
		f, err := s.Uploads.CompleteParts(ctx, p, r.UploadID, parts)
		if err != nil {
			return nil, err
		}
		return NewAnswer(ResultOK, f.View())
	}}, nil
}

// AbortUploadRequest is POST /v1/uploads/{upload_id}/abort.
type AbortUploadRequest struct {
	UploadID string `json:"upload_id"`
}

// Action scopes the request's Idempotency-Key.
func (AbortUploadRequest) Action() string { return "uploads.abort" }

func (r AbortUploadRequest) authorize(ctx context.Context, s *Services, p *Principal) (grant, error) {
	prj, err := authorizeUpload(ctx, s, p, r.UploadID)
	if err != nil {
		return grant{}, err
	}
	return grant{projectID: prj, run: func(ctx context.Context, _ *claim) (*Answer, error) {
		if err := s.Uploads.AbortUpload(ctx, p, r.UploadID); err != nil {
			return nil, err
		}
		return NewAnswer(ResultEmpty, nil)
	}}, nil
}

// CancelJobRequest is POST /v1/jobs/{job_id}/cancel.
type CancelJobRequest struct {
	JobID string `json:"job_id"`
}

// Action scopes the request's Idempotency-Key.
func (CancelJobRequest) Action() string { return "jobs.cancel" }

func (r CancelJobRequest) authorize(ctx context.Context, s *Services, p *Principal) (grant, error) {
	if err := p.RequireScope(ScopeJobsWrite); err != nil {
		return grant{}, err
	}
	j, err := s.Jobs.FindJob(ctx, p, r.JobID)
	if err != nil {
		return grant{}, err
	}
	return grant{projectID: j.ProjectID, run: func(ctx context.Context, _ *claim) (*Answer, error) {
		j, err := s.Jobs.CancelJob(ctx, p, r.JobID)
		if err != nil {
			return nil, err
		}
		return NewAnswer(ResultOK, j.View())
	}}, nil
}

// Action scopes the request's Idempotency-Key.
func (NewWebhookEndpoint) Action() string { return "webhook_endpoints.create" }

// The answer holds the endpoint's signing secret.
func (NewWebhookEndpoint) answerHoldsCredential() {}

func (r NewWebhookEndpoint) authorize(ctx context.Context, s *Services, p *Principal) (grant, error) {
	if err := p.RequireScope(ScopeWebhooksWrite); err != nil {
		return grant{}, err
	}
	prj, err := p.ResolveProject(ctx, s.Store, r.ProjectID)
	if err != nil {
		return grant{}, err
	}
	return grant{projectID: prj.ID, run: func(ctx context.Context, _ *claim) (*Answer, error) {
		ep, err := s.Webhooks.CreateEndpoint(ctx, p, r)
		if err != nil {
			return nil, err
		}
		return NewAnswer(ResultCreated, ep.SecretView())
	}}, nil
}

// SecretView is the endpoint with its secret, as the answers to its creation and to a
// rotation of its secret show it: the only times the secret is shown.
func (e *WebhookEndpoint) SecretView() WebhookEndpointView {
	v := e.View()
	v.Secret = e.Secret
	return v
}

// authorizeEndpoint decides a request that changes a webhook endpoint: scope
// webhooks:write, and the key may see the endpoint; it returns the endpoint's project.
// Codes: insufficient_scope, not_found, environment_mismatch, key_restricted.
func authorizeEndpoint(ctx context.Context, s *Services, p *Principal, id string) (string, error) {
	if err := p.RequireScope(ScopeWebhooksWrite); err != nil {
		return "", err
	}
	ep, err := s.Webhooks.findEndpoint(ctx, p, id)
	if err != nil {
		return "", err
	}
	return ep.ProjectID, nil
}

// WebhookTestRequest is POST /v1/webhook-endpoints/{webhook_endpoint_id}/test.
type WebhookTestRequest struct {
	EndpointID string `json:"webhook_endpoint_id"`
}

// Action scopes the request's Idempotency-Key.
func (WebhookTestRequest) Action() string { return "webhook_endpoints.test" }

func (r WebhookTestRequest) authorize(ctx context.Context, s *Services, p *Principal) (grant, error) {
	prj, err := authorizeEndpoint(ctx, s, p, r.EndpointID)
	if err != nil {
		return grant{}, err
	}
	return grant{projectID: prj, run: func(ctx context.Context, _ *claim) (*Answer, error) {
		e, _, err := s.Webhooks.SendTest(ctx, p, r.EndpointID)
		if err != nil {
			return nil, err
		}
		return NewAnswer(ResultAccepted, e.View())
	}}, nil
}

// RotateSecretRequest is POST /v1/webhook-endpoints/{webhook_endpoint_id}/rotate-secret.
type RotateSecretRequest struct {
	EndpointID string `json:"webhook_endpoint_id"`
}

// Action scopes the request's Idempotency-Key.
func (RotateSecretRequest) Action() string { return "webhook_endpoints.rotate_secret" }

func (r RotateSecretRequest) authorize(ctx context.Context, s *Services, p *Principal) (grant, error) {
	prj, err := authorizeEndpoint(ctx, s, p, r.EndpointID)
	if err != nil {
		return grant{}, err
	}
	return grant{projectID: prj, run: func(ctx context.Context, _ *claim) (*Answer, error) {
		ep, err := s.Webhooks.RotateSecret(ctx, p, r.EndpointID)
		if err != nil {
			return nil, err
		}
		return NewAnswer(ResultOK, ep.SecretView())
	}}, nil
}

// The answer holds the endpoint's new signing secret.
func (RotateSecretRequest) answerHoldsCredential() {}

// RetryDeliveryRequest is POST
// /v1/webhook-endpoints/{webhook_endpoint_id}/deliveries/{delivery_id}/retry.
type RetryDeliveryRequest struct {
	EndpointID string `json:"webhook_endpoint_id"`
	DeliveryID string `json:"delivery_id"`
}

// Action scopes the request's Idempotency-Key.
func (RetryDeliveryRequest) Action() string { return "webhook_endpoints.retry_delivery" }

func (r RetryDeliveryRequest) authorize(ctx context.Context, s *Services, p *Principal) (grant, error) {
	prj, err := authorizeEndpoint(ctx, s, p, r.EndpointID)
	if err != nil {
		return grant{}, err
	}
	return grant{projectID: prj, run: func(ctx context.Context, _ *claim) (*Answer, error) {
		d, err := s.Webhooks.RetryDelivery(ctx, p, r.EndpointID, r.DeliveryID)
		if err != nil {
			return nil, err
		}
		return NewAnswer(ResultAccepted, d.View())
	}}, nil
}
