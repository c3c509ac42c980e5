package bench

import (
	"context"
	"crypto/x509"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/filemill/filemill/db"
	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/domain/eventually"
	"github.com/filemill/filemill/domain/netguard"
	"github.com/filemill/filemill/jobs"
)

// Webhook delivery, end to end: an event committed to the outbox, claimed by the relay,
// its deliveries recorded, queued on Redis, attempted by one worker process's delivery
// server against a local HTTPS receiver, every attempt recorded.

// hookReceiver counts the requests it gets and when each webhook-id first arrived.
type hookReceiver struct {
	srv     *httptest.Server
	pool    *x509.CertPool
	count   atomic.Int64
	mu      sync.Mutex
	arrived map[string]time.Time
}

func newHookReceiver(tb testing.TB) *hookReceiver {
	rc := &hookReceiver{arrived: map[string]time.Time{}}
	rc.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at := time.Now()
		_, _ = io.Copy(io.Discard, r.Body)
		id := r.Header.Get("webhook-id")
		rc.mu.Lock()
		if _, ok := rc.arrived[id]; !ok {
			rc.arrived[id] = at
		}
		rc.mu.Unlock()
		rc.count.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	rc.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	rc.srv.StartTLS()
	tb.Cleanup(rc.srv.Close)
	rc.pool = x509.NewCertPool()
	rc.pool.AddCert(rc.srv.Certificate())
	return rc
}

func (rc *hookReceiver) arrival(id string) (time.Time, bool) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	t, ok := rc.arrived[id]
	return t, ok
}

// hookStack is a stack with the relay and one delivery server running, as in one
// worker process, and endpoints on a local receiver.
type hookStack struct {
	*stack
	recv  *hookReceiver
	p     *domain.Principal
	start func() // starts the worker process's delivery server and relay
}

func newHookStack(b *testing.B, embedded bool, endpoints int) *hookStack {
	b.Helper()
	ctx := context.Background()
	rc := newHookReceiver(b)
	guard := &netguard.Guard{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	sender := jobs.NewHTTPSender(jobs.SenderConfig{Guard: guard, RootCAs: rc.pool})
	b.Cleanup(sender.Close)
	var hooks *jobs.WebhookQueue
	var bus interface {
		domain.EventBus
		Nudge()
		Nudges() <-chan struct{}
	}
	s := newStack(b, stackOpts{embedded: embedded, hooks: func(s *stack) domain.Deps {
		hooks = jobs.NewWebhookQueue(s.redisOpt)
		b.Cleanup(func() { hooks.Close() })
		if embedded {
			bus = jobs.NewLocalBus()
		} else {
			rb := jobs.NewRedisBus(s.rdb, discardLogger())
			b.Cleanup(func() { rb.Close() })
			bus = rb
		}
		s.store.OnOutbox(bus.Nudge)
		return domain.Deps{Guard: guard, Bus: bus, Deliveries: hooks, WebhookSender: sender}
	}})
	d := jobs.NewServer(s.redisOpt, jobs.ServerConfig{Pools: []jobs.Pool{jobs.WebhookPool(64)},
		DelayedTaskCheckInterval: time.Second}, discardLogger())
	jobs.RegisterWebhookTasks(d, s.svc, hooks, jobs.WebhookConfig{Nudges: bus.Nudges()}, discardLogger())
	b.Cleanup(d.Shutdown)
	startWorker := func() {
		if err := d.Start(); err != nil {
			b.Fatal(err)
		}
	}
	p, err := s.svc.Keys.Authenticate(ctx, s.key, netip.MustParseAddr("127.0.0.1"))
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < endpoints; i++ {
		if _, err := s.svc.Webhooks.CreateEndpoint(ctx, p, domain.NewWebhookEndpoint{
			URL: rc.srv.URL + "/in/" + string(rune('a'+i)), EnabledEvents: []string{domain.EventJobSucceeded}}); err != nil {
			b.Fatal(err)
		}
	}
	return &hookStack{stack: s, recv: rc, p: p, start: startWorker}
}

// jobEvent is the job.succeeded event a settled job writes.
func (h *hookStack) jobEvent() *domain.Event {
	j := &domain.Job{ID: domain.NewID(domain.PrefixJob), OrganizationID: h.org.Organization.ID, ProjectID: h.org.Project.ID,
		Environment: domain.EnvLive, FileID: domain.NewID(domain.PrefixFile), Operation: "inspect", State: domain.JobSucceeded,
		Progress: 100, CreatedAt: time.Now().UTC()}
	e, _ := domain.NewEvent(context.Background(), domain.EventJobSucceeded, j.OrganizationID, j.ProjectID, j.Environment, j.ID, j.View(), j.CreatedAt)
	e.FileID = j.FileID
	return e
}

// BenchmarkWebhookDeliveries fills the outbox, then starts one worker process (its
// relay and delivery server) and measures how many signed deliveries per second it
// completes, each attempt recorded. Goal: 1,000/s on 2 cores.
func BenchmarkWebhookDeliveries(b *testing.B) {
	for _, c := range []struct {
		name     string
		embedded bool
	}{{"Postgres", false}, {"Embedded", true}} {
		b.Run(c.name, func(b *testing.B) {
			const endpoints, events, batch = 4, 2500, 250
			h := newHookStack(b, c.embedded, endpoints)
			ctx := context.Background()
			want := int64(endpoints * events)
			for i := 0; i < events; i += batch {
				if err := h.store.InTx(ctx, func(tx domain.Store) error {
					for j := 0; j < batch; j++ {
						if err := tx.CreateEvent(ctx, h.jobEvent()); err != nil {
							return err
						}
					}
					return nil
				}); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			cpu0 := processCPU()
			start := time.Now()
			h.start()
			deadline := time.Now().Add(5 * time.Minute)
			var relayed time.Duration
			for h.recv.count.Load() < want && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
				if relayed == 0 && countRows(b, h.store, "event_outbox") == 0 {
					relayed = time.Since(start)
				}
			}
			elapsed := time.Since(start)
			cpu := processCPU() - cpu0
			b.StopTimer()
			if got := h.recv.count.Load(); got < want {
				b.Fatalf("%d of %d deliveries arrived", got, want)
			}
			// The receiver answers before the attempt is written: wait for the last writes.
			var recorded int64
			eventually.True(b, "every delivery's attempt to be recorded", func() bool {
				recorded = countAttempts(b, h.store)
				return recorded >= want
			})
			if recorded != want {
				b.Fatalf("%d attempts recorded for %d deliveries", recorded, want)
			}
			b.ReportMetric(float64(want)/elapsed.Seconds(), "deliveries/s")
			b.ReportMetric(relayed.Seconds(), "relay-s") // until the outbox was empty
			// The worker's own CPU per delivery (relay, queue, signing, HTTPS both ends,
			// recording), which machine load does not inflate as it does wall time.
			b.ReportMetric(float64(cpu.Microseconds())/float64(want), "cpu-µs/delivery")
			b.ReportMetric(0, "ns/op")
		})
	}
}

func countAttempts(tb testing.TB, s *db.Store) int64 { return countRows(tb, s, "delivery_attempts") }

func countRows(tb testing.TB, s *db.Store, table string) int64 {
	var n int64
	if err := s.DB().NewRaw("SELECT count(*) FROM "+table).Scan(context.Background(), &n); err != nil {
		tb.Fatal(err)
	}
	return n
}

// BenchmarkWebhookLatency commits events one at a time, a few milliseconds apart, and
// measures from each commit to the first delivery attempt reaching the receiver. Goal:
// p50 ≤ 20 ms, p99 ≤ 100 ms.
func BenchmarkWebhookLatency(b *testing.B) {
	for _, c := range []struct {
		name     string
		embedded bool
	}{{"Postgres", false}, {"Embedded", true}} {
		b.Run(c.name, func(b *testing.B) {
			const events = 400
			h := newHookStack(b, c.embedded, 1)
			h.start()
			ctx := context.Background()
			committed := make(map[string]time.Time, events)
			b.ResetTimer()
			for i := 0; i < events; i++ {
				e := h.jobEvent()
				if err := h.store.CreateEvent(ctx, e); err != nil {
					b.Fatal(err)
				}
				committed[e.ID] = time.Now()
				time.Sleep(5 * time.Millisecond) // open loop: a steady trickle, not a burst
			}
			deadline := time.Now().Add(time.Minute)
			for h.recv.count.Load() < events && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			b.StopTimer()
			lat := make([]time.Duration, 0, events)
			for id, at := range committed {
				arrived, ok := h.recv.arrival(id)
				if !ok {
					b.Fatalf("event %s never arrived", id)
				}
				lat = append(lat, arrived.Sub(at))
			}
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			pct := func(p float64) float64 {
				return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000
			}
			b.ReportMetric(pct(0.50), "p50-ms")
			b.ReportMetric(pct(0.99), "p99-ms")
			b.ReportMetric(pct(1), "max-ms")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// processCPU is the user and system CPU time this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
