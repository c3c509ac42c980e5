package jobs_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/domain"
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
			require.Equal(t, map[string]int{"default": 3, "webhooks": 0}, depth)
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
