// Package hostile is what the fuzz targets and the bomb tests share: how much memory a
// call took, measured the same way everywhere, and the bounds they hold it to.
package hostile

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"
	"time"
)

var allocsMetric = []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}

// Allocated returns the bytes the Go heap handed out while f ran (everything any
// goroutine allocated meanwhile, so callers run nothing else). It is cheap enough to
// call on every fuzz input; the figure can lag by what the per-CPU caches hold, a few
// MiB at most, which the bounds leave room for.
func Allocated(f func()) uint64 {
	metrics.Read(allocsMetric)
	before := allocsMetric[0].Value.Uint64()
	f()
	metrics.Read(allocsMetric)
	return allocsMetric[0].Value.Uint64() - before
}

// Slack is the allocation every bound allows beyond what it scales with: the lag of
// Allocated and the fixed costs of a parser (tables, buffers).
const Slack = 16 << 20

// Measure is what one refusal cost.
type Measure struct {
	Elapsed time.Duration
	// Allocated is every byte the Go heap handed out meanwhile: the work done, and an
	// upper bound of what the call added to the heap at its peak.
	Allocated uint64
	// PeakResident is how far the process's resident memory rose above what it was
	// before (VmHWM against VmRSS): the true peak, C libraries' memory included.
	PeakResident int64
	// Retained is how much more the heap holds after a collection than before.
	Retained int64
}

// Run measures f after a collection, so that nothing left by earlier work is counted.
func Run(f func()) Measure {
	runtime.GC()
	debug.FreeOSMemory()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	rss := procStatus("VmRSS")
	// Writing 5 to clear_refs starts VmHWM again from the current resident size.
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0o200)
	start := time.Now()
	f()
	elapsed := time.Since(start)
	peak := procStatus("VmHWM")
	runtime.GC()
	runtime.ReadMemStats(&after)
	return Measure{Elapsed: elapsed, Allocated: after.TotalAlloc - before.TotalAlloc, PeakResident: (peak - rss) << 10,
		Retained: int64(after.HeapAlloc) - int64(before.HeapAlloc)}
}

// procStatus reads one kB figure (VmRSS, VmHWM) of this process; 0 where there is none.
func procStatus(field string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb
		}
	}
	return 0
}

// Within fails t when m exceeds the stated bounds on time and on the resident peak,
// and logs the figures either way.
func (m Measure) Within(t testing.TB, what string, maxTime time.Duration, maxPeak int64) {
	t.Helper()
	t.Logf("%s: refused in %s, resident peak +%s (bound %s), %s allocated, %+.1f MiB retained", what,
		m.Elapsed.Round(time.Millisecond), Size(max(m.PeakResident, 0)), Size(maxPeak), Size(m.Allocated), float64(m.Retained)/(1<<20))
	if m.Elapsed > maxTime {
		t.Errorf("%s took %s; the bound is %s", what, m.Elapsed, maxTime)
	}
	if m.PeakResident > maxPeak {
		t.Errorf("%s raised the resident peak by %s; the bound is %s", what, Size(m.PeakResident), Size(maxPeak))
	}
	if m.Retained > Slack {
		t.Errorf("%s left %.1f MiB on the heap", what, float64(m.Retained)/(1<<20))
	}
}

// Size writes a byte count for the figures: "18.2 MiB", "640 B".
func Size[N int | int64 | uint64](n N) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
