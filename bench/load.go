package bench

import (
	"context"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// LoadResult summarises one run of the load driver.
type LoadResult struct {
	Requests int64
	Errors   int64
	Elapsed  time.Duration
	P50, P99 time.Duration
}

// RPS is requests completed per second.
func (r LoadResult) RPS() float64 { return float64(r.Requests) / r.Elapsed.Seconds() }

// Drive runs do from workers goroutines for d (closed loop: each worker sends its next
// request when the previous answered) and records every latency. do reports whether the
// answer was the expected one.
func Drive(ctx context.Context, workers int, d time.Duration, do func(ctx context.Context, worker, i int) bool) LoadResult {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var reqs, errs atomic.Int64
	lat := make([][]time.Duration, workers)
	var wg sync.WaitGroup
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
	res := LoadResult{Requests: reqs.Load(), Errors: errs.Load(), Elapsed: time.Since(start)}
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	if n := len(all); n > 0 {
		res.P50 = all[n*50/100]
		res.P99 = all[min(n-1, n*99/100)]
	}
	return res
}

// NewClient is an HTTP client that keeps enough idle connections for the workers.
func NewClient(workers int) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = workers * 2
	t.MaxIdleConnsPerHost = workers * 2
	return &http.Client{Transport: t, Timeout: 30 * time.Second}
}
