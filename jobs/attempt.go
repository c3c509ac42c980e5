package jobs

import (
	"cmp"
	"context"
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

	"github.com/filemill/filemill/domain"
)

// Attempts runs the attempts of jobs on a worker: each in a scratch directory of its
// own, on local copies of its files, under a lease it keeps renewing, its outcome
// recorded through the job's life in the domain.
type Attempts struct {
	*domain.Jobs
	// OnStuck is told of an engine that did not stop within Config.StopGrace of its
	// job's deadline: the worker takes itself out of service. nil: only the job fails.
	OnStuck func(StuckEngine)
}

// WorkDirPrefix begins the name of the directory a job attempt works in.
const WorkDirPrefix = "job-"

// runJob runs a claimed job's pipeline on local copies of its files, in dir, an empty
// scratch directory the caller removes: each step reads what the step before it passed
// on, every output is verified, and the outputs of the steps that keep theirs are
// stored as artifacts. f is the job's file when already read (nil: read it here). It
// returns the artifacts and what the work cost, from the units each step processed.
func (s *Attempts) runJob(ctx context.Context, j *domain.Job, f *domain.File, dir string) ([]*domain.Artifact, int64, error) {
	f, op, err := s.JobInput(ctx, j, f)
	if err != nil {
		return nil, 0, err
	}
	first, err := s.fetchInput(ctx, j, f, filepath.Join(dir, "input"))
	if err != nil {
		return nil, 0, err
	}
	var extra []domain.EngineFile
	ids, err := op.FileIDs(j.Options)
	if err != nil {
		return nil, 0, err
	}
	inputBytes := first.ByteSize
	for i, id := range ids {
		xf, err := s.InputFile(ctx, j, id)
		if err != nil {
			return nil, 0, err
		}
		ef, err := s.fetchInput(ctx, j, xf, filepath.Join(dir, fmt.Sprintf("input-%d", i+1)))
		if err != nil {
			return nil, 0, err
		}
		extra = append(extra, ef)
		inputBytes += ef.ByteSize
	}
	// The job's bounds: its scratch directory is measured as its engines run, and the
	// run stopped once it holds more than its bound; memory is bounded by the engines
	// that can bound it per job.
	limits := domain.JobLimits{Memory: s.Config.JobMemory, Disk: s.Config.JobDiskLimit(inputBytes)}
	if err := checkDisk(dir, limits.Disk); err != nil {
		return nil, 0, err
	}
	ctx, stopRun := context.WithCancelCause(ctx)
	defer stopRun(nil)
	stopWatch := WatchScratch(dir, limits.Disk, stopRun)
	defer stopWatch()

	steps := op.Pipeline(f.Format())
	var arts []*domain.Artifact
	var cost int64
	names := domain.ArtifactNames{}
	cur := first
	for i, st := range steps {
		eng := s.Engines[st.Operation.Engine]
		if eng == nil {
			return arts, 0, &domain.Error{Code: domain.CodeProcessingUnavailable, Message: "the " + st.Operation.Engine + " engine is not available on this worker"}
		}
		raw, err := st.StepOptions(j.Options)
		if err != nil {
			return arts, 0, err
		}
		opts, err := st.Operation.DecodeOptions(raw)
		if err != nil {
			return arts, 0, err
		}
		in := cur
		if st.FromFile {
			in = first
		}
		if st.Skip != nil && st.Skip(in) {
			continue
		}
		work, err := makeStepDir(dir, i)
		if err != nil {
			return arts, 0, scratchUnavailable(err)
		}
		sha := ""
		if in.Path == first.Path {
			sha = f.SHA256
		}
		out, err := s.RunEngine(ctx, st.Operation, eng, domain.EngineInput{Operation: st.Operation.Name, Options: opts, Path: in.Path, Filename: in.Filename,
			Format: in.Format, ByteSize: in.ByteSize, SHA256: sha, Pages: in.Pages, Source: first, Inputs: extra, WorkDir: work,
			Progress: s.ProgressFunc(ctx, j, i, len(steps)), Limits: limits})
		if err == nil {
			// The watcher measures between intervals: what a step left is measured
			// once more before anything of it is stored.
			err = checkDisk(dir, limits.Disk)
		}
		if err != nil {
			if le := limitCause(ctx); le != nil {
				return arts, 0, le
			}
			if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, errDeadline) && domain.AsError(err) == nil {
				// Cut short from outside (a shutdown, a lost lease): not the job's fault.
				return arts, 0, fmt.Errorf("%w: %w", cause, err)
			}
			return arts, 0, err
		}
		if len(out.Artifacts) == 0 {
			return arts, 0, &domain.Error{Code: domain.CodeOutputValidationFailed, Message: st.Operation.Name + " produced no output"}
		}
		outputs := make([]domain.EngineFile, 0, len(out.Artifacts))
		for _, ea := range out.Artifacts {
			ef, err := s.checkOutput(ctx, work, ea)
			if err != nil {
				return arts, 0, err
			}
			outputs = append(outputs, ef)
		}
		// The price the reservation was planned with, of what the step read and made.
		cost += st.Operation.Price.Cost(domain.Work{Pages: out.Units, Outputs: len(out.Artifacts)})
		if !st.Intermediate {
			if limit := s.Config.MaxArtifactsPerJob; limit > 0 && len(arts)+len(out.Artifacts) > limit {
				return arts, 0, &domain.Error{Code: domain.CodeUnsupportedInput,
					Message: fmt.Sprintf("the job would make more than %d documents; a job holds at most %d", limit, limit)}
			}
			for _, ea := range out.Artifacts {
				ea.Name = names.Take(st.OutputName(ea.Name))
				a, err := s.storeArtifact(ctx, j, f, ea, i+1 == len(steps))
				if err != nil {
					return arts, 0, err
				}
				if op.Kind == domain.KindPreset {
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
func passOn(next *domain.Operation, outputs []domain.EngineFile, in domain.EngineFile) domain.EngineFile {
	for _, o := range outputs {
		if next.Accepts(o.Format) {
			return o
		}
	}
	return in
}

// fetchInput copies a job's input file to path.
func (s *Attempts) fetchInput(ctx context.Context, j *domain.Job, f *domain.File, path string) (domain.EngineFile, error) {
	dctx, span := domain.StartSpan(ctx, "download input", attribute.String("filemill.file_id", f.ID), attribute.Int64("filemill.byte_size", f.ByteSize))
	start := time.Now()
	err := s.download(dctx, f.StorageKey, path)
	domain.AddPhase(ctx, domain.PhaseDownload, start)
	domain.EndSpan(span, err)
	if err != nil {
		if errors.Is(err, domain.ErrNotFound) {
			return domain.EngineFile{}, &domain.Error{Code: domain.CodeConflict, Message: fmt.Sprintf("the bytes of file %s are gone", f.ID)}
		}
		// The cause names paths and hosts (a full work directory, an unreachable
		// store): it is for the log, never for the client.
		return domain.EngineFile{}, domain.Unavailable("the file could not be copied from storage to the worker; the job will be tried again",
			fmt.Errorf("copy file %s to the work directory: %w", f.ID, err))
	}
	return domain.EngineFile{FileID: f.ID, Path: path, Filename: domain.SafeName(f.Filename), Format: f.Format(), ByteSize: f.ByteSize, Pages: f.Pages}, nil
}

// scratchUnavailable is the error of a worker that cannot write its scratch space (a
// full disk); the path stays in the logs.
func scratchUnavailable(err error) error {
	return fmt.Errorf("%w: %w", &domain.Error{Code: domain.CodeDependencyUnavailable, Message: "the worker's scratch space cannot be written; the job will be tried again"}, err)
}

// checkOutput verifies one engine output before anything stores or reads it: it lies
// inside the step's work directory, it is not empty, and it parses as its type says.
// Codes: output_validation_failed.
func (s *Attempts) checkOutput(ctx context.Context, work string, ea domain.EngineArtifact) (domain.EngineFile, error) {
	bad := func(why string) error {
		return &domain.Error{Code: domain.CodeOutputValidationFailed, Message: fmt.Sprintf("the output %s %s", ea.Name, why)}
	}
	rel, err := filepath.Rel(work, ea.Path)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return domain.EngineFile{}, bad("was written outside its work directory")
	}
	fh, err := os.Open(ea.Path)
	if err != nil {
		return domain.EngineFile{}, bad("is missing")
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil || !st.Mode().IsRegular() || st.Size() == 0 && !ea.MayBeEmpty {
		return domain.EngineFile{}, bad("is empty")
	}
	head := make([]byte, domain.DetectSniffBytes)
	n, _ := io.ReadFull(fh, head)
	if s.Verifier != nil && st.Size() > 0 {
		vctx, span := domain.StartSpan(ctx, "verify output", attribute.String("filemill.mime_type", ea.MIMEType))
		err := s.Verifier.VerifyOutput(vctx, ea)
		domain.EndSpan(span, err)
		if err != nil {
			if domain.AsError(err) == nil {
				return domain.EngineFile{}, fmt.Errorf("%w: %w", bad("does not verify"), err)
			}
			return domain.EngineFile{}, err
		}
	}
	return domain.EngineFile{Path: ea.Path, Filename: ea.Name, Format: domain.Detect(head[:n]), ByteSize: st.Size()}, nil
}

func (s *Attempts) download(ctx context.Context, key, path string) error {
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

// storeArtifact stores an engine's output. The store may take the file itself (linked
// in) when last says no later step reads it: one that did could change what is stored.
func (s *Attempts) storeArtifact(ctx context.Context, j *domain.Job, f *domain.File, ea domain.EngineArtifact, last bool) (*domain.Artifact, error) {
	fh, err := os.Open(ea.Path)
	if err != nil {
		return nil, fmt.Errorf("artifact %s: %w", ea.Name, err)
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	if !last {
		ea.Path = "" // its bytes, never the file
	}
	return s.StoreArtifact(ctx, j, f, ea, fh, st.Size())
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
// wraps domain.ErrNotRun, and it neither fails the job nor counts as one of its attempts.
//
// The attempt's own deadline (deadline) ends its context with errDeadline; its engine
// is then told to stop and this waits for it to have stopped, so the caller's slot is
// not handed on while the work goes on. An engine that has not stopped within
// Config.StopGrace is reported to OnStuck; the job is failed with timeout at once,
// and the wait goes on until the engine returns.
func (s *Attempts) ProcessJob(ctx context.Context, id, tmpRoot string, final bool) error {
	ctx, clock := domain.WithPhaseClock(ctx)
	err := s.processJob(ctx, id, tmpRoot, final, clock)
	if clock.Job() != nil {
		s.Observed().JobPhases(s.MetricOperation(clock.Job()), domain.AttemptOutcome(clock.Job(), err), clock.Snapshot())
	}
	return err
}

func (s *Attempts) processJob(ctx context.Context, id, tmpRoot string, final bool, clock *domain.PhaseClock) error {
	cctx, span := domain.StartSpan(ctx, "claim job")
	j, f, err := s.ClaimJobWithFile(cctx, id)
	domain.EndSpan(span, err)
	if err != nil {
		return s.notRun(ctx, err)
	}
	clock.Claimed(j)
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	// The lease is renewed until the engine has returned, whatever ends the run's
	// context first: no other worker may take the job while its work goes on here.
	stopLease := s.keepLease(context.WithoutCancel(ctx), j, cancel)
	var arts []*domain.Artifact
	var cost int64
	dir, runErr := newScratch(tmpRoot, j.ID)
	if runErr == nil {
		// Emptied once the outcome is recorded: removing a tree takes a while, and the
		// job's result need not wait for it. An engine that never stopped may still write
		// into it: then it is removed, never kept for another attempt.
		r, stuck := s.runUntilStopped(runCtx, j, f, dir)
		defer func() {
			if stuck {
				os.RemoveAll(dir)
				return
			}
			releaseScratch(tmpRoot, dir)
		}()
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
		return domain.ErrJobSkipped
	}
	if runErr == nil {
		sctx, span := domain.StartSpan(ctx, "settle job")
		retried, err := s.record(sctx, func(ctx context.Context) error { return s.SettleJob(ctx, j, arts, cost) })
		domain.EndSpan(span, err)
		if errors.Is(err, domain.ErrJobSkipped) {
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
	if domain.AsError(runErr) == nil && s.unreachable(ctx, runErr) {
		s.releaseLease(ctx, j)
		return fmt.Errorf("%w: %w", domain.ErrNotRun, runErr)
	}
	if domain.Retryable(runErr) && !final {
		s.releaseLease(ctx, j)
		return runErr
	}
	_, err = s.record(ctx, func(ctx context.Context) error { return s.FailJob(ctx, j, runErr) })
	if err != nil && !errors.Is(err, domain.ErrJobSkipped) {
		return s.notRun(ctx, err)
	}
	return nil
}

// runResult is what an attempt's run left: its artifacts, their cost, its error.
type runResult struct {
	arts []*domain.Artifact
	cost int64
	err  error
}

// runUntilStopped runs j under its deadline and returns once its engine has returned.
// When the engine is still running StopGrace after its context ended at the deadline,
// the job is failed with timeout there and then, OnStuck is told, and stuck is true:
// the outcome is recorded, and what is returned is what the engine left when it
// finally stopped, to be thrown away.
func (s *Attempts) runUntilStopped(ctx context.Context, j *domain.Job, f *domain.File, dir string) (r runResult, stuck bool) {
	runCtx, cancel := context.WithTimeoutCause(ctx, s.Deadline(j), errDeadline)
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
	return &domain.Error{Code: domain.CodeTimeout, Message: "the job ran past its deadline"}
}

// releaseLease ends j's lease as its attempt ends without an outcome, so the retry
// need not wait for it to run out. Best effort: a lease left behind runs out anyway.
func (s *Attempts) releaseLease(ctx context.Context, j *domain.Job) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	_, _ = s.Store.RenewJobLease(ctx, j.ID, j.Attempts, s.Clock.Now())
}

// errLeaseLost ends a run whose job another worker took over.
var errLeaseLost = errors.New("the job's lease passed to another worker")

// keepLease renews j's lease every third of Config.JobLease until stop is called, and
// cancels the run with errLeaseLost when the job is found taken over. A renewal the store
// does not answer is tried again at the next tick: the lease outlasts two misses.
func (s *Attempts) keepLease(ctx context.Context, j *domain.Job, cancel context.CancelCauseFunc) (stop func()) {
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
func (s *Attempts) record(ctx context.Context, write func(ctx context.Context) error) (retried bool, err error) {
	ctx = context.WithoutCancel(ctx)
	deadline := time.Now().Add(recordPatience)
	for {
		err = write(ctx)
		if err == nil || domain.AsError(err) != nil || !s.unreachable(ctx, err) || time.Now().After(deadline) {
			return retried, err
		}
		retried = true
		time.Sleep(time.Second)
	}
}

// settledWith reports whether the job's stored artifacts are arts (or it has none to
// check): in doubt, yes, since deleting the bytes of a settled job loses its result,
// while keeping unused ones only costs space.
func (s *Attempts) settledWith(ctx context.Context, jobID string, arts []*domain.Artifact) bool {
	if len(arts) == 0 {
		return true
	}
	stored, err := s.Store.FindArtifactsByJob(context.WithoutCancel(ctx), jobID)
	if err != nil {
		return true
	}
	return slices.ContainsFunc(stored, func(a *domain.Artifact) bool { return a.ID == arts[0].ID })
}

// notRun marks err as domain.ErrNotRun when it came from a store that cannot be reached; errors
// of the job itself pass unchanged.
func (s *Attempts) notRun(ctx context.Context, err error) error {
	if errors.Is(err, domain.ErrNotRun) || errors.Is(err, domain.ErrJobSkipped) || domain.AsError(err) != nil || !s.unreachable(ctx, err) {
		return err
	}
	return fmt.Errorf("%w: %w", domain.ErrNotRun, err)
}

// unreachable reports whether err came from a store that cannot be reached: by the
// error's own words, or, for an error that says nothing of the kind (a server shutting
// down answers in its own words), by the store failing a ping now.
func (s *Attempts) unreachable(ctx context.Context, err error) bool {
	if domain.IsUnreachable(err) {
		return true
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	return s.Store.Ping(ctx) != nil
}

func (s *Attempts) discardArtifacts(ctx context.Context, arts []*domain.Artifact) {
	for _, a := range arts {
		_ = s.Blobs.Delete(context.WithoutCancel(ctx), a.StorageKey)
	}
}
