//go:build chaos

package chaos

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/filemill/filemill/bench"
	"github.com/filemill/filemill/graph/graphtest"
	"github.com/filemill/filemill/jobs/ops/office/officetest"
	"github.com/filemill/filemill/rest/openapitest"
)

// BenchmarkScaleOut measures what more processes buy on one machine: for each count of
// `filemill worker` (SCALE_WORKERS, default 1,2,3) and `filemill api` processes
// (SCALE_APIS, default 1,2) and each operation (SCALE_OPS, default inspect,
// image.convert,convert), SCALE_CLIENTS closed-loop clients (default 8) create jobs on
// inputs uploaded beforehand, round-robin across the APIs, and wait for each job's end
// over a GraphQL subscription. After SCALE_WARMUP (default 5s) it counts for
// SCALE_DURATION (default 20s) the jobs that ended and reports jobs/s, created →
// finished (the job's own timestamps) p50/p99, the CPU seconds per job of the api and
// worker processes (their children, LibreOffice among them, included), PostgreSQL, Redis,
// MinIO and the clients, and how busy the machine was. With two APIs half of the
// subscriptions are on the API that created the job and half on the other: finished →
// notified p50/p99 is reported for each (a job that ended before its subscription began
// is not counted there). Before the jobs of each count it measures for SCALE_IDLE
// (default 10s; 0: not at all) the CPU the processes use doing nothing, the fixed price
// of one more process.
//
// The processes run with the defaults (a worker runs twice the CPUs jobs at once and
// keeps one LibreOffice per CPU warm). Run it with
//
//	make scaleout
//	go test -tags chaos -run '^$' -bench BenchmarkScaleOut -benchtime 1x -timeout 60m -v ./bench/chaos
func BenchmarkScaleOut(b *testing.B) {
	cfg := scaleConfig(b)
	d := deploy(b, layout{apis: maxOf(cfg.apis), workers: maxOf(cfg.workers)})
	key := d.bootstrap()
	b.Cleanup(func() {
		for _, s := range append(append([]*slot{}, d.apis...), d.workers...) {
			if s.exited != nil {
				s.stop(30 * time.Second)
			}
		}
	})
	m := newMeter(b, d)
	m.place(b, "postgres", d.pg.Pid())
	m.place(b, "redis", d.redis.Pid())
	m.place(b, "minio", d.minio.pid())
	v := openapitest.New(b)
	ctx := context.Background()

	d.setAPIs(b, m, 1)
	setup := newClient(v, d.apiURLs[:1], key)
	// Inputs are uploaded once, before any measurement, and used again and again: a job
	// on a file is a new job each time.
	inputs := map[string][]string{}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, op := range cfg.ops {
		spec := scaleOps[op]
		for i := range 8 {
			id, err := setup.upload(ctx, spec.name, spec.input(rng, i))
			if err != nil {
				b.Fatalf("upload an input for %s: %v", op, err)
			}
			inputs[op] = append(inputs[op], id)
		}
	}

	var rows, idle []scaleRow
	running := 0
	for wi, w := range cfg.workers {
		for running < w {
			d.startWorker(b, m, running)
			running++
		}
		// The API counts go up and down in turn, so that each change starts or stops one.
		apis := cfg.apis
		if wi%2 == 1 {
			apis = reversed(apis)
		}
		for _, a := range apis {
			d.setAPIs(b, m, a)
			d.waitAvailable(b, newClient(v, d.apiURLs[:a], key), cfg.ops)
			if cfg.idle > 0 {
				// What the processes cost doing nothing (polls, engine checks,
				// announcements): the fixed price of one more process.
				b.Run(fmt.Sprintf("workers=%d/apis=%d/idle", w, a), func(b *testing.B) {
					before := m.cpu()
					time.Sleep(cfg.idle)
					r := scaleRow{workers: w, apis: a, op: "idle", elapsed: cfg.idle, cpu: m.cpu().since(before), load: loadAvg()}
					r.reportIdle(b)
					idle = append(idle, r)
				})
			}
			for _, op := range cfg.ops {
				name := fmt.Sprintf("workers=%d/apis=%d/%s", w, a, op)
				b.Run(name, func(b *testing.B) {
					r := d.measure(b, m, newClient(v, d.apiURLs[:a], key), key, cfg, op, inputs[op])
					r.workers, r.apis, r.op = w, a, op
					r.report(b)
					rows = append(rows, r)
				})
			}
		}
	}
	load, _ := os.ReadFile("/proc/loadavg")
	b.Logf("scale-out: %d clients, %s warm-up, %s counted per row; load average at the end: %s", cfg.clients, cfg.warmup, cfg.duration,
		strings.TrimSpace(string(load)))
	b.Log("\n" + scaleTable(rows))
	if len(idle) > 0 {
		b.Log("\n" + idleTable(idle))
	}
}

func loadAvg() string {
	raw, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(raw))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}

type scaleSettings struct {
	workers, apis    []int
	ops              []string
	clients          int
	warmup, duration time.Duration
	idle             time.Duration
}

func scaleConfig(b *testing.B) scaleSettings {
	c := scaleSettings{workers: []int{1, 2, 3}, apis: []int{1, 2}, ops: []string{"inspect", "image.convert", "convert"},
		clients: 8, warmup: 5 * time.Second, duration: 20 * time.Second, idle: 10 * time.Second}
	ints := func(name string, into *[]int) {
		if v := os.Getenv(name); v != "" {
			*into = nil
			for _, f := range strings.Split(v, ",") {
				n, err := strconv.Atoi(strings.TrimSpace(f))
				if err != nil || n < 1 {
					b.Fatalf("%s=%q: a list of counts", name, v)
				}
				*into = append(*into, n)
			}
			sort.Ints(*into)
		}
	}
	ints("SCALE_WORKERS", &c.workers)
	ints("SCALE_APIS", &c.apis)
	if v := os.Getenv("SCALE_OPS"); v != "" {
		c.ops = strings.Split(v, ",")
		for _, op := range c.ops {
			if _, ok := scaleOps[op]; !ok {
				b.Fatalf("SCALE_OPS: %q is none of inspect, image.convert, convert", op)
			}
		}
	}
	if v := os.Getenv("SCALE_CLIENTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("SCALE_CLIENTS=%q", v)
		}
		c.clients = n
	}
	for name, into := range map[string]*time.Duration{"SCALE_WARMUP": &c.warmup, "SCALE_DURATION": &c.duration, "SCALE_IDLE": &c.idle} {
		if v := os.Getenv(name); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				b.Fatalf("%s=%q: %v", name, v, err)
			}
			*into = d
		}
	}
	return c
}

func maxOf(ns []int) int { return ns[len(ns)-1] }

func reversed(ns []int) []int {
	out := make([]int, len(ns))
	for i, n := range ns {
		out[len(ns)-1-i] = n
	}
	return out
}

// scaleOp is what a job of one operation is made of.
type scaleOp struct {
	name    string
	input   func(rng *rand.Rand, i int) []byte
	request map[string]any
}

var scaleOps = map[string]scaleOp{
	"inspect": {name: "notes.txt", input: func(rng *rand.Rand, _ int) []byte { return textFile(rng) },
		request: map[string]any{"operation": "inspect"}},
	// A 2048×1536 photo-like JPEG to a 1024 px WebP, as the image benchmarks of bench/.
	"image.convert": {name: "photo.jpg", input: photoLike,
		request: map[string]any{"operation": "image.convert", "options": map[string]any{"format": "webp", "width": 1024,
			"height": 1024, "fit": "inside", "quality": 79}}},
	// A two-page Word document to PDF on LibreOffice.
	"convert": {name: "letter.docx", input: func(rng *rand.Rand, _ int) []byte {
		return officetest.DOCX(officeTB{}, officetest.TextPages(2, 4))
	}, request: map[string]any{"operation": "convert", "options": map[string]any{"format": "pdf"}}},
}

// photoLike is a JPEG with smooth gradients and noise, which compresses as a photograph
// does (a flat image would make the decoder's work trivial).
func photoLike(rng *rand.Rand, i int) []byte {
	const w, h = 2048, 1536
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			n := uint8(rng.IntN(24))
			img.Set(x, y, color.RGBA{uint8(x*255/w) + n, uint8(y*255/h) + n, uint8((x+y+i*97)%256) / 2, 255})
		}
	}
	var buf bytes.Buffer
	_ = jpeg.Encode(&buf, img, &jpeg.Options{Quality: 85})
	return buf.Bytes()
}

// setAPIs runs the first n API processes and stops the others, and waits until the
// running ones are ready.
func (d *deployment) setAPIs(b testing.TB, m *meter, n int) {
	var started []*slot
	for i, s := range d.apis {
		running := s.exited != nil && s.pid() != 0
		switch {
		case i < n && !running:
			s.run(b)
			started = append(started, s)
		case i >= n && running:
			s.stop(30 * time.Second)
		}
	}
	for _, s := range started {
		waitFor(b, s.name+" to start", startBound, func() bool { return s.pid() != 0 })
		m.place(b, "api", s.pid())
	}
	for _, u := range d.apiURLs[:n] {
		waitFor(b, u+"/readyz", startBound, func() bool {
			resp, err := http.Get(u + "/readyz")
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == 200
		})
	}
}

// startWorker starts worker i and waits until it has checked its engines (LibreOffice
// converting a document among them): from then on it takes every kind of job.
func (d *deployment) startWorker(b testing.TB, m *meter, i int) {
	logPath := filepath.Join(d.root, "logs", d.workers[i].name+".log")
	checked := func() int {
		raw, _ := os.ReadFile(logPath)
		return strings.Count(string(raw), `"engines checked"`)
	}
	before := checked()
	d.workers[i].run(b)
	waitFor(b, d.workers[i].name+" to start", startBound, func() bool { return d.workers[i].pid() != 0 })
	m.place(b, "worker", d.workers[i].pid())
	waitFor(b, d.workers[i].name+" to check its engines", startBound, func() bool { return checked() > before })
	// What the checks started (LibreOffice instances) joins its group too.
	m.place(b, "worker", d.workers[i].pid())
}

// waitAvailable waits until the APIs see every operation to measure available.
func (d *deployment) waitAvailable(b testing.TB, c *client, ops []string) {
	waitFor(b, "the operations to be available", startBound, func() bool {
		status, got, err := c.do(context.Background(), requestBound, "GET", "/v1/operations", nil)
		if err != nil || status != 200 {
			return false
		}
		want := map[string]bool{}
		for _, op := range ops {
			want[op] = true
		}
		for _, o := range got["data"].([]any) {
			o := o.(map[string]any)
			if o["available"] == true {
				delete(want, o["name"].(string))
			}
		}
		return len(want) == 0
	})
}

// scaleJob is one job as a client saw it.
type scaleJob struct {
	state    string
	ended    time.Time // when the client learnt the end
	created  time.Time // the job's createdAt and finishedAt
	finished time.Time
	// notified is finished → the subscription's terminal update; 0 when the job ended
	// before its subscription began (or the subscription was lost and the job polled).
	notified time.Duration
	same     bool // the subscription was on the API that created the job
}

const scaleSubscription = `subscription($id: ID!) { jobUpdated(id: $id) { id state createdAt finishedAt } }`

// measure runs one row: the clients for warm-up plus duration, the CPU counted over the
// duration.
func (d *deployment) measure(b *testing.B, m *meter, c *client, key string, cfg scaleSettings, op string, inputs []string) scaleRow {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		mu   sync.Mutex
		jobs []scaleJob
		errs []string
		wg   sync.WaitGroup
	)
	stop := make(chan struct{})
	for i := range cfg.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conns := make([]*graphtest.Conn, len(c.apis))
			defer func() {
				for _, cn := range conns {
					if cn != nil {
						cn.Close()
					}
				}
			}()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				j, err := d.scaleJob(ctx, c, key, conns, i+n, n, op, inputs[(i+n)%len(inputs)])
				mu.Lock()
				if err != nil {
					errs = append(errs, err.Error())
				} else {
					jobs = append(jobs, j)
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
	}
	time.Sleep(cfg.warmup)
	before := m.cpu()
	t0 := time.Now()
	time.Sleep(cfg.duration)
	after := m.cpu()
	t1 := time.Now()
	close(stop)
	wg.Wait()
	if len(errs) > 0 {
		b.Fatalf("%d clients failed: %v", len(errs), errs[0])
	}
	r := scaleRow{elapsed: t1.Sub(t0), cpu: after.since(before), load: loadAvg()}
	for _, j := range jobs {
		if j.ended.Before(t0) || j.ended.After(t1) {
			continue
		}
		r.jobs++
		if j.state != "succeeded" {
			r.failed++
		}
		r.lat = append(r.lat, j.finished.Sub(j.created))
		if j.notified > 0 {
			if j.same {
				r.notifySame = append(r.notifySame, j.notified)
			} else {
				r.notifyOther = append(r.notifyOther, j.notified)
			}
		}
	}
	if r.jobs == 0 {
		b.Fatalf("no job ended within %s", cfg.duration)
	}
	return r
}

// scaleJob creates one job through API first (the next on an error) and follows it
// over a subscription: on the API that created it for even n, on another for odd n.
func (d *deployment) scaleJob(ctx context.Context, c *client, key string, conns []*graphtest.Conn, first, n int,
	op, fileID string) (scaleJob, error) {
	req := map[string]any{"file_id": fileID}
	for k, v := range scaleOps[op].request {
		req[k] = v
	}
	status, j, ai, err := c.doFrom(ctx, requestBound, first, "POST", "/v1/jobs", req)
	if err != nil {
		return scaleJob{}, err
	}
	if status != 202 {
		return scaleJob{}, fmt.Errorf("POST /v1/jobs %v: %d %v", req, status, j)
	}
	id := j["id"].(string)
	si := ai
	if n%2 == 1 {
		si = (ai + 1) % len(c.apis)
	}
	out := scaleJob{same: si == ai}
	if conns[si] == nil {
		if conns[si], err = graphtest.Dial(ctx, graphtest.URL(c.apis[si]), graphtest.Options{Protocol: graphtest.TransportWS,
			Header: http.Header{"Authorization": {"Bearer " + key}}}); err != nil {
			return out, err
		}
	}
	sid, ch, err := conns[si].Subscribe(scaleSubscription, map[string]any{"id": id})
	if err != nil {
		return out, err
	}
	for first := true; ; first = false {
		r, ok := <-ch
		if !ok || len(r.Errors) > 0 {
			break // the connection ended: the job's end is read instead
		}
		u, _ := r.Data["jobUpdated"].(map[string]any)
		if u == nil || !terminal[fmt.Sprint(u["state"])] {
			continue
		}
		out.state, out.ended = u["state"].(string), r.At
		out.created, _ = time.Parse(time.RFC3339Nano, fmt.Sprint(u["createdAt"]))
		out.finished, _ = time.Parse(time.RFC3339Nano, fmt.Sprint(u["finishedAt"]))
		if !first {
			out.notified = r.At.Sub(out.finished)
		}
		_ = conns[si].Stop(sid)
		return out, nil
	}
	conns[si].Close()
	conns[si] = nil
	state, err := c.poll(ctx, jobBound, "/v1/jobs/"+id, "state", func(s string) bool { return terminal[s] })
	if err != nil {
		return out, err
	}
	_, got, err := c.do(ctx, requestBound, "GET", "/v1/jobs/"+id, nil)
	if err != nil {
		return out, err
	}
	out.state, out.ended = state, time.Now()
	out.created, _ = time.Parse(time.RFC3339Nano, fmt.Sprint(got["created_at"]))
	out.finished, _ = time.Parse(time.RFC3339Nano, fmt.Sprint(got["finished_at"]))
	return out, nil
}

// cpuSample is the CPU time so far of each kind of process, and of the machine.
type cpuSample struct {
	kinds       map[string]float64 // seconds
	busy, total float64            // the machine's, in seconds summed over its CPUs
}

var cpuKinds = []string{"api", "worker", "postgres", "redis", "minio", "clients"}

// meter reads the CPU time of each kind of process. Where the host lets it create
// control groups it puts each kind in a CPU accounting group of its own, which counts
// every process under it, those that ended and those that left their parent among them
// (a LibreOffice instance replaced after its conversions); elsewhere it sums the live
// process trees, which misses what ended without being reaped by one of them.
type meter struct {
	d      *deployment
	groups string // the control groups' directory; "" without them
	usage  string // the usage file in each group
	v2     bool
}

func newMeter(b testing.TB, d *deployment) *meter {
	m := &meter{d: d}
	name := fmt.Sprintf("filemill-scaleout-%d", os.Getpid())
	for _, c := range []struct {
		root, usage string
		v2          bool
	}{{"/sys/fs/cgroup/cpuacct", "cpuacct.usage", false}, {"/sys/fs/cgroup", "cpu.stat", true}, {"/sys/fs/cgroup/unified", "cpu.stat", true}} {
		dir := filepath.Join(c.root, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, c.usage)); err != nil {
			_ = os.Remove(dir)
			continue
		}
		ok := true
		for _, k := range cpuKinds[:5] {
			if err := os.Mkdir(filepath.Join(dir, k), 0o755); err != nil {
				ok = false
			}
		}
		if !ok {
			m.removeGroups(dir, c.root)
			continue
		}
		m.groups, m.usage, m.v2 = dir, c.usage, c.v2
		b.Cleanup(func() { m.removeGroups(dir, c.root) })
		break
	}
	if m.groups == "" {
		b.Logf("scale-out: no control group could be made: CPU is summed over the live process trees")
	}
	return m
}

// removeGroups moves what is still in the groups back to root and removes them.
func (m *meter) removeGroups(dir, root string) {
	for _, k := range cpuKinds[:5] {
		raw, _ := os.ReadFile(filepath.Join(dir, k, "cgroup.procs"))
		for _, pid := range strings.Fields(string(raw)) {
			_ = os.WriteFile(filepath.Join(root, "cgroup.procs"), []byte(pid), 0o644)
		}
		_ = os.Remove(filepath.Join(dir, k))
	}
	_ = os.Remove(dir)
}

// place puts pid and every process under it in kind's group; what they start later
// is in it from its start.
func (m *meter) place(b testing.TB, kind string, pid int) {
	if m.groups == "" || pid == 0 {
		return
	}
	procs := bench.ReadProcs()
	kids := bench.Children(procs)
	var walk func(p int)
	walk = func(p int) {
		if err := os.WriteFile(filepath.Join(m.groups, kind, "cgroup.procs"), []byte(strconv.Itoa(p)), 0o644); err != nil {
			if !errors.Is(err, syscall.ESRCH) { // a process that has just ended is no matter
				b.Logf("scale-out: %d into the %s group: %v", p, kind, err)
			}
		}
		for _, k := range kids[p] {
			walk(k)
		}
	}
	walk(pid)
}

func (m *meter) groupCPU(kind string) float64 {
	raw, err := os.ReadFile(filepath.Join(m.groups, kind, m.usage))
	if err != nil {
		return 0
	}
	if !m.v2 {
		ns, _ := strconv.ParseFloat(strings.TrimSpace(string(raw)), 64)
		return ns / 1e9
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "usage_usec "); ok {
			us, _ := strconv.ParseFloat(v, 64)
			return us / 1e6
		}
	}
	return 0
}

func (m *meter) cpu() cpuSample {
	d := m.d
	procs := bench.ReadProcs()
	s := cpuSample{kinds: map[string]float64{}}
	if m.groups != "" {
		for _, k := range cpuKinds[:5] {
			s.kinds[k] = m.groupCPU(k)
		}
	} else {
		for _, a := range d.apis {
			s.kinds["api"] += bench.TreeCPU(procs, a.pid())
		}
		for _, w := range d.workers {
			s.kinds["worker"] += bench.TreeCPU(procs, w.pid())
		}
		s.kinds["postgres"] = bench.TreeCPU(procs, d.pg.Pid())
		s.kinds["redis"] = bench.TreeCPU(procs, d.redis.Pid())
		s.kinds["minio"] = bench.TreeCPU(procs, d.minio.pid())
	}
	// This process alone: the others are its children.
	s.kinds["clients"] = procs[os.Getpid()].Self
	raw, _ := os.ReadFile("/proc/stat")
	line, _, _ := strings.Cut(string(raw), "\n")
	for i, f := range strings.Fields(line)[1:] {
		v, _ := strconv.ParseFloat(f, 64)
		if i >= 8 {
			break // guest time is counted in user already
		}
		s.total += v / bench.ClockTicks
		if i != 3 && i != 4 { // idle, iowait
			s.busy += v / bench.ClockTicks
		}
	}
	return s
}

func (s cpuSample) since(before cpuSample) cpuSample {
	out := cpuSample{kinds: map[string]float64{}, busy: s.busy - before.busy, total: s.total - before.total}
	for k, v := range s.kinds {
		out.kinds[k] = v - before.kinds[k]
	}
	return out
}

// scaleRow is one measured configuration.
type scaleRow struct {
	workers, apis int
	op            string
	elapsed       time.Duration
	jobs, failed  int
	lat           []time.Duration
	notifySame    []time.Duration
	notifyOther   []time.Duration
	cpu           cpuSample
	load          string // the 1-minute load average at the end
}

func (r scaleRow) rate() float64 { return float64(r.jobs) / r.elapsed.Seconds() }

func (r scaleRow) perJob(kind string) float64 { return r.cpu.kinds[kind] / float64(r.jobs) }

// cores is the CPU the deployment and its clients used, in cores: the rest of what the
// machine was busy with is other work.
func (r scaleRow) cores() float64 {
	var sum float64
	for _, v := range r.cpu.kinds {
		sum += v
	}
	return sum / r.elapsed.Seconds()
}

func (r scaleRow) report(b *testing.B) {
	b.ReportMetric(r.rate(), "jobs/s")
	p50, p99 := quantiles(r.lat)
	b.ReportMetric(ms(p50), "p50-ms")
	b.ReportMetric(ms(p99), "p99-ms")
	for _, k := range cpuKinds {
		b.ReportMetric(r.perJob(k)*1000, k+"-cpu-ms/job")
	}
	b.ReportMetric(100*r.cpu.busy/r.cpu.total, "machine-busy-%")
	b.ReportMetric(r.cores(), "our-cores")
	if len(r.notifySame) > 0 {
		p50, p99 := quantiles(r.notifySame)
		b.ReportMetric(ms(p50), "notify-same-p50-ms")
		b.ReportMetric(ms(p99), "notify-same-p99-ms")
	}
	if len(r.notifyOther) > 0 {
		p50, p99 := quantiles(r.notifyOther)
		b.ReportMetric(ms(p50), "notify-other-p50-ms")
		b.ReportMetric(ms(p99), "notify-other-p99-ms")
	}
	if r.failed > 0 {
		b.Errorf("%d of %d jobs did not succeed", r.failed, r.jobs)
	}
}

func (r scaleRow) reportIdle(b *testing.B) {
	per := map[string]int{"api": r.apis, "worker": r.workers}
	for _, k := range cpuKinds[:5] {
		n := max(per[k], 1)
		b.ReportMetric(1000*r.cpu.kinds[k]/r.elapsed.Seconds()/float64(n), k+"-cpu-ms/s")
	}
	b.ReportMetric(100*r.cpu.busy/r.cpu.total, "machine-busy-%")
}

// idleTable is the idle rows as a Markdown table: CPU milliseconds per second, per
// process for the api and worker processes.
func idleTable(rows []scaleRow) string {
	var t strings.Builder
	t.WriteString("| idle: workers | apis | CPU ms/s: each api | each worker | postgres | redis | minio | machine busy | load |\n")
	t.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		rate := func(k string, n int) float64 { return 1000 * r.cpu.kinds[k] / r.elapsed.Seconds() / float64(n) }
		fmt.Fprintf(&t, "| %d | %d | %.1f | %.1f | %.1f | %.1f | %.1f | %.0f %% | %s |\n", r.workers, r.apis, rate("api", r.apis),
			rate("worker", r.workers), rate("postgres", 1), rate("redis", 1), rate("minio", 1), 100*r.cpu.busy/r.cpu.total, r.load)
	}
	return t.String()
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// quantiles answers the median and the 99th percentile of ds.
func quantiles(ds []time.Duration) (p50, p99 time.Duration) {
	if len(ds) == 0 {
		return 0, 0
	}
	s := append([]time.Duration{}, ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2], s[min(len(s)-1, len(s)*99/100)]
}

// scaleTable is the rows as a Markdown table.
func scaleTable(rows []scaleRow) string {
	var t strings.Builder
	t.WriteString("| op | workers | apis | jobs/s | created→finished p50 / p99 ms | CPU ms/job: api | worker | postgres | redis | minio | clients | ours, cores | machine busy | load | notified p50 / p99 ms: same API | other API |\n")
	t.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	sort.SliceStable(rows, func(i, j int) bool {
		if rows[i].op != rows[j].op {
			return opOrder(rows[i].op) < opOrder(rows[j].op)
		}
		if rows[i].workers != rows[j].workers {
			return rows[i].workers < rows[j].workers
		}
		return rows[i].apis < rows[j].apis
	})
	pair := func(ds []time.Duration) string {
		if len(ds) == 0 {
			return "–"
		}
		p50, p99 := quantiles(ds)
		return fmt.Sprintf("%.1f / %.1f (%d)", ms(p50), ms(p99), len(ds))
	}
	for _, r := range rows {
		p50, p99 := quantiles(r.lat)
		fmt.Fprintf(&t, "| %s | %d | %d | %.1f | %.0f / %.0f |", r.op, r.workers, r.apis, r.rate(), ms(p50), ms(p99))
		for _, k := range cpuKinds {
			fmt.Fprintf(&t, " %.1f |", r.perJob(k)*1000)
		}
		fmt.Fprintf(&t, " %.2f | %.0f %% | %s | %s | %s |\n", r.cores(), 100*r.cpu.busy/r.cpu.total, r.load, pair(r.notifySame), pair(r.notifyOther))
	}
	return t.String()
}

func opOrder(op string) int {
	switch op {
	case "inspect":
		return 0
	case "image.convert":
		return 1
	}
	return 2
}
