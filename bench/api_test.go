package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/filemill/filemill/domain"
)

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// loadWorkers is the number of closed-loop clients; BENCH_WORKERS overrides it to trace
// the throughput/latency curve.
var loadWorkers = envInt("BENCH_WORKERS", 8)

const loadDuration = 10 * time.Second

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

func report(b *testing.B, r LoadResult) {
	b.ReportMetric(r.RPS(), "req/s")
	b.ReportMetric(float64(r.P50.Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(r.P99.Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(r.Errors), "errors")
	b.ReportMetric(r.CPU.Busy, "cpu-busy-%")
	b.ReportMetric(r.CPU.Steal, "cpu-steal-%")
	b.ReportMetric(r.ProcCPUPerRequest(), "proc-cpu-µs/req")
	b.ReportMetric(0, "ns/op") // the run is time-boxed; per-op time is meaningless here
}

// BenchmarkAuthenticatedRead drives GET /v1/jobs on an empty project: authentication,
// the Redis rate limit, and one list query. Goal on 2 cores with PostgreSQL:
// ≥ 3,000 req/s with p99 ≤ 10 ms. In the same run, its ceiling: the list query alone.
func BenchmarkAuthenticatedRead(b *testing.B) {
	for _, embedded := range []bool{false, true} {
		b.Run(stackName(embedded), func(b *testing.B) {
			s := newStack(b, stackOpts{embedded: embedded})
			client := NewClient(loadWorkers)
			url := s.srv.URL + "/v1/jobs"
			do := func(ctx context.Context, _, _ int) bool {
				req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
				req.Header.Set("Authorization", "Bearer "+s.key)
				resp, err := client.Do(req)
				if err != nil {
					return false
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				return resp.StatusCode == 200
			}
			// The ceiling: the list query alone, bare, on the same database.
			scope := domain.Scope{OrganizationID: s.org.Organization.ID, ProjectID: s.org.Project.ID}
			bare := func(ctx context.Context, _, _ int) bool {
				_, _, err := s.store.FindJobs(ctx, domain.JobFilter{Scope: scope, Environment: domain.EnvLive, Page: domain.Page{Limit: 10}})
				return err == nil
			}
			Drive(context.Background(), loadWorkers, time.Second, do) // warm connections and caches
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				r := Drive(context.Background(), loadWorkers, loadDuration, do)
				ceiling := Drive(context.Background(), loadWorkers, loadDuration, bare)
				report(b, r)
				b.ReportMetric(ceiling.RPS(), "bare-select/s")
				b.ReportMetric(100*r.RPS()/ceiling.RPS(), "%-of-ceiling")
			}
		})
	}
}

// BenchmarkIdempotentPost drives POST /v1/webhook-endpoints with a fresh Idempotency-Key
// per request (claim, effect, stored answer) and, separately, replays of one key.
func BenchmarkIdempotentPost(b *testing.B) {
	for _, embedded := range []bool{false, true} {
		for _, replay := range []bool{false, true} {
			name := stackName(embedded) + "/fresh-keys"
			if replay {
				name = stackName(embedded) + "/replays"
			}
			b.Run(name, func(b *testing.B) {
				s := newStack(b, stackOpts{embedded: embedded})
				// The per-project endpoint cap would refuse a flood of creations; every
				// request is still claimed, executed and stored.
				client := NewClient(loadWorkers)
				url := s.srv.URL + "/v1/webhook-endpoints"
				run := 0
				do := func(ctx context.Context, w, i int) bool {
					key := fmt.Sprintf("bench-%d-%d-%d", run, w, i)
					body := fmt.Sprintf(`{"url":"https://example.com/hook/%d/%d","enabled_events":["job.succeeded"]}`, w, i)
					if replay {
						key, body = "bench-replay", `{"url":"https://example.com/hook","enabled_events":["job.succeeded"]}`
					}
					req, _ := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader(body))
					req.Header.Set("Authorization", "Bearer "+s.key)
					req.Header.Set("Idempotency-Key", key)
					req.Header.Set("Content-Type", "application/json")
					resp, err := client.Do(req)
					if err != nil {
						return false
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					return resp.StatusCode == 201 || resp.StatusCode == 409
				}
				do(context.Background(), 0, 0)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					run++
					report(b, Drive(context.Background(), loadWorkers, loadDuration, do))
				}
			})
		}
	}
}

func stackName(embedded bool) string {
	if embedded {
		return "embedded"
	}
	return "postgres"
}
