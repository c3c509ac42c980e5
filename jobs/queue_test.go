package jobs_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/domain/eventually"
	"github.com/filemill/filemill/jobs"
)

func TestQueue(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, open func(t *testing.T) string) {
		ctx := context.Background()

		t.Run("DoubleEnqueueIsOneTask", func(t *testing.T) {
			b := setup(t, open(t))
			require.NoError(t, b.queue.EnqueueJob(ctx, domain.JobTask{JobID: "job_01DOUBLE"}))
			require.NoError(t, b.queue.EnqueueJob(ctx, domain.JobTask{JobID: "job_01DOUBLE"}), "a second enqueue is harmless")

			info, err := b.insp.GetQueueInfo(jobs.DefaultQueueName)
			require.NoError(t, err)
			require.Equal(t, 1, info.Pending)
			require.Equal(t, 1, info.Size)

			task, err := b.insp.GetTaskInfo(jobs.DefaultQueueName, "job_01DOUBLE")
			require.NoError(t, err)
			require.Equal(t, jobs.TypeJobRun, task.Type)
			require.Equal(t, 2, task.MaxRetry, "3 attempts in all")
			require.Equal(t, 10*time.Minute, task.Timeout)
			require.Equal(t, 24*time.Hour, task.Retention)
			var p jobs.JobRunPayload
			require.NoError(t, json.Unmarshal(task.Payload, &p))
			require.Equal(t, "job_01DOUBLE", p.JobID)
		})

		t.Run("ConfiguredTimeout", func(t *testing.T) {
			b := setup(t, open(t))
			cfg := jobs.DefaultQueueConfig()
			cfg.JobTimeout = 90 * time.Second
			q, err := jobs.NewQueueWithConfig(b.opt, cfg)
			require.NoError(t, err)
			defer q.Close()
			require.NoError(t, q.EnqueueJob(ctx, domain.JobTask{JobID: "job_01TIMEOUT"}))
			task, err := b.insp.GetTaskInfo(jobs.DefaultQueueName, "job_01TIMEOUT")
			require.NoError(t, err)
			require.Equal(t, 90*time.Second, task.Timeout)
		})

		t.Run("TaskNamesItsQueueAndDeadline", func(t *testing.T) {
			b := setup(t, open(t))
			require.NoError(t, b.queue.EnqueueJob(ctx, domain.JobTask{JobID: "job_01ENGINE", Queue: "engine:office+pdf", Timeout: 3 * time.Minute}))
			task, err := b.insp.GetTaskInfo("engine:office+pdf", "job_01ENGINE")
			require.NoError(t, err)
			require.Equal(t, 3*time.Minute, task.Timeout)
			_, err = b.insp.GetTaskInfo(jobs.DefaultQueueName, "job_01ENGINE")
			require.Error(t, err, "not on the default queue")
		})

		t.Run("DeadlineRoundedUpToTheSecond", func(t *testing.T) {
			// The queue keeps whole seconds: a deadline cut down would end the slot's
			// hold before the attempt's own deadline.
			b := setup(t, open(t))
			require.NoError(t, b.queue.EnqueueJob(ctx, domain.JobTask{JobID: "job_01SHORT", Timeout: 1500 * time.Millisecond}))
			task, err := b.insp.GetTaskInfo(jobs.DefaultQueueName, "job_01SHORT")
			require.NoError(t, err)
			require.Equal(t, 2*time.Second, task.Timeout)
		})

		t.Run("Ping", func(t *testing.T) {
			b := setup(t, open(t))
			require.NoError(t, b.queue.Ping(ctx))
		})

		t.Run("QueueDepth", func(t *testing.T) {
			b := setup(t, open(t))
			for _, id := range []string{"job_01A", "job_01B", "job_01C"} {
				require.NoError(t, b.queue.EnqueueJob(ctx, domain.JobTask{JobID: id}))
			}
			depth, err := jobs.QueueDepth(ctx, b.insp)
			require.NoError(t, err)
			require.Equal(t, map[string]int{"default": 3}, depth)

			cfg := fastConfig()
			cfg.Queues = map[string]int{"default": 2, "webhooks": 1}
			s := jobs.NewServer(b.opt, cfg, nil) // not started: nothing is taken off the queue
			defer s.Shutdown()
			depth, err = s.QueueDepth(ctx)
			require.NoError(t, err)
			require.Equal(t, map[string]int{"default": 3, "webhooks": 0, jobs.SweepQueueName: 0}, depth,
				"the server's queues, the sweeps' own included")
		})

		t.Run("RedriveJob", func(t *testing.T) {
			b := setup(t, open(t))
			state := func(queue, id string) asynq.TaskState {
				t.Helper()
				info, err := b.insp.GetTaskInfo(queue, id)
				require.NoError(t, err)
				return info.State
			}
			redrive := func(id string, want bool) {
				t.Helper()
				did, err := b.queue.RedriveJob(ctx, domain.JobTask{JobID: id})
				require.NoError(t, err)
				require.Equal(t, want, did, id)
			}

			redrive("job_01MISSING", true)
			require.Equal(t, asynq.TaskStatePending, state(jobs.DefaultQueueName, "job_01MISSING"), "a missing task is enqueued")
			redrive("job_01MISSING", false) // pending: left alone

			// An archived task runs again with its retry count: what was spent stays spent.
			_, err := asynq.NewClient(b.opt).Enqueue(jobs.NewJobRunTask("job_01ARCHIVED"), asynq.MaxRetry(2))
			require.NoError(t, err)
			require.NoError(t, b.insp.ArchiveTask(jobs.DefaultQueueName, "job_01ARCHIVED"))
			redrive("job_01ARCHIVED", true)
			require.Equal(t, asynq.TaskStatePending, state(jobs.DefaultQueueName, "job_01ARCHIVED"))

			// A missing task is enqueued on the job's own queue.
			did, err := b.queue.RedriveJob(ctx, domain.JobTask{JobID: "job_01ENGINEQ", Queue: "engine:pdf"})
			require.NoError(t, err)
			require.True(t, did)
			require.Equal(t, asynq.TaskStatePending, state("engine:pdf", "job_01ENGINEQ"))

			// A task found in any queue counts, not only the job's own.
			_, err = asynq.NewClient(b.opt).Enqueue(jobs.NewJobRunTask("job_01ELSEWHERE"), asynq.Queue("pdf"))
			require.NoError(t, err)
			require.NoError(t, b.insp.ArchiveTask("pdf", "job_01ELSEWHERE"))
			redrive("job_01ELSEWHERE", true)
			require.Equal(t, asynq.TaskStatePending, state("pdf", "job_01ELSEWHERE"))
			_, err = b.insp.GetTaskInfo(jobs.DefaultQueueName, "job_01ELSEWHERE")
			require.ErrorIs(t, err, asynq.ErrTaskNotFound, "not enqueued a second time elsewhere")

			// Redis restarts empty: the queue's client still believes its queue
			// registered, and a task it enqueues then gets archived.
			opts, err := redis.ParseURL(b.url)
			require.NoError(t, err)
			rdb := redis.NewClient(opts)
			defer rdb.Close()
			require.NoError(t, rdb.FlushDB(ctx).Err())
			require.NoError(t, b.queue.EnqueueJob(ctx, domain.JobTask{JobID: "job_01AFTERRESTART"}))
			_, err = b.insp.GetTaskInfo(jobs.DefaultQueueName, "job_01AFTERRESTART")
			require.ErrorIs(t, err, asynq.ErrQueueNotFound, "the queue is not registered again")
			require.NoError(t, rdb.SAdd(ctx, "asynq:queues", jobs.DefaultQueueName).Err())
			require.NoError(t, b.insp.ArchiveTask(jobs.DefaultQueueName, "job_01AFTERRESTART"))
			require.NoError(t, rdb.SRem(ctx, "asynq:queues", jobs.DefaultQueueName).Err())
			redrive("job_01AFTERRESTART", true)
			require.Equal(t, asynq.TaskStatePending, state(jobs.DefaultQueueName, "job_01AFTERRESTART"))
		})

		t.Run("RedriveJobRunsACompletedTaskAgain", func(t *testing.T) {
			b := setup(t, open(t))
			require.NoError(t, b.queue.EnqueueJob(ctx, domain.JobTask{JobID: "job_01DONE"}))
			var runs atomic.Int32
			b.server(t, fastConfig(), func(s *jobs.Server) {
				s.Handle(jobs.TypeJobRun, asynq.HandlerFunc(func(context.Context, *asynq.Task) error { runs.Add(1); return nil }))
			})
			b.waitState(t, "job_01DONE", asynq.TaskStateCompleted)
			did, err := b.queue.RedriveJob(ctx, domain.JobTask{JobID: "job_01DONE"})
			require.NoError(t, err)
			require.True(t, did)
			eventually.True(t, "the condition to hold", func() bool { return runs.Load() == 2 })
		})
		t.Run("RedriveJobBesideATaskWhoseWorkerDied", func(t *testing.T) {
			b := setup(t, open(t))
			require.NoError(t, b.queue.EnqueueJob(ctx, domain.JobTask{JobID: "job_01LOST"}))
			// The first attempt never ends, as when its worker was killed: asynq keeps
			// the task active until its own lease and recovery scan, minutes on.
			release := make(chan struct{})
			type run struct {
				id       string
				maxRetry int
				payload  string
			}
			runs := make(chan run, 4)
			b.server(t, fastConfig(), func(s *jobs.Server) {
				s.Handle(jobs.TypeJobRun, asynq.HandlerFunc(func(ctx context.Context, task *asynq.Task) error {
					id, _ := asynq.GetTaskID(ctx)
					if id == "job_01LOST" {
						<-release
						return nil
					}
					maxRetry, _ := asynq.GetMaxRetry(ctx)
					runs <- run{id, maxRetry, string(task.Payload())}
					return nil
				}))
			})
			t.Cleanup(func() { close(release) })
			b.waitState(t, "job_01LOST", asynq.TaskStateActive)

			did, err := b.queue.RedriveJob(ctx, domain.JobTask{JobID: "job_01LOST"})
			require.NoError(t, err)
			require.False(t, did, "a running task of a job whose lease holds is left alone")
			did, err = b.queue.RedriveJob(ctx, domain.JobTask{JobID: "job_01LOST", LeaseLost: true, Attempts: 1})
			require.NoError(t, err)
			require.True(t, did, "a job whose lease was lost gets a task beside the dead worker's")
			select {
			case r := <-runs:
				require.Equal(t, "job_01LOST~1", r.id)
				require.Equal(t, 1, r.maxRetry, "the retries the job has left: one of three attempts was lost")
				require.Contains(t, r.payload, "job_01LOST")
			case <-time.After(time.Minute):
				t.Fatal("the task enqueued beside the dead worker's did not run")
			}
			did, err = b.queue.RedriveJob(ctx, domain.JobTask{JobID: "job_01LOST", LeaseLost: true, Attempts: 1})
			require.NoError(t, err)
			require.False(t, did, "once per lost attempt, however many sweeps run")
			did, err = b.queue.RedriveJob(ctx, domain.JobTask{JobID: "job_01LOST", LeaseLost: true, Attempts: 3})
			require.NoError(t, err)
			require.False(t, did, "a job with no attempt left is left to asynq")
		})
	})

	t.Run("RejectsBadConfig", func(t *testing.T) {
		cfg := jobs.DefaultQueueConfig()
		cfg.JobTimeout = 0
		_, err := jobs.NewQueueWithConfig(asynq.RedisClientOpt{Addr: "127.0.0.1:1"}, cfg)
		require.ErrorContains(t, err, "JobTimeout")
	})
	t.Run("RejectsEmptyJobID", func(t *testing.T) {
		q := jobs.NewQueue(asynq.RedisClientOpt{Addr: "127.0.0.1:1"})
		defer q.Close()
		require.Error(t, q.EnqueueJob(context.Background(), domain.JobTask{JobID: ""}))
	})
}

func TestNewJobRunTask(t *testing.T) {
	t.Parallel()
	task := jobs.NewJobRunTask("job_01X")
	require.Equal(t, "job:run", task.Type())
	require.JSONEq(t, `{"job_id":"job_01X"}`, string(task.Payload()))
}
