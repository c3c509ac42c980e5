//go:build chaos

package chaos

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/uptrace/bun/driver/pgdriver"

	"github.com/filemill/filemill/db/dbtest"
	"github.com/filemill/filemill/jobs"
	"github.com/filemill/filemill/jobs/ops/aiready/aireadytest"
	"github.com/filemill/filemill/jobs/ops/office/officetest"
	"github.com/filemill/filemill/jobs/redistest"
	"github.com/filemill/filemill/rest/openapitest"
)

// Bounds: generous, so a slow machine waits longer and never fails for it.
const (
	requestBound  = 3 * time.Minute // one request with its retries
	jobBound      = 6 * time.Minute // a job from acceptance to its end, faults included
	recoveryBound = 3 * time.Minute // the service answering right again after a fault
	drainBound    = 6 * time.Minute // every job terminal once the faults stop
	// startBound is how long the processes may take to be ready: a worker checks that
	// each engine runs (LibreOffice converts a document) before it takes its jobs.
	startBound   = 10 * time.Minute
	grantCredits = 100000000
	loadClients  = 3
)

// deployment is what the campaign runs and breaks.
type deployment struct {
	t       testing.TB
	root    string
	pg      *dbtest.Server
	redis   *redistest.Server
	minio   *minioServer
	recv    *receiver
	apis    []*slot
	workers []*slot
	apiURLs []string
	// fullDisk is the work directory of the worker whose disk the campaign fills.
	fullDisk string
	// taps sees the workers' artifact uploads (layout.tap).
	taps *tapHub
	db   *sql.DB
}

// delivered is what the webhook receiver got, by event id, and how it answers.
type delivered struct {
	mu     sync.Mutex
	secret string
	mode   hookMode
	events map[string]int
	bad    []string
	last   time.Time
	// held counts requests the slow receiver kept until the sender hung up; errored
	// counts the erroring receiver's answers by status.
	held    int
	errored map[int]int
}

// hookMode is how the receiver answers while it is up.
type hookMode int

const (
	hookPrompt hookMode = iota
	// hookSlow answers after hookSlowAnswer, past the sender's timeout.
	hookSlow
	// hookErroring answers 500 and 429 with Retry-After, in turn.
	hookErroring
)

// hookSlowAnswer is how long the slow receiver takes to answer: longer than the sender
// waits (jobs.DefaultSenderConfig's 15 s), so every request it gets times out.
var hookSlowAnswer = jobs.DefaultSenderConfig().Timeout + 5*time.Second

// hookRetryAfter is the erroring receiver's Retry-After on a 429, longer than the first
// retry of the delivery schedule (5 s), so that honouring it shows.
const hookRetryAfter = 20 * time.Second

func (h *delivered) setMode(m hookMode) {
	h.mu.Lock()
	h.mode = m
	h.mu.Unlock()
}

func TestChaos(t *testing.T) {
	duration := 60 * time.Second
	if v := os.Getenv("CHAOS_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("CHAOS_DURATION=%q: %v", v, err)
		}
		duration = d
	}
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("CHAOS_SEED"); v != "" {
		if _, err := fmt.Sscan(v, &seed); err != nil {
			t.Fatalf("CHAOS_SEED=%q: %v", v, err)
		}
	}
	say(t, "chaos: seed %d, faults for %s (CHAOS_SEED=%d reproduces the schedule)", seed, duration, seed)

	began := time.Now()
	d := deploy(t, layout{apis: 2, workers: 3, fullDisk: true, tap: true, env: []string{
		// A dead worker's job runs again after its lease, found by the next sweep:
		// short here so that the campaign need not wait minutes.
		"FILEMILL_JOB_LEASE=5s", "FILEMILL_SWEEP_INTERVAL=2s",
		"FILEMILL_WORKER_CONCURRENCY=3", "FILEMILL_OFFICE_INSTANCES=1", "FILEMILL_OCR_PARALLEL=1"}})
	say(t, "chaos: built and dependencies started in %s", time.Since(began).Round(time.Second))
	key := d.bootstrap()
	hooks := &delivered{events: map[string]int{}, errored: map[int]int{}}
	d.recv.handler.(*hookHandler).d = hooks
	for _, s := range append(append([]*slot{}, d.apis...), d.workers...) {
		s.run(t)
	}
	t.Cleanup(func() {
		for _, s := range append(append([]*slot{}, d.apis...), d.workers...) {
			s.stop(30 * time.Second)
		}
	})
	v := openapitest.New(t)
	c := newClient(v, d.apiURLs, key)
	for _, u := range d.apiURLs {
		waitFor(t, u+"/readyz", startBound, func() bool {
			resp, err := http.Get(u + "/readyz")
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == 200
		})
	}
	ctx := context.Background()
	waitFor(t, "the workers to advertise every engine", startBound, func() bool {
		status, ops, err := c.do(ctx, requestBound, "GET", "/v1/operations", nil)
		if err != nil || status != 200 {
			return false
		}
		want := map[string]bool{"inspect": true, "image.convert": true, "convert": true, "pdf.compress": true, "ai-ready": true}
		for _, op := range ops["data"].([]any) {
			o := op.(map[string]any)
			if want[o["name"].(string)] && o["available"] == true {
				delete(want, o["name"].(string))
			}
		}
		return len(want) == 0
	})
	status, ep, err := c.do(ctx, requestBound, "POST", "/v1/webhook-endpoints", map[string]any{"url": "https://" + d.recv.addr + "/hook",
		"enabled_events": hookEvents})
	if err != nil || status != 201 {
		t.Fatalf("create the webhook endpoint: %d %v %v", status, ep, err)
	}
	hooks.mu.Lock()
	hooks.secret = ep["secret"].(string)
	hooks.mu.Unlock()
	endpointID := ep["id"].(string)
	say(t, "chaos: the five processes ready, every engine advertised, %s after the start", time.Since(began).Round(time.Second))
	if probeFile, err = c.upload(ctx, "probe.txt", []byte("probe\n")); err != nil {
		t.Fatal(err)
	}

	// The load runs until the faults have stopped; each client waits for its job's end.
	l := &load{c: c, seed: seed, accepted: map[string]string{}}
	stopLoad := make(chan struct{})
	var loadWG sync.WaitGroup
	for i := range loadClients {
		loadWG.Add(1)
		go func() {
			defer loadWG.Done()
			l.run(t, i, stopLoad)
		}()
	}
	// A few seconds of load before the first fault, so faults meet work under way.
	waitFor(t, "the first jobs to be accepted", recoveryBound, func() bool { return l.acceptedCount() >= 4 })

	f := &faults{d: d, c: c, rng: rand.New(rand.NewPCG(seed, 0x5eed)), hooks: hooks, recovery: map[string][]time.Duration{}}
	f.run(ctx, duration)
	close(stopLoad)
	loadWG.Wait()
	say(t, "chaos: %d faults injected, load stopped; draining", f.count)

	hooks.mu.Lock()
	say(t, "chaos: the receiver has %d events, %d refused", len(hooks.events), len(hooks.bad))
	for _, b := range hooks.bad[:min(3, len(hooks.bad))] {
		say(t, "chaos:   refused: %s", b)
	}
	hooks.mu.Unlock()
	d.checkAll(ctx, c, l, hooks, endpointID, f)
}

// hookEvents are the events the campaign's endpoint subscribes to.
var hookEvents = []string{"job.succeeded", "job.failed", "job.cancelled", "file.ready", "file.rejected"}

type hookHandler struct{ d *delivered }

// ServeHTTP counts an event as delivered only when it answers 2xx to a sender still
// waiting: an answer the sender gave up on, or a refusal, leaves the delivery to its
// retries.
func (h *hookHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	d := h.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.secret == "" {
		w.WriteHeader(503)
		return
	}
	wh, _ := standardwebhooks.NewWebhook(d.secret)
	var ev struct{ ID, Type string }
	if err := wh.Verify(body, r.Header); err != nil {
		d.bad = append(d.bad, "signature: "+err.Error())
		w.WriteHeader(204)
		return
	}
	if err := json.Unmarshal(body, &ev); err != nil || ev.ID == "" {
		d.bad = append(d.bad, "body: "+string(body))
		w.WriteHeader(204)
		return
	}
	switch d.mode {
	case hookErroring:
		code := 500
		if (d.errored[500]+d.errored[429])%2 == 1 {
			code = 429
			w.Header().Set("Retry-After", fmt.Sprint(int(hookRetryAfter.Seconds())))
		}
		d.errored[code]++
		w.WriteHeader(code)
		return
	case hookSlow:
		d.mu.Unlock()
		select {
		case <-r.Context().Done():
			d.mu.Lock()
			d.held++
			return
		case <-time.After(hookSlowAnswer):
		}
		d.mu.Lock()
	}
	d.events[ev.ID]++
	d.last = time.Now()
	w.WriteHeader(204)
}

func (h *delivered) lastAt() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.last
}

func say(t testing.TB, format string, args ...any) {
	t.Helper()
	t.Logf(format, args...)
}

// layout is the deployment deploy prepares.
type layout struct {
	apis, workers int
	// fullDisk gives the last worker a small scratch file system of its own, which the
	// campaign fills.
	fullDisk bool
	// tap puts a storageTap between each worker and MinIO.
	tap bool
	// env is added to every process's environment, after the harness's own (a later
	// value wins).
	env []string
}

// deploy starts the dependencies and prepares the api and worker processes (not started
// yet).
func deploy(t testing.TB, l layout) *deployment {
	root, err := os.MkdirTemp("", "filemill-chaos-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("chaos: logs kept in %s/logs", root)
			return
		}
		os.RemoveAll(root)
	})
	for _, sub := range []string{"logs", "data", "bin"} {
		if err := os.MkdirAll(filepath.Join(root, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	d := &deployment{t: t, root: root}
	bin := filepath.Join(root, "bin", "filemill")
	build := exec.Command("go", "build", "-o", bin, "./cmd/filemill")
	build.Dir = filepath.Join("..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build filemill: %v\n%s", err, out)
	}

	// PostgreSQL: a cluster of the campaign's own (initdb in a temporary directory, run
	// as the postgres user), so that an outage is a real server going down and coming
	// back, sessions ended, without touching the server other tests share.
	d.pg = dbtest.StartPostgres(t)
	d.redis = redistest.StartRedis(t)
	d.minio = startMinio(t, root)
	var caFile string
	d.recv, caFile = startReceiver(t, root, &hookHandler{})
	d.db = sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(d.pg.URL())))
	t.Cleanup(func() { d.db.Close() })

	base := []string{"FILEMILL_METRICS_ADDR=", "FILEMILL_DATABASE_URL=" + d.pg.URL(), "FILEMILL_REDIS_URL=" + d.redis.URL(),
		fmt.Sprintf("FILEMILL_STORAGE_URL=s3://%s:%s@%s/chaos?secure=false", d.minio.access, d.minio.secret, d.minio.addr),
		"FILEMILL_DATA_DIR=" + filepath.Join(root, "data"), "FILEMILL_OUTBOUND_ALLOW_CIDRS=127.0.0.1", "SSL_CERT_FILE=" + caFile,
		"FILEMILL_RATE_LIMIT_PER_MINUTE=1000000", "FILEMILL_PROJECT_CONCURRENCY_LIMIT=100000", "FILEMILL_CLAMD_START=never"}
	// The machine's environment first: a later value wins, and the campaign's own (the
	// receiver's certificate in SSL_CERT_FILE among them) must.
	var inherited []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "FILEMILL_") && !strings.HasPrefix(kv, "TMPDIR=") && !strings.HasPrefix(kv, "SSL_CERT_") {
			inherited = append(inherited, kv)
		}
	}
	base = append(append(inherited, base...), l.env...)
	newSlot := func(name string, extra ...string) *slot {
		// Each process's temporary files (LibreOffice profiles, OCR pages) go under the
		// campaign's directory, so what a killed worker leaves running is found by path.
		tmp := filepath.Join(root, "tmp", name)
		if err := os.MkdirAll(tmp, 0o755); err != nil {
			t.Fatal(err)
		}
		lf, err := os.Create(filepath.Join(root, "logs", name+".log"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { lf.Close() })
		env := append(append(append([]string{}, base...), "TMPDIR="+tmp, "FILEMILL_ADDR="+freeAddr(t),
			"FILEMILL_STORAGE_ADDR="+freeAddr(t)), extra...)
		return &slot{name: name, env: env, dir: root, bin: bin, log: lf}
	}
	for i := range l.apis {
		s := newSlot(fmt.Sprintf("api%d", i+1))
		s.args = []string{"api"}
		for _, kv := range s.env {
			if a, ok := strings.CutPrefix(kv, "FILEMILL_ADDR="); ok {
				d.apiURLs = append(d.apiURLs, "http://"+a)
			}
		}
		d.apis = append(d.apis, s)
	}
	for i := range l.workers {
		work := filepath.Join(root, "work", fmt.Sprintf("worker%d", i+1))
		if l.fullDisk && i == l.workers-1 {
			mountTmpfs(t, work, "256m")
			d.fullDisk = work
		} else if err := os.MkdirAll(work, 0o755); err != nil {
			t.Fatal(err)
		}
		extra := []string{"FILEMILL_WORK_DIR=" + work}
		if l.tap {
			if d.taps == nil {
				d.taps = &tapHub{}
			}
			tp := startTap(t, d.taps, i, d.minio.addr)
			extra = append(extra, fmt.Sprintf("FILEMILL_STORAGE_URL=s3://%s:%s@%s/chaos?secure=false", d.minio.access, d.minio.secret, tp.addr))
		}
		s := newSlot(fmt.Sprintf("worker%d", i+1), extra...)
		s.args = []string{"worker"}
		d.workers = append(d.workers, s)
	}
	return d
}

// bootstrap creates the organization, its project and credits, and answers a live key.
func (d *deployment) bootstrap() string {
	cmd := exec.Command(d.apis[0].bin, "admin", "bootstrap", "--org", "chaos", "--project", "p",
		"--credits", fmt.Sprint(grantCredits), "--json")
	cmd.Dir, cmd.Env = d.root, d.apis[0].env
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		d.t.Fatalf("admin bootstrap: %v\n%s", err, stderr.String())
	}
	var boot map[string]string
	if err := json.Unmarshal(out.Bytes(), &boot); err != nil {
		d.t.Fatal(err)
	}
	return boot["api_key"]
}

// workDir is a worker's scratch directory.
func (d *deployment) workDir(i int) string {
	return filepath.Join(d.root, "work", fmt.Sprintf("worker%d", i+1))
}

// attemptsIn lists the jobs with an attempt under way in worker i's scratch directory.
func (d *deployment) attemptsIn(i int) []string {
	dirs, _ := filepath.Glob(filepath.Join(d.workDir(i), jobs.WorkDirPrefix+"*"))
	var ids []string
	for _, dir := range dirs {
		rest := strings.TrimPrefix(filepath.Base(dir), jobs.WorkDirPrefix)
		if j := strings.LastIndexByte(rest, '-'); j > 0 {
			ids = append(ids, rest[:j])
		}
	}
	return ids
}

// load is the mixed load: each client uploads a file through a pre-signed URL, asks for
// a job on it (or a batch over a few files) and waits for the end, by polling or over a
// GraphQL subscription.
type load struct {
	c    *client
	seed uint64

	mu       sync.Mutex
	accepted map[string]string // job id → the state its client saw at the end
	batches  []string
	files    []string // ready text files, for batches
	followed int      // jobs watched over a subscription
	resubs   int      // subscriptions made again after a connection ended
	errs     []string
}

func (l *load) acceptedCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.accepted)
}

func (l *load) fail(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errs = append(l.errs, fmt.Sprintf(format, args...))
}

func (l *load) run(t *testing.T, id int, stop <-chan struct{}) {
	rng := rand.New(rand.NewPCG(l.seed, uint64(id)+1))
	ctx := context.Background()
	for n := 0; ; n++ {
		select {
		case <-stop:
			return
		default:
		}
		kind := rng.IntN(100)
		var err error
		switch {
		case kind < 10:
			err = l.batch(ctx, rng)
		default:
			err = l.job(ctx, rng, kind, id == 0 && n%2 == 0)
		}
		if err != nil {
			l.fail("client %d: %v", id, err)
		}
	}
}

// job uploads an input for one engine and runs a job on it.
func (l *load) job(ctx context.Context, rng *rand.Rand, kind int, subscribe bool) error {
	var name string
	var data []byte
	req := map[string]any{}
	switch {
	case kind < 35:
		name, data = "notes.txt", textFile(rng)
		req["operation"] = "inspect"
	case kind < 52:
		name, data = "picture.png", pngFile(rng)
		req["operation"], req["options"] = "image.convert", map[string]any{"format": "webp", "width": 64}
	case kind < 55:
		name, data = "picture.png", pngFile(rng)
		req["operation"], req["options"] = "image.convert", largeImage
	case kind < 70:
		name, data = "letter.docx", docxFile(rng)
		req["operation"], req["options"] = "convert", map[string]any{"format": "pdf"}
	case kind < 85:
		name, data = "report.pdf", pdfFile(rng)
		req["operation"], req["options"] = "pdf.compress", map[string]any{"level": "medium"}
	default:
		name, data = "report.pdf", pdfFile(rng)
		if rng.IntN(2) == 0 {
			name, data = "letter.docx", docxFile(rng)
		}
		req["preset"] = "ai-ready"
	}
	fileID, err := l.c.upload(ctx, name, data)
	if err != nil {
		return err
	}
	if name == "notes.txt" {
		l.mu.Lock()
		l.files = append(l.files, fileID)
		l.mu.Unlock()
	}
	req["file_id"] = fileID
	status, j, err := l.c.do(ctx, requestBound, "POST", "/v1/jobs", req)
	if err != nil {
		return err
	}
	if status != 202 {
		return fmt.Errorf("POST /v1/jobs %v: %d %v", req, status, j)
	}
	jobID := j["id"].(string)
	l.mu.Lock()
	l.accepted[jobID] = ""
	l.mu.Unlock()
	var state string
	if subscribe {
		var n int
		state, n, err = l.c.follow(ctx, jobBound, jobID)
		l.mu.Lock()
		l.followed++
		l.resubs += n - 1
		l.mu.Unlock()
	} else {
		state, err = l.c.poll(ctx, jobBound, "/v1/jobs/"+jobID, "state", func(s string) bool { return terminal[s] })
	}
	if err != nil {
		return err
	}
	l.mu.Lock()
	l.accepted[jobID] = state
	l.mu.Unlock()
	return nil
}

// batch runs inspect over a few of the text files uploaded so far.
func (l *load) batch(ctx context.Context, rng *rand.Rand) error {
	l.mu.Lock()
	if len(l.files) < 3 {
		l.mu.Unlock()
		return nil
	}
	var ids []string
	for _, i := range rng.Perm(len(l.files))[:3] {
		ids = append(ids, l.files[i])
	}
	l.mu.Unlock()
	status, b, err := l.c.do(ctx, requestBound, "POST", "/v1/batches", map[string]any{"file_ids": ids, "operation": "inspect"})
	if err != nil {
		return err
	}
	if status != 202 {
		return fmt.Errorf("POST /v1/batches: %d %v", status, b)
	}
	l.mu.Lock()
	l.batches = append(l.batches, b["id"].(string))
	l.mu.Unlock()
	_, err = l.c.poll(ctx, jobBound, "/v1/batches/"+b["id"].(string), "state", func(s string) bool { return s == "completed" })
	return err
}

func textFile(rng *rand.Rand) []byte {
	var b strings.Builder
	for i := range 20 + rng.IntN(200) {
		fmt.Fprintf(&b, "line %d of a note, number %d\n", i, rng.Int64())
	}
	return []byte(b.String())
}

// largeImage are image.convert's options for a large artifact: a 2048×2048 PNG stored
// uncompressed, some 12 MB, which a mid-upload kill meets while it streams to MinIO.
var largeImage = map[string]any{"format": "png", "width": 2048, "effort": 0}

func pngFile(rng *rand.Rand) []byte {
	img := image.NewRGBA(image.Rect(0, 0, 96, 96))
	for y := range 96 {
		for x := range 96 {
			img.Set(x, y, color.RGBA{uint8(rng.IntN(256)), uint8(x), uint8(y), 255})
		}
	}
	var buf bytes.Buffer
	_ = png.Encode(&buf, img)
	return buf.Bytes()
}

// officeTB lets the document generators of the test helpers run outside a test's
// goroutine: they fail only on bugs of their own.
type officeTB struct{ testing.TB }

func (officeTB) Helper()                        {}
func (officeTB) Fatal(args ...any)              { panic(fmt.Sprint(args...)) }
func (officeTB) Fatalf(format string, a ...any) { panic(fmt.Sprintf(format, a...)) }

func docxFile(rng *rand.Rand) []byte {
	return officetest.DOCX(officeTB{}, officetest.TextPages(1+rng.IntN(3), 4))
}

func pdfFile(rng *rand.Rand) []byte {
	return aireadytest.ColumnsPDF(aireadytest.ColumnsSource(rng.IntN(1000000), 1), 1)
}

// percentiles answers the median and the maximum of ds.
func percentiles(ds []time.Duration) (p50, max time.Duration) {
	if len(ds) == 0 {
		return 0, 0
	}
	s := append([]time.Duration{}, ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2], s[len(s)-1]
}

var _ = minio.ListObjectsOptions{}
