package graph_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/db"
	"github.com/filemill/filemill/db/dbtest"
	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/domain/eventually"
	"github.com/filemill/filemill/graph"
	"github.com/filemill/filemill/jobs"
	"github.com/filemill/filemill/jobs/ops/catalog"
	"github.com/filemill/filemill/jobs/ops/inspect"
	"github.com/filemill/filemill/jobs/ratelimit"
	"github.com/filemill/filemill/jobs/redistest"
	"github.com/filemill/filemill/rest"
	"github.com/filemill/filemill/storage"
)

// bundle is both doors on one real server over real PostgreSQL and Redis, as the api
// process serves them, with organization A (a live and a test key) and organization B.
type bundle struct {
	t     testing.TB
	store *db.Store
	svc   *domain.Services
	bus   *jobs.LocalBus
	// startWorker runs a worker in-process.
	startWorker func()
	// stopRelay stops relaying the outbox to the event stream.
	stopRelay func()
	srv       *httptest.Server
	// Organization A with a live and a test key, organization B with a live key.
	orgA, orgB         *domain.Bootstrap
	liveA, testA, keyB string
}

type setupOpts struct {
	cfg    func(*domain.Config)
	gcfg   func(*graph.ServerConfig)
	worker bool // run a worker in-process
}

func setup(t testing.TB, opts ...setupOpts) *bundle {
	t.Helper()
	ctx := context.Background()
	store := dbtest.Open(t, dbtest.Postgres(t))
	ropt, err := redis.ParseURL(redistest.URL(t))
	require.NoError(t, err)
	rdb := redis.NewClient(ropt)
	t.Cleanup(func() { rdb.Close() })
	var o setupOpts
	for _, x := range opts {
		o = x
	}
	cfg := domain.DefaultConfig()
	if o.cfg != nil {
		o.cfg(&cfg)
	}
	blobs := newBlobs(t)
	redisOpt, _, err := jobs.ParseRedisURL(redistest.URL(t))
	require.NoError(t, err)
	queue := jobs.NewQueue(redisOpt)
	t.Cleanup(func() { queue.Close() })
	reg, err := catalog.Registry()
	require.NoError(t, err)
	insp, err := inspect.New(inspect.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	engines := map[string]domain.Engine{"inspect": insp}
	// The embedded default's event stream, fed by a relay of the outbox.
	bus := jobs.NewLocalBus()
	store.OnOutbox(bus.Nudge)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	svc := domain.NewServices(cfg, domain.Deps{Store: store, Blobs: blobs, Queue: queue, Registry: reg, Engines: engines, Bus: bus,
		Limiter: ratelimit.New(rdb), Log: quiet})
	relayCtx, stopRelay := context.WithCancel(context.Background())
	relayDone := make(chan struct{})
	go func() {
		defer close(relayDone)
		jobs.RunRelay(relayCtx, svc.Webhooks, jobs.WebhookConfig{Nudges: bus.Nudges(), RelayPoll: 50 * time.Millisecond}, quiet)
	}()
	relayStopped := func() { stopRelay(); <-relayDone }
	t.Cleanup(relayStopped)
	gcfg := graph.DefaultServerConfig()
	gcfg.StatusOf = rest.StatusOf
	if o.gcfg != nil {
		o.gcfg(&gcfg)
	}
	require.NoError(t, gcfg.Validate())
	gql := graph.NewServer(gcfg, svc, bus, quiet)
	api := rest.NewServer(rest.DefaultConfig(), svc, quiet)
	mux := http.NewServeMux()
	mux.Handle("/graphql", gql.Handler())
	mux.Handle("/graphql/", gql.Handler())
	mux.Handle("/", api.Handler())
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	b := &bundle{t: t, store: store, svc: svc, srv: srv, bus: bus, stopRelay: relayStopped}
	b.startWorker = func() {
		w := jobs.NewServer(redisOpt, jobs.ServerConfig{Concurrency: 4, DelayedTaskCheckInterval: 100 * time.Millisecond,
			Pools: jobs.EnginePools(reg, engines, func(string) jobs.FamilySettings { return jobs.FamilySettings{Concurrency: 4} })}, quiet)
		jobs.RegisterTasks(w, svc, t.TempDir(), quiet)
		require.NoError(t, w.Start())
		t.Cleanup(w.Shutdown)
	}
	if o.worker {
		b.startWorker()
	}
	b.orgA, err = svc.Organizations.Bootstrap(ctx, "org-a", "main", 1000)
	require.NoError(t, err)
	b.orgB, err = svc.Organizations.Bootstrap(ctx, "org-b", "main", 1000)
	require.NoError(t, err)
	b.liveA, b.testA, b.keyB = b.orgA.LiveSecret, b.orgA.TestSecret, b.orgB.LiveSecret
	return b
}

func newBlobs(t testing.TB) domain.Blobs {
	t.Helper()
	host := httptest.NewUnstartedServer(nil)
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	local, err := storage.NewLocal(storage.LocalConfig{Dir: t.TempDir(), PublicURL: "http://" + host.Listener.Addr().String(), Secret: secret})
	require.NoError(t, err)
	host.Config.Handler = local.Handler()
	host.Start()
	t.Cleanup(host.Close)
	return local
}

// gqlResponse is a decoded GraphQL answer.
type gqlResponse struct {
	status     int
	header     http.Header
	Data       map[string]any `json:"data"`
	Errors     []gqlError     `json:"errors"`
	Extensions map[string]any `json:"extensions"`
	raw        []byte
}

type gqlError struct {
	Message    string         `json:"message"`
	Path       []any          `json:"path"`
	Extensions map[string]any `json:"extensions"`
}

func (r gqlResponse) code(t *testing.T) string {
	t.Helper()
	require.NotEmpty(t, r.Errors, "no error in %s", r.raw)
	c, _ := r.Errors[0].Extensions["code"].(string)
	return c
}

// noErrors fails on any error of the answer.
func (r gqlResponse) ok(t *testing.T) gqlResponse {
	t.Helper()
	require.Empty(t, r.Errors, "errors in %s", r.raw)
	require.Equal(t, 200, r.status, string(r.raw))
	return r
}

// gql posts an operation; key "" sends no Authorization header.
func (b *bundle) gql(key, query string, vars map[string]any) gqlResponse {
	b.t.Helper()
	body, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	require.NoError(b.t, err)
	return b.post(key, body, nil)
}

func (b *bundle) post(key string, body []byte, header map[string]string) gqlResponse {
	b.t.Helper()
	req, err := http.NewRequest("POST", b.srv.URL+"/graphql", bytes.NewReader(body))
	require.NoError(b.t, err)
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	return b.send(req)
}

func (b *bundle) send(req *http.Request) gqlResponse {
	b.t.Helper()
	resp, err := http.DefaultClient.Do(req)
	require.NoError(b.t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(b.t, err)
	out := gqlResponse{status: resp.StatusCode, header: resp.Header, raw: raw}
	require.NoError(b.t, json.Unmarshal(raw, &out), string(raw))
	return out
}

// rest calls the REST door; it returns the status and the decoded body.
func (b *bundle) rest(method, path, key string, body any) (int, map[string]any) {
	b.t.Helper()
	st, m, _ := b.restKey(method, path, key, idem(), body)
	return st, m
}

// restKey calls the REST door with an Idempotency-Key of the caller's on a POST.
func (b *bundle) restKey(method, path, key, idemKey string, body any) (int, map[string]any, http.Header) {
	b.t.Helper()
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		require.NoError(b.t, err)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, b.srv.URL+path, rd)
	require.NoError(b.t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	if method == "POST" {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", idemKey)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(b.t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(b.t, err)
	var m map[string]any
	if len(bytes.TrimSpace(raw)) > 0 {
		require.NoError(b.t, json.Unmarshal(raw, &m), string(raw))
	}
	return resp.StatusCode, m, resp.Header
}

var netipLoopback = netip.MustParseAddr("127.0.0.1")

var idemCounter atomic.Int64

func idem() string { return fmt.Sprint("g-", idemCounter.Add(1), "-", time.Now().UnixNano()) }

// put sends bytes to a pre-signed URL with the headers the session asked for.
func put(t testing.TB, url string, headers map[string]any, body []byte) {
	t.Helper()
	req, err := http.NewRequest("PUT", url, bytes.NewReader(body))
	require.NoError(t, err)
	for k, v := range headers {
		if k != "Content-Length" {
			req.Header.Set(k, v.(string))
		}
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	require.Less(t, resp.StatusCode, 300, "PUT answered %d", resp.StatusCode)
}

// uploadREST runs the single-PUT flow through REST and returns the ready file.
func (b *bundle) uploadREST(key, filename string, content []byte) map[string]any {
	b.t.Helper()
	st, u := b.rest("POST", "/v1/uploads", key, map[string]any{"filename": filename, "byte_size": len(content)})
	require.Equal(b.t, 201, st, u)
	put(b.t, u["upload_url"].(string), u["upload_headers"].(map[string]any), content)
	st, f := b.rest("POST", "/v1/files/"+u["file_id"].(string)+"/complete", key, nil)
	require.Equal(b.t, 200, st, f)
	return f
}

func pngBytes(t testing.TB, w, h int) []byte {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for x := 0; x < w; x++ {
		img.Set(x, x%h, color.RGBA{R: uint8(x), G: 100, B: 200, A: 255})
	}
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, img))
	return buf.Bytes()
}

// waitJob polls REST until the job is terminal, within a generous bound.
func (b *bundle) waitJob(key, id string) map[string]any {
	b.t.Helper()
	return eventually.Value(b.t, "job "+id+" to finish", func() (map[string]any, bool) {
		st, j := b.rest("GET", "/v1/jobs/"+id, key, nil)
		require.Equal(b.t, 200, st, j)
		switch j["state"] {
		case "succeeded", "failed", "cancelled":
			return j, true
		}
		return nil, false
	})
}

// putPart sends one part and returns the ETag the store answered.
func putPart(t *testing.T, url string, body []byte) string {
	t.Helper()
	req, err := http.NewRequest("PUT", url, bytes.NewReader(body))
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	require.Less(t, resp.StatusCode, 300, "part PUT answered %d", resp.StatusCode)
	return resp.Header.Get("ETag")
}

// key mints a key for organization A's project with the given tweaks.
func (b *bundle) key(mod func(*domain.NewKey)) string {
	b.t.Helper()
	nk := domain.NewKey{OrganizationID: b.orgA.Organization.ID, ProjectID: b.orgA.Project.ID, Environment: domain.EnvLive}
	if mod != nil {
		mod(&nk)
	}
	_, secret, err := b.svc.Keys.CreateKey(context.Background(), nk)
	require.NoError(b.t, err)
	return secret
}

func keyID(t *testing.T, b *bundle, secret string) string {
	t.Helper()
	p, err := b.svc.Keys.Authenticate(context.Background(), secret, netip.MustParseAddr("127.0.0.1"))
	require.NoError(t, err)
	return p.Key.ID
}
