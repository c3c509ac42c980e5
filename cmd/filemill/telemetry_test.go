package main

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/db/dbtest"
	"github.com/filemill/filemill/domain/eventually"
	"github.com/filemill/filemill/jobs/ops/pdf/pdftest"
	"github.com/filemill/filemill/jobs/redistest"
	"github.com/filemill/filemill/rest/openapitest"
)

// span is what the console exporter writes of a span (the SDK's stdout exporter), as
// far as the tests read it.
type span struct {
	Name        string
	SpanContext struct{ TraceID, SpanID string }
	Parent      struct{ TraceID, SpanID string }
	Links       []struct {
		SpanContext struct{ TraceID, SpanID string }
	}
	Attributes []struct {
		Key   string
		Value struct{ Value any }
	}
}

func (s span) attr(key string) any {
	for _, a := range s.Attributes {
		if a.Key == key {
			return a.Value.Value
		}
	}
	return nil
}

// spans reads the spans among a process's standard output lines (it prints other
// lines too: the engines' report).
func spans(out string) []span {
	var got []span
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var s span
		if json.Unmarshal(sc.Bytes(), &s) == nil && s.SpanContext.SpanID != "" {
			got = append(got, s)
		}
	}
	return got
}

func findSpan(all []span, match func(span) bool) (span, bool) {
	for _, s := range all {
		if match(s) {
			return s, true
		}
	}
	return span{}, false
}

// client calls the API with the OpenAPI document checking every answer.
type apiClient struct {
	t    *testing.T
	http *http.Client
	base string
	key  string
}

func (c apiClient) do(method, path string, body any) (int, map[string]any) {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	}
	req, _ := http.NewRequest(method, c.base+path, rd)
	req.Header.Set("Authorization", "Bearer "+c.key)
	if body != nil || method == "POST" {
		req.Header.Set("Content-Type", "application/json")
		idem := make([]byte, 8)
		_, _ = rand.Read(idem)
		req.Header.Set("Idempotency-Key", hex.EncodeToString(idem))
	}
	resp, err := c.http.Do(req)
	require.NoError(c.t, err)
	defer resp.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

// upload stores data as a ready file and returns its id.
func (c apiClient) upload(name string, data []byte) string {
	c.t.Helper()
	status, up := c.do("POST", "/v1/uploads", map[string]any{"filename": name, "byte_size": len(data)})
	require.Equal(c.t, 201, status, "%v", up)
	req, _ := http.NewRequest("PUT", up["upload_url"].(string), bytes.NewReader(data))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(c.t, err)
	resp.Body.Close()
	require.Less(c.t, resp.StatusCode, 300)
	status, file := c.do("POST", "/v1/files/"+up["file_id"].(string)+"/complete", nil)
	require.Equal(c.t, 200, status, "%v", file)
	return file["id"].(string)
}

// run creates a job (once a worker runs its engine) and waits for it to succeed.
func (c apiClient) run(fileID, operation string, options map[string]any) map[string]any {
	c.t.Helper()
	body := map[string]any{"file_id": fileID, "operation": operation}
	if options != nil {
		body["options"] = options
	}
	var status int
	var job map[string]any
	eventually.True(c.t, "a worker to advertise "+operation, func() bool {
		status, job = c.do("POST", "/v1/jobs", body)
		return status != 503
	})
	require.Equal(c.t, 202, status, "%v", job)
	eventually.True(c.t, operation+" to finish", func() bool {
		_, job = c.do("GET", "/v1/jobs/"+job["id"].(string), nil)
		return job["state"] == "succeeded" || job["state"] == "failed"
	})
	require.Equal(c.t, "succeeded", job["state"], "%v", job)
	return job
}

func smallPNG(t *testing.T) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 32, 24))
	for y := range 24 {
		for x := range 32 {
			img.Set(x, y, color.RGBA{uint8(x * 8), uint8(y * 10), 90, 255})
		}
	}
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, img))
	return buf.Bytes()
}

func scrape(t *testing.T, addr string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(body)
}

// TestTraceFollowsAJob runs the split deployment with the console exporter: a job
// created through REST on the api process and run on a worker process is one trace on
// the API's side (the request's server span, the admission write and the enqueue in
// it, the job's trace_id its id), and the worker's attempt is a trace linked to the
// enqueue, parent of the engine's span; the delivery of its job.succeeded is linked to
// the attempt that committed the event. The metrics of both processes show where the
// jobs' time went, per engine family.
func TestTraceFollowsAJob(t *testing.T) {
	t.Parallel()
	recvURL, caFile := httpsReceiver(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) }))
	dir := t.TempDir()
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	addr, storageAddr, apiMetrics, workerMetrics := freeAddr(t), freeAddr(t), freeAddr(t), freeAddr(t)
	env := cleanEnv("FILEMILL_DATABASE_URL="+dbtest.Postgres(t), "FILEMILL_REDIS_URL="+redistest.URL(t),
		"FILEMILL_DATA_DIR="+dir, "FILEMILL_ADDR="+addr, "FILEMILL_STORAGE_ADDR="+storageAddr,
		"FILEMILL_STORAGE_SECRET="+hex.EncodeToString(secret), "FILEMILL_WORK_DIR="+t.TempDir(),
		"FILEMILL_ENGINES=inspect,image,pdf", "FILEMILL_CLAMD_START=never", "FILEMILL_LOG_LEVEL=warn",
		"FILEMILL_OUTBOUND_ALLOW_CIDRS=127.0.0.1", "SSL_CERT_FILE="+caFile, "OTEL_TRACES_EXPORTER=console")
	key := bootstrapKey(t, dir, env, "--org", "tr", "--project", "p", "--credits", "100")
	api := start(t, dir, append(env, "FILEMILL_METRICS_ADDR="+apiMetrics), "api")
	waitReady(t, "http://"+addr)
	worker := start(t, dir, append(env, "FILEMILL_METRICS_ADDR="+workerMetrics), "worker")
	c := apiClient{t: t, http: openapitest.New(t).Client(http.DefaultTransport), base: "http://" + addr, key: key}

	status, ep := c.do("POST", "/v1/webhook-endpoints", map[string]any{"url": recvURL + "/in", "enabled_events": []string{"job.succeeded"}})
	require.Equal(t, 201, status, "%v", ep)
	job := c.run(c.upload("a.txt", []byte("a line of text\n")), "inspect", nil)
	traceID, _ := job["trace_id"].(string)
	require.Regexp(t, regexp.MustCompile(`^[0-9a-f]{32}$`), traceID, "the job carries its trace")

	var server, admit, enqueue, attempt, engine span
	eventually.True(t, "the API's spans of the job", func() bool {
		all := spans(api.stdout.String())
		var ok1, ok2, ok3 bool
		server, ok1 = findSpan(all, func(s span) bool {
			return s.Name == "POST /v1/jobs" && s.SpanContext.TraceID == traceID
		})
		admit, ok2 = findSpan(all, func(s span) bool { return s.Name == "admit jobs" && s.SpanContext.TraceID == traceID })
		enqueue, ok3 = findSpan(all, func(s span) bool { return s.Name == "enqueue job" && s.SpanContext.TraceID == traceID })
		return ok1 && ok2 && ok3
	})
	require.Equal(t, job["id"], enqueue.attr("filemill.job_id"))
	require.NotEmpty(t, server.attr("filemill.request_id"))
	require.True(t, strings.HasPrefix(server.attr("filemill.organization_id").(string), "org_"))
	require.True(t, strings.HasPrefix(server.attr("filemill.project_id").(string), "prj_"))
	require.Equal(t, traceID, admit.Parent.TraceID)
	eventually.True(t, "the completion's storage call, inside its request", func() bool {
		all := spans(api.stdout.String())
		s, ok := findSpan(all, func(s span) bool { return s.Name == "storage complete upload" })
		for ok {
			if strings.HasPrefix(s.Name, "POST /v1/files/") {
				return true
			}
			parent := s.Parent.SpanID
			s, ok = findSpan(all, func(p span) bool { return p.SpanContext.SpanID == parent })
		}
		return false
	})
	eventually.True(t, "the worker's spans of the job", func() bool {
		all := spans(worker.stdout.String())
		var ok1, ok2 bool
		attempt, ok1 = findSpan(all, func(s span) bool { return s.Name == "job attempt" && s.attr("filemill.job_id") == job["id"] })
		engine, ok2 = findSpan(all, func(s span) bool {
			return s.Name == "engine inspect" && ok1 && s.Parent.SpanID == attempt.SpanContext.SpanID
		})
		return ok1 && ok2
	})
	require.Len(t, attempt.Links, 1, "the attempt is linked to the enqueue")
	require.Equal(t, enqueue.SpanContext, attempt.Links[0].SpanContext)
	require.NotEqual(t, traceID, attempt.SpanContext.TraceID, "an attempt is a trace of its own, linked, not a child")
	require.Equal(t, attempt.SpanContext.TraceID, engine.SpanContext.TraceID)

	var delivery span
	eventually.True(t, "the delivery's span", func() bool {
		var ok bool
		delivery, ok = findSpan(spans(worker.stdout.String()), func(s span) bool { return s.Name == "webhook delivery attempt" })
		return ok
	})
	require.Len(t, delivery.Links, 1, "the delivery is linked to its event's commit")
	require.Equal(t, attempt.SpanContext.TraceID, delivery.Links[0].SpanContext.TraceID, "job.succeeded was committed in the attempt")
	require.NotEqual(t, attempt.SpanContext.TraceID, delivery.SpanContext.TraceID)

	// One job of each engine family the worker runs, then the figures of both processes.
	c.run(c.upload("a.png", smallPNG(t)), "image.convert", map[string]any{"format": "webp"})
	c.run(c.upload("a.pdf", pdftest.TextPages("one", "two")), "pdf.pages", map[string]any{"pages": "2"})
	wm := scrape(t, workerMetrics)
	for _, op := range []string{"inspect", "image.convert", "pdf.pages"} {
		for _, phase := range []string{"queue", "download", "engine", "upload"} {
			if op == "inspect" && phase == "upload" {
				continue // inspect makes no artifact
			}
			require.Contains(t, wm, `filemill_job_phase_duration_seconds_count{operation="`+op+`",outcome="succeeded",phase="`+phase+`"} 1`, "%s %s", op, phase)
		}
	}
	for _, pool := range []string{"inspect", "image", "pdf"} {
		require.Regexp(t, `filemill_engine_pool_size\{pool="`+pool+`"\} [1-9]`, wm)
		require.Contains(t, wm, `filemill_engine_pool_busy{pool="`+pool+`"} 0`)
		require.Contains(t, wm, `filemill_engine_pool_waiting{pool="`+pool+`"} 0`)
	}
	require.Regexp(t, `filemill_credits_charged_total [1-9]`, wm)
	require.Contains(t, wm, `filemill_queue_latency_seconds{queue=`)
	am := scrape(t, apiMetrics)
	require.Regexp(t, `filemill_credits_reserved_total [1-9]`, am)
	require.Contains(t, am, `filemill_queue_depth{queue=`)
	require.Contains(t, am, `filemill_http_requests_total{route="POST /v1/jobs",status="202"}`)

	// The dashboard asks only for metrics the processes serve. Two families show only
	// after what this deployment did not do: a webhook delivery, an engine with tool
	// instances (LibreOffice).
	raw, err := os.ReadFile(filepath.Join("..", "..", "bench", "grafana", "filemill.json"))
	require.NoError(t, err)
	names := regexp.MustCompile(`filemill_[a-z_]+`).FindAllString(string(raw), -1)
	require.NotEmpty(t, names)
	for _, name := range names {
		if strings.HasPrefix(name, "filemill_webhook_") || strings.HasPrefix(name, "filemill_engine_instances") ||
			strings.HasPrefix(name, "filemill_engine_restarts") {
			continue
		}
		require.True(t, strings.Contains(am, name) || strings.Contains(wm, name), "the dashboard's %s is served", name)
	}
}

// TestNoTracesByDefault: without OTEL_TRACES_EXPORTER no span is recorded and a job has
// no trace id.
func TestNoTracesByDefault(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	addr, storageAddr := freeAddr(t), freeAddr(t)
	env := cleanEnv("FILEMILL_DATA_DIR="+dir, "FILEMILL_ADDR="+addr, "FILEMILL_STORAGE_ADDR="+storageAddr,
		"FILEMILL_ENGINES=inspect", "FILEMILL_CLAMD_START=never", "FILEMILL_LOG_LEVEL=warn")
	for i, kv := range env {
		if strings.HasPrefix(kv, "OTEL_") {
			env[i] = "FILEMILL_UNUSED=" // the test's own environment must not turn tracing on
		}
	}
	key := bootstrapKey(t, dir, env, "--org", "nt", "--project", "p", "--credits", "10")
	p := start(t, dir, env, "serve")
	waitReady(t, "http://"+addr)
	c := apiClient{t: t, http: openapitest.New(t).Client(http.DefaultTransport), base: "http://" + addr, key: key}
	job := c.run(c.upload("a.txt", []byte("text\n")), "inspect", nil)
	require.Nil(t, job["trace_id"])
	require.Empty(t, spans(p.stdout.String()))
}
