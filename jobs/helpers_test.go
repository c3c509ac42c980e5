package jobs_test

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/domain/eventually"
	"github.com/filemill/filemill/jobs"
	"github.com/filemill/filemill/jobs/redistest"
)

// backends are the Redis servers the queue and the workers must run on: a real one
// (production) and the embedded miniredis (the zero-config default).
var backends = map[string]func(t *testing.T) string{
	"Redis": func(t *testing.T) string { return redistest.URL(t) },
	"Miniredis": func(t *testing.T) string {
		er, err := jobs.StartEmbeddedRedis()
		require.NoError(t, err)
		t.Cleanup(er.Close)
		return er.URL()
	},
}

// eachBackend runs fn as a parallel subtest per backend; open gives each (sub)test a
// Redis of its own on that backend.
func eachBackend(t *testing.T, fn func(t *testing.T, open func(t *testing.T) string)) {
	for name, open := range backends {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fn(t, open)
		})
	}
}

// bundle is what a worker test needs.
type bundle struct {
	url   string
	opt   asynq.RedisConnOpt
	queue *jobs.Queue
	insp  *asynq.Inspector
	logs  *syncBuffer
}

func setup(t *testing.T, redisURL string) *bundle {
	t.Helper()
	opt, _, err := jobs.ParseRedisURL(redisURL)
	require.NoError(t, err)
	q := jobs.NewQueue(opt)
	t.Cleanup(func() { q.Close() })
	insp := asynq.NewInspector(opt)
	t.Cleanup(func() { insp.Close() })
	return &bundle{url: redisURL, opt: opt, queue: q, insp: insp, logs: &syncBuffer{}}
}

// fastConfig makes retries and polling quick enough for tests.
func fastConfig() jobs.ServerConfig {
	return jobs.ServerConfig{
		Concurrency:              4,
		ShutdownTimeout:          5 * time.Second,
		RetryDelayFunc:           func(int, error, *asynq.Task) time.Duration { return 10 * time.Millisecond },
		TaskCheckInterval:        50 * time.Millisecond,
		DelayedTaskCheckInterval: 100 * time.Millisecond,
	}
}

// server builds a worker server whose logs go to b.logs; register adds handlers.
func (b *bundle) server(t *testing.T, cfg jobs.ServerConfig, register func(s *jobs.Server)) *jobs.Server {
	t.Helper()
	s := jobs.NewServer(b.opt, cfg, slog.New(slog.NewTextHandler(b.logs, &slog.HandlerOptions{Level: slog.LevelWarn})))
	register(s)
	require.NoError(t, s.Start())
	t.Cleanup(s.Shutdown)
	return s
}

// waitState waits until a task reaches state.
func (b *bundle) waitState(t *testing.T, id string, state asynq.TaskState) *asynq.TaskInfo {
	t.Helper()
	var info *asynq.TaskInfo
	eventually.True(t, fmt.Sprintf("task %s never became %s", id, state), func() bool {
		var err error
		info, err = b.insp.GetTaskInfo(jobs.DefaultQueueName, id)
		return err == nil && info.State == state
	})
	return info
}

// syncBuffer is a log sink tests can read while workers write.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

var _ io.Writer = (*syncBuffer)(nil)

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}
