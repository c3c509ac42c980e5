package domain

import (
	"encoding/json"
	"slices"
	"time"
)

// Entities carry two sets of tags: `json` is the /v1 representation (webhook payloads
// and GraphQL reuse it), `bun` the column mapping used by the db package. Tags are plain
// strings, so this package still imports no database code.

// Environment separates live traffic from test traffic inside one project.
type Environment string

const (
	EnvLive Environment = "live"
	EnvTest Environment = "test"
)

// Valid reports whether e is live or test.
func (e Environment) Valid() bool { return e == EnvLive || e == EnvTest }

// Organization owns projects, keys and credit accounts.
type Organization struct {
	ID        string    `bun:"id,pk" json:"id"`
	Name      string    `bun:"name,notnull" json:"name"`
	Status    string    `bun:"status,notnull" json:"status"`
	CreatedAt time.Time `bun:"created_at,notnull" json:"created_at"`
}

// Organization statuses.
const (
	OrgActive    = "active"
	OrgSuspended = "suspended"
)

// Project groups files and jobs. ConcurrencyLimit 0 means the deployment default.
type Project struct {
	ID               string    `bun:"id,pk" json:"id"`
	OrganizationID   string    `bun:"organization_id,notnull" json:"organization_id"`
	Name             string    `bun:"name,notnull" json:"name"`
	ConcurrencyLimit int       `bun:"concurrency_limit,notnull" json:"concurrency_limit"`
	CreatedAt        time.Time `bun:"created_at,notnull" json:"created_at"`
}

// Scopes a key can hold. A key with no scopes has the data scopes; the management
// scopes are held only when listed (by a key, or by a role).
const (
	ScopeFilesRead     = "files:read"
	ScopeFilesWrite    = "files:write"
	ScopeJobsRead      = "jobs:read"
	ScopeJobsWrite     = "jobs:write"
	ScopeWebhooksRead  = "webhooks:read"
	ScopeWebhooksWrite = "webhooks:write"
	ScopeUsageRead     = "usage:read"
	// ScopeManage: projects, API keys, members and invitations.
	ScopeManage = "manage"
	// ScopeOrganization: members' roles (owners included) and the organization itself.
	ScopeOrganization = "organization"
)

// DataScopes are the scopes of the /v1 contract: a key listing no scopes has these.
var DataScopes = []string{ScopeFilesRead, ScopeFilesWrite, ScopeJobsRead, ScopeJobsWrite,
	ScopeWebhooksRead, ScopeWebhooksWrite, ScopeUsageRead}

// ManageScopes are granted only when named: a key minted before they existed, or with
// no scopes listed, gains no power over keys and members.
var ManageScopes = []string{ScopeManage, ScopeOrganization}

// AllScopes lists every scope a key may list.
var AllScopes = append(slices.Clone(DataScopes), ManageScopes...)

// APIKey is a bearer credential. Only the SHA-256 of the secret is stored.
type APIKey struct {
	ID                string      `bun:"id,pk" json:"id"`
	OrganizationID    string      `bun:"organization_id,notnull" json:"organization_id"`
	ProjectID         string      `bun:"project_id,notnull" json:"project_id"`
	Environment       Environment `bun:"environment,notnull" json:"environment"`
	Name              string      `bun:"name,notnull" json:"name"`
	Hash              string      `bun:"hash,notnull,unique" json:"-"`
	Hint              string      `bun:"hint,notnull" json:"hint"` // the key's first characters, for recognising it in a list
	Scopes            []string    `bun:"scopes,type:jsonb,notnull" json:"scopes"`
	IPAllowList       []string    `bun:"ip_allow_list,type:jsonb,notnull" json:"ip_allow_list"`
	AllowedOperations []string    `bun:"allowed_operations,type:jsonb,notnull" json:"allowed_operations"`
	AllowedProjects   []string    `bun:"allowed_projects,type:jsonb,notnull" json:"allowed_projects"`
	SpendLimit        int64       `bun:"spend_limit,notnull" json:"spend_limit"` // credits per calendar month; 0 = none
	RateLimit         int         `bun:"rate_limit,notnull" json:"rate_limit"`   // requests per minute; 0 = deployment default
	ExpiresAt         *time.Time  `bun:"expires_at" json:"expires_at"`           //
	RevokedAt         *time.Time  `bun:"revoked_at" json:"revoked_at"`           //
	CreatedAt         time.Time   `bun:"created_at,notnull" json:"created_at"`   //
	// LastUsedAt is when a request last authenticated with the key, to within
	// KeyUseResolution.
	LastUsedAt *time.Time `bun:"last_used_at" json:"last_used_at"`
}

// CreditAccount holds an organization's credits for one environment. Balance is what
// can still be reserved; Reserved is held by running work; Used has been charged.
type CreditAccount struct {
	ID             string      `bun:"id,pk" json:"id"`
	OrganizationID string      `bun:"organization_id,notnull" json:"organization_id"`
	Environment    Environment `bun:"environment,notnull" json:"environment"`
	Balance        int64       `bun:"balance,notnull" json:"balance"`
	Reserved       int64       `bun:"reserved,notnull" json:"reserved"`
	Used           int64       `bun:"used,notnull" json:"used"`
	CreatedAt      time.Time   `bun:"created_at,notnull" json:"created_at"`
}

// Ledger entry kinds. The ledger is append-only; the account row is its running sum.
const (
	LedgerGrant   = "grant"
	LedgerReserve = "reserve"
	LedgerCharge  = "charge"
	LedgerRelease = "release"
)

// LedgerEntry is one movement of credits.
type LedgerEntry struct {
	ID          string    `bun:"id,pk" json:"id"`
	AccountID   string    `bun:"account_id,notnull" json:"account_id"`
	Kind        string    `bun:"kind,notnull" json:"kind"`
	Amount      int64     `bun:"amount,notnull" json:"amount"`
	JobID       string    `bun:"job_id,nullzero" json:"job_id,omitempty"`
	APIKeyID    string    `bun:"api_key_id,nullzero" json:"api_key_id,omitempty"`
	ProjectID   string    `bun:"project_id,nullzero" json:"project_id,omitempty"`
	Description string    `bun:"description,notnull" json:"description"`
	CreatedAt   time.Time `bun:"created_at,notnull" json:"created_at"`
}

// Idempotency record states.
const (
	IdempotencyInProgress = "in_progress"
	IdempotencyDone       = "done"
)

// IdempotencyRecord is the claim of an idempotency key, scoped to (organization,
// environment, project, endpoint — the request's action —, API key when the answer holds
// a credential, and key), and the answer given under it, so a replay gets the same
// answer and no new effect. The claim and its answer are stored apart: State and Answer
// are the answer's.
type IdempotencyRecord struct {
	ID             string      `bun:"id,pk"`
	OrganizationID string      `bun:"organization_id,notnull"`
	Environment    Environment `bun:"environment,notnull"`
	// ProjectID is the project the request acts on.
	ProjectID string `bun:"project_id,notnull"`
	Endpoint  string `bun:"endpoint,notnull"`
	// APIKeyID is the key that made the request when its answer holds a credential (a
	// signed URL, a webhook secret), which is replayed to that key alone; "" otherwise.
	APIKeyID    string    `bun:"api_key_id,notnull"`
	Key         string    `bun:"key,notnull"`
	Fingerprint string    `bun:"fingerprint,notnull"`
	State       string    `bun:"-"`
	Answer      *Answer   `bun:"-"` // when State is done
	CreatedAt   time.Time `bun:"created_at,notnull"`
	ExpiresAt   time.Time `bun:"expires_at,notnull"`
	// LeaseUntil is how long the claim's holder is known to be alive: the holder renews
	// it while its effect runs, and a claim still in progress past it is taken over.
	LeaseUntil time.Time `bun:"lease_until,notnull"`
}

// Event is one row of the outbox: written in the transaction of the state change it
// describes, read by history, webhook delivery and subscriptions.
type Event struct {
	ID             string          `bun:"id,pk" json:"id"`
	Object         string          `bun:"-" json:"object"`
	Type           string          `bun:"type,notnull" json:"type"`
	OrganizationID string          `bun:"organization_id,notnull" json:"-"`
	ProjectID      string          `bun:"project_id,notnull" json:"-"`
	Environment    Environment     `bun:"environment,notnull" json:"-"`
	SubjectID      string          `bun:"subject_id,notnull" json:"-"` // the resource the event is about
	FileID         string          `bun:"file_id,notnull" json:"-"`    // the file it concerns, for its history; "" for none
	Data           json.RawMessage `bun:"data,type:jsonb,notnull" json:"data"`
	CreatedAt      time.Time       `bun:"created_at,notnull" json:"created_at"`
	// TraceParent is the W3C traceparent of the span that committed the event ("" when
	// untraced): its deliveries, made later by another process, link to it.
	TraceParent string `bun:"trace_parent,notnull" json:"-"`
}

// Event types.
const (
	EventJobQueued     = "job.queued"
	EventJobRunning    = "job.running"
	EventJobSucceeded  = "job.succeeded"
	EventJobFailed     = "job.failed"
	EventJobCancelled  = "job.cancelled"
	EventFileCreated   = "file.created"
	EventFileReady     = "file.ready"
	EventFileRejected  = "file.rejected"
	EventFileDeleted   = "file.deleted"
	EventFileExpired   = "file.expired"
	EventUploadOpened  = "upload.opened"
	EventUploadAborted = "upload.aborted"
	EventWebhookTest   = "webhook.test"
	// EventJobProgress is no outbox event: a running job's progress, published to live
	// subscribers only.
	EventJobProgress = "job.progress"
)

// SubscribableEvents are the event types a webhook endpoint may list.
var SubscribableEvents = []string{EventJobSucceeded, EventJobFailed, EventJobCancelled,
	EventFileReady, EventFileRejected, EventFileDeleted, EventFileExpired}

// Upload session states.
const (
	UploadOpen      = "open"
	UploadCompleted = "completed"
	UploadAborted   = "aborted"
	UploadExpired   = "expired"
)

// Validation is the policy a file is judged by at completion, against detected bytes.
type Validation struct {
	Formats  []string `json:"formats,omitempty"`
	MaxBytes int64    `json:"max_bytes,omitempty"`
	MinBytes int64    `json:"min_bytes,omitempty"`
	// Scan runs a malware scan at completion; a malicious file is rejected.
	Scan bool `json:"scan,omitempty"`
}

// Upload is a session that lets a client put bytes straight into storage.
type Upload struct {
	ID              string      `bun:"id,pk"`
	OrganizationID  string      `bun:"organization_id,notnull"`
	ProjectID       string      `bun:"project_id,notnull"`
	Environment     Environment `bun:"environment,notnull"`
	FileID          string      `bun:"file_id,notnull"`
	State           string      `bun:"state,notnull"`
	Multipart       bool        `bun:"multipart,notnull"`
	ByteSize        int64       `bun:"byte_size,notnull"`
	PartSize        int64       `bun:"part_size,notnull"`
	PartCount       int         `bun:"part_count,notnull"`
	StorageKey      string      `bun:"storage_key,notnull"`
	StorageUploadID string      `bun:"storage_upload_id,notnull"` // the store's multipart upload id
	Validation      *Validation `bun:"validation,type:jsonb"`
	SourceURL       string      `bun:"source_url,notnull"`
	ExpiresAt       time.Time   `bun:"expires_at,notnull"`
	CreatedAt       time.Time   `bun:"created_at,notnull"`
	CompletedAt     *time.Time  `bun:"completed_at"`
}

// File statuses.
const (
	FileAwaitingUpload = "awaiting_upload"
	FileReady          = "ready"
	FileRejected       = "rejected"
	FileDeleted        = "deleted"
	FileExpired        = "expired"
)

// fileStatusWords say why a file that is not ready is not.
var fileStatusWords = map[string]string{FileAwaitingUpload: "its upload has not been completed",
	FileRejected: "it was rejected by its validation policy", FileDeleted: "it was deleted",
	FileExpired: "its upload was abandoned and it expired", FileReady: "it is ready"}

// Finding is one reason a file failed its validation policy. A malware scan's finding
// (code malware_detected) also names the rule that found it and its severity.
type Finding struct {
	Code     string `json:"code"`
	Message  string `json:"message"`
	Rule     string `json:"rule,omitempty"`
	Severity string `json:"severity,omitempty"`
}

// File is a stored input.
type File struct {
	ID               string      `bun:"id,pk"`
	OrganizationID   string      `bun:"organization_id,notnull"`
	ProjectID        string      `bun:"project_id,notnull"`
	Environment      Environment `bun:"environment,notnull"`
	UploadID         string      `bun:"upload_id,notnull"`
	Filename         string      `bun:"filename,notnull"`
	Status           string      `bun:"status,notnull"`
	ByteSize         int64       `bun:"byte_size,notnull"`
	DeclaredMIMEType string      `bun:"declared_mime_type,notnull"`
	DetectedExt      string      `bun:"detected_extension,notnull"`
	DetectedMIMEType string      `bun:"detected_mime_type,notnull"`
	SHA256           string      `bun:"sha256,notnull"`
	// Pages is the page count measured at completion; 0 for formats without pages and
	// for files too large to count.
	Pages       int         `bun:"pages,notnull"`
	DuplicateOf string      `bun:"duplicate_of,notnull"`
	Findings    []Finding   `bun:"findings,type:jsonb"`
	StorageKey  string      `bun:"storage_key,notnull"`
	ExpiresAt   *time.Time  `bun:"expires_at"`
	CreatedAt   time.Time   `bun:"created_at,notnull"`
	ReadyAt     *time.Time  `bun:"ready_at"`
	DeletedAt   *time.Time  `bun:"deleted_at"`
	Artifacts   []*Artifact `bun:"-"`
}

// Format is the file's detected format.
func (f *File) Format() Format { return Format{Extension: f.DetectedExt, MIMEType: f.DetectedMIMEType} }

// Artifact is a derived output of a job on a file.
type Artifact struct {
	ID             string    `bun:"id,pk"`
	OrganizationID string    `bun:"organization_id,notnull"`
	FileID         string    `bun:"file_id,notnull"`
	JobID          string    `bun:"job_id,notnull"`
	Step           string    `bun:"step,notnull"` // the preset step that made it; "" for an operation's
	Name           string    `bun:"name,notnull"`
	MIMEType       string    `bun:"mime_type,notnull"`
	ByteSize       int64     `bun:"byte_size,notnull"`
	SHA256         string    `bun:"sha256,notnull"`
	StorageKey     string    `bun:"storage_key,notnull"`
	CreatedAt      time.Time `bun:"created_at,notnull"`
}

// Job states.
const (
	JobQueued    = "queued"
	JobRunning   = "running"
	JobSucceeded = "succeeded"
	JobFailed    = "failed"
	JobCancelled = "cancelled"
)

// JobStates lists the five job states.
var JobStates = []string{JobQueued, JobRunning, JobSucceeded, JobFailed, JobCancelled}

// jobStateWords say where a job is in a sentence about it: "the job " + words.
var jobStateWords = map[string]string{JobQueued: "is queued", JobRunning: "is running", JobSucceeded: "has succeeded",
	JobFailed: "has failed", JobCancelled: "was cancelled"}

// Job is one operation or preset applied to one file.
type Job struct {
	ID              string          `bun:"id,pk"`
	OrganizationID  string          `bun:"organization_id,notnull"`
	ProjectID       string          `bun:"project_id,notnull"`
	Environment     Environment     `bun:"environment,notnull"`
	FileID          string          `bun:"file_id,notnull"`
	BatchID         string          `bun:"batch_id,notnull"`
	APIKeyID        string          `bun:"api_key_id,notnull"`
	Operation       string          `bun:"operation,notnull"`
	Preset          string          `bun:"preset,notnull"`
	Options         json.RawMessage `bun:"options,type:jsonb,notnull"`
	Queue           string          `bun:"queue,notnull"` // QueueName of the engines it needs
	State           string          `bun:"state,notnull"`
	Progress        int             `bun:"progress,notnull"`
	Attempts        int             `bun:"attempts,notnull"`
	CreditsReserved int64           `bun:"credits_reserved,notnull"`
	CreditsCharged  int64           `bun:"credits_charged,notnull"`
	ErrorCode       string          `bun:"error_code,notnull"`
	ErrorMessage    string          `bun:"error_message,notnull"`
	CreatedAt       time.Time       `bun:"created_at,notnull"`
	StartedAt       *time.Time      `bun:"started_at"`
	FinishedAt      *time.Time      `bun:"finished_at"`
	// LeaseExpiresAt is when a running job's worker must have renewed its claim by;
	// after it, the job counts as lost and another worker may take it. Never shown.
	LeaseExpiresAt *time.Time `bun:"lease_expires_at"`
	// Pricing is how CreditsReserved was computed; nil for jobs admitted before it was
	// kept.
	Pricing *Pricing `bun:"pricing,type:jsonb"`
	// ArtifactCount is how many artifacts the job made; Artifacts may hold only the
	// first of them.
	ArtifactCount int         `bun:"artifact_count,notnull"`
	Artifacts     []*Artifact `bun:"-"`
	// TraceID is the trace of the request that admitted the job (32 hex digits), for
	// following it from the job to its trace; "" when tracing was off.
	TraceID string `bun:"trace_id,notnull"`
}

// Terminal reports whether the job will not change state again.
func (j *Job) Terminal() bool {
	return j.State == JobSucceeded || j.State == JobFailed || j.State == JobCancelled
}

// Batch is one operation or preset applied to many files; its members are jobs.
type Batch struct {
	ID               string          `bun:"id,pk"`
	OrganizationID   string          `bun:"organization_id,notnull"`
	ProjectID        string          `bun:"project_id,notnull"`
	Environment      Environment     `bun:"environment,notnull"`
	Operation        string          `bun:"operation,notnull"`
	Preset           string          `bun:"preset,notnull"`
	Options          json.RawMessage `bun:"options,type:jsonb,notnull"`
	CreditsEstimated int64           `bun:"credits_estimated,notnull"`
	CreatedAt        time.Time       `bun:"created_at,notnull"`
}

// Webhook endpoint statuses.
const (
	EndpointEnabled  = "enabled"
	EndpointDisabled = "disabled"
)

// WebhookEndpoint receives signed events. After a rotation PreviousSecret signs beside
// Secret until PreviousSecretExpiresAt.
type WebhookEndpoint struct {
	ID                      string      `bun:"id,pk"`
	OrganizationID          string      `bun:"organization_id,notnull"`
	ProjectID               string      `bun:"project_id,notnull"`
	Environment             Environment `bun:"environment,notnull"`
	URL                     string      `bun:"url,notnull"`
	EnabledEvents           []string    `bun:"enabled_events,type:jsonb,notnull"`
	Secret                  string      `bun:"secret,notnull"`
	PreviousSecret          string      `bun:"previous_secret,notnull"`
	PreviousSecretExpiresAt *time.Time  `bun:"previous_secret_expires_at"`
	Status                  string      `bun:"status,notnull"`
	DisabledReason          string      `bun:"disabled_reason,notnull"`
	DisabledAt              *time.Time  `bun:"disabled_at"`
	FailingSince            *time.Time  `bun:"failing_since"` // first failed attempt since the last success
	CreatedAt               time.Time   `bun:"created_at,notnull"`
	DeletedAt               *time.Time  `bun:"deleted_at"`
}

// Delivery statuses.
const (
	DeliveryPending   = "pending"
	DeliverySucceeded = "succeeded"
	DeliveryFailed    = "failed"
)

// Delivery is one event on its way to one endpoint: at most one per event and
// endpoint. Attempts counts the attempts made; NextAttemptAt is when the next is due
// while pending.
type Delivery struct {
	ID             string     `bun:"id,pk"`
	EndpointID     string     `bun:"endpoint_id,notnull"`
	EventID        string     `bun:"event_id,notnull"`
	EventType      string     `bun:"event_type,notnull"`
	Status         string     `bun:"status,notnull"`
	Attempts       int        `bun:"attempts,notnull"`
	NextAttemptAt  *time.Time `bun:"next_attempt_at"`
	LastStatusCode int        `bun:"last_status_code,notnull"`
	LastError      string     `bun:"last_error,notnull"`
	CreatedAt      time.Time  `bun:"created_at,notnull"`
	UpdatedAt      time.Time  `bun:"updated_at,notnull"`

	History []*DeliveryAttempt `bun:"-"` // the latest attempts, oldest first, when asked for
}

// DeliveryAttempt is one request made for a delivery, as it went.
type DeliveryAttempt struct {
	ID              string     `bun:"id,pk"`
	DeliveryID      string     `bun:"delivery_id,notnull"`
	Attempt         int        `bun:"attempt,notnull"`     // 1 for the first
	StatusCode      int        `bun:"status_code,notnull"` // 0 when no answer came
	DurationMS      int        `bun:"duration_ms,notnull"`
	ResponseSnippet string     `bun:"response_snippet,notnull"`
	Error           string     `bun:"error,notnull"`
	NextAttemptAt   *time.Time `bun:"next_attempt_at"` // the retry it scheduled, if any
	CreatedAt       time.Time  `bun:"created_at,notnull"`
}
