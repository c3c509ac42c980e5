package rest_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/jobs"
	"github.com/filemill/filemill/jobs/ops/image"
)

// These tests hold a render to its deadline: it ends then, with its own code and one
// attempt, and nothing of it runs on once the job has its outcome. They measure this
// process's CPU time, so they do not run in parallel with the package's other tests.

// processCPU is the CPU time this process has used, all threads together.
func processCPU(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	require.NoError(t, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// requireIdleWithin checks that this process's CPU falls idle within limit: its use,
// sampled over consecutive quarter seconds, drops under a third of a core and stays
// there for a second. A render running on (libvips' threads, beyond the job) keeps
// at least a core busy even on a loaded machine; the process's own idle work (the
// workers' pollers, the relay, GC) stays far below a third, but spikes past a tenth
// when the machine is busy (6–12 % seen in CI), which is why the bound is not lower.
func requireIdleWithin(t *testing.T, limit time.Duration) {
	t.Helper()
	const window, idle = 250 * time.Millisecond, 0.33
	start := time.Now()
	idleSince := time.Time{}
	for {
		before, at := processCPU(t), time.Now()
		time.Sleep(window) // the interval the CPU time is sampled over
		busy := float64(processCPU(t)-before) / float64(time.Since(at))
		switch {
		case busy >= idle:
			idleSince = time.Time{}
		case idleSince.IsZero():
			idleSince = at
		case time.Since(idleSince) >= time.Second:
			require.LessOrEqual(t, idleSince.Sub(start), limit, "idle again within %s", limit)
			return
		}
		require.Less(t, time.Since(start), limit+time.Second, "the process still uses %.0f%% of a core", busy*100)
	}
}

// jobSpan is how long a finished job ran, from its own timestamps.
func jobSpan(t *testing.T, j map[string]any) time.Duration {
	t.Helper()
	started, err := time.Parse(time.RFC3339Nano, j["started_at"].(string))
	require.NoError(t, err)
	finished, err := time.Parse(time.RFC3339Nano, j["finished_at"].(string))
	require.NoError(t, err)
	return finished.Sub(started)
}

func imageSetup(t *testing.T, deadline time.Duration) *bundle {
	t.Helper()
	img, err := image.New(image.DefaultConfig())
	require.NoError(t, err)
	return setup(t, setupOpts{worker: true, engines: map[string]domain.Engine{"image": img}, cfg: func(c *domain.Config) {
		c.OperationTimeouts = map[string]time.Duration{"image.convert": deadline}
		c.StopGrace = 2 * time.Second
	}})
}

// The SVG filter bomb (2 KB, 9000×9000, fifty blurs of stdDeviation 500) fails
// unsupported_input after one attempt, well within its deadline, and leaves the worker
// idle: nothing renders it in the background.
func TestSVGFilterBombIsRefused(t *testing.T) {
	const deadline = 5 * time.Second
	b := imageSetup(t, deadline)
	bomb := `<svg xmlns="http://www.w3.org/2000/svg" width="9000" height="9000"><filter id="f">` +
		strings.Repeat(`<feGaussianBlur stdDeviation="500"/>`, 50) +
		`</filter><rect width="9000" height="9000" fill="red" filter="url(#f)"/></svg>`
	require.Less(t, len(bomb), 2100)
	file := b.readyFile(b.liveA, "bomb.svg", []byte(bomb))
	r := b.createJob(b.liveA, map[string]any{"file_id": file, "operation": "image.convert", "options": map[string]any{"format": "png"}})
	require.Equal(t, 202, r.status, string(r.body))
	j := b.waitJob(b.liveA, r.json(t)["id"].(string))
	require.Equal(t, "failed", j["state"])
	require.Equal(t, domain.CodeUnsupportedInput, j["error"].(map[string]any)["code"], "%v", j["error"])
	require.EqualValues(t, 1, j["attempts"])
	require.Less(t, jobSpan(t, j), deadline+5*time.Second)
	requireIdleWithin(t, 5*time.Second)
}

// circlesSVG is a render that passes the cost checks but takes many seconds: 3,000
// gradient circles over 10000×10000, which libvips renders as 25 tiles, each drawing
// the whole document again.
func circlesSVG() []byte {
	rnd := rand.New(rand.NewSource(2))
	var sb strings.Builder
	sb.WriteString(`<svg xmlns="http://www.w3.org/2000/svg" width="10000" height="10000"><defs><radialGradient id="g">` +
		`<stop offset="0" stop-color="#f00"/><stop offset="1" stop-color="#00f" stop-opacity="0.3"/></radialGradient></defs>`)
	for range 3000 {
		fmt.Fprintf(&sb, `<circle cx="%d" cy="%d" r="%d" fill="url(#g)"/>`, rnd.Intn(10000), rnd.Intn(10000), 50+rnd.Intn(250))
	}
	sb.WriteString(`</svg>`)
	return []byte(sb.String())
}

// A render past its deadline fails timeout after one attempt (another would run
// exactly as long), stops when told, and leaves the worker idle.
func TestRenderPastItsDeadlineIsNotRetried(t *testing.T) {
	const deadline = time.Second
	b := imageSetup(t, deadline)
	file := b.readyFile(b.liveA, "circles.svg", circlesSVG())
	r := b.createJob(b.liveA, map[string]any{"file_id": file, "operation": "image.convert", "options": map[string]any{"format": "png"}})
	require.Equal(t, 202, r.status, string(r.body))
	j := b.waitJob(b.liveA, r.json(t)["id"].(string))
	require.Equal(t, "failed", j["state"])
	require.Equal(t, domain.CodeTimeout, j["error"].(map[string]any)["code"], "%v", j["error"])
	require.EqualValues(t, 1, j["attempts"], "a deadline is met again: not retried")
	require.Less(t, jobSpan(t, j), deadline+5*time.Second)
	requireIdleWithin(t, 5*time.Second)
}

// stubborn stands for an engine that is slow to stop: a run of a file named slow.pdf
// goes on past its context's end until released; other runs are the real engine's.
type stubborn struct {
	domain.Engine
	mu      sync.Mutex
	events  []string
	told    chan struct{} // closed when the slow run's context ended
	release chan struct{} // closed by the test: the slow run returns
	started chan string   // each run's file name as it starts
}

func newStubborn() *stubborn {
	return &stubborn{told: make(chan struct{}), release: make(chan struct{}), started: make(chan string, 8)}
}

func (s *stubborn) log(e string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, e)
}

func (s *stubborn) Events() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.events...)
}

func (s *stubborn) Run(ctx context.Context, in domain.EngineInput) (*domain.EngineOutput, error) {
	s.log("start " + in.Filename)
	s.started <- in.Filename
	if in.Filename != "slow.pdf" {
		defer s.log("stop " + in.Filename)
		return s.Engine.Run(ctx, in)
	}
	<-ctx.Done()
	s.log("told " + in.Filename)
	close(s.told)
	<-s.release
	s.log("stop " + in.Filename)
	return nil, ctx.Err()
}

// stubbornSetup runs inspect jobs on a stubborn engine, one at a time, with deadline
// and grace; it returns the worker.
func stubbornSetup(t *testing.T, eng *stubborn, deadline, grace time.Duration) (*bundle, *jobs.Server) {
	t.Helper()
	b := setup(t, setupOpts{engine: func(e domain.Engine) domain.Engine { eng.Engine = e; return eng }, cfg: func(c *domain.Config) {
		c.OperationTimeouts = map[string]time.Duration{"inspect": deadline}
		c.StopGrace = grace
	}})
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	w := jobs.NewServer(b.redisOpt, jobs.ServerConfig{Concurrency: 1, TaskCheckInterval: 20 * time.Millisecond,
		Pools: jobs.EnginePools(b.svc.Jobs.Registry, b.svc.Jobs.Engines, func(string) jobs.FamilySettings { return jobs.FamilySettings{Concurrency: 1} })},
		quiet)
	jobs.RegisterTasks(w, b.svc, t.TempDir(), quiet)
	require.NoError(t, w.Start())
	t.Cleanup(w.Shutdown)
	return b, w
}

// An attempt past its deadline keeps its slot until its engine has stopped: the next
// job waits for it, never running beside it; the job fails timeout, once.
func TestSlotHeldUntilTheEngineStops(t *testing.T) {
	t.Parallel()
	eng := newStubborn()
	b, w := stubbornSetup(t, eng, 300*time.Millisecond, time.Minute)
	slow := b.readyFile(b.liveA, "slow.pdf", []byte(minimalPDF))
	next := b.readyFile(b.liveA, "next.pdf", []byte(minimalPDF))
	ra := b.createJob(b.liveA, map[string]any{"file_id": slow, "operation": "inspect"})
	require.Equal(t, 202, ra.status, string(ra.body))
	require.Equal(t, "slow.pdf", <-eng.started)
	rb := b.createJob(b.liveA, map[string]any{"file_id": next, "operation": "inspect"})
	require.Equal(t, 202, rb.status, string(rb.body))
	<-eng.told
	// The engine goes on past the deadline: the slot stays taken. Before, the queue
	// handed it on at the deadline and the next job ran beside the first.
	select {
	case name := <-eng.started:
		t.Fatalf("%s started while the first job's engine still ran", name)
	case <-time.After(1500 * time.Millisecond): // long enough for the queue to take the next task
	}
	a := b.do(req{method: "GET", path: "/v1/jobs/" + ra.json(t)["id"].(string), key: b.liveA}).json(t)
	require.Equal(t, "running", a["state"], "within its grace the outcome waits for the engine")
	close(eng.release)

	a = b.waitJob(b.liveA, ra.json(t)["id"].(string))
	require.Equal(t, "failed", a["state"])
	require.Equal(t, domain.CodeTimeout, a["error"].(map[string]any)["code"])
	require.EqualValues(t, 1, a["attempts"])
	j := b.waitJob(b.liveA, rb.json(t)["id"].(string))
	require.Equal(t, "succeeded", j["state"], "%v", j)
	require.Equal(t, []string{"start slow.pdf", "told slow.pdf", "stop slow.pdf", "start next.pdf", "stop next.pdf"}, eng.Events())
	select {
	case <-w.Retired():
		t.Fatal("an engine that stopped within its grace does not take the worker out of service")
	default:
	}
}

// An engine that does not stop within its grace: the job fails timeout there and then
// (its client does not wait on the engine), the worker takes itself out of service and
// takes no other job, and the slot is still not handed on.
func TestStuckEngineTakesTheWorkerOutOfService(t *testing.T) {
	t.Parallel()
	const deadline, grace = 300 * time.Millisecond, time.Second
	eng := newStubborn()
	b, w := stubbornSetup(t, eng, deadline, grace)
	t.Cleanup(func() { close(eng.release) }) // before the worker's shutdown, which waits for it
	slow := b.readyFile(b.liveA, "slow.pdf", []byte(minimalPDF))
	next := b.readyFile(b.liveA, "next.pdf", []byte(minimalPDF))
	ra := b.createJob(b.liveA, map[string]any{"file_id": slow, "operation": "inspect"})
	require.Equal(t, 202, ra.status, string(ra.body))
	require.Equal(t, "slow.pdf", <-eng.started)

	a := b.waitJob(b.liveA, ra.json(t)["id"].(string))
	require.Equal(t, "failed", a["state"])
	require.Equal(t, domain.CodeTimeout, a["error"].(map[string]any)["code"])
	require.EqualValues(t, 1, a["attempts"])
	require.Less(t, jobSpan(t, a), deadline+grace+5*time.Second)
	require.Equal(t, []string{"start slow.pdf", "told slow.pdf"}, eng.Events(), "failed while its engine still runs")
	select {
	case <-w.Retired():
	case <-time.After(10 * time.Second):
		t.Fatal("the worker stayed in service")
	}
	require.Contains(t, w.RetiredReason(), a["id"])

	rb := b.createJob(b.liveA, map[string]any{"file_id": next, "operation": "inspect"})
	require.Equal(t, 202, rb.status, string(rb.body))
	select {
	case name := <-eng.started:
		t.Fatalf("a worker out of service started %s", name)
	case <-time.After(1500 * time.Millisecond): // long enough for a worker in service to take it
	}
	j := b.do(req{method: "GET", path: "/v1/jobs/" + rb.json(t)["id"].(string), key: b.liveA}).json(t)
	require.Equal(t, "queued", j["state"])
}
