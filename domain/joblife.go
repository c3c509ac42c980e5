package domain

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
)

// JobRequest is the body of POST /v1/jobs.
type JobRequest struct {
	FileID    string          `json:"file_id"`
	Operation string          `json:"operation"`
	Preset    string          `json:"preset"`
	Options   json.RawMessage `json:"options"`
}

// Action scopes a job request's Idempotency-Key.
func (JobRequest) Action() string { return "jobs.create" }

func (r JobRequest) authorize(ctx context.Context, s *Services, p *Principal) (grant, error) {
	adm, err := s.Jobs.authorizeJob(ctx, p, r)
	return s.Jobs.admitting(p, adm), err
}

// admitting is the grant of an authorized job or batch request: the project of its
// (first) file, and its admission as its effect; nothing for a request that was
// refused.
func (s *Jobs) admitting(p *Principal, adm *admission) grant {
	if adm == nil {
		return grant{}
	}
	// authorizeFiles found every file: the admission refuses files of several projects.
	return grant{projectID: adm.facts.Files[adm.fileIDs[0]].ProjectID, run: func(ctx context.Context, c *claim) (*Answer, error) {
		_, _, a, err := s.admit(ctx, p, adm, c)
		return a, err
	}}
}

// resolveOperation finds the operation or preset of a request and checks the key may
// run it. Codes: invalid_request, unsupported_operation, operation_not_allowed.
func (s *Jobs) resolveOperation(p *Principal, operation, preset string) (*Operation, error) {
	switch {
	case operation != "" && preset != "":
		return nil, InvalidParam("preset", "give either operation or preset, not both")
	case operation == "" && preset == "":
		return nil, InvalidParam("operation", "operation or preset is required")
	}
	var op *Operation
	if operation != "" {
		if op = s.Registry.Operation(operation); op == nil || op.Hidden {
			return nil, &Error{Code: CodeUnsupportedOperation, Param: "operation", Message: fmt.Sprintf("unknown operation %q; GET /v1/operations lists them", operation)}
		}
	} else if op = s.Registry.Preset(preset); op == nil {
		return nil, &Error{Code: CodeUnsupportedOperation, Param: "preset", Message: fmt.Sprintf("unknown preset %q (presets: %s)", preset, strings.Join(s.Registry.PresetNames(), ", "))}
	}
	if err := allowOperation(p, op); err != nil {
		return nil, err
	}
	return op, nil
}

// allowOperation refuses an operation a restricted key may not run. A preset is
// allowed when every step's operation is, whatever its name: the preset inspect also
// scans, so a key allowed only the operation inspect may not run it. Codes:
// operation_not_allowed.
func allowOperation(p *Principal, op *Operation) error {
	for _, o := range op.operations() {
		if err := p.RequireOperation(o.Name); err != nil {
			if op.Kind == KindPreset {
				return &Error{Code: CodeOperationNotAllowed, Param: "preset",
					Message: fmt.Sprintf("this key may not run %s, a step of the preset %s", o.Name, op.Name)}
			}
			return err
		}
	}
	return nil
}

// checkInput checks one input file of an operation: the key may see it, it is ready and
// the operation takes its format. f is nil when the organization has no such file.
// Codes: not_found, environment_mismatch, key_restricted, conflict (file not ready),
// unsupported_input; each naming param.
func checkInput(p *Principal, op *Operation, f *File, fileID, param string) error {
	if f == nil || f.Status == FileDeleted {
		return &Error{Code: CodeNotFound, Message: "no such file " + fileID, Param: param, Details: map[string]any{"file_id": fileID}}
	}
	if err := p.CheckResource("file", f.OrganizationID, f.ProjectID, f.Environment); err != nil {
		if de := AsError(err); de != nil {
			de.Param, de.Details = param, map[string]any{"file_id": fileID}
		}
		return err
	}
	if f.Status != FileReady {
		return &Error{Code: CodeConflict, Param: param, Message: fmt.Sprintf("file %s is not ready: %s", f.ID, fileStatusWords[f.Status]),
			Details: map[string]any{"file_id": f.ID, "status": f.Status}}
	}
	if format := f.Format(); !op.Accepts(format) {
		return &Error{Code: CodeUnsupportedInput, Param: param, Message: fmt.Sprintf("%s does not take %s files", op.Name, format.Extension),
			Details: map[string]any{"file_id": f.ID, "detected_format": format, "input_formats": op.InputFormats}}
	}
	return nil
}

// newJob checks a job's file (and its further input files) for an operation, checks a
// live worker runs the engines it needs, and plans and prices the job. Codes: those of
// checkInput, processing_unavailable, and those of Operation.plan (validation_failed,
// unsupported_input) with details.file_id.
func (s *Jobs) newJob(p *Principal, op *Operation, options json.RawMessage, facts *AdmissionFacts, live map[string]EngineInfo, fileID, param string) (*Job, error) {
	f := facts.Files[fileID]
	if err := checkInput(p, op, f, fileID, param); err != nil {
		return nil, err
	}
	extra, err := op.fileIDs(options)
	if err != nil {
		return nil, err
	}
	inputs := make([]*File, 0, len(extra))
	for i, id := range extra {
		xf := facts.Files[id]
		xparam := fmt.Sprintf("options.%s[%d]", op.FileIDsOption, i)
		if err := checkInput(p, op, xf, id, xparam); err != nil {
			return nil, err
		}
		if xf.ProjectID != f.ProjectID {
			return nil, &Error{Code: CodeInvalidRequest, Param: xparam, Message: "every input file must belong to the project of file_id",
				Details: map[string]any{"file_id": id}}
		}
		inputs = append(inputs, xf)
	}
	engines := op.Engines(f.Format())
	for _, e := range engines {
		if _, ok := live[e]; !ok {
			return nil, &Error{Code: CodeProcessingUnavailable, RetryAfter: 30,
				Message: fmt.Sprintf("%s needs the %s engine, and no worker running it is available now", op.Name, e)}
		}
	}
	pricing, err := op.plan(planRequest{file: f, options: options, inputs: inputs, live: live, maxArtifacts: s.Config.MaxArtifactsPerJob})
	if de := AsError(err); de != nil {
		// A batch's member is told by its file.
		if de.Details == nil {
			de.Details = map[string]any{}
		}
		if _, ok := de.Details["file_id"]; !ok {
			de.Details["file_id"] = f.ID
		}
	}
	if err != nil {
		return nil, err
	}
	j := &Job{ID: NewID(PrefixJob), OrganizationID: f.OrganizationID, ProjectID: f.ProjectID, Environment: f.Environment,
		FileID: f.ID, APIKeyID: p.Key.ID, Options: options, State: JobQueued, CreditsReserved: pricing.Credits, Pricing: pricing,
		Queue: QueueName(engines), CreatedAt: s.Clock.Now(), Artifacts: []*Artifact{}}
	if op.Kind == KindPreset {
		j.Preset = op.Name
	} else {
		j.Operation = op.Name
	}
	return j, nil
}

// fileIDs returns the further input files canonical options name. Codes:
// invalid_request naming the entry.
func (op *Operation) fileIDs(options json.RawMessage) ([]string, error) {
	if op.FileIDsOption == "" {
		return nil, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(options, &m); err != nil {
		return nil, err
	}
	var ids []string
	if raw, ok := m[op.FileIDsOption]; ok {
		if err := json.Unmarshal(raw, &ids); err != nil {
			return nil, InvalidParam("options."+op.FileIDsOption, "%s must list file ids", op.FileIDsOption)
		}
	}
	for i, id := range ids {
		if !ValidID(PrefixFile, id) {
			return nil, InvalidParam(fmt.Sprintf("options.%s[%d]", op.FileIDsOption, i), "%q is not a file id (file_ followed by 26 characters)", id)
		}
	}
	return ids, nil
}

// admission is a request to admit op on files, one job each, as far as it was decided
// before its claim.
type admission struct {
	op      *Operation
	options json.RawMessage // canonical
	fileIDs []string
	param   func(i int) string // names file i in errors
	batch   bool               // the jobs form a batch
	// facts is what authorizeFiles read: the files, the load of their projects, the
	// account. The admission checks and prices on them, and its write enforces the
	// balance and the limits again against everything admitted since.
	facts *AdmissionFacts
	// answer renders the answer for what is about to be written; nil for none.
	answer func(*Batch, []*Job) (*Answer, error)
}

// authorizeFiles reads what admitting work on the files depends on — the files the
// request names and those its options name — in one query, and decides whether the key
// may act on each: another organization's file, or none, does not exist for it; a file
// of the other environment or of a project the key may not act on is refused. Codes:
// not_found, environment_mismatch, key_restricted, invalid_request, naming the file.
func (s *Jobs) authorizeFiles(ctx context.Context, p *Principal, adm *admission) error {
	if err := CheckJSONText("options", adm.options); err != nil {
		return err
	}
	extra, err := adm.op.fileIDs(adm.options)
	if err != nil {
		return err
	}
	facts, err := s.Store.FindAdmissionFacts(ctx, AdmissionQuery{OrganizationID: p.Organization.ID,
		Environment: p.Environment(), FileIDs: append(slices.Clone(adm.fileIDs), extra...)})
	if err != nil {
		return err
	}
	named := make([]string, 0, len(adm.fileIDs)+len(extra))
	params := make([]string, 0, cap(named))
	for i, id := range adm.fileIDs {
		named, params = append(named, id), append(params, adm.param(i))
	}
	for i, id := range extra {
		named, params = append(named, id), append(params, fmt.Sprintf("options.%s[%d]", adm.op.FileIDsOption, i))
	}
	for i, id := range named {
		f := facts.Files[id]
		if f == nil {
			return &Error{Code: CodeNotFound, Message: "no such file " + id, Param: params[i], Details: map[string]any{"file_id": id}}
		}
		// Deleted files are decided too: their owner may replay what it asked before.
		if err := p.CheckResource("file", f.OrganizationID, f.ProjectID, f.Environment); err != nil {
			if de := AsError(err); de != nil {
				de.Param, de.Details = params[i], map[string]any{"file_id": id}
			}
			return err
		}
	}
	adm.facts = facts
	return nil
}

// admit checks and prices a job per file on what authorizeFiles read, then writes them
// all or nothing — with their batch, their job.queued events, their credit reservations
// and the request's answer, when c claims one — and queues them. The write enforces the
// balance and the limits again against every admission written since, so concurrent
// requests can never overdraw the balance or overshoot a limit. Jobs come back in the
// order of the files. Codes: those of newJob, invalid_request (files of several
// projects), concurrency_limit, key_spend_limit, credits_exhausted, payment_required.
func (s *Jobs) admit(ctx context.Context, p *Principal, req *admission, c *claim) (*Batch, []*Job, *Answer, error) {
	live, err := s.liveEngines(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	facts := req.facts
	jobs := make([]*Job, len(req.fileIDs))
	traceID := TraceID(ctx)
	for i, id := range req.fileIDs {
		if jobs[i], err = s.newJob(p, req.op, req.options, facts, live, id, req.param(i)); err != nil {
			return nil, nil, nil, err
		}
		jobs[i].TraceID = traceID
	}
	// The work of one request acts on one project: the reservations and the
	// concurrency limit are the project's.
	projectID := jobs[0].ProjectID
	var total int64
	for i, j := range jobs {
		if j.ProjectID != projectID {
			return nil, nil, nil, &Error{Code: CodeInvalidRequest, Param: req.param(i),
				Message: "all files of a batch must belong to one project", Details: map[string]any{"file_id": j.FileID}}
		}
		total += j.CreditsReserved
	}
	load := facts.Projects[projectID]
	limit := load.ConcurrencyLimit
	if limit == 0 {
		limit = s.Config.DefaultConcurrencyLimit
	}
	if load.Active >= limit {
		return nil, nil, nil, concurrencyLimited(limit, load.Active)
	}
	acct := facts.Account
	if total > 0 && acct.Balance == 0 {
		return nil, nil, nil, s.creditsExhausted(p)
	}
	if total > acct.Balance {
		return nil, nil, nil, paymentRequired(total, acct.Balance)
	}

	now := s.Clock.Now()
	var b *Batch
	if req.batch {
		b = &Batch{ID: NewID(PrefixBatch), OrganizationID: p.Organization.ID, ProjectID: projectID, Environment: p.Environment(),
			Operation: jobs[0].Operation, Preset: jobs[0].Preset, Options: req.options, CreditsEstimated: total, CreatedAt: now}
		for _, j := range jobs {
			j.BatchID = b.ID
		}
	}
	a := &Admission{AccountID: acct.ID, Batch: b, Jobs: jobs,
		ProjectLimit: limit, SpendLimit: p.Key.SpendLimit, SpendSince: MonthStart(now)}
	for _, j := range jobs {
		e, err := newJobEvent(EventJobQueued, j, j.CreatedAt)
		if err != nil {
			return nil, nil, nil, err
		}
		a.Events = append(a.Events, e)
		a.Reserve = append(a.Reserve, &LedgerEntry{ID: NewID(PrefixLedgerEntry), AccountID: acct.ID, Kind: LedgerReserve, Amount: j.CreditsReserved,
			JobID: j.ID, APIKeyID: p.Key.ID, ProjectID: j.ProjectID, Description: "reserve for " + j.ID, CreatedAt: j.CreatedAt})
	}
	var answer *Answer
	if req.answer != nil {
		if answer, err = req.answer(b, jobs); err != nil {
			return nil, nil, nil, err
		}
		a.Answer = c.answering(answer)
	}
	actx, span := StartSpan(ctx, "admit jobs", attribute.Int("filemill.jobs", len(jobs)), attribute.Int64("filemill.credits_reserved", total))
	err = s.Store.AdmitJobs(actx, a)
	EndSpan(span, err)
	switch {
	case errors.Is(err, ErrInsufficientCredits):
		// Others reserved since the balance was read.
		if cur, err := s.Store.FindCreditAccount(ctx, p.Organization.ID, p.Environment()); err == nil && cur.Balance == 0 {
			return nil, nil, nil, s.creditsExhausted(p)
		}
		return nil, nil, nil, paymentRequired(total, -1)
	case errors.Is(err, ErrConcurrencyLimit):
		return nil, nil, nil, concurrencyLimited(limit, -1)
	case errors.Is(err, ErrSpendLimit):
		return nil, nil, nil, s.spendLimited(ctx, p, total, now)
	case err != nil:
		return nil, nil, nil, err
	}
	if c != nil {
		c.stored = true
	}
	s.observer().CreditsReserved(total)
	for _, j := range jobs {
		s.enqueue(ctx, j)
	}
	return b, jobs, answer, nil
}

func concurrencyLimited(limit, active int) *Error {
	msg := fmt.Sprintf("the project has reached its limit of %d jobs queued or running", limit)
	if active >= 0 {
		msg = fmt.Sprintf("the project has %d jobs queued or running; its limit is %d", active, limit)
	}
	return &Error{Code: CodeConcurrencyLimit, RetryAfter: 5, Message: msg, Details: map[string]any{"concurrency_limit": limit}}
}

func (s *Jobs) creditsExhausted(p *Principal) *Error {
	return &Error{Code: CodeCreditsExhausted, RetryAfter: 3600, Message: "the organization has no credits left in the " + string(p.Environment()) + " environment"}
}

// spendLimited refuses work that would take a key past its monthly spend limit, saying
// how much of it is spent or held.
func (s *Jobs) spendLimited(ctx context.Context, p *Principal, total int64, now time.Time) error {
	since := MonthStart(now)
	spent, err := s.Store.SumKeySpend(ctx, p.Key.ID, since)
	if err != nil {
		return err
	}
	return &Error{Code: CodeKeySpendLimit, RetryAfter: int(time.Until(since.AddDate(0, 1, 0)).Seconds()) + 1,
		Message: fmt.Sprintf("this key may spend %d credits a month; %d are spent or held and this needs %d", p.Key.SpendLimit, spent, total),
		Details: map[string]any{"spend_limit": p.Key.SpendLimit, "credits_spent_or_held": spent, "credits_required": total}}
}

// paymentRequired refuses work the balance cannot cover; balance < 0 when unknown.
func paymentRequired(total, balance int64) *Error {
	e := &Error{Code: CodePaymentRequired, Message: fmt.Sprintf("this needs %d credits; the balance is lower", total),
		Details: map[string]any{"credits_required": total}}
	if balance >= 0 {
		e.Message = fmt.Sprintf("this needs %d credits; the balance is %d", total, balance)
		e.Details["credits_balance"] = balance
	}
	return e
}

// MonthStart is the first instant of t's calendar month, UTC: the usage period.
func MonthStart(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
}

// authorizeJob decides a job request up to its claim: the key may create jobs and run
// the operation, the options are well formed, and the key may act on every file the
// request names. Codes: insufficient_scope, invalid_request, unsupported_operation,
// operation_not_allowed, not_found, environment_mismatch, key_restricted.
func (s *Jobs) authorizeJob(ctx context.Context, p *Principal, req JobRequest) (*admission, error) {
	if err := p.RequireScope(ScopeJobsWrite); err != nil {
		return nil, err
	}
	if req.FileID == "" {
		return nil, InvalidParam("file_id", "file_id is required")
	}
	if !ValidID(PrefixFile, req.FileID) {
		return nil, InvalidParam("file_id", "file_id must be a file id (file_ followed by 26 characters)")
	}
	op, err := s.resolveOperation(p, req.Operation, req.Preset)
	if err != nil {
		return nil, err
	}
	// Checked before the claim: the files the options name are authorized too.
	options, err := op.ValidateOptions(req.Options)
	if err != nil {
		return nil, err
	}
	adm := &admission{op: op, options: options, fileIDs: []string{req.FileID}, param: func(int) string { return "file_id" },
		answer: func(_ *Batch, jobs []*Job) (*Answer, error) { return NewAnswer(ResultAccepted, jobs[0].View()) }}
	if err := s.authorizeFiles(ctx, p, adm); err != nil {
		return nil, err
	}
	return adm, nil
}

// CreateJob admits, prices and queues a job: the job, its credit reservation and its
// event are written at once, and the task is enqueued after commit. It is the effect of
// a JobRequest without its idempotency (Services.Do runs that). Codes: those of
// authorizeJob and admit: conflict, unsupported_input, processing_unavailable,
// key_spend_limit, concurrency_limit, credits_exhausted, payment_required.
func (s *Jobs) CreateJob(ctx context.Context, p *Principal, req JobRequest) (*Job, error) {
	adm, err := s.authorizeJob(ctx, p, req)
	if err != nil {
		return nil, err
	}
	adm.answer = nil
	_, jobs, _, err := s.admit(ctx, p, adm, nil)
	if err != nil {
		return nil, err
	}
	return jobs[0], nil
}

// enqueue hands a committed job to the queue of its engines. A failure is left to the
// queued-job sweep, which enqueues it again.
func (s *Jobs) enqueue(ctx context.Context, j *Job) {
	if s.Queue != nil {
		_ = s.Queue.EnqueueJob(context.WithoutCancel(ctx), s.task(j))
	}
}

// task is what the queue needs to know of a job: its queue, and how long an attempt
// may hold its slot: the job's deadline, then twice the grace its engines get to stop
// and the outcome to be recorded. The attempt keeps its own deadline (ProcessJob):
// the queue's must not end first, or the queue would hand the slot on while the
// engine still runs.
func (s *Jobs) task(j *Job) JobTask {
	return JobTask{JobID: j.ID, Queue: j.Queue, Timeout: s.deadline(j) + 2*s.Config.StopGrace}
}

// deadline is how long one attempt of j may run: the sum of the deadlines of the
// operations it may run.
func (s *Jobs) deadline(j *Job) time.Duration {
	var d time.Duration
	if op := s.Registry.Find(j.Operation, j.Preset); op != nil {
		for _, o := range op.operations() {
			d += s.Config.OperationTimeout(o)
		}
	}
	if d == 0 {
		d = s.Config.OperationTimeout(nil)
	}
	return d
}

// CancelJob cancels a queued job and releases its credits. A job a worker has claimed
// keeps running. Codes: not_found, environment_mismatch, conflict (with its state).
func (s *Jobs) CancelJob(ctx context.Context, p *Principal, id string) (*Job, error) {
	if err := p.RequireScope(ScopeJobsWrite); err != nil {
		return nil, err
	}
	j, err := s.FindJob(ctx, p, id)
	if err != nil {
		return nil, err
	}
	// A second look is enough: a job that left "queued" never comes back to it.
	for range 2 {
		if j.State == JobCancelled {
			return j, nil
		}
		if j.State != JobQueued {
			return nil, &Error{Code: CodeConflict, Message: "the job " + jobStateWords[j.State] + " and can no longer be cancelled",
				Details: map[string]any{"state": j.State}}
		}
		now := s.Clock.Now()
		next := *j
		next.State, next.FinishedAt = JobCancelled, &now
		err := s.transition(ctx, j, &next, nil, EventJobCancelled, 0)
		if !errors.Is(err, ErrStaleJob) {
			if err != nil {
				return nil, err
			}
			return &next, nil
		}
		// Claimed (or cancelled) meanwhile: answer with where it is now.
		if j, err = s.Store.FindJobByID(ctx, j.ID); err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("cancel job %s: it keeps moving", id)
}

// transition moves j to next in one write, with its artifacts, the event of the new
// state, and the settlement of its credits: charge is charged, the rest of the
// reservation released. ErrStaleJob when j is no longer where it was.
func (s *Jobs) transition(ctx context.Context, j, next *Job, arts []*Artifact, event string, charge int64) error {
	now := s.Clock.Now()
	next.Artifacts = arts
	if next.Artifacts == nil {
		next.Artifacts = []*Artifact{}
	} else {
		next.ArtifactCount = len(arts)
	}
	if next.Terminal() {
		next.LeaseExpiresAt = nil
	}
	e, err := newJobEvent(event, next, now)
	if err != nil {
		return err
	}
	acct, err := s.accountID(ctx, j.OrganizationID, j.Environment)
	if err != nil {
		return err
	}
	entry := func(kind string, amount int64) *LedgerEntry {
		return &LedgerEntry{ID: NewID(PrefixLedgerEntry), AccountID: acct, Kind: kind, Amount: amount,
			JobID: j.ID, APIKeyID: j.APIKeyID, ProjectID: j.ProjectID, Description: kind + " for " + j.ID, CreatedAt: now}
	}
	return s.Store.TransitionJob(ctx, &JobTransition{Job: next, FromState: j.State, FromAttempts: j.Attempts,
		Artifacts: arts, Events: []*Event{e},
		// Entries of no amount write nothing.
		Ledger: []*LedgerEntry{entry(LedgerCharge, charge), entry(LedgerRelease, j.CreditsReserved-charge)}})
}

// newJobEvent is the outbox row of a job's move: about the job, concerning its file (so
// the file's history shows it).
func newJobEvent(typ string, j *Job, at time.Time) (*Event, error) {
	e, err := NewEvent(typ, j.OrganizationID, j.ProjectID, j.Environment, j.ID, j.View(), at)
	if err != nil {
		return nil, err
	}
	e.FileID = j.FileID
	return e, nil
}

// accountID returns the credit account of (org, env). An account, once it exists, is
// never replaced, so its id is remembered: settlements need not read it again.
func (s *Jobs) accountID(ctx context.Context, orgID string, env Environment) (string, error) {
	key := orgID + "/" + string(env)
	if id, ok := s.accounts.Load(key); ok {
		return id.(string), nil
	}
	id, err := s.Store.FindCreditAccountID(ctx, orgID, env)
	if err != nil {
		return "", err
	}
	s.accounts.Store(key, id)
	return id, nil
}

// ErrJobSkipped tells the worker the task has nothing to do (the job was cancelled or
// already finished): acknowledge it.
var ErrJobSkipped = errors.New("job is not runnable")

// ClaimJob moves a queued job to running under a lease (or takes over a running job
// whose lease ran out: its worker died or lost the store), counting the attempt. A
// running job whose lease holds is another worker's: ErrNotRun. A job claimed
// Config.MaxJobClaims times already fails instead (ErrJobSkipped).
func (s *Jobs) ClaimJob(ctx context.Context, id string) (*Job, error) {
	j, _, err := s.claimJob(ctx, id, false)
	return j, err
}

// claimJob is ClaimJob; with withFile it also reads the job's file while the claim is
// written, since the attempt needs both and neither read waits on the other. The file
// is nil when that read failed (the run reads it again, with its own errors).
func (s *Jobs) claimJob(ctx context.Context, id string, withFile bool) (*Job, *File, error) {
	j, err := s.Store.FindJobByID(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return nil, nil, ErrJobSkipped
	}
	if err != nil {
		return nil, nil, err
	}
	if j.State != JobQueued && j.State != JobRunning {
		return nil, nil, ErrJobSkipped
	}
	now := s.Clock.Now()
	if j.State == JobRunning && j.LeaseExpiresAt != nil && now.Before(*j.LeaseExpiresAt) {
		return nil, nil, fmt.Errorf("job %s: %w: another worker's claim holds until %s", id, ErrNotRun, j.LeaseExpiresAt.Format(time.RFC3339))
	}
	if j.Attempts >= s.Config.MaxJobClaims {
		// Its attempts keep ending without an outcome (the worker killed, most likely by
		// the job itself): another would end the same way.
		err := s.FailJob(ctx, j, &Error{Code: CodeInternal, Message: "the job stopped its worker repeatedly and was given up"})
		if err != nil && !errors.Is(err, ErrJobSkipped) {
			return nil, nil, err
		}
		return nil, nil, ErrJobSkipped
	}
	lease := now.Add(s.Config.JobLease)
	next := *j
	next.State, next.Attempts, next.LeaseExpiresAt = JobRunning, j.Attempts+1, &lease
	if next.StartedAt == nil {
		next.StartedAt = &now
	}
	t := &JobTransition{Job: &next, FromState: j.State, FromAttempts: j.Attempts}
	if j.State == JobQueued {
		e, err := newJobEvent(EventJobRunning, &next, now)
		if err != nil {
			return nil, nil, err
		}
		t.Events = []*Event{e}
	}
	var f *File
	var read sync.WaitGroup
	if withFile {
		read.Go(func() {
			if fr, err := s.Store.FindFileByID(ctx, j.FileID); err == nil {
				f = fr
			}
		})
	}
	err = s.Store.TransitionJob(ctx, t)
	read.Wait()
	if err != nil {
		if errors.Is(err, ErrStaleJob) {
			return nil, nil, ErrJobSkipped
		}
		return nil, nil, err
	}
	return &next, f, nil
}

// WorkDirPrefix begins the name of the directory a job attempt works in.
const WorkDirPrefix = "job-"

// newScratch makes the directory one attempt of job works in, under tmpRoot.
func newScratch(tmpRoot, jobID string) (string, error) {
	err := os.MkdirAll(tmpRoot, 0o700)
	var dir string
	if err == nil {
		dir, err = os.MkdirTemp(tmpRoot, WorkDirPrefix+jobID+"-")
	}
	if err != nil {
		return "", scratchUnavailable(err)
	}
	return dir, nil
}

// runJob runs a claimed job's pipeline on local copies of its files, in dir, an empty
// scratch directory the caller removes: each step reads what the step before it passed
// on, every output is verified, and the outputs of the steps that keep theirs are
// stored as artifacts. f is the job's file when already read (nil: read it here). It
// returns the artifacts and what the work cost, from the units each step processed.
func (s *Jobs) runJob(ctx context.Context, j *Job, f *File, dir string) ([]*Artifact, int64, error) {
	if f == nil {
		var err error
		if f, err = s.Store.FindFileByID(ctx, j.FileID); err != nil {
			return nil, 0, fmt.Errorf("file of job %s: %w", j.ID, err)
		}
	}
	if f.Status != FileReady {
		return nil, 0, &Error{Code: CodeConflict, Message: "the file is not ready: " + fileStatusWords[f.Status]}
	}
	op := s.Registry.Find(j.Operation, j.Preset)
	if op == nil {
		return nil, 0, &Error{Code: CodeUnsupportedOperation, Message: "this deployment does not know the job's operation"}
	}
	first, err := s.fetchInput(ctx, j, f, filepath.Join(dir, "input"))
	if err != nil {
		return nil, 0, err
	}
	var extra []EngineFile
	ids, err := op.fileIDs(j.Options)
	if err != nil {
		return nil, 0, err
	}
	for i, id := range ids {
		xf, err := s.Store.FindFileByID(ctx, id)
		if errors.Is(err, ErrNotFound) || err == nil && (xf.OrganizationID != j.OrganizationID || xf.Status != FileReady) {
			return nil, 0, &Error{Code: CodeConflict, Message: fmt.Sprintf("input file %s is no longer ready", id)}
		}
		if err != nil {
			return nil, 0, err
		}
		ef, err := s.fetchInput(ctx, j, xf, filepath.Join(dir, fmt.Sprintf("input-%d", i+1)))
		if err != nil {
			return nil, 0, err
		}
		extra = append(extra, ef)
	}

	steps := op.Pipeline(f.Format())
	var arts []*Artifact
	var cost int64
	names := artifactNames{}
	cur := first
	for i, st := range steps {
		eng := s.Engines[st.Operation.Engine]
		if eng == nil {
			return arts, 0, &Error{Code: CodeProcessingUnavailable, Message: "the " + st.Operation.Engine + " engine is not available on this worker"}
		}
		raw, err := st.StepOptions(j.Options)
		if err != nil {
			return arts, 0, err
		}
		opts, err := st.Operation.DecodeOptions(raw)
		if err != nil {
			return arts, 0, err
		}
		work := filepath.Join(dir, fmt.Sprintf("step%d", i))
		if err := os.Mkdir(work, 0o700); err != nil {
			return arts, 0, scratchUnavailable(err)
		}
		in := cur
		if st.FromFile {
			in = first
		}
		sha := ""
		if in.Path == first.Path {
			sha = f.SHA256
		}
		out, err := s.runEngine(ctx, st.Operation, eng, EngineInput{Operation: st.Operation.Name, Options: opts, Path: in.Path, Filename: in.Filename,
			Format: in.Format, ByteSize: in.ByteSize, SHA256: sha, Pages: in.Pages, Source: first, Inputs: extra, WorkDir: work,
			Progress: s.progressFunc(ctx, j, i, len(steps))})
		if err != nil {
			if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, errDeadline) && AsError(err) == nil {
				// Cut short from outside (a shutdown, a lost lease): not the job's fault.
				return arts, 0, fmt.Errorf("%w: %w", cause, err)
			}
			return arts, 0, err
		}
		if len(out.Artifacts) == 0 {
			return arts, 0, &Error{Code: CodeOutputValidationFailed, Message: st.Operation.Name + " produced no output"}
		}
		outputs := make([]EngineFile, 0, len(out.Artifacts))
		for _, ea := range out.Artifacts {
			ef, err := s.checkOutput(ctx, work, ea)
			if err != nil {
				return arts, 0, err
			}
			outputs = append(outputs, ef)
		}
		// The price the reservation was planned with, of what the step read and made.
		cost += st.Operation.Price.Cost(Work{Pages: out.Units, Outputs: len(out.Artifacts)})
		if !st.Intermediate {
			if limit := s.Config.MaxArtifactsPerJob; limit > 0 && len(arts)+len(out.Artifacts) > limit {
				return arts, 0, &Error{Code: CodeUnsupportedInput,
					Message: fmt.Sprintf("the job would make more than %d documents; a job holds at most %d", limit, limit)}
			}
			for _, ea := range out.Artifacts {
				ea.Name = names.take(st.OutputName(ea.Name))
				a, err := s.storeArtifact(ctx, j, f, ea)
				if err != nil {
					return arts, 0, err
				}
				if op.Kind == KindPreset {
					a.Step = st.Name
				}
				arts = append(arts, a)
			}
		}
		if i+1 < len(steps) {
			cur = passOn(steps[i+1].Operation, outputs, in)
		}
	}
	return arts, cost, nil
}

// passOn picks what the next step reads: the first output it accepts, or else what
// this step read (a step that only reports, like inspect, changes nothing).
func passOn(next *Operation, outputs []EngineFile, in EngineFile) EngineFile {
	for _, o := range outputs {
		if next.Accepts(o.Format) {
			return o
		}
	}
	return in
}

// fetchInput copies a job's input file to path.
func (s *Jobs) fetchInput(ctx context.Context, j *Job, f *File, path string) (EngineFile, error) {
	dctx, span := StartSpan(ctx, "download input", attribute.String("filemill.file_id", f.ID), attribute.Int64("filemill.byte_size", f.ByteSize))
	start := time.Now()
	err := s.download(dctx, f.StorageKey, path)
	addPhase(ctx, PhaseDownload, start)
	EndSpan(span, err)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return EngineFile{}, &Error{Code: CodeConflict, Message: fmt.Sprintf("the bytes of file %s are gone", f.ID)}
		}
		// The cause names paths and hosts (a full work directory, an unreachable
		// store): it is for the log, never for the client.
		return EngineFile{}, Unavailable("the file could not be copied from storage to the worker; the job will be tried again",
			fmt.Errorf("copy file %s to the work directory: %w", f.ID, err))
	}
	return EngineFile{FileID: f.ID, Path: path, Filename: SafeName(f.Filename), Format: f.Format(), ByteSize: f.ByteSize, Pages: f.Pages}, nil
}

// scratchUnavailable is the error of a worker that cannot write its scratch space (a
// full disk); the path stays in the logs.
func scratchUnavailable(err error) error {
	return fmt.Errorf("%w: %w", &Error{Code: CodeDependencyUnavailable, Message: "the worker's scratch space cannot be written; the job will be tried again"}, err)
}

// checkOutput verifies one engine output before anything stores or reads it: it lies
// inside the step's work directory, it is not empty, and it parses as its type says.
// Codes: output_validation_failed.
func (s *Jobs) checkOutput(ctx context.Context, work string, ea EngineArtifact) (EngineFile, error) {
	bad := func(why string) error {
		return &Error{Code: CodeOutputValidationFailed, Message: fmt.Sprintf("the output %s %s", ea.Name, why)}
	}
	rel, err := filepath.Rel(work, ea.Path)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return EngineFile{}, bad("was written outside its work directory")
	}
	fh, err := os.Open(ea.Path)
	if err != nil {
		return EngineFile{}, bad("is missing")
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil || !st.Mode().IsRegular() || st.Size() == 0 && !ea.MayBeEmpty {
		return EngineFile{}, bad("is empty")
	}
	head := make([]byte, DetectSniffBytes)
	n, _ := io.ReadFull(fh, head)
	if s.Verifier != nil && st.Size() > 0 {
		vctx, span := StartSpan(ctx, "verify output", attribute.String("filemill.mime_type", ea.MIMEType))
		err := s.Verifier.VerifyOutput(vctx, ea)
		EndSpan(span, err)
		if err != nil {
			if AsError(err) == nil {
				return EngineFile{}, fmt.Errorf("%w: %w", bad("does not verify"), err)
			}
			return EngineFile{}, err
		}
	}
	return EngineFile{Path: ea.Path, Filename: ea.Name, Format: Detect(head[:n]), ByteSize: st.Size()}, nil
}

func (s *Jobs) download(ctx context.Context, key, path string) error {
	rc, err := s.Blobs.Get(ctx, key)
	if err != nil {
		return err
	}
	defer rc.Close()
	out, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	// io.Copy lets a file copy to a file in the kernel (copy_file_range).
	if _, err := io.Copy(out, rc); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func (s *Jobs) storeArtifact(ctx context.Context, j *Job, f *File, ea EngineArtifact) (*Artifact, error) {
	fh, err := os.Open(ea.Path)
	if err != nil {
		return nil, fmt.Errorf("artifact %s: %w", ea.Name, err)
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	a := &Artifact{ID: NewID(PrefixArtifact), OrganizationID: j.OrganizationID, FileID: f.ID, JobID: j.ID, Name: ea.Name,
		MIMEType: ea.MIMEType, ByteSize: st.Size(), CreatedAt: s.Clock.Now()}
	a.StorageKey = ArtifactKey(f, a.ID)
	h := newHashingReader(fh)
	uctx, span := StartSpan(ctx, "upload artifact", attribute.String("filemill.artifact_id", a.ID), attribute.Int64("filemill.byte_size", st.Size()))
	start := time.Now()
	err = s.Blobs.Put(uctx, a.StorageKey, h, st.Size())
	addPhase(ctx, PhaseUpload, start)
	EndSpan(span, err)
	if err != nil {
		return nil, Unavailable("a result of the job could not be written to storage",
			fmt.Errorf("store artifact %s of job %s: %w", a.ID, j.ID, err))
	}
	a.SHA256 = h.Sum()
	return a, nil
}

// progressFunc records page-wise progress, at most every few percent, outside any
// transaction; a lost update is harmless.
func (s *Jobs) progressFunc(ctx context.Context, j *Job, step, steps int) func(int) {
	last := -10
	return func(pct int) {
		total := (step*100 + min(max(pct, 0), 100)) / steps
		if total-last < 5 && total != 100 {
			return
		}
		last = total
		if ok, _ := s.Store.UpdateJobProgress(ctx, j.ID, j.Attempts, total); ok {
			j.Progress = total
			publishProgress(ctx, s.Bus, j, s.Clock.Now())
		}
	}
}

// SettleJob records success: the artifacts, the charge (the actual cost, never above
// the reservation) and the release of the rest, the state and its event, in one write.
// Settling twice changes nothing (ErrJobSkipped): the second finds the job moved.
func (s *Jobs) SettleJob(ctx context.Context, j *Job, arts []*Artifact, cost int64) error {
	cost = min(max(cost, 0), j.CreditsReserved)
	now := s.Clock.Now()
	next := *j
	next.State, next.Progress, next.CreditsCharged, next.FinishedAt = JobSucceeded, 100, cost, &now
	if err := s.transition(ctx, j, &next, arts, EventJobSucceeded, cost); err != nil {
		if errors.Is(err, ErrStaleJob) {
			return ErrJobSkipped // another attempt settled it
		}
		return err
	}
	*j = next
	s.observer().CreditsCharged(cost)
	return nil
}

// FailJob records a final failure: nothing is charged, the reservation is released.
func (s *Jobs) FailJob(ctx context.Context, j *Job, cause error) error {
	code, msg := ErrorCode(cause), "internal error"
	if de := AsError(cause); de != nil {
		msg = de.Message
	}
	now := s.Clock.Now()
	next := *j
	next.State, next.ErrorCode, next.ErrorMessage, next.FinishedAt = JobFailed, code, msg, &now
	if err := s.transition(ctx, j, &next, nil, EventJobFailed, 0); err != nil {
		if errors.Is(err, ErrStaleJob) {
			return ErrJobSkipped
		}
		return err
	}
	*j = next
	return nil
}

// NonRetryable lists the codes that describe the input or the request, not the moment:
// another attempt would fail the same way. It is the one table of them: a job's attempt
// fails the job at once on these, and the worker's queue (jobs.Retryable) archives any
// task that failed with one instead of retrying it. A timeout is the input's own: an
// engine's run is deterministic, and a render past its deadline once is past it again
// (an attempt cut short by a shutdown or a lost lease is not a timeout: it ends with
// its context's error, which is retried).
var NonRetryable = []string{CodeCorruptedFile, CodeEncryptedFile, CodeUnsupportedInput, CodeMalwareDetected,
	CodeInvalidRequest, CodeUnsupportedOperation, CodeValidationFailed, CodePolicyViolation,
	CodeOutputValidationFailed, CodeNotFound, CodePaymentRequired, CodeConflict, CodeUnsupportedFile, CodeFileTooLarge,
	CodeTimeout}

// Retryable reports whether a failure may succeed on another attempt (a crashed tool,
// an unavailable dependency, anything unexpected).
func Retryable(err error) bool {
	return !slices.Contains(NonRetryable, ErrorCode(err))
}

// errDeadline is the cause of an attempt's context ending at the job's deadline.
var errDeadline = errors.New("the job ran past its deadline")

// StuckEngine is an attempt whose engine did not stop within Config.StopGrace of
// being told to: its work goes on in this process, beyond the job's control.
type StuckEngine struct {
	JobID     string
	Operation string
	// Since is how long ago the engine was told to stop.
	Since time.Duration
}

// ProcessJob is the whole of one attempt: claim, run under a lease it keeps renewing,
// settle. final says whether this is the last attempt the queue will make; a retryable
// failure on an earlier attempt is returned for the queue to retry, with the job still
// running. An attempt the store's absence cut short did not run the job: its error
// wraps ErrNotRun, and it neither fails the job nor counts as one of its attempts.
//
// The attempt's own deadline (deadline) ends its context with errDeadline; its engine
// is then told to stop and this waits for it to have stopped, so the caller's slot is
// not handed on while the work goes on. An engine that has not stopped within
// Config.StopGrace is reported to OnStuck; the job is failed with timeout at once,
// and the wait goes on until the engine returns.
func (s *Jobs) ProcessJob(ctx context.Context, id, tmpRoot string, final bool) error {
	ctx, clock := withPhaseClock(ctx)
	err := s.processJob(ctx, id, tmpRoot, final, clock)
	if clock.job != nil {
		s.observer().JobPhases(s.metricOperation(clock.job), attemptOutcome(clock.job, err), clock.snapshot())
	}
	return err
}

func (s *Jobs) processJob(ctx context.Context, id, tmpRoot string, final bool, clock *phaseClock) error {
	j, f, err := s.claimJob(ctx, id, true)
	if err != nil {
		return s.notRun(ctx, err)
	}
	clock.claimed(j)
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	// The lease is renewed until the engine has returned, whatever ends the run's
	// context first: no other worker may take the job while its work goes on here.
	stopLease := s.keepLease(context.WithoutCancel(ctx), j, cancel)
	var arts []*Artifact
	var cost int64
	dir, runErr := newScratch(tmpRoot, j.ID)
	if runErr == nil {
		// Removed once the outcome is recorded: removing a tree takes a while, and the
		// job's result need not wait for it.
		defer os.RemoveAll(dir)
		r, stuck := s.runUntilStopped(runCtx, j, f, dir)
		if stuck {
			stopLease()
			s.discardArtifacts(ctx, r.arts)
			return nil
		}
		arts, cost, runErr = r.arts, r.cost, r.err
	}
	stopLease()
	if errors.Is(context.Cause(runCtx), errLeaseLost) {
		// Another worker took the job over: the outcome is its to record.
		s.discardArtifacts(ctx, arts)
		return ErrJobSkipped
	}
	if runErr == nil {
		retried, err := s.record(ctx, func(ctx context.Context) error { return s.SettleJob(ctx, j, arts, cost) })
		if errors.Is(err, ErrJobSkipped) {
			// Settled by another attempt, or by this one when the store committed a write
			// whose answer was lost: then the artifacts are the job's.
			if !retried || !s.settledWith(ctx, j.ID, arts) {
				s.discardArtifacts(ctx, arts)
			}
			return nil
		}
		if err != nil {
			if !retried {
				// A write tried again may have been committed the first time: in doubt,
				// the bytes stay.
				s.discardArtifacts(ctx, arts)
			}
			s.releaseLease(ctx, j)
			return s.notRun(ctx, err)
		}
		return nil
	}
	s.discardArtifacts(ctx, arts)
	if AsError(runErr) == nil && s.unreachable(ctx, runErr) {
		s.releaseLease(ctx, j)
		return fmt.Errorf("%w: %w", ErrNotRun, runErr)
	}
	if Retryable(runErr) && !final {
		s.releaseLease(ctx, j)
		return runErr
	}
	_, err = s.record(ctx, func(ctx context.Context) error { return s.FailJob(ctx, j, runErr) })
	if err != nil && !errors.Is(err, ErrJobSkipped) {
		return s.notRun(ctx, err)
	}
	return nil
}

// runResult is what an attempt's run left: its artifacts, their cost, its error.
type runResult struct {
	arts []*Artifact
	cost int64
	err  error
}

// runUntilStopped runs j under its deadline and returns once its engine has returned.
// When the engine is still running StopGrace after its context ended at the deadline,
// the job is failed with timeout there and then, OnStuck is told, and stuck is true:
// the outcome is recorded, and what is returned is what the engine left when it
// finally stopped, to be thrown away.
func (s *Jobs) runUntilStopped(ctx context.Context, j *Job, f *File, dir string) (r runResult, stuck bool) {
	runCtx, cancel := context.WithTimeoutCause(ctx, s.deadline(j), errDeadline)
	defer cancel()
	done := make(chan runResult, 1)
	go func() {
		var r runResult
		r.arts, r.cost, r.err = s.runJob(runCtx, j, f, dir)
		if r.err != nil && errors.Is(context.Cause(runCtx), errDeadline) {
			// Whatever failed as the deadline came (the engine told to stop, or the
			// storing of what it made), the deadline is the cause.
			r.err = deadlineError()
		}
		done <- r
	}()
	select {
	case r = <-done:
		return r, false
	case <-runCtx.Done():
	}
	told := time.Now()
	grace := time.NewTimer(s.Config.StopGrace)
	defer grace.Stop()
	select {
	case r = <-done:
		return r, false
	case <-grace.C:
	}
	if s.OnStuck != nil {
		s.OnStuck(StuckEngine{JobID: j.ID, Operation: cmp.Or(j.Operation, j.Preset), Since: time.Since(told)})
	}
	if errors.Is(context.Cause(runCtx), errDeadline) {
		// The outcome does not depend on the work still going on: record it now, so the
		// client is not kept waiting for an engine that may never return.
		_, _ = s.record(ctx, func(ctx context.Context) error { return s.FailJob(ctx, j, deadlineError()) })
		return <-done, true
	}
	return <-done, false
}

// deadlineError is the failure of a job that ran past its deadline.
func deadlineError() error {
	return &Error{Code: CodeTimeout, Message: "the job ran past its deadline"}
}

// releaseLease ends j's lease as its attempt ends without an outcome, so the retry
// need not wait for it to run out. Best effort: a lease left behind runs out anyway.
func (s *Jobs) releaseLease(ctx context.Context, j *Job) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	_, _ = s.Store.RenewJobLease(ctx, j.ID, j.Attempts, s.Clock.Now())
}

// errLeaseLost ends a run whose job another worker took over.
var errLeaseLost = errors.New("the job's lease passed to another worker")

// keepLease renews j's lease every third of Config.JobLease until stop is called, and
// cancels the run with errLeaseLost when the job is found taken over. A renewal the store
// does not answer is tried again at the next tick: the lease outlasts two misses.
func (s *Jobs) keepLease(ctx context.Context, j *Job, cancel context.CancelCauseFunc) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(s.Config.JobLease / 3)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			ok, err := s.Store.RenewJobLease(ctx, j.ID, j.Attempts, s.Clock.Now().Add(s.Config.JobLease))
			if err == nil && !ok {
				cancel(errLeaseLost)
				return
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}

// recordPatience is how long an attempt that ran keeps trying to record its outcome
// while the store cannot be reached: the work is done, and running it again would only
// repeat it.
const recordPatience = time.Minute

// record writes an attempt's outcome, trying again every second while the store cannot
// be reached, for up to recordPatience. retried says whether a write was tried again:
// the one before may have been committed with its answer lost.
func (s *Jobs) record(ctx context.Context, write func(ctx context.Context) error) (retried bool, err error) {
	ctx = context.WithoutCancel(ctx)
	deadline := time.Now().Add(recordPatience)
	for {
		err = write(ctx)
		if err == nil || AsError(err) != nil || !s.unreachable(ctx, err) || time.Now().After(deadline) {
			return retried, err
		}
		retried = true
		time.Sleep(time.Second)
	}
}

// settledWith reports whether the job's stored artifacts are arts (or it has none to
// check): in doubt, yes, since deleting the bytes of a settled job loses its result,
// while keeping unused ones only costs space.
func (s *Jobs) settledWith(ctx context.Context, jobID string, arts []*Artifact) bool {
	if len(arts) == 0 {
		return true
	}
	stored, err := s.Store.FindArtifactsByJob(context.WithoutCancel(ctx), jobID)
	if err != nil {
		return true
	}
	return slices.ContainsFunc(stored, func(a *Artifact) bool { return a.ID == arts[0].ID })
}

// notRun marks err as ErrNotRun when it came from a store that cannot be reached; errors
// of the job itself pass unchanged.
func (s *Jobs) notRun(ctx context.Context, err error) error {
	if errors.Is(err, ErrNotRun) || errors.Is(err, ErrJobSkipped) || AsError(err) != nil || !s.unreachable(ctx, err) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrNotRun, err)
}

// unreachable reports whether err came from a store that cannot be reached: by the
// error's own words, or, for an error that says nothing of the kind (a server shutting
// down answers in its own words), by the store failing a ping now.
func (s *Jobs) unreachable(ctx context.Context, err error) bool {
	if IsUnreachable(err) {
		return true
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	return s.Store.Ping(ctx) != nil
}

func (s *Jobs) discardArtifacts(ctx context.Context, arts []*Artifact) {
	for _, a := range arts {
		_ = s.Blobs.Delete(context.WithoutCancel(ctx), a.StorageKey)
	}
}

// redrivePage is how many jobs the sweep reads at once.
const redrivePage = 500

// RedriveLost makes sure every job that may have lost its way to a worker will run:
// queued jobs older than grace, and running jobs whose lease ran out. For each, the
// queue re-drives its task: enqueues one where there is none (lost with Redis, or
// never enqueued), runs again one archived or completed while the job is unfinished
// (its attempts ended without an outcome), and leaves alone one waiting or running. It
// goes through every such job, page by page, so any number is re-driven in one run, and
// returns how many it re-drove. Running it in several processes at once is safe: each
// step is idempotent.
func (s *Jobs) RedriveLost(ctx context.Context, grace time.Duration) (int, error) {
	now := s.Clock.Now()
	q := RedriveQuery{QueuedBefore: now.Add(-grace), LeaseBefore: now, Limit: redrivePage}
	n := 0
	var errs []error
	for {
		js, err := s.Store.FindJobsToRedrive(ctx, q)
		if err != nil {
			return n, errors.Join(append(errs, err)...)
		}
		for _, j := range js {
			ok, err := s.Queue.RedriveJob(ctx, s.task(j))
			if err != nil {
				// One job's trouble must not hold back the others; a queue that is
				// down fails them all, and the next run starts over.
				if errs = append(errs, err); len(errs) >= 10 {
					return n, errors.Join(errs...)
				}
				continue
			}
			if ok {
				n++
			}
		}
		if len(js) < q.Limit {
			return n, errors.Join(errs...)
		}
		q.After = js[len(js)-1].ID
	}
}
