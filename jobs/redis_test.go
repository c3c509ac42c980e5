package jobs_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/domain/eventually"
	"github.com/filemill/filemill/jobs"
)

func TestParseRedisURL(t *testing.T) {
	t.Parallel()
	t.Run("Accepts", func(t *testing.T) {
		for _, tc := range []struct {
			url      string
			addr     string
			password string
			db       int
			tls      bool
		}{
			{"redis://127.0.0.1:6379", "127.0.0.1:6379", "", 0, false},
			{"redis://127.0.0.1:6379/0", "127.0.0.1:6379", "", 0, false},
			{"redis://:s3cret@redis.internal:6380/3", "redis.internal:6380", "s3cret", 3, false},
			{"rediss://cache.example.com:6380/1", "cache.example.com:6380", "", 1, true},
			{"redis://localhost", "localhost:6379", "", 0, false},
		} {
			t.Run(tc.url, func(t *testing.T) {
				opt, ropts, err := jobs.ParseRedisURL(tc.url)
				require.NoError(t, err)
				co, ok := opt.(asynq.RedisClientOpt)
				require.True(t, ok)
				require.Equal(t, tc.addr, co.Addr)
				require.Equal(t, tc.password, co.Password)
				require.Equal(t, tc.db, co.DB)
				require.Equal(t, tc.tls, co.TLSConfig != nil)
				require.Equal(t, tc.addr, ropts.Addr)
				require.Equal(t, tc.db, ropts.DB)
				require.Equal(t, tc.password, ropts.Password)
				require.Equal(t, tc.tls, ropts.TLSConfig != nil)
			})
		}
	})
	t.Run("RejectsNamingTheProblem", func(t *testing.T) {
		for url, want := range map[string]string{
			"http://127.0.0.1:6379":               "scheme must be redis:// or rediss://",
			"127.0.0.1:6379":                      "missing scheme",
			"redis://":                            "missing host",
			"redis://:pw@:6379/0":                 "missing host",
			"redis://127.0.0.1:port/0":            "not a URL",
			"redis://127.0.0.1:70000/0":           "port \"70000\"",
			"redis://127.0.0.1:6379/cache":        "database \"cache\"",
			"redis://127.0.0.1:6379/-1":           "database \"-1\"",
			"redis://:hunter2@127.0.0.1:6379/1/2": "database \"1/2\"",
		} {
			t.Run(url, func(t *testing.T) {
				_, _, err := jobs.ParseRedisURL(url)
				require.ErrorContains(t, err, want)
				require.NotContains(t, err.Error(), "hunter2", "the password must not be echoed")
			})
		}
	})
}

// TestEmbeddedRedis runs asynq end to end on the in-process server: enqueue, fetch,
// handle, complete.
func TestEmbeddedRedis(t *testing.T) {
	t.Parallel()
	er, err := jobs.StartEmbeddedRedis()
	require.NoError(t, err)
	t.Cleanup(er.Close)
	require.Regexp(t, `^127\.0\.0\.1:\d+$`, er.Addr())
	require.Equal(t, "redis://"+er.Addr()+"/0", er.URL())

	b := setup(t, er.URL())
	ran := make(chan string, 1)
	b.server(t, fastConfig(), func(s *jobs.Server) {
		s.Handle(jobs.TypeJobRun, asynq.HandlerFunc(func(_ context.Context, task *asynq.Task) error {
			var p jobs.JobRunPayload
			require.NoError(t, json.Unmarshal(task.Payload(), &p))
			ran <- p.JobID
			return nil
		}))
	})
	require.NoError(t, b.queue.Ping(context.Background()))
	require.NoError(t, b.queue.EnqueueJob(context.Background(), domain.JobTask{JobID: "job_01EMBEDDED"}))
	select {
	case id := <-ran:
		require.Equal(t, "job_01EMBEDDED", id)
	case <-time.After(10 * time.Second):
		t.Fatal("the task never ran on the embedded redis")
	}
	b.waitState(t, "job_01EMBEDDED", asynq.TaskStateCompleted)

	t.Run("KeysExpireOnTheWallClock", func(t *testing.T) {
		_, ropts, err := jobs.ParseRedisURL(er.URL())
		require.NoError(t, err)
		c := redis.NewClient(ropts)
		defer c.Close()
		ctx := context.Background()
		require.NoError(t, c.Set(ctx, "short", "x", 50*time.Millisecond).Err())
		eventually.True(t, "the condition to hold", func() bool {
			return c.Exists(ctx, "short").Val() == 0
		})
	})
}
