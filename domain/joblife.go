package domain

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
)

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
	return JobTask{JobID: j.ID, Queue: j.Queue, Timeout: s.Deadline(j) + 2*s.Config.StopGrace}
}

// Deadline is how long one attempt of j may run: the sum of the deadlines of the
// operations it may run.
func (s *Jobs) Deadline(j *Job) time.Duration {
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
	e, err := newJobEvent(ctx, event, next, now)
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
	err = s.Store.TransitionJob(ctx, &JobTransition{Job: next, FromState: j.State, FromAttempts: j.Attempts,
		Artifacts: arts, Events: []*Event{e},
		// Entries of no amount write nothing.
		Ledger: []*LedgerEntry{entry(LedgerCharge, charge), entry(LedgerRelease, j.CreditsReserved-charge)}})
	if err == nil && next.Terminal() {
		s.sweepLostArtifacts(ctx, next, arts)
	}
	return err
}

// maxSweptArtifacts bounds one sweep: more than any job's attempts store.
const maxSweptArtifacts = 10000

// sweepLostArtifacts removes, once j has ended, the objects its earlier attempts stored
// and never recorded: an attempt whose worker died between storing an artifact and
// recording the outcome leaves its bytes behind (an attempt that lives on discards its
// own), and one that died while storing leaves an upload open, whose parts no listing
// of objects shows. Only a job claimed more than once can have any; kept are the
// artifacts recorded with the outcome. A sweep that fails is logged: the job's outcome
// stands.
func (s *Jobs) sweepLostArtifacts(ctx context.Context, j *Job, kept []*Artifact) {
	if j.Attempts < 2 || s.Blobs == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	prefix := artifactPrefix(j.OrganizationID, j.ProjectID, j.FileID, j.ID)
	objs, err := s.Blobs.List(ctx, prefix, "", maxSweptArtifacts)
	keep := make(map[string]bool, len(kept))
	for _, a := range kept {
		keep[a.StorageKey] = true
	}
	removed := 0
	for _, o := range objs {
		if keep[o.Key] {
			continue
		}
		if err = s.Blobs.Delete(ctx, o.Key); err != nil {
			break
		}
		removed++
	}
	if err != nil && s.Log != nil {
		s.Log.WarnContext(ctx, "objects stored by the job's lost attempts could not be swept",
			"job_id", j.ID, "removed", removed, "error", err.Error())
	}
	if aborted, err := s.Blobs.AbortUploadsUnder(ctx, prefix, maxSweptArtifacts); err != nil && s.Log != nil {
		s.Log.WarnContext(ctx, "uploads left open by the job's lost attempts could not be aborted",
			"job_id", j.ID, "aborted", aborted, "error", err.Error())
	}
}

// newJobEvent is the outbox row of a job's move: about the job, concerning its file (so
// the file's history shows it).
func newJobEvent(ctx context.Context, typ string, j *Job, at time.Time) (*Event, error) {
	e, err := NewEvent(ctx, typ, j.OrganizationID, j.ProjectID, j.Environment, j.ID, j.View(), at)
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

// ClaimJobWithFile is ClaimJob that also reads the job's file while the claim is
// written, since an attempt needs both and neither read waits on the other. The file
// is nil when that read failed (JobInput reads it again, with its own errors).
func (s *Jobs) ClaimJobWithFile(ctx context.Context, id string) (*Job, *File, error) {
	return s.claimJob(ctx, id, true)
}

// claimJob is ClaimJob, with withFile ClaimJobWithFile.
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
	// The claim need not wait for the disk (some 4 ms of each job's way): a claim a
	// database crash loses leaves the job as it was, so the attempt finds its lease gone
	// at its next renewal, or its outcome finds the job moved, and is discarded, and the
	// job sweep queues the job again. Its running event may then have been seen (a
	// commit is visible before it is durable), and comes again with the next claim.
	t := &JobTransition{Job: &next, FromState: j.State, FromAttempts: j.Attempts, Lazy: true}
	if j.State == JobQueued {
		e, err := newJobEvent(ctx, EventJobRunning, &next, now)
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

// JobInput is what a claimed job runs on: its file (f when already read, nil: read
// here), which must still be ready, and its operation. Codes: conflict,
// unsupported_operation.
func (s *Jobs) JobInput(ctx context.Context, j *Job, f *File) (*File, *Operation, error) {
	if f == nil {
		var err error
		if f, err = s.Store.FindFileByID(ctx, j.FileID); err != nil {
			return nil, nil, fmt.Errorf("file of job %s: %w", j.ID, err)
		}
	}
	if f.Status != FileReady {
		return nil, nil, &Error{Code: CodeConflict, Message: "the file is not ready: " + fileStatusWords[f.Status]}
	}
	op := s.Registry.Find(j.Operation, j.Preset)
	if op == nil {
		return nil, nil, &Error{Code: CodeUnsupportedOperation, Message: "this deployment does not know the job's operation"}
	}
	return f, op, nil
}

// InputFile is a further input file of a claimed job (Operation.FileIDs), which must
// still be its organization's and ready. Codes: conflict.
func (s *Jobs) InputFile(ctx context.Context, j *Job, id string) (*File, error) {
	xf, err := s.Store.FindFileByID(ctx, id)
	if errors.Is(err, ErrNotFound) || err == nil && (xf.OrganizationID != j.OrganizationID || xf.Status != FileReady) {
		return nil, &Error{Code: CodeConflict, Message: fmt.Sprintf("input file %s is no longer ready", id)}
	}
	if err != nil {
		return nil, err
	}
	return xf, nil
}

// StoreArtifact stores one output of j's run, read from r (size bytes), as an
// artifact of f, and returns it (not yet recorded: SettleJob does). When ea.Path names
// the file r reads and the store takes files (FileBlobs), the file itself is given, and
// must not change after. Codes: dependency_unavailable.
func (s *Jobs) StoreArtifact(ctx context.Context, j *Job, f *File, ea EngineArtifact, r io.Reader, size int64) (*Artifact, error) {
	a := &Artifact{ID: NewID(PrefixArtifact), OrganizationID: j.OrganizationID, FileID: f.ID, JobID: j.ID, Name: ea.Name,
		MIMEType: ea.MIMEType, ByteSize: size, CreatedAt: s.Clock.Now()}
	a.StorageKey = ArtifactKey(f, j.ID, a.ID)
	h := newHashingReader(r)
	uctx, span := StartSpan(ctx, "upload artifact", attribute.String("filemill.artifact_id", a.ID), attribute.Int64("filemill.byte_size", size))
	start := time.Now()
	var err error
	if fb, ok := s.Blobs.(FileBlobs); ok && ea.Path != "" {
		// The store takes the file itself; r is read for its hash only.
		if _, err = io.Copy(io.Discard, h); err == nil {
			err = fb.PutFile(uctx, a.StorageKey, ea.Path, size)
		}
	} else {
		err = s.Blobs.Put(uctx, a.StorageKey, h, size)
	}
	AddPhase(ctx, PhaseUpload, start)
	EndSpan(span, err)
	if err != nil {
		return nil, Unavailable("a result of the job could not be written to storage",
			fmt.Errorf("store artifact %s of job %s: %w", a.ID, j.ID, err))
	}
	a.SHA256 = h.Sum()
	return a, nil
}

// ProgressFunc records page-wise progress, at most every few percent, outside any
// transaction; a lost update is harmless.
func (s *Jobs) ProgressFunc(ctx context.Context, j *Job, step, steps int) func(int) {
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
	s.Observed().CreditsCharged(cost)
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
// its context's error, which is retried). So is a resource limit: the same input needs
// the same memory and disk again.
var NonRetryable = []string{CodeCorruptedFile, CodeEncryptedFile, CodeUnsupportedInput, CodeMalwareDetected,
	CodeInvalidRequest, CodeUnsupportedOperation, CodeValidationFailed, CodePolicyViolation,
	CodeOutputValidationFailed, CodeNotFound, CodePaymentRequired, CodeConflict, CodeUnsupportedFile, CodeFileTooLarge,
	CodeTimeout, CodeResourceLimitExceeded}

// Retryable reports whether a failure may succeed on another attempt (a crashed tool,
// an unavailable dependency, anything unexpected).
func Retryable(err error) bool {
	return !slices.Contains(NonRetryable, ErrorCode(err))
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
			t := s.task(j)
			if j.State == JobRunning {
				t.LeaseLost, t.Attempts = true, j.Attempts
			}
			ok, err := s.Queue.RedriveJob(ctx, t)
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
