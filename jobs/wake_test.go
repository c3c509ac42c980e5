package jobs_test

import (
	"context"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/jobs"
)

// TestEnqueueWakesIdleWorkers polls once an hour: every task must reach its idle
// worker through the enqueue's wake-up, on whichever of a pool's queues it lands, one
// after another (each enqueue finds the worker idle again), and Shutdown must not wait
// out the hour.
func TestEnqueueWakesIdleWorkers(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, open func(t *testing.T) string) {
		b := setup(t, open(t))
		cfg := fastConfig()
		cfg.TaskCheckInterval = time.Hour
		cfg.Pools = []jobs.Pool{{Name: "ab", Queues: map[string]int{"a": 1, "b": 1}, Concurrency: 2}}
		ran := make(chan string)
		s := b.server(t, cfg, func(s *jobs.Server) {
			s.Handle(jobs.TypeJobRun, asynq.HandlerFunc(func(ctx context.Context, _ *asynq.Task) error {
				id, _ := asynq.GetTaskID(ctx)
				ran <- id
				return nil
			}))
		})
		ctx := context.Background()
		for i, queue := range []string{"default", "a", "b", "b", "a", "default", "a"} {
			id := "job_01WAKE" + string(rune('A'+i))
			require.NoError(t, b.queue.EnqueueJob(ctx, domain.JobTask{JobID: id, Queue: queue}))
			select {
			case got := <-ran:
				require.Equal(t, id, got)
			case <-time.After(30 * time.Second):
				t.Fatalf("task %s on queue %s never reached its idle worker", id, queue)
			}
		}
		stopped := make(chan struct{})
		go func() { s.Shutdown(); close(stopped) }()
		select {
		case <-stopped:
		case <-time.After(30 * time.Second):
			t.Fatal("Shutdown waited on an idle worker's poll")
		}
	})
}
