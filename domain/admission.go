package domain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
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
	return grant{projectID: adm.facts.Files[adm.fileIDs[0]].ProjectID, claimAtWrite: true, run: func(ctx context.Context, c *claim) (*Answer, error) {
		_, _, a, err := s.admit(ctx, p, adm, c)
		return a, err
	}}
}

// resolveWithOptions resolves a request's operation or preset and canonicalizes its
// options, before any file is claimed: the files the options name are authorized too.
func (s *Jobs) resolveWithOptions(p *Principal, operation, preset string, raw json.RawMessage) (*Operation, json.RawMessage, error) {
	op, err := s.resolveOperation(p, operation, preset)
	if err != nil {
		return nil, nil, err
	}
	options, err := op.ValidateOptions(raw)
	if err != nil {
		return nil, nil, err
	}
	return op, options, nil
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
	extra, err := op.FileIDs(options)
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

// FileIDs returns the further input files canonical options name. Codes:
// invalid_request naming the entry.
func (op *Operation) FileIDs(options json.RawMessage) ([]string, error) {
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
	extra, err := adm.op.FileIDs(adm.options)
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
		e, err := newJobEvent(ctx, EventJobQueued, j, j.CreatedAt)
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
		a.Answer, a.ClaimAtWrite = c.answering(answer), c != nil && c.atWrite
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
	s.Observed().CreditsReserved(total)
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
	op, options, err := s.resolveWithOptions(p, req.Operation, req.Preset, req.Options)
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
