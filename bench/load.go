package bench

import (
	"context"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// LoadResult summarises one run of the load driver.
type LoadResult struct {
	Requests int64
	Errors   int64
	Elapsed  time.Duration
	P50, P99 time.Duration
	// CPU is the machine's use of its processors during the run (zero where unknown).
	CPU CPUUse
	// ProcCPU is the processor time this process (the service's API and worker, and the
	// load's clients) spent during the run: what in-process work such as tracing adds
	// shows here, far less blurred by other processes than a rate is.
	ProcCPU time.Duration
	// lat is every latency of the run, sorted: the percentiles of merged runs come
	// from them.
	lat []time.Duration
}

// RPS is requests completed per second.
func (r LoadResult) RPS() float64 { return float64(r.Requests) / r.Elapsed.Seconds() }

// ProcCPUPerRequest is this process's processor time per request completed, in µs.
func (r LoadResult) ProcCPUPerRequest() float64 {
	if r.Requests == 0 {
		return 0
	}
	return float64(r.ProcCPU.Microseconds()) / float64(r.Requests)
}

// selfCPU is this process's processor time so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Drive runs do from workers goroutines for d (closed loop: each worker sends its next
// request when the previous answered) and records every latency. do reports whether the
// answer was the expected one.
func Drive(ctx context.Context, workers int, d time.Duration, do func(ctx context.Context, worker, i int) bool) LoadResult {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var reqs, errs atomic.Int64
	lat := make([][]time.Duration, workers)
	var wg sync.WaitGroup
	cpu0, proc0 := readCPU(), selfCPU()
	start := time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				t0 := time.Now()
				ok := do(ctx, w, i)
				if ctx.Err() != nil {
					return // a request cut by the deadline is not counted
				}
				lat[w] = append(lat[w], time.Since(t0))
				reqs.Add(1)
				if !ok {
					errs.Add(1)
				}
			}
		}(w)
	}
	wg.Wait()
	res := LoadResult{Requests: reqs.Load(), Errors: errs.Load(), Elapsed: time.Since(start), CPU: readCPU().since(cpu0),
		ProcCPU: selfCPU() - proc0}
	res.setLatencies(slices.Concat(lat...))
	return res
}

// setLatencies keeps all as the run's latencies, sorted, and sets the percentiles.
func (r *LoadResult) setLatencies(all []time.Duration) {
	slices.Sort(all)
	r.lat = all
	if n := len(all); n > 0 {
		r.P50 = all[n*50/100]
		r.P99 = all[min(n-1, n*99/100)]
	}
}

// NewClient is an HTTP client that keeps enough idle connections for the workers.
func NewClient(workers int) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = workers * 2
	t.MaxIdleConnsPerHost = workers * 2
	return &http.Client{Transport: t, Timeout: 30 * time.Second}
}

// CPUUse is the share of the machine's processor time in each use over a period,
// in percent. Steal is time the hypervisor gave to other machines: on a shared host it
// explains a run slower than its neighbours.
type CPUUse struct{ Busy, Idle, Steal float64 }

// cpuTimes are the cumulative counters of /proc/stat's first line.
type cpuTimes struct{ busy, idle, steal uint64 }

// readCPU reads the machine's processor counters (Linux); zero elsewhere.
func readCPU() cpuTimes {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuTimes{}
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return cpuTimes{}
	}
	var v [8]uint64
	for i := range v {
		v[i], _ = strconv.ParseUint(f[i+1], 10, 64)
	}
	// user nice system idle iowait irq softirq steal
	return cpuTimes{busy: v[0] + v[1] + v[2] + v[5] + v[6], idle: v[3] + v[4], steal: v[7]}
}

func (c cpuTimes) since(before cpuTimes) CPUUse {
	busy, idle, steal := float64(c.busy-before.busy), float64(c.idle-before.idle), float64(c.steal-before.steal)
	total := busy + idle + steal
	if total == 0 {
		return CPUUse{}
	}
	return CPUUse{Busy: 100 * busy / total, Idle: 100 * idle / total, Steal: 100 * steal / total}
}

// Interleave runs each phase for d/rounds in turn, rounds times over, so that what
// drifts on a shared machine during a run (other tenants, clock frequency) falls on
// every side alike rather than on whichever runs last. It returns each phase's rounds
// merged, in the order of phases.
func Interleave(rounds int, d time.Duration, phases ...func(d time.Duration) LoadResult) []LoadResult {
	rounds = max(1, rounds)
	runs := make([][]LoadResult, len(phases))
	for range rounds {
		for i, phase := range phases {
			runs[i] = append(runs[i], phase(d/time.Duration(rounds)))
		}
	}
	out := make([]LoadResult, len(phases))
	for i, rs := range runs {
		out[i] = Merge(rs)
	}
	return out
}

// Merge adds up runs of one load: requests, errors and time summed, the machine's CPU
// use weighted by time, and the percentiles taken over every run's latencies.
func Merge(rs []LoadResult) LoadResult {
	var m LoadResult
	var all [][]time.Duration
	for _, r := range rs {
		m.Requests += r.Requests
		m.Errors += r.Errors
		m.Elapsed += r.Elapsed
		m.ProcCPU += r.ProcCPU
		w := r.Elapsed.Seconds()
		m.CPU.Busy += r.CPU.Busy * w
		m.CPU.Idle += r.CPU.Idle * w
		m.CPU.Steal += r.CPU.Steal * w
		all = append(all, r.lat)
	}
	if t := m.Elapsed.Seconds(); t > 0 {
		m.CPU.Busy, m.CPU.Idle, m.CPU.Steal = m.CPU.Busy/t, m.CPU.Idle/t, m.CPU.Steal/t
	}
	m.setLatencies(slices.Concat(all...))
	return m
}
