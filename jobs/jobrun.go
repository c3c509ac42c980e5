package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hibiken/asynq"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/filemill/filemill/domain"
)

// RegisterTasks wires the job runner and the periodic sweeps into a worker server.
// tmpDir holds each job's scratch directory (removed after the job). The sweeps run
// on the sweep queue; the job sweep every ServerConfig.SweepInterval.
//
// An engine that does not stop at its job's deadline takes the worker out of service
// (Server.TakeOutOfService).
func RegisterTasks(w *Server, svc *domain.Services, tmpDir string, log *slog.Logger) {
	attempts := &Attempts{Jobs: svc.Jobs, OnStuck: func(st StuckEngine) {
		w.TakeOutOfService(fmt.Sprintf("job %s: the %s engine did not stop %s after its deadline", st.JobID, st.Operation, st.Since.Round(time.Second)))
	}}
	w.Handle(TypeJobRun, asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
		var p JobRunPayload
		if err := json.Unmarshal(t.Payload(), &p); err != nil {
			return fmt.Errorf("%w: bad payload: %v", asynq.SkipRetry, err)
		}
		retried, _ := asynq.GetRetryCount(ctx)
		maxRetry, _ := asynq.GetMaxRetry(ctx)
		ctx, span := startAttempt(ctx, t, p.JobID, retried)
		err := attempts.ProcessJob(ctx, p.JobID, tmpDir, retried >= maxRetry)
		if errors.Is(err, domain.ErrJobSkipped) {
			err = nil
		}
		domain.EndSpan(span, err)
		return err
	}))
	// sweep runs one sweep and logs what it removed; a failure is the caller's to report
	// (asynq logs a task's, Locally's caller below its own).
	sweep := func(name string, run func(ctx context.Context) (int, error)) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			n, err := run(ctx)
			if n > 0 {
				log.Info("sweep", "sweep", name, "count", n)
			}
			return err
		}
	}
	task := func(run func(ctx context.Context) error) asynq.Handler {
		return asynq.HandlerFunc(func(ctx context.Context, _ *asynq.Task) error { return run(ctx) })
	}
	// A queued job younger than this is left alone: its task is being enqueued.
	grace := min(5*time.Second, w.cfg.SweepInterval)
	w.Handle(TypeSweepJobs, task(sweep("jobs", func(ctx context.Context) (int, error) {
		return svc.Jobs.RedriveLost(ctx, grace)
	})))
	w.Handle(TypeSweepUploads, task(sweep("uploads", func(ctx context.Context) (int, error) {
		return svc.Uploads.SweepExpired(ctx, 500)
	})))
	w.Handle(TypeSweepIdempotency, task(sweep("idempotency", func(ctx context.Context) (int, error) {
		return svc.Store.DeleteExpiredIdempotencyKeys(ctx, time.Now().UTC())
	})))
	w.Handle(TypeSweepPeople, task(sweep("people", func(ctx context.Context) (int, error) {
		return svc.People.Sweep(ctx, 500)
	})))
	w.Handle(TypeSweepLegacyArtifacts, task(sweep("legacy_artifacts", func(ctx context.Context) (int, error) {
		return svc.Files.SweepLegacyArtifacts(ctx, domain.LegacyArtifactGrace)
	})))
	workDir := sweep("work_dir", func(context.Context) (int, error) { return SweepWorkDir(tmpDir, staleWorkDir, time.Now()) })
	w.Locally(10*time.Minute, func(ctx context.Context) {
		if err := workDir(ctx); err != nil {
			log.Warn("sweep failed", "sweep", "work_dir", "error", err.Error())
		}
	})
	w.Periodic("@every "+w.cfg.SweepInterval.String(), asynq.NewTask(TypeSweepJobs, nil))
	w.Periodic("@every 5m", asynq.NewTask(TypeSweepUploads, nil))
	w.Periodic("@every 10m", asynq.NewTask(TypeSweepIdempotency, nil))
	w.Periodic("@every 10m", asynq.NewTask(TypeSweepPeople, nil))
	// Once completed, a run reads one row and lists nothing.
	w.Periodic("@every 10m", asynq.NewTask(TypeSweepLegacyArtifacts, nil))
}

// startAttempt starts the span of one attempt at a job: a trace of its own, linked to
// the span that enqueued the job (the traceparent in the task's headers) rather than its
// child, since an attempt may start long after the request that asked for it ended, and
// a job may be attempted several times.
func startAttempt(ctx context.Context, t *asynq.Task, jobID string, retried int) (context.Context, trace.Span) {
	queue, _ := asynq.GetQueueName(ctx)
	opts := []trace.SpanStartOption{trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(attribute.String("filemill.job_id", jobID), attribute.Int("filemill.attempt", retried+1),
			attribute.String("messaging.destination.name", queue))}
	if h := t.Headers(); len(h) > 0 {
		enq := trace.SpanContextFromContext(otel.GetTextMapPropagator().Extract(context.Background(), propagation.MapCarrier(h)))
		if enq.IsValid() {
			opts = append(opts, trace.WithLinks(trace.Link{SpanContext: enq}))
		}
	}
	return domain.Tracer.Start(ctx, "job attempt", opts...)
}
