package jobs_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/domain/eventually"
	"github.com/filemill/filemill/jobs"
)

func TestServer(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, open func(t *testing.T) string) {
		ctx := context.Background()

		t.Run("RunsTheTask", func(t *testing.T) {
			b := setup(t, open(t))
			ran := make(chan jobs.JobRunPayload, 1)
			b.server(t, fastConfig(), func(s *jobs.Server) {
				s.Handle(jobs.TypeJobRun, asynq.HandlerFunc(func(ctx context.Context, task *asynq.Task) error {
					var p jobs.JobRunPayload
					if err := json.Unmarshal(task.Payload(), &p); err != nil {
						return err
					}
					id, _ := asynq.GetTaskID(ctx)
					if id != p.JobID {
						return fmt.Errorf("task id %s, job id %s", id, p.JobID)
					}
					ran <- p
					return nil
				}))
			})
			require.NoError(t, b.queue.EnqueueJob(ctx, domain.JobTask{JobID: "job_01RUN"}))
			select {
			case p := <-ran:
				require.Equal(t, "job_01RUN", p.JobID)
			case <-time.After(10 * time.Second):
				t.Fatal("the handler never ran")
			}
			done := b.waitState(t, "job_01RUN", asynq.TaskStateCompleted)
			// Completed and retained: enqueueing the finished job again does not run it
			// again. It enqueues nothing at all: the retained task is the same one, and the
			// queue holds no other to run.
			require.NoError(t, b.queue.EnqueueJob(ctx, domain.JobTask{JobID: "job_01RUN"}))
			again, err := b.insp.GetTaskInfo(jobs.DefaultQueueName, "job_01RUN")
			require.NoError(t, err)
			require.Equal(t, asynq.TaskStateCompleted, again.State)
			require.Equal(t, done.CompletedAt, again.CompletedAt)
			q, err := b.insp.GetQueueInfo(jobs.DefaultQueueName)
			require.NoError(t, err)
			require.Zero(t, q.Pending+q.Active+q.Scheduled+q.Retry, "nothing was enqueued: %+v", q)
			require.Empty(t, ran)
		})

		t.Run("NonRetryableErrorIsNotRetried", func(t *testing.T) {
			b := setup(t, open(t))
			var attempts atomic.Int32
			b.server(t, fastConfig(), func(s *jobs.Server) {
				s.Handle(jobs.TypeJobRun, asynq.HandlerFunc(func(context.Context, *asynq.Task) error {
					attempts.Add(1)
					return fmt.Errorf("decode page 3: %w", domain.Errorf(domain.CodeCorruptedFile, "the PDF's xref table is broken"))
				}))
			})
			require.NoError(t, b.queue.EnqueueJob(ctx, domain.JobTask{JobID: "job_01CORRUPT"}))
			info := b.waitState(t, "job_01CORRUPT", asynq.TaskStateArchived)
			require.Contains(t, info.LastErr, "corrupted_file")
			// Archived is final: an archived task is never run again, so one attempt is all.
			require.EqualValues(t, 1, attempts.Load())
			require.Zero(t, info.Retried)
			eventually.True(t, b.logs.String(), func() bool {
				logs := b.logs.String()
				return contains(logs, "task failed", "task_type=job:run", "task_id=job_01CORRUPT",
					"attempt=1", "will_retry=false", "level=ERROR", "corrupted_file")
			})
		})

		t.Run("RetryableErrorIsRetried", func(t *testing.T) {
			b := setup(t, open(t))
			var attempts atomic.Int32
			b.server(t, fastConfig(), func(s *jobs.Server) {
				s.Handle(jobs.TypeJobRun, asynq.HandlerFunc(func(context.Context, *asynq.Task) error {
					attempts.Add(1)
					return errors.New("libreoffice crashed")
				}))
			})
			require.NoError(t, b.queue.EnqueueJob(ctx, domain.JobTask{JobID: "job_01FLAKY"}))
			info := b.waitState(t, "job_01FLAKY", asynq.TaskStateArchived)
			require.EqualValues(t, 3, attempts.Load(), "one attempt and two retries")
			require.Equal(t, 2, info.Retried)
			logs := b.logs.String()
			require.True(t, contains(logs, "attempt=1", "attempt=2", "attempt=3", "will_retry=true", "level=WARN"), logs)
		})

		t.Run("RetrySucceeds", func(t *testing.T) {
			b := setup(t, open(t))
			var attempts atomic.Int32
			b.server(t, fastConfig(), func(s *jobs.Server) {
				s.Handle(jobs.TypeJobRun, asynq.HandlerFunc(func(context.Context, *asynq.Task) error {
					if attempts.Add(1) == 1 {
						return domain.Errorf(domain.CodeDependencyUnavailable, "storage did not answer")
					}
					return nil
				}))
			})
			require.NoError(t, b.queue.EnqueueJob(ctx, domain.JobTask{JobID: "job_01SECOND"}))
			b.waitState(t, "job_01SECOND", asynq.TaskStateCompleted)
			require.EqualValues(t, 2, attempts.Load())
		})

		t.Run("ShutdownLetsARunningTaskFinish", func(t *testing.T) {
			b := setup(t, open(t))
			started, finished := make(chan struct{}), make(chan struct{})
			s := b.server(t, fastConfig(), func(s *jobs.Server) {
				s.Handle(jobs.TypeJobRun, asynq.HandlerFunc(func(ctx context.Context, _ *asynq.Task) error {
					close(started)
					select {
					case <-time.After(time.Second):
					case <-ctx.Done():
						return ctx.Err()
					}
					close(finished)
					return nil
				}))
			})
			require.NoError(t, b.queue.EnqueueJob(ctx, domain.JobTask{JobID: "job_01GRACEFUL"}))
			<-started
			s.Shutdown()
			select {
			case <-finished:
			default:
				t.Fatal("Shutdown returned before the running task finished")
			}
			b.waitState(t, "job_01GRACEFUL", asynq.TaskStateCompleted)
		})

		t.Run("ShutdownTimeoutHandsTheTaskBack", func(t *testing.T) {
			b := setup(t, open(t))
			cfg := fastConfig()
			cfg.ShutdownTimeout = 300 * time.Millisecond
			started := make(chan struct{})
			s := b.server(t, cfg, func(s *jobs.Server) {
				s.Handle(jobs.TypeJobRun, asynq.HandlerFunc(func(ctx context.Context, _ *asynq.Task) error {
					close(started)
					<-ctx.Done()
					return ctx.Err()
				}))
			})
			require.NoError(t, b.queue.EnqueueJob(ctx, domain.JobTask{JobID: "job_01SLOW"}))
			<-started
			begin := time.Now()
			s.Shutdown()
			require.Less(t, time.Since(begin), 3*time.Second)
			info := b.waitState(t, "job_01SLOW", asynq.TaskStatePending)
			require.Equal(t, 0, info.Retried, "handed back, not counted as a failure")
		})

		t.Run("AttemptsThatDidNotRunDoNotCount", func(t *testing.T) {
			b := setup(t, open(t))
			var runs atomic.Int32
			cfg := fastConfig()
			cfg.NotRunRetryDelay = 10 * time.Millisecond
			b.server(t, cfg, func(s *jobs.Server) {
				s.Handle(jobs.TypeJobRun, asynq.HandlerFunc(func(context.Context, *asynq.Task) error {
					if runs.Add(1) <= 5 { // more than the task's 3 attempts
						return fmt.Errorf("claim: %w: dial tcp: connection refused", domain.ErrNotRun)
					}
					return nil
				}))
			})
			require.NoError(t, b.queue.EnqueueJob(ctx, domain.JobTask{JobID: "job_01OUTAGE"}))
			info := b.waitState(t, "job_01OUTAGE", asynq.TaskStateCompleted)
			require.EqualValues(t, 6, runs.Load())
			require.Zero(t, info.Retried, "none counted")
			require.Equal(t, 1, strings.Count(b.logs.String(), "task did not run its job"),
				"logged once per interval, with a count: %s", b.logs.String())
		})

		t.Run("PeriodicFiresOncePerPeriodAcrossWorkers", func(t *testing.T) {
			b := setup(t, open(t))
			var mu sync.Mutex
			runs := map[string]int{}
			tick := asynq.HandlerFunc(func(ctx context.Context, _ *asynq.Task) error {
				id, _ := asynq.GetTaskID(ctx)
				mu.Lock()
				runs[id]++
				mu.Unlock()
				return nil
			})
			// Two worker processes with the same schedule, as in a scaled deployment.
			var workers []*jobs.Server
			for range 2 {
				workers = append(workers, b.server(t, fastConfig(), func(s *jobs.Server) {
					s.Handle("test:tick", tick)
					s.Periodic("@every 1s", asynq.NewTask("test:tick", nil))
				}))
			}
			begin := time.Now()
			// Three periods fired, however long a busy machine takes to fire them.
			eventually.True(t, "the condition to hold", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(runs) >= 3
			})
			for _, w := range workers {
				w.Shutdown()
			}
			elapsed := time.Since(begin)

			mu.Lock()
			defer mu.Unlock()
			require.GreaterOrEqual(t, len(runs), 2, "fired: %v", runs)
			require.LessOrEqual(t, len(runs), int(elapsed/time.Second)+1, "at most one task per second: %v", runs)
			for id, n := range runs {
				require.Equal(t, 1, n, "period %s ran %d times", id, n)
				require.Regexp(t, `^periodic:test:tick:\d+$`, id)
			}
		})

		t.Run("BadPeriodicSpecFailsStart", func(t *testing.T) {
			b := setup(t, open(t))
			s := jobs.NewServer(b.opt, fastConfig(), nil)
			defer s.Shutdown()
			s.Periodic("every minute", asynq.NewTask("test:tick", nil))
			require.ErrorContains(t, s.Start(), `periodic test:tick "every minute"`)
		})
	})

	t.Run("BadConfigFailsStart", func(t *testing.T) {
		s := jobs.NewServer(asynq.RedisClientOpt{Addr: "127.0.0.1:1"}, jobs.ServerConfig{Concurrency: -1}, nil)
		defer s.Shutdown()
		require.ErrorContains(t, s.Start(), "Concurrency")
	})
}

func TestRetryable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"Nil", nil, false},
		{"PlainError", errors.New("connection reset"), true},
		{"DeadlineExceeded", context.DeadlineExceeded, true},
		{"Timeout", domain.Errorf(domain.CodeTimeout, "took too long"), false},
		{"DependencyUnavailable", domain.Errorf(domain.CodeDependencyUnavailable, "s3 down"), true},
		{"Internal", domain.Errorf(domain.CodeInternal, "bug"), true},
		{"SkipRetry", fmt.Errorf("bad payload: %w", asynq.SkipRetry), false},
		{"StoreNotFound", fmt.Errorf("find job: %w", domain.ErrNotFound), false},
		{"WrappedCorrupted", fmt.Errorf("engine: %w", domain.Errorf(domain.CodeCorruptedFile, "x")), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, jobs.Retryable(tc.err))
		})
	}
	// The queue and the job's attempt read one table: a code that fails a job at once is
	// never retried as a task either.
	require.Contains(t, domain.NonRetryable, domain.CodeConflict)
	for _, code := range domain.NonRetryable {
		t.Run("NotRetryable_"+code, func(t *testing.T) {
			require.False(t, jobs.Retryable(domain.Errorf(code, "no")))
		})
	}
}

func TestSkipNonRetryable(t *testing.T) {
	t.Parallel()
	run := func(err error) error {
		h := jobs.SkipNonRetryable(asynq.HandlerFunc(func(context.Context, *asynq.Task) error { return err }))
		return h.ProcessTask(context.Background(), asynq.NewTask("t", nil))
	}
	require.NoError(t, run(nil))

	err := run(domain.Errorf(domain.CodeEncryptedFile, "password protected"))
	require.ErrorIs(t, err, asynq.SkipRetry)
	require.Equal(t, domain.CodeEncryptedFile, domain.ErrorCode(err), "the domain error stays in the chain")

	plain := errors.New("flaky")
	require.Same(t, plain, run(plain), "retryable errors pass through untouched")
}

func TestExponentialBackoff(t *testing.T) {
	t.Parallel()
	f := jobs.ExponentialBackoff(2*time.Second, 5, time.Minute)
	var got []time.Duration
	for n := range 5 {
		got = append(got, f(n, nil, nil))
	}
	require.Equal(t, []time.Duration{2 * time.Second, 10 * time.Second, 50 * time.Second, time.Minute, time.Minute}, got)
	require.Equal(t, time.Minute, f(10000, nil, nil))
}

func contains(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
