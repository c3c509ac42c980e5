package bench

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/domain/eventually"
	"github.com/filemill/filemill/graph"
	"github.com/filemill/filemill/graph/graphtest"
	"github.com/filemill/filemill/jobs"
)

const benchJobSub = `subscription($id: ID!) { jobUpdated(id: $id) { id state progress } }`

// liveStack is a stack whose GraphQL door is fed by the Redis event stream, with an
// outbox relay running: the production path from a commit to a subscriber. wrap, when
// given, wraps the API's and the storage host's handlers (stackOpts.wrap).
func newLiveStack(b *testing.B, wrap ...func(http.Handler) http.Handler) (*stack, *jobs.RedisBus) {
	b.Helper()
	var bus *jobs.RedisBus
	o := stackOpts{hooks: func(s *stack) domain.Deps {
		bus = jobs.NewRedisBus(s.rdb, discardLogger())
		b.Cleanup(func() { bus.Close() })
		s.store.OnOutbox(bus.Nudge)
		return domain.Deps{Bus: bus}
	}, gcfg: func(c *graph.ServerConfig) { c.MaxSubscriptionsPerKey = 1 << 20 }}
	if len(wrap) > 0 {
		o.wrap = wrap[0]
	}
	s := newStack(b, o)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		jobs.RunRelay(ctx, s.svc.Webhooks, jobs.WebhookConfig{Nudges: bus.Nudges()}, discardLogger())
	}()
	b.Cleanup(func() { cancel(); <-done })
	return s, bus
}

// queuedJobs admits n jobs on files of the stack's project (ready rows, no bytes: the
// jobs are only watched, never run) and returns them.
func (s *stack) queuedJobs(tb testing.TB, n int) []*domain.Job {
	tb.Helper()
	ctx := context.Background()
	p, err := s.svc.Keys.Authenticate(ctx, s.key, netip.MustParseAddr("127.0.0.1"))
	if err != nil {
		tb.Fatal(err)
	}
	files := make([]string, domain.MaxBatchSize)
	now := time.Now().UTC()
	for i := range files {
		f := &domain.File{ID: domain.NewID(domain.PrefixFile), OrganizationID: p.Organization.ID, ProjectID: p.Key.ProjectID,
			Environment: p.Environment(), UploadID: domain.NewID(domain.PrefixUpload), Filename: fmt.Sprintf("f%d.txt", i),
			Status: domain.FileReady, ByteSize: 100, DetectedExt: "txt", DetectedMIMEType: "text/plain",
			StorageKey: fmt.Sprintf("seed/%d", i), Findings: []domain.Finding{}, CreatedAt: now, ReadyAt: &now}
		if err := s.store.CreateFile(ctx, f); err != nil {
			tb.Fatal(err)
		}
		files[i] = f.ID
	}
	var out []*domain.Job
	for len(out) < n {
		k := min(n-len(out), len(files))
		_, jobs, err := s.svc.Jobs.CreateBatch(ctx, p, domain.BatchRequest{FileIDs: files[:k], Operation: "inspect"})
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, jobs...)
	}
	return out
}

func dialLive(tb testing.TB, base, key string) *graphtest.Conn {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := graphtest.Dial(ctx, graphtest.URL(base), graphtest.Options{Protocol: graphtest.TransportWS,
		Header: http.Header{"Authorization": {"Bearer " + key}}})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

// BenchmarkSubscriptionLatency: from the commit of a job's state change (claimed by a
// worker: queued → running) to the subscriber's message, through the outbox relay and
// Redis pub/sub. Goal: p99 ≤ 50 ms.
func BenchmarkSubscriptionLatency(b *testing.B) {
	s, _ := newLiveStack(b)
	const n = 300
	jobs := s.queuedJobs(b, n)
	type sub struct {
		ch  <-chan graphtest.Result
		job *domain.Job
	}
	var subs []sub
	var conn *graphtest.Conn
	for i, j := range jobs {
		if i%100 == 0 {
			conn = dialLive(b, s.srv.URL, s.key)
		}
		_, ch, err := conn.Subscribe(benchJobSub, map[string]any{"id": j.ID})
		if err != nil {
			b.Fatal(err)
		}
		if r := <-ch; r.Data == nil || r.Data["jobUpdated"].(map[string]any)["state"] != "queued" {
			b.Fatalf("first message: %v", r)
		}
		subs = append(subs, sub{ch, j})
	}
	b.ResetTimer()
	for range b.N {
		var lat []time.Duration
		for _, sb := range subs {
			if _, err := s.svc.Jobs.ClaimJob(context.Background(), sb.job.ID); err != nil {
				b.Fatal(err)
			}
			committed := time.Now()
			select {
			case r := <-sb.ch:
				if st := r.Data["jobUpdated"].(map[string]any)["state"]; st != "running" {
					b.Fatalf("got %v, want running", st)
				}
				lat = append(lat, r.At.Sub(committed))
			case <-time.After(10 * time.Second):
				b.Fatal("no message within 10 s")
			}
			time.Sleep(5 * time.Millisecond) // changes one after another, as they come
		}
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
		b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "max-ms")
		b.ReportMetric(0, "ns/op")
	}
}

// BenchmarkTenThousandSubscriptions: one filemill api process holds 10,000 jobUpdated
// subscriptions (100 websockets of 100, ten keys) while 200 events a second, spread
// over the jobs, are published on the Redis stream. Reported: the api process's RSS,
// delivery latency from publish to the subscriber, and messages lost (goal: p99 ≤ 100
// ms, none lost).
func BenchmarkTenThousandSubscriptions(b *testing.B) {
	const subsTotal, perConn, rate, seconds = 10000, 100, 200, 15
	s := newStack(b, stackOpts{})
	bin := buildFilemill(b)
	dir := b.TempDir()
	addr := freeLoopbackAddr(b)
	cmd := exec.Command(bin, "api")
	cmd.Env = append(os.Environ(), "FILEMILL_DATABASE_URL="+s.dbURL, "FILEMILL_REDIS_URL="+s.redisURL, "FILEMILL_DATA_DIR="+dir,
		"FILEMILL_ADDR="+addr, "FILEMILL_STORAGE_ADDR="+freeLoopbackAddr(b), "FILEMILL_STORAGE_SECRET="+strings.Repeat("ab", 32),
		"FILEMILL_LOG_LEVEL=warn", "FILEMILL_METRICS_ADDR=")
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	base := "http://" + addr
	waitUp(b, base)

	// Ten keys: a key may hold 1,000 subscriptions on one process.
	keys := make([]string, subsTotal/1000)
	for i := range keys {
		_, k, err := s.svc.Keys.CreateKey(context.Background(), domain.NewKey{OrganizationID: s.org.Organization.ID,
			ProjectID: s.org.Project.ID, Environment: domain.EnvLive, RateLimit: 1 << 30})
		if err != nil {
			b.Fatal(err)
		}
		keys[i] = k
	}
	jobs := s.queuedJobs(b, subsTotal)
	var mu sync.Mutex
	published := map[string]time.Time{} // job id + progress → when published
	var lat []time.Duration
	received, wrong := 0, 0
	var wg sync.WaitGroup
	idx := 0
	for c := 0; c < subsTotal/perConn; c++ {
		conn := dialLive(b, base, keys[c*perConn/1000])
		for range perConn {
			j := jobs[idx]
			idx++
			_, ch, err := conn.Subscribe(benchJobSub, map[string]any{"id": j.ID})
			if err != nil {
				b.Fatal(err)
			}
			if r := <-ch; r.Data == nil {
				b.Fatalf("subscription %d: %v", idx, r.Errors)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for r := range ch {
					v, _ := r.Data["jobUpdated"].(map[string]any)
					key := fmt.Sprint(v["id"], "/", v["progress"])
					mu.Lock()
					if t0, ok := published[key]; ok {
						lat = append(lat, r.At.Sub(t0))
						received++
					} else {
						wrong++
					}
					mu.Unlock()
				}
			}()
		}
	}
	rssIdle := rss(b, cmd.Process.Pid)

	bus := jobs2Bus(b, s)
	progress := map[string]int{}
	b.ResetTimer()
	for range b.N {
		tick := time.NewTicker(time.Second / rate)
		sent := 0
		for sent < rate*seconds {
			<-tick.C
			j := jobs[(sent*7919)%len(jobs)] // spread over every subscription
			progress[j.ID]++
			v := j.View()
			v.Progress = progress[j.ID]
			e, err := domain.NewEvent(context.Background(), domain.EventJobProgress, j.OrganizationID, j.ProjectID, j.Environment, j.ID, v, time.Now())
			if err != nil {
				b.Fatal(err)
			}
			e.ID, e.FileID = "", j.FileID
			mu.Lock()
			published[fmt.Sprint(j.ID, "/", v.Progress)] = time.Now()
			mu.Unlock()
			if err := bus.Publish(context.Background(), e); err != nil {
				b.Fatal(err)
			}
			sent++
		}
		tick.Stop()
		deadline := time.Now().Add(30 * time.Second)
		for {
			mu.Lock()
			got := received
			mu.Unlock()
			if got >= sent || time.Now().After(deadline) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		mu.Lock()
		slices.Sort(lat)
		b.ReportMetric(float64(sent), "published")
		b.ReportMetric(float64(sent-received), "lost")
		b.ReportMetric(float64(wrong), "unexpected")
		if len(lat) > 0 {
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
		}
		mu.Unlock()
		b.ReportMetric(float64(rssIdle)/(1<<20), "rss-idle-MiB")
		b.ReportMetric(float64(rss(b, cmd.Process.Pid))/(1<<20), "rss-MiB")
		b.ReportMetric(0, "ns/op")
	}
}

func jobs2Bus(b *testing.B, s *stack) *jobs.RedisBus {
	bus := jobs.NewRedisBus(s.rdb, discardLogger())
	b.Cleanup(func() { bus.Close() })
	return bus
}

// rss is a process's resident set size in bytes.
func rss(tb testing.TB, pid int) int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			f := strings.Fields(line)
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

var buildOnce struct {
	sync.Once
	path string
	err  error
}

// buildFilemill builds the filemill binary once per run.
func buildFilemill(tb testing.TB) string {
	tb.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "filemill-bench-bin-")
		if err != nil {
			buildOnce.err = err
			return
		}
		buildOnce.path = filepath.Join(dir, "filemill")
		// As `make build` does: linked aside, then copied into place (see the Makefile).
		linked := buildOnce.path + ".linked"
		out, err := exec.Command("go", "build", "-o", linked, "../cmd/filemill").CombinedOutput()
		if err != nil {
			buildOnce.err = fmt.Errorf("build filemill: %v\n%s", err, out)
			return
		}
		if out, err := exec.Command("cp", linked, buildOnce.path).CombinedOutput(); err != nil {
			buildOnce.err = fmt.Errorf("copy filemill: %v\n%s", err, out)
			return
		}
		buildOnce.err = os.Remove(linked)
	})
	if buildOnce.err != nil {
		tb.Fatal(buildOnce.err)
	}
	return buildOnce.path
}

func freeLoopbackAddr(tb testing.TB) string {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func waitUp(tb testing.TB, base string) {
	tb.Helper()
	eventually.True(tb, base+" ready", func() bool {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}
