package runner

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Instance is one long-lived helper a Supervisor keeps: typically a Process started
// with StartPiped and a client speaking its protocol.
type Instance interface {
	// Healthy answers, within ctx, nil when the helper can take work.
	Healthy(ctx context.Context) error
	// Stop kills the helper's whole process group and waits until it is gone.
	Stop()
	// Done is closed once the helper's process has exited.
	Done() <-chan struct{}
	// PID is the helper's process (and process group) id.
	PID() int
}

// StartFunc starts the instance of one slot (0 ≤ slot < Size); each slot may keep
// its own state on disk (LibreOffice's profile directory). ctx bounds the start.
type StartFunc[I Instance] func(ctx context.Context, slot int) (I, error)

// Errors of Supervisor.Run. Each is wrapped with detail; match with errors.Is.
var (
	// ErrBroken is returned by a run function (wrapped) to say the instance can no
	// longer be trusted (its protocol broke, it crashed): it is replaced.
	ErrBroken = errors.New("instance broken")
	// ErrQueueTimeout: no instance became free within the queue budget.
	ErrQueueTimeout = errors.New("no free instance within the queue timeout")
	// ErrQueueFull: MaxQueue runs are already waiting.
	ErrQueueFull = errors.New("too many runs waiting for an instance")
	// ErrRunTimeout: the run exceeded its own timeout; its instance was killed.
	ErrRunTimeout = errors.New("run exceeded its timeout")
	// ErrStart: the instance could not be started.
	ErrStart = errors.New("instance failed to start")
	// ErrClosed: the supervisor was closed.
	ErrClosed = errors.New("supervisor closed")
)

// SupervisorConfig sizes and times a Supervisor. Zero fields take the defaults.
type SupervisorConfig struct {
	// Size is the number of instances; default the number of cores.
	Size int
	// MaxUses restarts an instance after this many runs (leaks, fragmentation);
	// 0 never restarts on count.
	MaxUses int
	// StartTimeout bounds one start, health included; default 60 s.
	StartTimeout time.Duration
	// HealthTimeout bounds one health check; default 5 s.
	HealthTimeout time.Duration
	// HealthAfterIdle checks an instance's health before a run when it has been idle
	// this long; a dead process is noticed before every run regardless. Default 30 s;
	// negative checks before every run.
	HealthAfterIdle time.Duration
	// QueueTimeout bounds the wait for a free instance (a start included), a budget
	// separate from the run's own timeout; default 2 min.
	QueueTimeout time.Duration
	// MaxQueue bounds how many runs may wait at once; 0 is unbounded.
	MaxQueue int
}

// DefaultSupervisorConfig returns the defaults.
func DefaultSupervisorConfig() SupervisorConfig {
	return SupervisorConfig{
		Size:            runtime.NumCPU(),
		StartTimeout:    60 * time.Second,
		HealthTimeout:   5 * time.Second,
		HealthAfterIdle: 30 * time.Second,
		QueueTimeout:    2 * time.Minute,
	}
}

// Validate names the first setting that cannot work.
func (c SupervisorConfig) Validate() error {
	switch {
	case c.Size < 0:
		return errors.New("Size must not be negative")
	case c.MaxUses < 0:
		return errors.New("MaxUses must not be negative")
	case c.StartTimeout < 0, c.HealthTimeout < 0, c.QueueTimeout < 0:
		return errors.New("timeouts must not be negative")
	case c.MaxQueue < 0:
		return errors.New("MaxQueue must not be negative")
	}
	return nil
}

func (c SupervisorConfig) withDefaults() SupervisorConfig {
	d := DefaultSupervisorConfig()
	if c.Size <= 0 {
		c.Size = d.Size
	}
	if c.StartTimeout <= 0 {
		c.StartTimeout = d.StartTimeout
	}
	if c.HealthTimeout <= 0 {
		c.HealthTimeout = d.HealthTimeout
	}
	if c.HealthAfterIdle == 0 {
		c.HealthAfterIdle = d.HealthAfterIdle
	}
	if c.QueueTimeout <= 0 {
		c.QueueTimeout = d.QueueTimeout
	}
	return c
}

// Supervisor keeps a fixed number of long-lived helper instances: each started on
// first use, checked before use, and replaced after a crash, a hang (a run past its
// timeout is killed with its process group), a broken protocol or MaxUses runs. It is
// safe for concurrent use.
type Supervisor[I Instance] struct {
	cfg   SupervisorConfig
	start StartFunc[I]
	free  chan *slot[I]
	slots []*slot[I]

	life    context.Context // ends at Close: aborts starts in flight
	close   context.CancelFunc
	closed  atomic.Bool
	bg      sync.WaitGroup
	waiting atomic.Int64
}

type slot[I Instance] struct {
	id int

	mu         sync.Mutex
	inst       I
	running    bool
	busy       bool // a run holds the slot
	restarting bool // being replaced in the background, between two runs
	uses       int
	restarts   int
	lastUsed   time.Time
}

// NewSupervisor returns a supervisor that starts nothing until its first run.
func NewSupervisor[I Instance](cfg SupervisorConfig, start StartFunc[I]) (*Supervisor[I], error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("runner: supervisor: %w", err)
	}
	cfg = cfg.withDefaults()
	s := &Supervisor[I]{cfg: cfg, start: start, free: make(chan *slot[I], cfg.Size)}
	s.life, s.close = context.WithCancel(context.Background())
	for i := range cfg.Size {
		sl := &slot[I]{id: i}
		s.slots = append(s.slots, sl)
		s.free <- sl
	}
	return s, nil
}

// Size is the number of instances the supervisor keeps.
func (s *Supervisor[I]) Size() int { return s.cfg.Size }

// Run waits for a free instance (at most QueueTimeout, and never past ctx), starting
// or restarting it as needed, then calls fn with a context that ends timeout after the
// instance was handed over: the wait is not taken from the run's time. When that
// context ends before fn returns, the instance's process group is killed (fn's I/O
// with it then fails) and the error wraps ErrRunTimeout, or ctx's error when the
// caller gave up. An instance whose run failed with ErrBroken, whose process exited,
// or which reached MaxUses is replaced in the background.
func (s *Supervisor[I]) Run(ctx context.Context, timeout time.Duration, fn func(ctx context.Context, inst I) error) error {
	sl, err := s.acquire(ctx)
	if err != nil {
		return err
	}
	inst, err := s.ready(ctx, sl)
	if err != nil {
		s.release(sl, false)
		return err
	}

	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- fn(runCtx, inst) }()
	killed := false
	select {
	case err = <-done:
	case <-runCtx.Done():
		inst.Stop()
		killed = true
		<-done // fn sees its I/O fail now that the process is gone
	}

	switch {
	case killed && ctx.Err() != nil:
		err = fmt.Errorf("runner: run stopped, instance %d killed: %w", sl.id, ctx.Err())
	case killed:
		err = fmt.Errorf("runner: instance %d killed after %s: %w", sl.id, timeout, ErrRunTimeout)
	}
	exited := false
	select {
	case <-inst.Done():
		exited = true
	default:
	}
	if exited && err != nil && !killed && !errors.Is(err, ErrBroken) {
		err = fmt.Errorf("runner: instance %d exited during the run: %w: %w", sl.id, ErrBroken, err)
	}
	// An instance that answered and then died keeps its answer, not its slot.
	replace := killed || exited || errors.Is(err, ErrBroken)
	sl.mu.Lock()
	sl.uses++
	sl.lastUsed = time.Now()
	if s.cfg.MaxUses > 0 && sl.uses >= s.cfg.MaxUses {
		replace = true
	}
	sl.mu.Unlock()
	s.release(sl, replace)
	return err
}

// acquire takes a free slot within the queue budget.
func (s *Supervisor[I]) acquire(ctx context.Context) (*slot[I], error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	if n := s.waiting.Add(1); s.cfg.MaxQueue > 0 && n > int64(s.cfg.MaxQueue) {
		s.waiting.Add(-1)
		return nil, ErrQueueFull
	}
	defer s.waiting.Add(-1)
	select { // a free slot wins over an expired budget
	case sl := <-s.free:
		return s.take(sl)
	default:
	}
	t := time.NewTimer(s.cfg.QueueTimeout)
	defer t.Stop()
	select {
	case sl := <-s.free:
		return s.take(sl)
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-t.C:
		return nil, fmt.Errorf("runner: waited %s: %w", s.cfg.QueueTimeout, ErrQueueTimeout)
	case <-s.life.Done():
		return nil, ErrClosed
	}
}

func (s *Supervisor[I]) take(sl *slot[I]) (*slot[I], error) {
	if s.closed.Load() {
		s.free <- sl
		return nil, ErrClosed
	}
	sl.mu.Lock()
	sl.busy = true
	sl.mu.Unlock()
	return sl, nil
}

// ready returns the slot's instance, started and healthy.
func (s *Supervisor[I]) ready(ctx context.Context, sl *slot[I]) (I, error) {
	sl.mu.Lock()
	inst, running, idle := sl.inst, sl.running, time.Since(sl.lastUsed)
	sl.mu.Unlock()
	if running {
		alive := true
		select {
		case <-inst.Done():
			alive = false
		default:
			// Reaped a moment before Done closes (its pipes are still being drained).
			alive = syscall.Kill(inst.PID(), 0) == nil
		}
		if alive && (s.cfg.HealthAfterIdle < 0 || idle >= s.cfg.HealthAfterIdle) {
			hctx, cancel := context.WithTimeout(ctx, s.cfg.HealthTimeout)
			alive = inst.Healthy(hctx) == nil
			cancel()
		}
		if alive {
			return inst, nil
		}
		s.stop(sl)
	}
	return s.startSlot(ctx, sl)
}

// startSlot starts the slot's instance. The start is bounded by StartTimeout and by
// the caller's ctx, whose queue budget it spends.
func (s *Supervisor[I]) startSlot(ctx context.Context, sl *slot[I]) (I, error) {
	var zero I
	sctx, cancel := context.WithTimeout(s.life, s.cfg.StartTimeout)
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	inst, err := s.start(sctx, sl.id)
	if err != nil {
		if ctx.Err() != nil {
			return zero, ctx.Err()
		}
		return zero, fmt.Errorf("runner: instance %d: %w: %w", sl.id, ErrStart, err)
	}
	sl.mu.Lock()
	sl.inst, sl.running, sl.uses, sl.lastUsed = inst, true, 0, time.Now()
	sl.mu.Unlock()
	return inst, nil
}

func (s *Supervisor[I]) stop(sl *slot[I]) {
	sl.mu.Lock()
	inst, running := sl.inst, sl.running
	var zero I
	sl.inst, sl.running = zero, false
	if running {
		sl.restarts++
	}
	sl.mu.Unlock()
	if running {
		inst.Stop()
	}
}

// release hands the slot back; a slot to replace is stopped and restarted in the
// background first, so the next run finds it warm.
func (s *Supervisor[I]) release(sl *slot[I], replace bool) {
	if !replace {
		sl.mu.Lock()
		sl.busy = false
		sl.mu.Unlock()
		s.free <- sl
		return
	}
	if s.closed.Load() {
		s.stop(sl)
		s.free <- sl
		return
	}
	sl.mu.Lock()
	sl.busy, sl.restarting = false, true
	sl.mu.Unlock()
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		s.stop(sl)
		if !s.closed.Load() {
			// A failed start leaves the slot empty: the next run tries again.
			_, _ = s.startSlot(s.life, sl)
		}
		sl.mu.Lock()
		sl.restarting = false
		sl.mu.Unlock()
		s.free <- sl
	}()
}

// InstanceState is a snapshot of one slot, for logs, metrics and tests.
type InstanceState struct {
	Slot    int
	Running bool
	Busy    bool // a run holds it
	// Restarting: its instance is being replaced between two runs.
	Restarting bool
	PID        int // the process group id while running
	Uses       int // runs since the instance started
	Restarts   int // instances this slot has replaced
}

// Instances returns a snapshot of every slot.
func (s *Supervisor[I]) Instances() []InstanceState {
	out := make([]InstanceState, 0, len(s.slots))
	for _, sl := range s.slots {
		sl.mu.Lock()
		st := InstanceState{Slot: sl.id, Running: sl.running, Busy: sl.busy, Restarting: sl.restarting, Uses: sl.uses, Restarts: sl.restarts}
		if sl.running {
			st.PID = sl.inst.PID()
		}
		sl.mu.Unlock()
		out = append(out, st)
	}
	return out
}

// Waiting is how many runs wait for an instance now.
func (s *Supervisor[I]) Waiting() int { return int(s.waiting.Load()) }

// Close kills every instance (runs in flight fail) and waits for background restarts.
func (s *Supervisor[I]) Close() {
	if s.closed.Swap(true) {
		return
	}
	s.close()
	for _, sl := range s.slots {
		s.stop(sl)
	}
	s.bg.Wait()
	// A run that was in flight may have been handed a restarted instance meanwhile.
	for _, sl := range s.slots {
		s.stop(sl)
	}
}
