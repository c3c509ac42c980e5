package bench

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/filemill/filemill/domain"
)

// BenchmarkConsoleJobs measures the console's jobs screen in Debian's Chromium
// (playwright-core, web/e2e/bench.mjs) against a real `filemill serve` on PostgreSQL +
// Redis, with 10,000 jobs in the project:
//
//   - load-ms: from the navigation's start (performance.timeOrigin) to the jobs screen
//     interactive on a first load of /console/jobs (empty cache): its rows rendered and
//     the state filter's buttons in place (goal ≤ 1,000 ms), median of the loads;
//     js-sent-KB: the JavaScript that load fetched, as sent; js-gzip-KB: the same
//     files gzipped (goal ≤ 250 KB);
//   - live-p50-ms / live-p99-ms: from a job's state change, as stamped in the committing
//     transaction (the job's started_at for running, finished_at for succeeded: the
//     time its event carries), to the moment the open jobs screen shows the new state in
//     its row (a MutationObserver in the page, its performance.timeOrigin + now() as wall
//     clock: one machine, one clock). The changes are committed by this process, as a
//     worker process would, and reach the page through the outbox relay of the serve
//     process, Redis and the websocket (goal: p50 ≤ 100 ms);
//   - page-ms / filter-ms: from the click on "Older →" or on a state filter to the first
//     frame after the table holds the new rows, fetched from the server (goal ≤ 100
//     ms), medians; page-cached-ms: "← Newer" back to a page the client holds;
//     fetch-ms: of those fetched, from the click to the end of the GraphQL answer (the
//     rest of page-ms and filter-ms is the page's own work: render and frame).
//
// BENCH_CONSOLE_COMPARE names another filemill binary (another build of the console)
// whose api process serves beside an api process of this one on the same database
// (the serve process then only relays): loads and page rounds alternate between the
// two and its figures are reported as cmp-*, measured side by side.
//
// BENCH_CONSOLE_LOADS (default 7) sets the number of first loads, BENCH_CONSOLE_CHANGES
// (default 24, at most the first page's 25 rows less one) the number of jobs moved
// through running and succeeded, each change timed.
func BenchmarkConsoleJobs(b *testing.B) {
	node, chromium := consoleBrowser(b)
	const seeded = 10000
	loads, changes := envInt("BENCH_CONSOLE_LOADS", 7), min(envInt("BENCH_CONSOLE_CHANGES", 24), 24)
	// The stack's services write the rows, as a worker would; its bus nudges the serve
	// process's relay (through Redis) after each commit that wrote events, and carries
	// progress.
	s := newStack(b, stackOpts{hooks: func(s *stack) domain.Deps {
		bus := jobs2Bus(b, s)
		s.store.OnOutbox(bus.Nudge)
		return domain.Deps{Bus: bus}
	}})
	ctx := context.Background()
	const email, password = "owner@example.com", "the owner's password"
	if _, err := s.svc.People.CreateUser(ctx, domain.NewUser{OrganizationID: s.org.Organization.ID, Email: email,
		Role: domain.RoleOwner, Password: password}); err != nil {
		b.Fatal(err)
	}
	seedJobs(b, s, seeded)
	live := idleJobs(b, s, changes+1) // the newest one only tells when the page listens

	bin := buildFilemill(b)
	targets := startServe(b, s, bin, "serve")
	if cmp := os.Getenv("BENCH_CONSOLE_COMPARE"); cmp != "" {
		// Each build answers from an API process of its own (the same console and
		// GraphQL, without a second set of engines starting on the machine), so neither
		// shares its CPU with the serve process's workers and relay: the side by side
		// compares the builds, not the roles (the serve side's figures ran 1.5-2.5x the
		// api side's with the same build on a busy machine). The serve process still
		// relays the job events, which reach either API process through Redis.
		targets = startServe(b, s, bin, "api") + "," + startServe(b, s, cmp, "api")
	}

	b.ResetTimer()
	for range b.N {
		d := startDriver(b, node, chromium, targets, email, password, loads)
		var load, sentKB, gzipKB, pages, cached, filters, fetches [2][]float64
		var lat []float64
		for {
			m := d.next()
			if m["kind"] != "seen" && m["kind"] != "warm" {
				raw, _ := json.Marshal(m)
				b.Logf("%s", raw)
			}
			t, _ := m["target"].(float64)
			switch m["kind"] {
			case "load":
				load[int(t)] = append(load[int(t)], m["ms"].(float64))
				sentKB[int(t)] = append(sentKB[int(t)], m["jsSentKB"].(float64))
				gzipKB[int(t)] = append(gzipKB[int(t)], gzipSize(b, strings.Split(targets, ",")[int(t)], m["scripts"].([]any))/1024)
			case "page":
				pages[int(t)] = append(pages[int(t)], m["ms"].(float64))
				fetches[int(t)] = append(fetches[int(t)], answered(m))
			case "page-cached":
				cached[int(t)] = append(cached[int(t)], m["ms"].(float64))
			case "filter":
				filters[int(t)] = append(filters[int(t)], m["ms"].(float64))
				fetches[int(t)] = append(fetches[int(t)], answered(m))
			case "live-ready":
				lat = moveJobs(b, s, d, live)
			case "done":
				d.wait()
				report := func(xs []float64, unit string) {
					if len(xs) == 0 {
						b.Fatalf("no %s measured", unit)
					}
					slices.Sort(xs)
					b.ReportMetric(xs[len(xs)/2], unit)
				}
				for t, prefix := range []string{"", "cmp-"} {
					if t == 1 && len(load[1]) == 0 {
						break
					}
					report(load[t], prefix+"load-ms")
					report(sentKB[t], prefix+"js-sent-KB")
					report(gzipKB[t], prefix+"js-gzip-KB")
					report(pages[t], prefix+"page-ms")
					report(cached[t], prefix+"page-cached-ms")
					report(filters[t], prefix+"filter-ms")
					report(fetches[t], prefix+"fetch-ms")
					b.Logf("%sload ms %v\n%spage ms %v\n%sback from cache ms %v\n%sfilter ms %v", prefix, load[t], prefix, pages[t],
						prefix, cached[t], prefix, filters[t])
				}
				report(lat, "live-p50-ms")
				b.ReportMetric(lat[len(lat)*99/100], "live-p99-ms")
				b.ReportMetric(lat[len(lat)-1], "live-max-ms")
				b.Logf("live ms %v", lat)
				b.ReportMetric(0, "ns/op")
				goto next
			default:
				b.Fatalf("bench.mjs: unexpected message %v", m)
			}
		}
	next:
	}
}

// answered is when the last GraphQL answer a click asked for was in, in milliseconds
// from the click (0 when it asked none).
func answered(m map[string]any) float64 {
	reqs, _ := m["graphql"].([]any)
	end := 0.0
	for _, r := range reqs {
		if t, ok := r.([]any); ok && len(t) == 3 {
			end = max(end, t[2].(float64))
		}
	}
	return end
}

// startServe runs bin serve (or api) on the stack's database and Redis and returns its
// URL once it is ready.
func startServe(b *testing.B, s *stack, bin, what string) string {
	addr := freeLoopbackAddr(b)
	cmd := exec.Command(bin, what)
	cmd.Env = append(os.Environ(), "FILEMILL_DATABASE_URL="+s.dbURL, "FILEMILL_REDIS_URL="+s.redisURL,
		"FILEMILL_DATA_DIR="+b.TempDir(), "FILEMILL_ADDR="+addr, "FILEMILL_STORAGE_ADDR="+freeLoopbackAddr(b),
		"FILEMILL_STORAGE_SECRET="+strings.Repeat("ab", 32), "FILEMILL_LOG_LEVEL=error", "FILEMILL_METRICS_ADDR=")
	cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	base := "http://" + addr
	// Its engines start first: slow on a busy machine.
	waitUp(b, base)
	return base
}

// gzipSize is the size of the console's files at paths, each gzipped at the default
// level.
func gzipSize(b *testing.B, base string, paths []any) float64 {
	n := 0
	for _, p := range paths {
		resp, err := http.Get(base + p.(string))
		if err != nil {
			b.Fatal(err)
		}
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		_, err = io.Copy(zw, resp.Body)
		resp.Body.Close()
		if err != nil || zw.Close() != nil || resp.StatusCode != http.StatusOK {
			b.Fatalf("GET %s: %d %v", p, resp.StatusCode, err)
		}
		n += buf.Len()
	}
	return float64(n)
}

// moveJobs moves each job from queued to running, then to succeeded, one change at a
// time: after each commit it asks the page when the row showed the new state, and
// returns the latencies in milliseconds.
func moveJobs(b *testing.B, s *stack, d *driver, live []*domain.Job) []float64 {
	ctx := context.Background()
	// The page's subscription starts after its first render: the newest job's progress
	// tells when it is up.
	warm := live[len(live)-1]
	live = live[:len(live)-1]
	run, err := s.svc.Jobs.ClaimJob(ctx, warm.ID)
	if err != nil {
		b.Fatal(err)
	}
	progress := s.svc.Jobs.ProgressFunc(ctx, run, 0, 1)
	for pct := 5; ; pct += 5 {
		if pct > 95 {
			b.Fatal("the jobs screen never showed a job's progress")
		}
		progress(pct)
		d.send(map[string]any{"kind": "warm", "id": warm.ID, "progress": pct})
		if m := d.next(); m["kind"] != "warm" {
			b.Fatalf("bench.mjs: want warm, got %v", m)
		} else if m["ok"] == true {
			break
		}
	}
	var lat []float64
	wait := func(j *domain.Job, state string, committed time.Time) {
		d.send(map[string]any{"kind": "wait", "id": j.ID, "state": state})
		m := d.next()
		if m["kind"] != "seen" || m["id"] != j.ID {
			b.Fatalf("bench.mjs: want seen %s %s, got %v", j.ID, state, m)
		}
		at := time.UnixMicro(int64(m["at"].(float64) * 1000))
		lat = append(lat, float64(at.Sub(committed).Microseconds())/1000)
	}
	// Newest first: the first page shows the 25 newest jobs.
	for _, j := range slices.Backward(live) {
		run, err := s.svc.Jobs.ClaimJob(ctx, j.ID)
		if err != nil {
			b.Fatal(err)
		}
		wait(j, domain.JobRunning, *run.StartedAt)
		if err := s.svc.Jobs.SettleJob(ctx, run, nil, 0); err != nil {
			b.Fatal(err)
		}
		wait(j, domain.JobSucceeded, *run.FinishedAt)
	}
	d.send(map[string]any{"kind": "end"})
	slices.Sort(lat)
	return lat
}

// seedJobs writes n finished jobs (on 100 files) straight into the store, in the
// proportions a busy project shows: most succeeded, some failed, a few cancelled.
func seedJobs(b *testing.B, s *stack, n int) {
	ctx := context.Background()
	files := seedFiles(b, s, 100)
	states := []string{domain.JobSucceeded, domain.JobSucceeded, domain.JobSucceeded, domain.JobSucceeded,
		domain.JobSucceeded, domain.JobSucceeded, domain.JobSucceeded, domain.JobFailed, domain.JobFailed, domain.JobCancelled}
	ops := []string{"inspect", "image.convert", "pdf.render", "ocr", "office.convert"}
	ids := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for range 8 {
		wg.Go(func() {
			for i := range ids {
				now := time.Now().UTC()
				start, end := now.Add(-2*time.Second), now
				j := &domain.Job{ID: domain.NewID(domain.PrefixJob), OrganizationID: s.org.Organization.ID, ProjectID: s.org.Project.ID,
					Environment: domain.EnvLive, FileID: files[i%len(files)], Operation: ops[i%len(ops)], Queue: "console-bench",
					State: states[i%len(states)], Attempts: 1, CreditsReserved: 2, CreatedAt: start, StartedAt: &start, FinishedAt: &end}
				switch j.State {
				case domain.JobSucceeded:
					j.Progress, j.CreditsCharged = 100, 2
				case domain.JobFailed:
					j.ErrorCode, j.ErrorMessage = domain.CodeCorruptedFile, "the file is damaged"
				case domain.JobCancelled:
					j.StartedAt = nil
				}
				if err := s.store.CreateJob(ctx, j); err != nil {
					mu.Lock()
					first = err
					mu.Unlock()
				}
			}
		})
	}
	for i := range n {
		ids <- i
	}
	close(ids)
	wg.Wait()
	if first != nil {
		b.Fatal(first)
	}
}

// idleJobs writes n queued jobs, newer than every other, that no worker takes (their
// queue is served by none): only the benchmark moves them.
func idleJobs(b *testing.B, s *stack, n int) []*domain.Job {
	ctx := context.Background()
	files := seedFiles(b, s, 1)
	out := make([]*domain.Job, n)
	for i := range out {
		j := &domain.Job{ID: domain.NewID(domain.PrefixJob), OrganizationID: s.org.Organization.ID, ProjectID: s.org.Project.ID,
			Environment: domain.EnvLive, FileID: files[0], Operation: "inspect", Queue: "console-bench",
			State: domain.JobQueued, CreatedAt: time.Now().UTC()}
		if err := s.store.CreateJob(ctx, j); err != nil {
			b.Fatal(err)
		}
		out[i] = j
	}
	return out
}

func seedFiles(b *testing.B, s *stack, n int) []string {
	ctx := context.Background()
	ids := make([]string, n)
	now := time.Now().UTC()
	for i := range ids {
		f := &domain.File{ID: domain.NewID(domain.PrefixFile), OrganizationID: s.org.Organization.ID, ProjectID: s.org.Project.ID,
			Environment: domain.EnvLive, UploadID: domain.NewID(domain.PrefixUpload), Filename: fmt.Sprintf("scan-%03d.pdf", i),
			Status: domain.FileReady, ByteSize: 1 << 20, DetectedExt: "pdf", DetectedMIMEType: "application/pdf",
			StorageKey: fmt.Sprintf("seed/%d", i), Findings: []domain.Finding{}, CreatedAt: now, ReadyAt: &now}
		if err := s.store.CreateFile(ctx, f); err != nil {
			b.Fatal(err)
		}
		ids[i] = f.ID
	}
	return ids
}

// driver is web/e2e/bench.mjs running: JSON lines both ways.
type driver struct {
	tb    testing.TB
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan map[string]any
	log   *strings.Builder
	mu    sync.Mutex
}

func startDriver(b *testing.B, node, chromium, base, email, password string, loads int) *driver {
	cmd := exec.Command(node, "e2e/bench.mjs")
	cmd.Dir = filepath.Join("..", "web")
	cmd.Env = append(os.Environ(), "CONSOLE_URL="+base, "EMAIL="+email, "PASSWORD="+password, "CHROMIUM="+chromium,
		fmt.Sprintf("LOADS=%d", loads))
	d := &driver{tb: b, cmd: cmd, lines: make(chan map[string]any, 64), log: &strings.Builder{}}
	var err error
	if d.in, err = cmd.StdinPipe(); err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = &lockedWriter{d}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	go func() {
		defer close(d.lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				fmt.Fprintf(&lockedWriter{d}, "%s\n", sc.Text())
				continue
			}
			d.lines <- m
		}
	}()
	return d
}

// next is the driver's next message; the benchmark fails when the script ends first
// or says nothing for two minutes.
func (d *driver) next() map[string]any {
	select {
	case m, ok := <-d.lines:
		if !ok {
			err := d.cmd.Wait()
			d.mu.Lock()
			defer d.mu.Unlock()
			d.tb.Fatalf("bench.mjs ended (%v):\n%s", err, d.log.String())
		}
		return m
	case <-time.After(2 * time.Minute):
		d.mu.Lock()
		defer d.mu.Unlock()
		d.tb.Fatalf("bench.mjs said nothing for two minutes:\n%s", d.log.String())
	}
	return nil
}

func (d *driver) send(m map[string]any) {
	raw, _ := json.Marshal(m)
	if _, err := d.in.Write(append(raw, '\n')); err != nil {
		d.tb.Fatal(err)
	}
}

func (d *driver) wait() {
	_ = d.in.Close()
	if err := d.cmd.Wait(); err != nil {
		d.mu.Lock()
		defer d.mu.Unlock()
		d.tb.Fatalf("bench.mjs: %v\n%s", err, d.log.String())
	}
}

type lockedWriter struct{ d *driver }

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.d.mu.Lock()
	defer w.d.mu.Unlock()
	return w.d.log.Write(p)
}

// consoleBrowser finds node, the console's npm packages (web/node_modules) and
// Debian's Chromium; a missing one fails the benchmark.
func consoleBrowser(b *testing.B) (node, chromium string) {
	node, err := exec.LookPath("node")
	if err != nil {
		b.Fatal("node is missing (make deps installs it)")
	}
	chromium = os.Getenv("CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	if _, err := os.Stat(chromium); err != nil {
		b.Fatalf("chromium is missing (%s): make deps installs it", chromium)
	}
	if _, err := os.Stat(filepath.Join("..", "web", "node_modules", "playwright-core")); err != nil {
		b.Fatal("web/node_modules is missing: bash .ci/npm-ci web")
	}
	return node, chromium
}
