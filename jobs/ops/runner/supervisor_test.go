package runner_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/domain/eventually"
	"github.com/filemill/filemill/jobs/ops/runner"
)

// echoHelper is a long-lived helper speaking a line protocol: "ping" → "pong",
// "hang" starts a grandchild and never answers, "crash" exits, anything else is echoed.
const echoScript = `while read -r l; do
  case "$l" in
    ping) echo pong ;;
    hang) sleep 600 & echo "$!" >&2; sleep 600 ;;
    crash) exit 7 ;;
    *) echo "$l" ;;
  esac
done`

type echoInstance struct {
	p   *runner.Process
	in  io.WriteCloser
	out *bufio.Reader
	mu  sync.Mutex
}

func startEcho(ctx context.Context, _ int) (*echoInstance, error) {
	p, in, out, err := runner.StartPiped(runner.Cmd{Path: "sh", Args: []string{"-c", echoScript}})
	if err != nil {
		return nil, err
	}
	e := &echoInstance{p: p, in: in, out: bufio.NewReader(out)}
	if err := e.Healthy(ctx); err != nil {
		e.Stop()
		return nil, err
	}
	return e, nil
}

func (e *echoInstance) ask(ctx context.Context, line string) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	type answer struct {
		s   string
		err error
	}
	c := make(chan answer, 1)
	go func() {
		if _, err := fmt.Fprintln(e.in, line); err != nil {
			c <- answer{err: fmt.Errorf("%w: %w", runner.ErrBroken, err)}
			return
		}
		s, err := e.out.ReadString('\n')
		if err != nil {
			err = fmt.Errorf("%w: %w", runner.ErrBroken, err)
		}
		c <- answer{strings.TrimSpace(s), err}
	}()
	select {
	case a := <-c:
		return a.s, a.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

func (e *echoInstance) Healthy(ctx context.Context) error {
	s, err := e.ask(ctx, "ping")
	if err == nil && s != "pong" {
		err = fmt.Errorf("health: got %q", s)
	}
	return err
}

func (e *echoInstance) Stop() {
	e.p.Kill()
	e.in.Close()
}
func (e *echoInstance) Done() <-chan struct{} { return e.p.Done() }
func (e *echoInstance) PID() int              { return e.p.PID() }

func newEchoSupervisor(t *testing.T, cfg runner.SupervisorConfig) (*runner.Supervisor[*echoInstance], *atomic.Int64) {
	t.Helper()
	var starts atomic.Int64
	s, err := runner.NewSupervisor(cfg, func(ctx context.Context, slot int) (*echoInstance, error) {
		starts.Add(1)
		return startEcho(ctx, slot)
	})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return s, &starts
}

func echo(s *runner.Supervisor[*echoInstance], line string, timeout time.Duration) (string, int, error) {
	var got string
	var pid int
	err := s.Run(context.Background(), timeout, func(ctx context.Context, e *echoInstance) error {
		pid = e.PID()
		var err error
		got, err = e.ask(ctx, line)
		return err
	})
	return got, pid, err
}

// waitFor waits for what background restarts make true.
var waitFor = eventually.True

func TestSupervisorStartsOnFirstUseAndReuses(t *testing.T) {
	t.Parallel()
	s, starts := newEchoSupervisor(t, runner.SupervisorConfig{Size: 1})
	require.Zero(t, starts.Load())
	require.False(t, s.Instances()[0].Running)
	got, pid1, err := echo(s, "hello", 10*time.Second)
	require.NoError(t, err)
	require.Equal(t, "hello", got)
	_, pid2, err := echo(s, "again", 10*time.Second)
	require.NoError(t, err)
	require.Equal(t, pid1, pid2)
	require.EqualValues(t, 1, starts.Load())
	require.Equal(t, 2, s.Instances()[0].Uses)
}

func TestSupervisorRestartsAfterMaxUses(t *testing.T) {
	t.Parallel()
	s, starts := newEchoSupervisor(t, runner.SupervisorConfig{Size: 1, MaxUses: 2})
	_, pid1, err := echo(s, "a", 10*time.Second)
	require.NoError(t, err)
	_, pid2, err := echo(s, "b", 10*time.Second)
	require.NoError(t, err)
	require.Equal(t, pid1, pid2)
	_, pid3, err := echo(s, "c", 10*time.Second)
	require.NoError(t, err)
	require.NotEqual(t, pid1, pid3, "the third run gets a fresh instance")
	require.EqualValues(t, 2, starts.Load())
	require.Empty(t, groupMembers(t, pid1), "the retired instance is gone")
}

func TestSupervisorReplacesACrashedInstance(t *testing.T) {
	t.Parallel()
	s, _ := newEchoSupervisor(t, runner.SupervisorConfig{Size: 1})
	_, pid1, err := echo(s, "a", 10*time.Second)
	require.NoError(t, err)
	_, _, err = echo(s, "crash", 10*time.Second)
	require.ErrorIs(t, err, runner.ErrBroken)
	got, pid2, err := echo(s, "b", 10*time.Second)
	require.NoError(t, err)
	require.Equal(t, "b", got)
	require.NotEqual(t, pid1, pid2)
	require.Equal(t, 1, s.Instances()[0].Restarts)
}

func TestSupervisorNoticesAnInstanceThatDiedWhileIdle(t *testing.T) {
	t.Parallel()
	s, _ := newEchoSupervisor(t, runner.SupervisorConfig{Size: 1})
	_, pid1, err := echo(s, "a", 10*time.Second)
	require.NoError(t, err)
	require.NoError(t, killGroup(pid1))
	waitFor(t, "the idle instance to be reaped", func() bool {
		_, err := os.Stat(fmt.Sprint("/proc/", pid1))
		return os.IsNotExist(err)
	})
	got, pid2, err := echo(s, "b", 10*time.Second)
	require.NoError(t, err, "a dead idle instance is replaced before the run, not blamed on it")
	require.Equal(t, "b", got)
	require.NotEqual(t, pid1, pid2)
}

func TestSupervisorKillsAHungRunWithItsGroup(t *testing.T) {
	t.Parallel()
	s, _ := newEchoSupervisor(t, runner.SupervisorConfig{Size: 1})
	_, pid1, err := echo(s, "hang", 300*time.Millisecond)
	require.ErrorIs(t, err, runner.ErrRunTimeout)
	// The group is killed when the run times out; the kernel takes its moment to end them.
	waitFor(t, "the helper and its grandchild to be gone", func() bool { return len(groupMembers(t, pid1)) == 0 })
	got, pid2, err := echo(s, "after", 10*time.Second)
	require.NoError(t, err)
	require.Equal(t, "after", got)
	require.NotEqual(t, pid1, pid2)
}

func TestSupervisorQueueWaitIsNotTakenFromTheRunTimeout(t *testing.T) {
	t.Parallel()
	s, _ := newEchoSupervisor(t, runner.SupervisorConfig{Size: 1, QueueTimeout: time.Minute})
	release := make(chan struct{})
	holding := make(chan struct{})
	go func() {
		_ = s.Run(context.Background(), time.Minute, func(ctx context.Context, e *echoInstance) error {
			close(holding)
			<-release
			return nil
		})
	}()
	<-holding
	// Nothing waits for the run timeout: the run's deadline is read, not reached.
	const runTimeout = time.Minute
	type result struct {
		got      string
		deadline time.Time
		err      error
	}
	res := make(chan result, 1)
	go func() {
		var r result
		r.err = s.Run(context.Background(), runTimeout, func(ctx context.Context, e *echoInstance) error {
			r.deadline, _ = ctx.Deadline()
			var err error
			r.got, err = e.ask(ctx, "waited")
			return err
		})
		res <- r
	}()
	waitFor(t, "the second run to queue", func() bool { return s.Waiting() == 1 })
	queued := time.Now() // the second Run was called before this
	// Hand the instance over once the clock has moved on, so that a deadline counted from
	// the call is earlier than any counted from the handover.
	handover := eventually.Value(t, "the clock to move past the queueing", func() (time.Time, bool) {
		now := time.Now()
		return now, now.After(queued)
	})
	close(release)
	r := <-res
	require.NoError(t, r.err)
	require.Equal(t, "waited", r.got)
	require.False(t, r.deadline.Before(handover.Add(runTimeout)),
		"the run's deadline %s is counted from the call, not from the handover at %s", r.deadline, handover)
}

func TestSupervisorQueueTimeoutAndLimit(t *testing.T) {
	t.Parallel()
	s, _ := newEchoSupervisor(t, runner.SupervisorConfig{Size: 1, QueueTimeout: 100 * time.Millisecond, MaxQueue: 1})
	release := make(chan struct{})
	holding := make(chan struct{})
	go func() {
		_ = s.Run(context.Background(), time.Minute, func(ctx context.Context, e *echoInstance) error {
			close(holding)
			<-release
			return nil
		})
	}()
	<-holding
	defer close(release)
	_, _, err := echo(s, "x", time.Second)
	require.ErrorIs(t, err, runner.ErrQueueTimeout)

	slow := make(chan error, 1)
	go func() {
		err := s.Run(context.Background(), time.Second, func(context.Context, *echoInstance) error { return nil })
		slow <- err
	}()
	waitFor(t, "a run to queue", func() bool { return s.Waiting() == 1 })
	_, _, err = echo(s, "y", time.Second)
	if !errors.Is(err, runner.ErrQueueFull) {
		// The queued run may have timed out first, freeing its place.
		require.ErrorIs(t, err, runner.ErrQueueTimeout)
	}
	require.ErrorIs(t, <-slow, runner.ErrQueueTimeout)
}

func TestSupervisorRunsInParallelOnItsInstances(t *testing.T) {
	t.Parallel()
	s, starts := newEchoSupervisor(t, runner.SupervisorConfig{Size: 2})
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, _, err := echo(s, fmt.Sprint("n", i), 10*time.Second)
			if err == nil && got != fmt.Sprint("n", i) {
				err = fmt.Errorf("got %q", got)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.EqualValues(t, 2, starts.Load())
}

func TestSupervisorCloseKillsInstances(t *testing.T) {
	t.Parallel()
	s, _ := newEchoSupervisor(t, runner.SupervisorConfig{Size: 1})
	_, pid, err := echo(s, "a", 10*time.Second)
	require.NoError(t, err)
	s.Close()
	require.Empty(t, groupMembers(t, pid))
	_, _, err = echo(s, "b", time.Second)
	require.ErrorIs(t, err, runner.ErrClosed)
}
