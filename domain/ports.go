package domain

import (
	"context"
	"errors"
	"io"
	"time"
)

// Page asks for one page of a newest-first list.
type Page struct {
	Limit         int    // 1..100
	StartingAfter string // id of the last item of the previous page; "" for the first page
}

// Scope is the tenancy a query is confined to. Every find of a client-visible resource
// takes one, so no query can see another organization's rows.
type Scope struct {
	OrganizationID string
	ProjectID      string // "" = every project of the organization
}

// APIKeyFilter selects keys for listing, newest first.
type APIKeyFilter struct {
	OrganizationID string
	ProjectID      string
	// Page pages FindAPIKeyPage; FindAPIKeys lists every key.
	Page
}

// DailyUsageQuery asks for a project's usage per UTC day in [From, To).
type DailyUsageQuery struct {
	AccountID   string // the credit account charges are counted on
	ProjectID   string
	Environment Environment
	From, To    time.Time // whole UTC days
}

// DailyUsage is one day's usage; Day is YYYY-MM-DD (UTC).
type DailyUsage struct {
	Day           string
	Credits       int64 // charged
	Jobs          int   // finished (succeeded or failed)
	UploadedBytes int64 // of files that became ready
	EgressBytes   int64 // served
}

// OperationUsage is the credits charged for one operation or preset.
type OperationUsage struct {
	Operation string // the operation's or the preset's name
	Jobs      int
	Credits   int64
}

// JobFilter selects jobs for listing, newest first.
type JobFilter struct {
	Scope
	Environment Environment
	State       string
	BatchID     string
	FileID      string
	Page
}

// ArtifactFilter selects a page of one job's artifacts, in creation order.
type ArtifactFilter struct {
	OrganizationID string
	JobID          string
	Page
}

// FileFilter selects files for listing, newest first.
type FileFilter struct {
	Scope
	Environment Environment
	Page
}

// WebhookEndpointFilter selects webhook endpoints for listing, newest first.
type WebhookEndpointFilter struct {
	Scope
	Environment Environment
	Page
}

// EventFilter selects events for listing, newest first.
type EventFilter struct {
	Scope
	Environment Environment
	Types       []string  // the types listed; required
	Since       time.Time // created at or after
	Page
}

// DeliveryFilter selects an endpoint's deliveries, newest first.
type DeliveryFilter struct {
	EndpointID string
	Attempts   int // how many of each delivery's latest attempts to load
	Page
}

// RedriveQuery selects one page of the jobs the sweep checks, by id.
type RedriveQuery struct {
	QueuedBefore time.Time
	LeaseBefore  time.Time
	After        string // the last id of the previous page; "" for the first
	Limit        int
}

// AdmissionQuery asks what admitting jobs on some files depends on.
type AdmissionQuery struct {
	OrganizationID string
	Environment    Environment // the credit account's: the principal's
	FileIDs        []string
}

// ProjectLoad is a project's concurrency limit and its jobs queued or running.
type ProjectLoad struct {
	ConcurrencyLimit int // the project's own; 0 when the deployment default applies
	Active           int
}

// AdmissionFacts is what FindAdmissionFacts reads.
type AdmissionFacts struct {
	Files    map[string]*File       // the organization's files among those asked for, by id
	Projects map[string]ProjectLoad // the load of those files' projects, by project id
	Account  *CreditAccount
}

// Admission is work admitted at once, on one credit account: a batch (or nil), its jobs
// (all of one project and one key), their job.queued events, one reserve ledger entry per
// job that costs credits, and the answer to the request that asked for it, to be stored
// with it (or nil). When the answer's claim is gone (taken over after its lease lapsed),
// nothing is written and the write fails with ErrClaimLost. With ClaimAtWrite the claim
// was never written before: the write inserts it, answered, and when its key is taken in
// its scope nothing is written and the write fails with ErrIdempotencyTaken.
//
// Its write enforces the limits, against every admission written before it, whatever
// process wrote it: the account's balance covers the reservations; when ProjectLimit > 0
// the project had fewer than ProjectLimit jobs queued or running before it; when
// SpendLimit > 0 the key's credits charged since SpendSince plus those it holds reserved,
// this admission's included, stay within SpendLimit.
type Admission struct {
	AccountID    string
	Batch        *Batch
	Jobs         []*Job
	Events       []*Event
	Reserve      []*LedgerEntry
	Answer       *IdempotencyRecord
	ClaimAtWrite bool
	ProjectLimit int
	SpendLimit   int64
	SpendSince   time.Time
}

// JobTransition moves a job from a state and attempt count to its new values (Job),
// with what the move writes: the artifacts, the ledger entries settling its credits
// (charges and releases on the job's account), the events.
type JobTransition struct {
	Job          *Job
	FromState    string
	FromAttempts int
	Artifacts    []*Artifact
	Ledger       []*LedgerEntry
	Events       []*Event
	// Lazy commits without waiting for the disk: a crash of the database right after may
	// lose the move, leaving the job as it was. Only for a move whose loss the job's own
	// recovery mends (see claimJob).
	Lazy bool
}

// Store is the metadata store. Find methods return ErrNotFound for a missing row.
// Every method works inside or outside a transaction: InTx hands fn a Store bound to
// one transaction, and nested InTx calls join it. It is the sum of one port per aggregate
// below; each service takes only the ports it uses (FilesPorts, JobsPorts, ...), so a
// reader (and a test) sees what a service needs.
type Store interface {
	Transactor
	Pinger

	TenantStore
	PeopleStore
	CreditStore
	IdempotencyStore
	EventStore
	WebhookStore
	FileStore
	JobStore
	MaintenanceStore
}

// Transactor runs work in one transaction of the store.
type Transactor interface {
	// InTx runs fn in one transaction; inside one already, fn joins it. fn receives the
	// whole Store bound to the transaction rather than a narrower port: a transaction
	// spans aggregates (a file's move and its event, a membership and its organization's
	// lock), and the store binds all of them to it at once. A service narrows tx to its
	// own ports before using it (see Files.inTx), so what its transactions touch is still
	// what its type declares.
	InTx(ctx context.Context, fn func(tx Store) error) error
}

// Pinger tells whether the store answers.
type Pinger interface {
	Ping(ctx context.Context) error
}

// TenantStore holds organizations, their projects and API keys.
type TenantStore interface {
	CreateOrganization(ctx context.Context, org *Organization) error
	FindOrganizationByID(ctx context.Context, id string) (*Organization, error)
	FindOrganizationByName(ctx context.Context, name string) (*Organization, error)
	// SetOrganizationStatus changes active/suspended; ErrNotFound when there is no such row.
	SetOrganizationStatus(ctx context.Context, id, status string) error

	CreateProject(ctx context.Context, p *Project) error
	FindProjectByID(ctx context.Context, id string) (*Project, error)
	FindProjectByName(ctx context.Context, orgID, name string) (*Project, error)
	SetProjectConcurrencyLimit(ctx context.Context, id string, limit int) error

	CreateAPIKey(ctx context.Context, k *APIKey) error
	FindAPIKeyByID(ctx context.Context, id string) (*APIKey, error)
	// FindAPIKeyByHash returns the key with this secret hash, its organization and its
	// project.
	FindAPIKeyByHash(ctx context.Context, hash string) (*APIKey, *Organization, *Project, error)
	FindAPIKeys(ctx context.Context, f APIKeyFilter) ([]*APIKey, error)
	// RevokeAPIKey sets revoked_at once; revoking a revoked key changes nothing.
	RevokeAPIKey(ctx context.Context, id string, at time.Time) error
	// FindAPIKeyPage returns one page of an organization's keys (one project's when
	// set), newest first, and whether more follow.
	FindAPIKeyPage(ctx context.Context, f APIKeyFilter) ([]*APIKey, bool, error)
	// CountActiveAPIKeys counts an organization's keys neither revoked nor expired at now.
	CountActiveAPIKeys(ctx context.Context, orgID string, now time.Time) (int, error)
	// TouchAPIKey sets a key's last use.
	TouchAPIKey(ctx context.Context, id string, at time.Time) error

	// FindProjects returns up to limit of an organization's projects, oldest first.
	FindProjects(ctx context.Context, orgID string, limit int) ([]*Project, error)
	CountProjects(ctx context.Context, orgID string) (int, error)
	// RenameProject renames a project; ErrDuplicate when its organization has one of
	// that name, ErrNotFound when there is no such project.
	RenameProject(ctx context.Context, id, name string) error
	// LockOrganization holds the organization's row until the transaction ends, so a
	// rule over all its members (the last owner stays) is decided one change at a
	// time. Call it inside InTx.
	LockOrganization(ctx context.Context, id string) error
}

// PeopleStore holds the console's people: users, their memberships, sessions,
// invitations, set-password links and counts of failed sign-ins.
type PeopleStore interface {
	// CreateUser inserts u; ErrDuplicate when the email is taken.
	CreateUser(ctx context.Context, u *User) error
	FindUserByID(ctx context.Context, id string) (*User, error)
	FindUserByEmail(ctx context.Context, email string) (*User, error)
	SetUserPassword(ctx context.Context, id, hash string, at time.Time) error

	// CreateMembership inserts m; ErrDuplicate when the user is a member already.
	CreateMembership(ctx context.Context, m *Membership) error
	// FindMembershipByID and FindMemberships return memberships with their user's email.
	FindMembershipByID(ctx context.Context, id string) (*Membership, error)
	FindMembership(ctx context.Context, orgID, userID string) (*Membership, error)
	// FindMemberships returns up to limit of an organization's members, oldest first.
	FindMemberships(ctx context.Context, orgID string, limit int) ([]*Membership, error)
	// FindUserMemberships returns a user's memberships, oldest first.
	FindUserMemberships(ctx context.Context, userID string) ([]*Membership, error)
	// CountMembers counts an organization's members of one role ("" for all).
	CountMembers(ctx context.Context, orgID, role string) (int, error)
	SetMembershipRole(ctx context.Context, id, role string) error
	DeleteMembership(ctx context.Context, id string) error

	CreateSession(ctx context.Context, s *Session) error
	// FindSessionByHash returns the session with this token hash, its user, the user's
	// membership in the session's organization and that organization, in one round
	// trip; ErrNotFound when any of them is missing.
	FindSessionByHash(ctx context.Context, hash string) (*Session, *User, *Membership, *Organization, error)
	FindSessionByID(ctx context.Context, id string) (*Session, error)
	// FindUserSessions returns up to limit of a user's sessions not revoked and not past
	// their absolute end at now, newest first.
	FindUserSessions(ctx context.Context, userID string, now time.Time, limit int) ([]*Session, error)
	TouchSession(ctx context.Context, id string, at time.Time) error
	// RevokeSession revokes a session not revoked yet; false when it was.
	RevokeSession(ctx context.Context, id string, at time.Time) (bool, error)
	// RevokeSessions revokes a user's sessions not revoked yet — of one organization
	// when orgID is set — but exceptID; it returns how many.
	RevokeSessions(ctx context.Context, userID, orgID, exceptID string, at time.Time) (int, error)
	// DeleteSessionsEndedBefore deletes up to limit sessions revoked, or past their
	// absolute end, before a moment.
	DeleteSessionsEndedBefore(ctx context.Context, before time.Time, limit int) (int, error)

	CreateInvitation(ctx context.Context, inv *Invitation) error
	FindInvitationByID(ctx context.Context, id string) (*Invitation, error)
	FindInvitationByHash(ctx context.Context, hash string) (*Invitation, error)
	// FindPendingInvitations returns up to limit invitations of an organization not
	// accepted, revoked or expired at now, newest first.
	FindPendingInvitations(ctx context.Context, orgID string, now time.Time, limit int) ([]*Invitation, error)
	// EndInvitation marks an invitation still pending at now accepted (or revoked);
	// false when it was pending no longer.
	EndInvitation(ctx context.Context, id string, accepted bool, at time.Time) (bool, error)
	// DeleteInvitationsEndedBefore deletes up to limit invitations that ended (accepted,
	// revoked, expired) before a moment.
	DeleteInvitationsEndedBefore(ctx context.Context, before time.Time, limit int) (int, error)

	CreatePasswordToken(ctx context.Context, t *PasswordToken) error
	// UsePasswordToken marks the unused token with this hash, unexpired at now, used and
	// returns it; ErrNotFound when there is none.
	UsePasswordToken(ctx context.Context, hash string, at time.Time) (*PasswordToken, error)
	// DeletePasswordTokensEndedBefore deletes up to limit tokens used or expired before a
	// moment.
	DeletePasswordTokensEndedBefore(ctx context.Context, before time.Time, limit int) (int, error)

	FindSignInThrottle(ctx context.Context, key string) (*SignInThrottle, error)
	// RecordSignInFailure counts one failed sign-in for key at now, atomically: in the
	// current window, or in a new one starting at now when the current one began before
	// windowStart. It returns the throttle as it is after.
	RecordSignInFailure(ctx context.Context, key string, now, windowStart time.Time) (*SignInThrottle, error)
	// LockSignIn locks key until a moment and starts its count again.
	LockSignIn(ctx context.Context, key string, until time.Time) error
	ClearSignInThrottle(ctx context.Context, key string) error
	// DeleteSignInThrottlesBefore deletes up to limit throttles whose window began, and
	// whose lock ended, before a moment.
	DeleteSignInThrottlesBefore(ctx context.Context, before time.Time, limit int) (int, error)
}

// CreditStore holds the credit accounts, their ledger, admission and usage sums.
type CreditStore interface {
	// FindCreditAccountID returns the id of the account of (org, env), creating an empty
	// one if needed.
	FindCreditAccountID(ctx context.Context, orgID string, env Environment) (string, error)
	// FindCreditAccount returns the account of (org, env), creating an empty one if needed.
	FindCreditAccount(ctx context.Context, orgID string, env Environment) (*CreditAccount, error)
	// ApplyLedgerEntry appends e and moves the account's running sums in the same
	// statement set, conditionally: a reserve larger than the balance changes nothing and
	// returns ErrInsufficientCredits; a charge or release larger than what is reserved
	// returns ErrLedgerMismatch.
	ApplyLedgerEntry(ctx context.Context, e *LedgerEntry) error
	// FindAdmissionFacts reads, in one round trip, what admitting jobs on files checks:
	// the files (of the organization only), the load of their projects and the credit
	// account of the environment, which it creates on first use.
	FindAdmissionFacts(ctx context.Context, q AdmissionQuery) (*AdmissionFacts, error)
	// AdmitJobs writes an admission all or nothing: the optional batch, the jobs, their
	// events and ledger entries, the answer, and the account's balance moved to reserved,
	// enforcing the admission's limits. ErrInsufficientCredits, ErrConcurrencyLimit or
	// ErrSpendLimit when a limit refuses it; then nothing is written.
	AdmitJobs(ctx context.Context, a *Admission) error
	// SumKeySpend returns a key's credits charged since a moment plus those its queued
	// and running jobs hold reserved: what its spend limit counts.
	SumKeySpend(ctx context.Context, apiKeyID string, since time.Time) (int64, error)

	// SumProjectCredits returns what a project's queued and running jobs of one
	// environment hold reserved now, and what it was charged on an account since a moment.
	SumProjectCredits(ctx context.Context, accountID, projectID string, env Environment, since time.Time) (reserved, used int64, err error)
	// SumStoredFiles returns the bytes of a project's stored files (ready or rejected)
	// and their artifacts in one environment, and how many such files there are.
	SumStoredFiles(ctx context.Context, projectID string, env Environment) (bytes int64, files int, err error)
	// AddEgress counts bytes served from a project in the calendar month of at.
	AddEgress(ctx context.Context, orgID, projectID string, env Environment, at time.Time, n int64) error
	// SumEgress returns the bytes served from a project in the calendar month of at.
	SumEgress(ctx context.Context, projectID string, env Environment, at time.Time) (int64, error)
	// FindDailyUsage returns a project's usage on the days of [q.From, q.To) that had
	// any, oldest first, and the credits charged per operation over the whole range.
	FindDailyUsage(ctx context.Context, q DailyUsageQuery) ([]DailyUsage, []OperationUsage, error)
}

// IdempotencyStore holds the stored answers of idempotent requests.
type IdempotencyStore interface {
	// ClaimIdempotencyKey inserts rec as in progress. When a record with the same
	// (organization, environment, project, endpoint, API key, key) exists, it returns that record, with its answer when
	// it has one, and inserts nothing — unless the record expired by rec.CreatedAt, or is
	// still in progress with its lease ended by rec.CreatedAt (its holder died): such a
	// record is replaced by rec, conditionally, so of concurrent claimants one wins.
	ClaimIdempotencyKey(ctx context.Context, rec *IdempotencyRecord) (existing *IdempotencyRecord, err error)
	// RenewIdempotencyKey moves the lease of a claim to until.
	RenewIdempotencyKey(ctx context.Context, id string, until time.Time) error
	// FinishIdempotencyKey stores the answer and marks the record done; ErrNotFound when
	// the record is gone (released, taken over, or replaced after expiring).
	FinishIdempotencyKey(ctx context.Context, rec *IdempotencyRecord) error
	// FindIdempotencyKey reads the record of probe's key in probe's scope, with its answer
	// when it has one; ErrNotFound when there is none.
	FindIdempotencyKey(ctx context.Context, probe *IdempotencyRecord) (*IdempotencyRecord, error)
	// ReleaseIdempotencyKey deletes an in-progress record (after a 5xx), so it can be retried.
	ReleaseIdempotencyKey(ctx context.Context, id string) error
	DeleteExpiredIdempotencyKeys(ctx context.Context, now time.Time) (int, error)
}

// EventStore holds events and the outbox that relays them.
type EventStore interface {
	CreateEvent(ctx context.Context, e *Event) error
	FindEventByID(ctx context.Context, id string) (*Event, error)
	// FindEventsByFile returns the events that concern one file, its jobs' included,
	// oldest first: the latest ones only when latest is above 0.
	FindEventsByFile(ctx context.Context, orgID, fileID string, latest int) ([]*Event, error)
	// FindEvents returns one page of the scope's events, newest first, and whether more
	// follow.
	FindEvents(ctx context.Context, f EventFilter) ([]*Event, bool, error)
	// ClaimOutbox returns up to limit events not relayed yet, smallest id first, and
	// locks them until the transaction ends; rows another transaction holds are skipped,
	// so relays running at once never claim the same event. Call it inside InTx, and
	// ReleaseOutbox in the same transaction.
	ClaimOutbox(ctx context.Context, limit int) ([]*Event, error)
	// ReleaseOutbox marks events relayed.
	ReleaseOutbox(ctx context.Context, eventIDs []string) error
	// DeleteEventsBefore deletes up to limit relayed events created before a moment,
	// with their deliveries and attempts, and returns how many events went.
	DeleteEventsBefore(ctx context.Context, before time.Time, limit int) (int, error)
}

// WebhookStore holds webhook endpoints and their deliveries.
type WebhookStore interface {
	CreateWebhookEndpoint(ctx context.Context, e *WebhookEndpoint) error
	// FindWebhookEndpointByID returns an endpoint not deleted.
	FindWebhookEndpointByID(ctx context.Context, id string) (*WebhookEndpoint, error)
	FindWebhookEndpoints(ctx context.Context, f WebhookEndpointFilter) ([]*WebhookEndpoint, bool, error)
	// FindLiveWebhookEndpoints returns the endpoints of these projects not deleted.
	FindLiveWebhookEndpoints(ctx context.Context, projectIDs []string) ([]*WebhookEndpoint, error)
	// DeleteWebhookEndpoint marks it deleted; ErrNotFound when absent or already deleted.
	DeleteWebhookEndpoint(ctx context.Context, id string, at time.Time) error
	// RotateWebhookSecret sets the endpoint's secrets; ErrNotFound when deleted.
	RotateWebhookSecret(ctx context.Context, id, secret, previous string, previousExpiresAt time.Time) error
	// MarkWebhookEndpointFailing sets failing_since to at unless it is set already.
	MarkWebhookEndpointFailing(ctx context.Context, id string, at time.Time) error
	// MarkWebhookEndpointHealthy clears failing_since.
	MarkWebhookEndpointHealthy(ctx context.Context, id string) error
	// EnableWebhookEndpoint enables a disabled endpoint not deleted, clearing why it was
	// disabled and since when it was failing; false when nothing changed.
	EnableWebhookEndpoint(ctx context.Context, id string) (bool, error)
	// DisableWebhookEndpoint disables an enabled endpoint, saying why; when
	// failingBefore is set, only if it has been failing since before that moment. False
	// when nothing changed.
	DisableWebhookEndpoint(ctx context.Context, id, reason string, at time.Time, failingBefore *time.Time) (bool, error)

	// CreateDeliveries inserts deliveries; one whose event and endpoint already have a
	// delivery is skipped.
	CreateDeliveries(ctx context.Context, ds []*Delivery) error
	FindDeliveryByID(ctx context.Context, id string) (*Delivery, error)
	// FindDeliveryTarget returns a delivery with its endpoint, deleted or not, and its
	// event; ErrNotFound when any of them is missing.
	FindDeliveryTarget(ctx context.Context, id string) (*Delivery, *WebhookEndpoint, *Event, error)
	// FindDeliveries returns one page of an endpoint's deliveries, newest first, each
	// with its latest attempts, and whether more follow.
	FindDeliveries(ctx context.Context, f DeliveryFilter) ([]*Delivery, bool, error)
	// FindDueDeliveries returns up to limit pending deliveries whose next attempt was
	// due before a moment, the longest overdue first.
	FindDueDeliveries(ctx context.Context, before time.Time, limit int) ([]*Delivery, error)
	// RecordDeliveryAttempt stores an attempt, and moves the delivery to d's status,
	// attempts, next attempt and last answer if it is still pending with fromAttempts
	// attempts; otherwise (another attempt was recorded meanwhile) it only counts the
	// attempt and returns false.
	RecordDeliveryAttempt(ctx context.Context, a *DeliveryAttempt, d *Delivery, fromAttempts int) (bool, error)
	// FinishDelivery moves a pending delivery to a final status without an attempt.
	FinishDelivery(ctx context.Context, id, status, reason string, at time.Time) error
	// ReopenDelivery makes a delivery pending again, due at at.
	ReopenDelivery(ctx context.Context, id string, at time.Time) error
}

// FileStore holds files, their upload sessions and artifacts.
type FileStore interface {
	CreateUpload(ctx context.Context, u *Upload) error
	// OpenUpload writes a new file, its upload session and the upload.opened event as
	// one atomic write.
	OpenUpload(ctx context.Context, f *File, u *Upload, e *Event) error
	FindUploadByID(ctx context.Context, id string) (*Upload, error)
	// TransitionUpload moves an upload from one state to another; false when it was not in from.
	TransitionUpload(ctx context.Context, id, from, to string, at time.Time) (bool, error)
	FindExpiredUploads(ctx context.Context, now time.Time, limit int) ([]*Upload, error)

	CreateFile(ctx context.Context, f *File) error
	FindFileByID(ctx context.Context, id string) (*File, error)
	FindFiles(ctx context.Context, f FileFilter) ([]*File, bool, error)
	// UpdateFile writes every column of f where the stored status equals fromStatus;
	// false when it did not.
	UpdateFile(ctx context.Context, f *File, fromStatus string) (bool, error)
	// FindOldestReadyFileByHash returns the oldest ready file of a project with this hash.
	FindOldestReadyFileByHash(ctx context.Context, projectID, sha256, excludeID string) (*File, error)

	FindArtifactByID(ctx context.Context, id string) (*Artifact, error)
	FindArtifactsByFile(ctx context.Context, fileID string) ([]*Artifact, error)
	FindArtifactsByJob(ctx context.Context, jobID string) ([]*Artifact, error)
	// FindArtifactsByIDs returns the artifacts among ids, in one read.
	FindArtifactsByIDs(ctx context.Context, ids []string) ([]*Artifact, error)
	// FindFilesByIDs returns the files among ids, whatever their status, in one read.
	FindFilesByIDs(ctx context.Context, ids []string) ([]*File, error)
	// FindArtifactsByFiles returns the first perFile artifacts of each of these files
	// (all when perFile is 0) in creation order, in one read.
	FindArtifactsByFiles(ctx context.Context, fileIDs []string, perFile int) ([]*Artifact, error)
	// FindArtifactsByJobs returns the first perJob artifacts of each of these jobs (all
	// when perJob is 0) in creation order, in one read.
	FindArtifactsByJobs(ctx context.Context, jobIDs []string, perJob int) ([]*Artifact, error)
	// FindArtifacts returns one page of a job's artifacts, oldest first after
	// f.StartingAfter, and whether more follow.
	FindArtifacts(ctx context.Context, f ArtifactFilter) ([]*Artifact, bool, error)
}

// JobStore holds jobs and batches.
type JobStore interface {
	CreateJob(ctx context.Context, j *Job) error
	FindJobByID(ctx context.Context, id string) (*Job, error)
	FindJobs(ctx context.Context, f JobFilter) ([]*Job, bool, error)
	// TransitionJob writes a job transition all or nothing: ErrStaleJob when the job is
	// no longer in FromState with FromAttempts, ErrLedgerMismatch when the ledger entries
	// would take the account's sums below zero; then nothing is written.
	TransitionJob(ctx context.Context, t *JobTransition) error
	// UpdateJobProgress sets the progress of a job still running in the given attempt;
	// false when it is not.
	UpdateJobProgress(ctx context.Context, id string, attempts, progress int) (bool, error)
	// FindJobsToRedrive returns, by id, jobs after q.After that may have lost their way
	// to a worker: queued ones created before q.QueuedBefore, running ones whose lease ran
	// out before q.LeaseBefore or that have none.
	FindJobsToRedrive(ctx context.Context, q RedriveQuery) ([]*Job, error)
	// RenewJobLease moves the lease of a job still running in the given attempt; false
	// when it is no longer running in that attempt.
	RenewJobLease(ctx context.Context, id string, attempts int, until time.Time) (bool, error)

	FindBatchByID(ctx context.Context, id string) (*Batch, error)
}

// MaintenanceStore holds the progress of once-only maintenance tasks: work over more
// than one run can cover (a listing of the whole blob store), resumed where the last run
// stopped and never done again once completed.
type MaintenanceStore interface {
	// FindMaintenanceTask returns a task's progress; ErrNotFound when it never ran.
	FindMaintenanceTask(ctx context.Context, name string) (*MaintenanceTask, error)
	// CreateMaintenanceTask inserts t; ErrDuplicate when its task has a row already.
	CreateMaintenanceTask(ctx context.Context, t *MaintenanceTask) error
	// UpdateMaintenanceTask writes every column of t where the stored Steps equals
	// fromSteps; false when it does not (another run moved the task on).
	UpdateMaintenanceTask(ctx context.Context, t *MaintenanceTask, fromSteps int64) (bool, error)
}

// RateDecision is the outcome of one rate-limit check.
type RateDecision struct {
	Allowed    bool
	Limit      int           // requests per minute
	Remaining  int           // whole requests left now
	Reset      time.Duration // until the bucket is full again
	RetryAfter time.Duration // until one request is allowed, when refused
}

// RateLimiter is a token bucket per key shared by every process. Allow takes cost
// requests (1; 0 only reports the bucket) from key's bucket of perMinute requests.
type RateLimiter interface {
	Allow(ctx context.Context, key string, perMinute, cost int) (RateDecision, error)
}

// FileBlobs is a Blobs that can take a finished file whole: a store on local disk links
// it in rather than copying its bytes, a new file costing far more than a new name on
// some file systems. The file must not change once given.
type FileBlobs interface {
	// PutFile stores the regular file at path (size bytes) under key, as Put would.
	PutFile(ctx context.Context, key, path string, size int64) error
}

// Blobs stores file bytes. Keys are opaque paths chosen by the services; the services
// never reuse a key, so a URL minted for one can only ever reach the bytes written there.
//
// Clients put bytes through staged uploads: CreateUpload opens one for a key, the URLs of
// PresignPut (and of MultipartBlobs.PresignPart) write into it, and nothing is visible at
// the key until CompleteUpload (or CompleteMultipart) makes the staged bytes the object.
// An upload completed or aborted takes no more bytes: its URLs are refused and write
// nothing, however long they were signed for.
type Blobs interface {
	// CreateUpload opens a staged upload for key and returns its id.
	CreateUpload(ctx context.Context, key string) (uploadID string, err error)
	// PresignPut returns a URL and the headers a client must send to PUT exactly size
	// bytes, the whole object, into an open upload. Each call mints a distinct URL.
	PresignPut(ctx context.Context, key, uploadID string, size int64, expires time.Duration) (url string, headers map[string]string, err error)
	// CompleteUpload makes the bytes PUT into the upload the object at key and ends the
	// upload. ErrNoBytes when none have landed (the upload stays open); ErrNotFound when
	// the upload has ended.
	CompleteUpload(ctx context.Context, key, uploadID string) error
	// AbortUpload ends an upload and discards what it staged; ending an ended or unknown
	// upload is not an error.
	AbortUpload(ctx context.Context, key, uploadID string) error
	// PresignGet returns a URL that serves the object (with Range support) until expiry,
	// presented as d says.
	PresignGet(ctx context.Context, key string, expires time.Duration, d Download) (string, error)
	// Stat returns the stored size; ErrNotFound when nothing is stored under key.
	Stat(ctx context.Context, key string) (int64, error)
	Get(ctx context.Context, key string) (io.ReadCloser, error)
	// Put stores r under key (engines' artifacts, fetched URLs); size -1 when unknown.
	Put(ctx context.Context, key string, r io.Reader, size int64) error
	Delete(ctx context.Context, key string) error
	// List returns up to limit of the objects stored under prefix (which ends with "/";
	// "" is the whole store) whose keys sort after `after` ("" for the first), in byte
	// order of their keys: the last key of one call, given as after, goes on from there.
	List(ctx context.Context, prefix, after string, limit int) ([]StoredObject, error)
	// AbortUploadsUnder ends up to limit uploads still open for keys under prefix (which
	// ends with "/") and discards their bytes, returning how many it ended: those opened
	// with CreateUpload, and those a store opens itself for a large Put that a killed
	// process never finished, which List does not show. A Put still writing under prefix
	// may fail.
	AbortUploadsUnder(ctx context.Context, prefix string, limit int) (int, error)
	Ping(ctx context.Context) error
}

// StoredObject is an object as a listing shows it.
type StoredObject struct {
	Key string
	// ModifiedAt is when its bytes were written, by the store's clock (on local disk the
	// file's modification time: a file a store takes whole keeps the time it was written).
	ModifiedAt time.Time
}

// Scratch makes private local copies of stored bytes for the checks that read a file by
// its path (page counting, malware scanning at completion), so the domain itself touches
// no file system.
type Scratch interface {
	// Copy writes r to a new private file and returns its path and what removes it.
	Copy(ctx context.Context, r io.Reader) (path string, remove func(), err error)
}

// ErrNoBytes reports an upload completed before any bytes were put into it.
var ErrNoBytes = errors.New("no bytes have been uploaded")

// Download is how a download URL presents the object it serves.
type Download struct {
	// Name is the attachment's file name, already made safe (SafeName); "" serves the
	// object without Content-Disposition.
	Name string
	// ContentType is the media type served; "" is application/octet-stream.
	ContentType string
}

// PartETag pairs a part number with the ETag the store answered for it.
type PartETag struct {
	PartNumber int
	ETag       string
}

// MultipartBlobs is the optional multipart ability of a Blobs: an upload opened with
// CreateUpload takes its bytes in numbered parts instead of one PUT.
type MultipartBlobs interface {
	// PresignPart returns a URL for a PUT of exactly size bytes as part partNumber, the
	// object's bytes from offset (a store may write them in place there); a new PUT of the
	// same part replaces it, which is how an interrupted upload resumes. Each call mints a
	// distinct URL.
	PresignPart(ctx context.Context, key, uploadID string, partNumber int, offset, size int64, expires time.Duration) (string, error)
	// ListParts returns what the store holds for an open upload, by part number;
	// ErrNotFound when the upload has ended.
	ListParts(ctx context.Context, key, uploadID string) ([]PartETag, error)
	// CompleteMultipart assembles the given parts into the object at key and ends the
	// upload.
	CompleteMultipart(ctx context.Context, key, uploadID string, parts []PartETag) error
}

// JobTask is a job as the queue carries it.
type JobTask struct {
	JobID string
	// Queue is the queue of the engine families the job needs (QueueName): only a
	// worker running all of them takes it.
	Queue string
	// Timeout bounds one attempt.
	Timeout time.Duration
	// LeaseLost says the job is running and its lease ran out: the worker of its
	// attempt died. Attempts is how many attempts it has used, the lost one among them.
	LeaseLost bool
	Attempts  int
}

// Queue hands work to workers. Enqueueing the same task id twice is harmless.
type Queue interface {
	EnqueueJob(ctx context.Context, t JobTask) error
	// RedriveJob makes sure the task of an unfinished job will run: it enqueues one
	// when there is none, runs again one that was archived or completed, enqueues
	// another beside one still running for a job whose lease was lost, and leaves one
	// waiting or running alone. It reports whether it did anything.
	RedriveJob(ctx context.Context, t JobTask) (bool, error)
	Ping(ctx context.Context) error
}

// EngineInfo is what live workers report of one engine family.
type EngineInfo struct {
	Version string `json:"version"`
	Workers int    `json:"workers"` // live worker processes running it
	// Languages are the languages every live worker running it has (any of them may
	// take a job); nil when the family tells none.
	Languages []string `json:"languages,omitempty"`
	// MaxPages is the longest document, in pages, every live worker running it reads;
	// 0 when none is told.
	MaxPages int `json:"max_pages,omitempty"`
}

// EngineDirectory tells which engine families live workers run: an operation is
// available while one does.
type EngineDirectory interface {
	LiveEngines(ctx context.Context) (map[string]EngineInfo, error)
}

// PageCounter counts the pages of a stored file at completion, so that a per-page
// price is exact when a job is admitted.
type PageCounter interface {
	// Counts reports whether it counts the pages of files of format f.
	Counts(f Format) bool
	// CountPages returns the pages of the file at path, of format f.
	CountPages(ctx context.Context, path string, f Format) (int, error)
}

// UploadScanner scans a completed upload's bytes when its validation policy asks
// (validation.scan). malicious files are rejected with the findings that condemn them.
type UploadScanner interface {
	ScanUpload(ctx context.Context, path, filename, declaredMIME string) (malicious bool, findings []Finding, err error)
	// Check reports whether the scanner answers now: a session whose policy asks for a
	// scan is refused at creation while it does not, before any bytes are sent.
	Check(ctx context.Context) error
}

// OutputVerifier checks an engine's output before it is stored: a PDF parses, an image
// decodes. Codes: output_validation_failed.
type OutputVerifier interface {
	VerifyOutput(ctx context.Context, a EngineArtifact) error
}

// Clock tells the time; tests replace it.
type Clock interface{ Now() time.Time }

// SystemClock is the real clock, in UTC, to the microsecond.
type SystemClock struct{}

// Now returns the current time in UTC, truncated to the microsecond the databases keep,
// so a resource an event carries is the one GET reads back.
func (SystemClock) Now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }
