package domain

import (
	"context"
	"encoding/json"
	"strings"
	"time"
)

// The /v1 representations. Webhook payloads carry the same objects, so they are built
// here, where the outbox is written, not in a front door.

// ErrorView is the {code, message} of a failed job or batch item.
type ErrorView struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// ArtifactView is the artifact object.
type ArtifactView struct {
	ID        string    `json:"id"`
	Object    string    `json:"object"`
	CreatedAt time.Time `json:"created_at"`
	FileID    string    `json:"file_id"`
	JobID     string    `json:"job_id"`
	Step      *string   `json:"step"`
	Name      string    `json:"name"`
	MIMEType  string    `json:"mime_type"`
	ByteSize  int64     `json:"byte_size"`
	SHA256    *string   `json:"sha256"`
}

// View returns the artifact's representation.
func (a *Artifact) View() ArtifactView {
	return ArtifactView{ID: a.ID, Object: "artifact", CreatedAt: a.CreatedAt, FileID: a.FileID, JobID: a.JobID,
		Step: nullable(a.Step), Name: a.Name, MIMEType: a.MIMEType, ByteSize: a.ByteSize, SHA256: nullable(a.SHA256)}
}

func artifactViews(as []*Artifact) []ArtifactView {
	out := make([]ArtifactView, 0, len(as))
	for _, a := range as {
		out = append(out, a.View())
	}
	return out
}

// JobView is the job object.
type JobView struct {
	ID              string          `json:"id"`
	Object          string          `json:"object"`
	CreatedAt       time.Time       `json:"created_at"`
	ProjectID       string          `json:"project_id"`
	FileID          string          `json:"file_id"`
	BatchID         *string         `json:"batch_id"`
	Operation       *string         `json:"operation"`
	Preset          *string         `json:"preset"`
	Options         json.RawMessage `json:"options"`
	State           string          `json:"state"`
	Progress        int             `json:"progress"`
	Attempts        int             `json:"attempts"`
	CreditsReserved int64           `json:"credits_reserved"`
	CreditsCharged  int64           `json:"credits_charged"`
	Pricing         *Pricing        `json:"pricing"`
	Artifacts       []ArtifactView  `json:"artifacts"`
	ArtifactCount   int             `json:"artifact_count"`
	ArtifactsURL    string          `json:"artifacts_url"`
	Error           *ErrorView      `json:"error"`
	StartedAt       *time.Time      `json:"started_at"`
	FinishedAt      *time.Time      `json:"finished_at"`
	TraceID         *string         `json:"trace_id"`
}

// ArtifactPreview is how many of its artifacts a job carries (in GET /v1/jobs/{id},
// lists and events): the first, in the order it made them. All of them are paged from
// GET /v1/jobs/{id}/artifacts, so a job's size does not grow with what it made.
const ArtifactPreview = 10

// FileArtifactPreview and FileHistoryPreview bound what GraphQL's File carries: its
// first artifacts and its latest history entries. Both grow with every job run on the
// file, and one GraphQL operation may ask for many files (a job's artifactsConnection
// and GET /v1/files/{id}/history have them all).
const (
	FileArtifactPreview = 100
	FileHistoryPreview  = 100
)

// View returns the job's representation, with at most ArtifactPreview artifacts.
func (j *Job) View() JobView {
	v := JobView{ID: j.ID, Object: "job", CreatedAt: j.CreatedAt, ProjectID: j.ProjectID, FileID: j.FileID,
		BatchID: nullable(j.BatchID), Operation: nullable(j.Operation), Preset: nullable(j.Preset),
		Options: j.Options, State: j.State, Progress: j.Progress, Attempts: j.Attempts,
		CreditsReserved: j.CreditsReserved, CreditsCharged: j.CreditsCharged, Pricing: j.Pricing,
		Artifacts:     artifactViews(j.Artifacts[:min(len(j.Artifacts), ArtifactPreview)]),
		ArtifactCount: max(j.ArtifactCount, len(j.Artifacts)), ArtifactsURL: "/v1/jobs/" + j.ID + "/artifacts",
		StartedAt: j.StartedAt, FinishedAt: j.FinishedAt, TraceID: nullable(j.TraceID)}
	if len(v.Options) == 0 {
		v.Options = json.RawMessage("{}")
	}
	if j.ErrorCode != "" {
		v.Error = &ErrorView{Code: j.ErrorCode, Message: j.ErrorMessage}
	}
	return v
}

// WebhookEndpointView is the webhook_endpoint object; Secret only on creation and
// rotation.
type WebhookEndpointView struct {
	ID                      string     `json:"id"`
	Object                  string     `json:"object"`
	CreatedAt               time.Time  `json:"created_at"`
	ProjectID               string     `json:"project_id"`
	URL                     string     `json:"url"`
	EnabledEvents           []string   `json:"enabled_events"`
	Status                  string     `json:"status"`
	DisabledReason          *string    `json:"disabled_reason"`
	DisabledAt              *time.Time `json:"disabled_at"`
	FailingSince            *time.Time `json:"failing_since"`
	PreviousSecretExpiresAt *time.Time `json:"previous_secret_expires_at"`
	Secret                  string     `json:"secret,omitempty"`
}

// View returns the endpoint's representation without its secret.
func (e *WebhookEndpoint) View() WebhookEndpointView {
	v := WebhookEndpointView{ID: e.ID, Object: "webhook_endpoint", CreatedAt: e.CreatedAt, ProjectID: e.ProjectID,
		URL: e.URL, EnabledEvents: e.EnabledEvents, Status: e.Status, DisabledReason: nullable(e.DisabledReason),
		DisabledAt: e.DisabledAt, FailingSince: e.FailingSince}
	if e.PreviousSecret != "" {
		v.PreviousSecretExpiresAt = e.PreviousSecretExpiresAt
	}
	return v
}

// DeliveryAttemptView is one attempt of a delivery.
type DeliveryAttemptView struct {
	Attempt         int        `json:"attempt"`
	CreatedAt       time.Time  `json:"created_at"`
	StatusCode      *int       `json:"status_code"`
	DurationMS      int        `json:"duration_ms"`
	ResponseSnippet string     `json:"response_snippet"`
	Error           *string    `json:"error"`
	NextAttemptAt   *time.Time `json:"next_attempt_at"`
}

// WebhookDeliveryView is the webhook_delivery object.
type WebhookDeliveryView struct {
	ID                string                `json:"id"`
	Object            string                `json:"object"`
	CreatedAt         time.Time             `json:"created_at"`
	WebhookEndpointID string                `json:"webhook_endpoint_id"`
	EventID           string                `json:"event_id"`
	EventType         string                `json:"event_type"`
	Status            string                `json:"status"`
	AttemptCount      int                   `json:"attempt_count"`
	NextAttemptAt     *time.Time            `json:"next_attempt_at"`
	LastStatusCode    *int                  `json:"last_status_code"`
	LastError         *string               `json:"last_error"`
	Attempts          []DeliveryAttemptView `json:"attempts"`
}

// View returns the delivery's representation with the attempts it carries.
func (d *Delivery) View() WebhookDeliveryView {
	v := WebhookDeliveryView{ID: d.ID, Object: "webhook_delivery", CreatedAt: d.CreatedAt, WebhookEndpointID: d.EndpointID,
		EventID: d.EventID, EventType: d.EventType, Status: d.Status, AttemptCount: d.Attempts,
		LastError: nullable(d.LastError), Attempts: make([]DeliveryAttemptView, 0, len(d.History))}
	if d.Status == DeliveryPending {
		v.NextAttemptAt = d.NextAttemptAt
	}
	if d.LastStatusCode != 0 {
		c := d.LastStatusCode
		v.LastStatusCode = &c
	}
	for _, a := range d.History {
		av := DeliveryAttemptView{Attempt: a.Attempt, CreatedAt: a.CreatedAt, DurationMS: a.DurationMS,
			ResponseSnippet: a.ResponseSnippet, Error: nullable(a.Error), NextAttemptAt: a.NextAttemptAt}
		if a.StatusCode != 0 {
			c := a.StatusCode
			av.StatusCode = &c
		}
		v.Attempts = append(v.Attempts, av)
	}
	return v
}

// EventView is the event object delivered to webhooks and subscriptions.
type EventView struct {
	ID        string          `json:"id"`
	Object    string          `json:"object"`
	Type      string          `json:"type"`
	CreatedAt time.Time       `json:"created_at"`
	Data      json.RawMessage `json:"data"`
}

// View returns the event's representation.
func (e *Event) View() EventView {
	return EventView{ID: e.ID, Object: "event", Type: e.Type, CreatedAt: e.CreatedAt, Data: e.Data}
}

// NewEvent builds an outbox row whose data.object is obj's representation.
func NewEvent(ctx context.Context, typ, orgID, projectID string, env Environment, subjectID string, obj any, at time.Time) (*Event, error) {
	data, err := json.Marshal(map[string]any{"object": obj})
	if err != nil {
		return nil, err
	}
	e := &Event{ID: NewID(PrefixEvent), Type: typ, OrganizationID: orgID, ProjectID: projectID,
		Environment: env, SubjectID: subjectID, Data: data, CreatedAt: at, TraceParent: traceParent(ctx)}
	if strings.HasPrefix(subjectID, PrefixFile) {
		e.FileID = subjectID // a file's own events (its upload's included) are in its history
	}
	return e, nil
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// FileView is the file object.
type FileView struct {
	ID               string         `json:"id"`
	Object           string         `json:"object"`
	CreatedAt        time.Time      `json:"created_at"`
	ProjectID        string         `json:"project_id"`
	Filename         string         `json:"filename"`
	Status           string         `json:"status"`
	ByteSize         *int64         `json:"byte_size"`
	DeclaredMIMEType *string        `json:"declared_mime_type"`
	DetectedFormat   *Format        `json:"detected_format"`
	Pages            *int           `json:"pages"`
	SHA256           *string        `json:"sha256"`
	DuplicateOf      *string        `json:"duplicate_of"`
	Findings         []Finding      `json:"findings"`
	Artifacts        []ArtifactView `json:"artifacts"`
	ExpiresAt        *time.Time     `json:"expires_at"`
}

// View returns the file's representation. Measurements are null until completion.
func (f *File) View() FileView {
	v := FileView{ID: f.ID, Object: "file", CreatedAt: f.CreatedAt, ProjectID: f.ProjectID, Filename: f.Filename,
		Status: f.Status, DeclaredMIMEType: nullable(f.DeclaredMIMEType), SHA256: nullable(f.SHA256),
		DuplicateOf: nullable(f.DuplicateOf), Findings: f.Findings, Artifacts: artifactViews(f.Artifacts), ExpiresAt: f.ExpiresAt}
	if f.DetectedMIMEType != "" {
		v.DetectedFormat = &Format{Extension: f.DetectedExt, MIMEType: f.DetectedMIMEType}
		size := f.ByteSize
		v.ByteSize = &size
	}
	if f.Pages > 0 {
		pages := f.Pages
		v.Pages = &pages
	}
	if v.Findings == nil {
		v.Findings = []Finding{}
	}
	return v
}

// UploadPartView is one part URL of a multipart session.
type UploadPartView struct {
	PartNumber int    `json:"part_number"`
	URL        string `json:"url"`
	ByteOffset int64  `json:"byte_offset"`
	ByteSize   int64  `json:"byte_size"`
}

// UploadView is the upload object.
type UploadView struct {
	ID            string            `json:"id"`
	Object        string            `json:"object"`
	CreatedAt     time.Time         `json:"created_at"`
	ProjectID     string            `json:"project_id"`
	FileID        string            `json:"file_id"`
	State         string            `json:"state"`
	Filename      string            `json:"filename"`
	ByteSize      int64             `json:"byte_size"`
	MIMEType      *string           `json:"mime_type"`
	Multipart     bool              `json:"multipart"`
	UploadURL     *string           `json:"upload_url"`
	UploadHeaders map[string]string `json:"upload_headers"`
	// UploadURLExpiresAt is when upload_url and the parts' URLs stop working.
	UploadURLExpiresAt *time.Time       `json:"upload_url_expires_at"`
	PartSize           *int64           `json:"part_size"`
	Parts              []UploadPartView `json:"parts"`
	Validation         *Validation      `json:"validation"`
	ExpiresAt          time.Time        `json:"expires_at"`
	CompletedAt        *time.Time       `json:"completed_at"`
}

// objectView is the session of file f without URLs, as events carry it.
func (u *Upload) objectView(f *File) UploadView {
	v := UploadView{ID: u.ID, Object: "upload", CreatedAt: u.CreatedAt, ProjectID: u.ProjectID, FileID: u.FileID,
		State: u.State, ByteSize: u.ByteSize, Multipart: u.Multipart, UploadHeaders: map[string]string{},
		Parts: []UploadPartView{}, Validation: u.Validation, ExpiresAt: u.ExpiresAt, CompletedAt: u.CompletedAt}
	if u.Multipart {
		ps := u.PartSize
		v.PartSize = &ps
	}
	if f != nil {
		v.Filename, v.MIMEType = f.Filename, nullable(f.DeclaredMIMEType)
	}
	return v
}

// View returns the session with the URLs minted for this answer.
func (t *UploadTicket) View() UploadView {
	v := t.Upload.objectView(t.File)
	if t.URL != "" || len(t.Parts) > 0 {
		exp := t.Expires
		v.UploadURLExpiresAt = &exp
	}
	if t.URL != "" {
		v.UploadURL = &t.URL
		for k, h := range t.Headers {
			v.UploadHeaders[k] = h
		}
	}
	for _, p := range t.Parts {
		v.Parts = append(v.Parts, UploadPartView{PartNumber: p.PartNumber, URL: p.URL, ByteOffset: p.ByteOffset, ByteSize: p.ByteSize})
	}
	return v
}

// DownloadURLView is the download_url object.
type DownloadURLView struct {
	Object     string    `json:"object"`
	URL        string    `json:"url"`
	ExpiresAt  time.Time `json:"expires_at"`
	FileID     string    `json:"file_id"`
	ArtifactID *string   `json:"artifact_id"`
	CreatedAt  time.Time `json:"created_at"`
}

// View returns the download URL's representation.
func (d *DownloadURL) View() DownloadURLView {
	return DownloadURLView{Object: "download_url", URL: d.URL, ExpiresAt: d.ExpiresAt, FileID: d.FileID,
		ArtifactID: nullable(d.ArtifactID), CreatedAt: d.CreatedAt}
}

// HistoryEntryView is one entry of a file's history.
type HistoryEntryView struct {
	ID        string          `json:"id"`
	Object    string          `json:"object"`
	CreatedAt time.Time       `json:"created_at"`
	Type      string          `json:"type"`
	JobID     *string         `json:"job_id"`
	Summary   string          `json:"summary"`
	Data      json.RawMessage `json:"data"`
}

var historySummaries = map[string]string{
	EventUploadOpened:  "upload session opened",
	EventUploadAborted: "upload aborted; its bytes were discarded",
	EventFileReady:     "file validated and ready",
	EventFileRejected:  "file rejected by its validation policy",
	EventFileDeleted:   "file deleted",
	EventFileExpired:   "upload abandoned; file expired",
	EventJobQueued:     "job created",
	EventJobRunning:    "job started",
	EventJobSucceeded:  "job succeeded",
	EventJobFailed:     "job failed",
	EventJobCancelled:  "job cancelled",
}

// HistoryView returns the event as a history entry.
func (e *Event) HistoryView() HistoryEntryView {
	v := HistoryEntryView{ID: e.ID, Object: "history_entry", CreatedAt: e.CreatedAt, Type: e.Type, Data: e.Data,
		Summary: historySummaries[e.Type]}
	if v.Summary == "" {
		v.Summary = e.Type
	}
	if len(e.Type) > 4 && e.Type[:4] == "job." {
		var d struct {
			Object struct {
				ID string `json:"id"`
			} `json:"object"`
		}
		if json.Unmarshal(e.Data, &d) == nil && d.Object.ID != "" {
			v.JobID = &d.Object.ID
		}
	}
	return v
}
