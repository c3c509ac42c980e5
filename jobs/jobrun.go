package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/hibiken/asynq"

	"github.com/filemill/filemill/domain"
)

// RegisterTasks wires the job runner and the periodic sweeps into a worker server.
// tmpDir holds each job's scratch directory (removed after the job).
func RegisterTasks(w *Server, svc *domain.Services, tmpDir string, log *slog.Logger) {
	w.Handle(TypeJobRun, asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
		var p JobRunPayload
		if err := json.Unmarshal(t.Payload(), &p); err != nil {
			return fmt.Errorf("%w: bad payload: %v", asynq.SkipRetry, err)
		}
		if err := os.MkdirAll(tmpDir, 0o700); err != nil {
			return err
		}
		retried, _ := asynq.GetRetryCount(ctx)
		maxRetry, _ := asynq.GetMaxRetry(ctx)
		err := svc.Jobs.ProcessJob(ctx, p.JobID, tmpDir, retried >= maxRetry)
		if errors.Is(err, domain.ErrJobSkipped) {
			return nil
		}
		return err
	}))
	sweep := func(name string, run func(ctx context.Context) (int, error)) asynq.Handler {
		return asynq.HandlerFunc(func(ctx context.Context, _ *asynq.Task) error {
			n, err := run(ctx)
			if n > 0 {
				log.Info("sweep", "sweep", name, "count", n)
			}
			return err
		})
	}
	w.Handle(TypeSweepQueuedJobs, sweep("queued_jobs", func(ctx context.Context) (int, error) {
		return svc.Jobs.RequeueStale(ctx, time.Minute, 500)
	}))
	w.Handle(TypeSweepUploads, sweep("uploads", func(ctx context.Context) (int, error) {
		return svc.Uploads.SweepExpired(ctx, 500)
	}))
	w.Handle(TypeSweepIdempotency, sweep("idempotency", func(ctx context.Context) (int, error) {
		return svc.Store.DeleteExpiredIdempotencyKeys(ctx, time.Now().UTC())
	}))
	w.Locally(10*time.Minute, func(context.Context) {
		n, err := SweepWorkDir(tmpDir, staleWorkDir, time.Now())
		if err != nil {
			log.Warn("sweep", "sweep", "work_dir", "count", n, "error", err.Error())
		} else if n > 0 {
			log.Info("sweep", "sweep", "work_dir", "count", n)
		}
	})
	w.Periodic("@every 1m", asynq.NewTask(TypeSweepQueuedJobs, nil))
	w.Periodic("@every 5m", asynq.NewTask(TypeSweepUploads, nil))
	w.Periodic("@every 10m", asynq.NewTask(TypeSweepIdempotency, nil))
}
