package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/domain/logging"
)

// ServerConfig sets how a worker process runs tasks. Zero fields take their defaults.
type ServerConfig struct {
	// Concurrency is how many tasks run at once (default runtime.NumCPU()*2).
	Concurrency int
	// ShutdownTimeout is how long running tasks get to finish on Shutdown; asynq hands
	// the ones still running after it back to the queue (default 30s).
	ShutdownTimeout time.Duration
	// Queues to take tasks from, with their priorities (default {"default": 1}).
	Queues map[string]int
	// RetryDelayFunc spaces retries (default ExponentialBackoff(2s, 5, 10m)).
	RetryDelayFunc asynq.RetryDelayFunc
	// TaskCheckInterval is how often an idle worker looks for new tasks when no
	// wake-up comes. An enqueue publishes its queue and wakes the idle workers of that
	// queue at once; polling only catches what no enqueue announced (retries asynq moves
	// back, a wake-up lost with a dropped subscription). Each idle look costs a Redis
	// script per queue.
	TaskCheckInterval time.Duration
	// DelayedTaskCheckInterval is how often tasks due for a retry are moved back to
	// their queue (asynq: 5s); a retry runs up to this much later than its delay.
	DelayedTaskCheckInterval time.Duration
	// NotRunRetryDelay is when an attempt that did not run its job (domain.ErrNotRun:
	// the store unreachable, another worker's lease) is tried again; it does not count
	// as an attempt (default 2s).
	NotRunRetryDelay time.Duration
	// SweepInterval is how often the job sweep looks for jobs that lost their way to a
	// worker (default 30s): a job lost in an outage runs again at most about this long
	// after the outage ends.
	SweepInterval time.Duration
	// LogRepeatInterval: a failure that repeats (a dependency down) is logged once per
	// interval with a count (default 10s).
	LogRepeatInterval time.Duration
	// QueuesPollInterval is how often an idle server looks in Queues (zero:
	// TaskCheckInterval); the pools have their own.
	QueuesPollInterval time.Duration
	// Pools are further sets of queues, each served with a concurrency of its own
	// beside Queues: the engines' queues, so that slow work in one cannot take the
	// slots of another.
	Pools []Pool
}

// Pool is a set of queues served by Concurrency tasks at a time. An idle pool looks
// for tasks every PollInterval (zero: the server's TaskCheckInterval).
type Pool struct {
	Name         string
	Queues       map[string]int
	Concurrency  int
	PollInterval time.Duration
}

// WorkerConfig is how the service runs its workers: concurrency jobs at once outside
// the pools, idle pools looking for jobs every poll (times their family's multiple),
// the queues outside the pools (where nothing waits) at least a second apart, and
// retries due every few seconds (the first webhook retry after 5 s) moved back to their
// queues within a second.
func WorkerConfig(concurrency int, poll time.Duration, pools []Pool) ServerConfig {
	return ServerConfig{Concurrency: concurrency, TaskCheckInterval: poll, QueuesPollInterval: max(poll, time.Second),
		DelayedTaskCheckInterval: time.Second, Pools: pools}
}

// DefaultServerConfig is the configuration zero fields fall back to.
func DefaultServerConfig() ServerConfig {
	return ServerConfig{
		Concurrency:              runtime.NumCPU() * 2,
		ShutdownTimeout:          30 * time.Second,
		Queues:                   map[string]int{DefaultQueueName: 1},
		RetryDelayFunc:           ExponentialBackoff(2*time.Second, 5, 10*time.Minute),
		TaskCheckInterval:        10 * time.Millisecond,
		DelayedTaskCheckInterval: 5 * time.Second,
		NotRunRetryDelay:         2 * time.Second,
		SweepInterval:            30 * time.Second,
		LogRepeatInterval:        10 * time.Second,
	}
}

// withDefaults fills the zero fields.
func (c ServerConfig) withDefaults() ServerConfig {
	d := DefaultServerConfig()
	if c.Concurrency == 0 {
		c.Concurrency = d.Concurrency
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = d.ShutdownTimeout
	}
	if len(c.Queues) == 0 {
		c.Queues = d.Queues
	}
	if c.RetryDelayFunc == nil {
		c.RetryDelayFunc = d.RetryDelayFunc
	}
	if c.TaskCheckInterval == 0 {
		c.TaskCheckInterval = d.TaskCheckInterval
	}
	if c.DelayedTaskCheckInterval == 0 {
		c.DelayedTaskCheckInterval = d.DelayedTaskCheckInterval
	}
	if c.NotRunRetryDelay == 0 {
		c.NotRunRetryDelay = d.NotRunRetryDelay
	}
	if c.SweepInterval == 0 {
		c.SweepInterval = d.SweepInterval
	}
	if c.LogRepeatInterval == 0 {
		c.LogRepeatInterval = d.LogRepeatInterval
	}
	return c
}

// Validate names the setting that is out of range.
func (c ServerConfig) Validate() error {
	switch {
	case c.Concurrency < 0:
		return fmt.Errorf("worker Concurrency: %d is negative", c.Concurrency)
	case c.ShutdownTimeout < 0:
		return fmt.Errorf("worker ShutdownTimeout: %s is negative", c.ShutdownTimeout)
	case c.TaskCheckInterval < 0:
		return fmt.Errorf("worker TaskCheckInterval: %s is negative", c.TaskCheckInterval)
	case c.DelayedTaskCheckInterval < 0:
		return fmt.Errorf("worker DelayedTaskCheckInterval: %s is negative", c.DelayedTaskCheckInterval)
	case c.NotRunRetryDelay < 0:
		return fmt.Errorf("worker NotRunRetryDelay: %s is negative", c.NotRunRetryDelay)
	case c.SweepInterval < time.Second || c.SweepInterval > time.Hour:
		return fmt.Errorf("worker SweepInterval: %s is not between 1s and 1h", c.SweepInterval)
	case c.LogRepeatInterval < 0:
		return fmt.Errorf("worker LogRepeatInterval: %s is negative", c.LogRepeatInterval)
	}
	for name, prio := range c.Queues {
		if name == SweepQueueName {
			return fmt.Errorf("worker Queues: %q is the sweeps' own queue, served apart", name)
		}
		if name == "" || prio < 1 {
			return fmt.Errorf("worker Queues: %q needs a name and a priority of at least 1 (has %d)", name, prio)
		}
	}
	for _, p := range c.Pools {
		if p.Concurrency < 1 || len(p.Queues) == 0 {
			return fmt.Errorf("worker pool %s: needs queues and a concurrency of at least 1 (has %d)", p.Name, p.Concurrency)
		}
		for name, prio := range p.Queues {
			if name == SweepQueueName {
				return fmt.Errorf("worker pool %s: %q is the sweeps' own queue, served apart", p.Name, name)
			}
			if name == "" || prio < 1 {
				return fmt.Errorf("worker pool %s: queue %q needs a name and a priority of at least 1", p.Name, name)
			}
		}
	}
	return nil
}

// ExponentialBackoff returns a retry delay of base, then base*factor, base*factor²,
// ... capped at max. asynq passes how many retries came before (0 for the first).
func ExponentialBackoff(base time.Duration, factor float64, max time.Duration) asynq.RetryDelayFunc {
	return func(n int, _ error, _ *asynq.Task) time.Duration {
		d := float64(base) * math.Pow(factor, float64(n))
		if d > float64(max) || math.IsInf(d, 0) || math.IsNaN(d) {
			return max
		}
		return time.Duration(d)
	}
}

// Server runs tasks from Redis: handlers registered with Handle, periodic tasks
// registered with Periodic. Several Server processes can share one Redis.
type Server struct {
	cfg       ServerConfig
	cfgErr    error
	log       *slog.Logger
	repeated  *logging.Repeated // failures that repeat while a dependency is down
	rdb       redis.UniversalClient
	srv       *asynq.Server   // the job queues of Queues
	pools     []*asynq.Server // the job queues of each Pool
	sweeps    *asynq.Server   // the sweep queue, with workers of its own
	mux       *asynq.ServeMux
	waker     *waker // wakes the job servers at an enqueue
	pool      *poolStats
	client    *asynq.Client
	inspector *asynq.Inspector

	mu       sync.Mutex
	periodic []*periodicEntry
	local    []*localEntry
	hooks    []func() // run at Shutdown, after the tasks
	stop     context.CancelFunc
	wg       sync.WaitGroup
	shutdown sync.Once

	retireOnce sync.Once
	retired    chan struct{} // closed once the worker is out of service
	retiredWhy string
}

// NewServer prepares a worker server; nothing runs until Start. A configuration error
// is reported by Start.
func NewServer(opt asynq.RedisConnOpt, cfg ServerConfig, logger *slog.Logger) *Server {
	if logger == nil {
		logger = slog.Default()
	}
	cfg = cfg.withDefaults()
	s := &Server{cfg: cfg, cfgErr: cfg.Validate(), log: logger, mux: asynq.NewServeMux(),
		repeated: logging.NewRepeated(logger, cfg.LogRepeatInterval), retired: make(chan struct{})}
	s.rdb = newRedisClient(opt)
	s.waker = newWaker()
	s.rdb.AddHook(s.waker)
	s.client = asynq.NewClientFromRedisClient(s.rdb)
	s.inspector = asynq.NewInspectorFromRedisClient(s.rdb)
	s.pool = newPoolStats(cfg.Pools)
	s.mux.Use(s.pool.track, SkipNonRetryable)
	mainPoll := cfg.QueuesPollInterval
	if mainPoll <= 0 {
		mainPoll = cfg.TaskCheckInterval
	}
	s.srv = s.newAsynq(cfg.Concurrency, cfg.Queues, s.wakeable(cfg.Queues, mainPoll))
	for _, p := range cfg.Pools {
		poll := p.PollInterval
		if poll <= 0 {
			poll = cfg.TaskCheckInterval
		}
		s.pools = append(s.pools, s.newAsynq(p.Concurrency, p.Queues, s.wakeable(p.Queues, poll)))
	}
	// Sweeps are few and short; two workers of their own keep one from waiting for
	// another, and a poll of 200 ms to 1 s is prompt enough for a task fired every few
	// seconds (asynq sleeps it out at shutdown, so it stays short).
	s.sweeps = s.newAsynq(2, map[string]int{SweepQueueName: 1}, min(max(cfg.TaskCheckInterval, 200*time.Millisecond), time.Second))
	return s
}

// wakeable registers job queues with the waker, which then waits up to poll for their
// tasks; asynq's own poll becomes the short sleep after a look. Queues another server
// serves already keep plain polling.
func (s *Server) wakeable(queues map[string]int, poll time.Duration) time.Duration {
	if s.waker.serve(queues, poll) {
		return wakeSleep
	}
	return poll
}

func (s *Server) newAsynq(concurrency int, queues map[string]int, poll time.Duration) *asynq.Server {
	cfg := s.cfg
	return asynq.NewServerFromRedisClient(s.rdb, asynq.Config{
		Concurrency:              concurrency,
		ShutdownTimeout:          cfg.ShutdownTimeout,
		Queues:                   queues,
		RetryDelayFunc:           notRunDelay(cfg.RetryDelayFunc, cfg.NotRunRetryDelay),
		IsFailure:                isFailure,
		TaskCheckInterval:        poll,
		DelayedTaskCheckInterval: cfg.DelayedTaskCheckInterval,
		ErrorHandler:             asynq.ErrorHandlerFunc(s.logTaskError),
		Logger:                   asynqLogger{l: s.log, repeated: s.repeated},
		LogLevel:                 asynqLevel(s.log),
	})
}

// isFailure tells asynq whether a task's error counts as a failed attempt: an attempt
// that did not run its job (domain.ErrNotRun) does not.
func isFailure(err error) bool { return !errors.Is(err, domain.ErrNotRun) }

// notRunDelay spaces the retries of attempts that did not run evenly, whatever the
// retry count: they wait for a dependency to come back, not for a job to stop failing.
func notRunDelay(next asynq.RetryDelayFunc, d time.Duration) asynq.RetryDelayFunc {
	return func(n int, err error, t *asynq.Task) time.Duration {
		if errors.Is(err, domain.ErrNotRun) {
			return d
		}
		return next(n, err, t)
	}
}

// Handle routes tasks of one type to h. Register every type before Start.
func (s *Server) Handle(taskType string, h asynq.Handler) { s.mux.Handle(taskType, h) }

// Start begins fetching and running tasks and firing periodic tasks.
func (s *Server) Start() error {
	if s.cfgErr != nil {
		return s.cfgErr
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.periodic {
		if e.err != nil {
			return e.err
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	wakeups := s.waker.subscribe(ctx, s.rdb)
	if err := s.srv.Start(s.mux); err != nil {
		cancel()
		wakeups.Close()
		return fmt.Errorf("start worker server: %w", err)
	}
	for i, p := range s.pools {
		if err := p.Start(s.mux); err != nil {
			for _, started := range s.pools[:i] {
				started.Shutdown()
			}
			s.srv.Shutdown()
			cancel()
			wakeups.Close()
			return fmt.Errorf("start worker pool %s: %w", s.cfg.Pools[i].Name, err)
		}
	}
	if err := s.sweeps.Start(s.mux); err != nil {
		for _, started := range s.pools {
			started.Shutdown()
		}
		s.srv.Shutdown()
		cancel()
		wakeups.Close()
		return fmt.Errorf("start sweep server: %w", err)
	}
	s.stop = cancel
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.waker.listen(ctx, wakeups)
	}()
	for _, e := range s.periodic {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.runPeriodic(ctx, e)
		}()
	}
	for _, e := range s.local {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.runLocally(ctx, e)
		}()
	}
	return nil
}

// Shutdown stops fetching tasks and firing periodic ones, gives running tasks up to
// ShutdownTimeout to finish (asynq returns the rest to the queue for another worker),
// and closes the connections. It is safe to call more than once, or without Start.
func (s *Server) Shutdown() {
	s.shutdown.Do(func() {
		s.mu.Lock()
		if s.stop != nil {
			s.stop()
		}
		s.mu.Unlock()
		s.waker.close()
		s.wg.Wait()
		// The pools stop together, so their running tasks share one shutdown timeout.
		var wg sync.WaitGroup
		for _, p := range append([]*asynq.Server{s.srv, s.sweeps}, s.pools...) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				p.Shutdown()
			}()
		}
		wg.Wait()
		for _, h := range s.hooks {
			h()
		}
		_ = s.rdb.Close()
	})
}

// TakeOutOfService is for work this process cannot stop (an engine call past its
// deadline that did not return when told to stop, its thread beyond reach): the
// worker stops taking tasks, stops announcing its engines, and closes Retired, on
// which the process exits so that its supervisor (systemd, Kubernetes, a container's
// restart policy) starts a fresh one. Tasks already running carry on until then. Only
// the first call counts.
func (s *Server) TakeOutOfService(reason string) {
	s.retireOnce.Do(func() {
		s.log.Error("worker out of service: restart it", "reason", reason)
		s.mu.Lock()
		s.retiredWhy = reason
		s.mu.Unlock()
		close(s.retired)
		for _, p := range append([]*asynq.Server{s.srv}, s.pools...) {
			go p.Stop() // Stop waits for the processor's loop; none of it may hold this up
		}
	})
}

// Retired is closed once the worker took itself out of service; RetiredReason says
// why.
func (s *Server) Retired() <-chan struct{} { return s.retired }

// RetiredReason is the reason TakeOutOfService was given; "" while in service.
func (s *Server) RetiredReason() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.retiredWhy
}

// inService reports whether the worker is still in service.
func (s *Server) inService() bool {
	select {
	case <-s.retired:
		return false
	default:
		return true
	}
}

// onShutdown registers fn to run at Shutdown, after the last task.
func (s *Server) onShutdown(fn func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hooks = append(s.hooks, fn)
}

// Inspector reads queue and task state (for tests and metrics); it shares the
// server's connections and is unusable after Shutdown.
func (s *Server) Inspector() *asynq.Inspector { return s.inspector }

// QueueDepth is QueueDepth over this server's queues; a queue that never held a task
// counts 0.
func (s *Server) QueueDepth(ctx context.Context) (map[string]int, error) {
	depth, err := QueueDepth(ctx, s.inspector)
	if err != nil {
		return nil, err
	}
	queues := []map[string]int{s.cfg.Queues}
	for _, p := range s.cfg.Pools {
		queues = append(queues, p.Queues)
	}
	for _, qs := range queues {
		for q := range qs {
			if _, ok := depth[q]; !ok {
				depth[q] = 0
			}
		}
	}
	if _, ok := depth[SweepQueueName]; !ok {
		depth[SweepQueueName] = 0
	}
	return depth, nil
}

// QueueDepth counts, per queue, the tasks not yet finished: pending, active, scheduled
// and waiting for a retry. asynq's Inspector takes no context; ctx is checked between
// queues.
func QueueDepth(ctx context.Context, insp *asynq.Inspector) (map[string]int, error) {
	queues, err := insp.Queues()
	if err != nil {
		return nil, fmt.Errorf("list queues: %w", err)
	}
	depth := make(map[string]int, len(queues))
	for _, q := range queues {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		info, err := insp.GetQueueInfo(q)
		if err != nil {
			return nil, fmt.Errorf("queue %s: %w", q, err)
		}
		depth[q] = info.Pending + info.Active + info.Scheduled + info.Retry
	}
	return depth, nil
}

// Retryable reports whether another attempt could succeed where err failed: the
// domain's rule (domain.Retryable, the one table of codes that describe the input or the
// request rather than the moment), and never for an error already marked
// asynq.SkipRetry.
func Retryable(err error) bool {
	if err == nil || errors.Is(err, asynq.SkipRetry) {
		return false
	}
	return domain.Retryable(err)
}

// SkipNonRetryable is asynq middleware that marks non-retryable errors with
// asynq.SkipRetry, so the task is archived after one attempt instead of retried. The
// domain error stays in the chain for errors.As.
func SkipNonRetryable(h asynq.Handler) asynq.Handler {
	return asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
		err := h.ProcessTask(ctx, t)
		if err == nil || Retryable(err) || errors.Is(err, asynq.SkipRetry) || errors.Is(err, asynq.RevokeTask) {
			return err
		}
		return fmt.Errorf("%w: %w", asynq.SkipRetry, err)
	})
}

// logTaskError logs every failed attempt: a warning when a retry follows, an error
// when it was the last one.
func (s *Server) logTaskError(ctx context.Context, t *asynq.Task, err error) {
	id, _ := asynq.GetTaskID(ctx)
	retried, _ := asynq.GetRetryCount(ctx)
	maxRetry, _ := asynq.GetMaxRetry(ctx)
	queue, _ := asynq.GetQueueName(ctx)
	final := retried >= maxRetry || errors.Is(err, asynq.SkipRetry) || errors.Is(err, asynq.RevokeTask)
	if errors.Is(err, domain.ErrNotRun) {
		// The store is down, and every attempt says so: one line per interval. An
		// archived task is run again by the job sweep.
		s.repeated.Log(context.WithoutCancel(ctx), slog.LevelWarn, "not_run:"+t.Type(), "task did not run its job",
			"task_type", t.Type(), "task_id", id, "queue", queue, "error", err.Error())
		return
	}
	if queue == SweepQueueName {
		// A sweep fails each period while what it sweeps is down; the next one tries again.
		s.repeated.Log(context.WithoutCancel(ctx), slog.LevelWarn, "sweep_failed:"+t.Type(), "sweep failed",
			"task_type", t.Type(), "task_id", id, "error", err.Error())
		return
	}
	level := slog.LevelWarn
	if final {
		level = slog.LevelError
	}
	s.log.Log(context.WithoutCancel(ctx), level, "task failed",
		"task_type", t.Type(), "task_id", id, "queue", queue,
		"attempt", retried+1, "max_attempts", maxRetry+1, "will_retry", !final,
		"error", err.Error())
}

// asynqLogger sends asynq's own log lines to slog. Warnings and errors go through
// repeated, keyed by their first words: while Redis is down asynq reports the same
// failure every second from each of its loops.
type asynqLogger struct {
	l        *slog.Logger
	repeated *logging.Repeated
}

func (a asynqLogger) log(level slog.Level, args []any) {
	msg := fmt.Sprint(args...)
	if level < slog.LevelWarn {
		a.l.Log(context.Background(), level, msg, "component", "asynq")
		return
	}
	words := strings.Fields(msg)
	key := "asynq:" + strings.Join(words[:min(3, len(words))], " ")
	a.repeated.Log(context.Background(), level, key, msg, "component", "asynq")
}

func (a asynqLogger) Debug(args ...any) { a.log(slog.LevelDebug, args) }
func (a asynqLogger) Info(args ...any)  { a.log(slog.LevelInfo, args) }
func (a asynqLogger) Warn(args ...any)  { a.log(slog.LevelWarn, args) }
func (a asynqLogger) Error(args ...any) { a.log(slog.LevelError, args) }

// Fatal is what asynq calls when it cannot go on; its contract is to exit.
func (a asynqLogger) Fatal(args ...any) {
	a.log(slog.LevelError, args)
	os.Exit(1)
}

// asynqLevel lets asynq format only the lines the slog handler would keep.
func asynqLevel(l *slog.Logger) asynq.LogLevel {
	ctx := context.Background()
	switch {
	case l.Enabled(ctx, slog.LevelDebug):
		return asynq.DebugLevel
	case l.Enabled(ctx, slog.LevelInfo):
		return asynq.InfoLevel
	case l.Enabled(ctx, slog.LevelWarn):
		return asynq.WarnLevel
	default:
		return asynq.ErrorLevel
	}
}
