package rest_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/db"
	"github.com/filemill/filemill/db/dbtest"
	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/domain/netguard"
	"github.com/filemill/filemill/jobs"
	"github.com/filemill/filemill/jobs/ops/catalog"
	"github.com/filemill/filemill/jobs/ops/inspect"
	"github.com/filemill/filemill/jobs/ratelimit"
	"github.com/filemill/filemill/jobs/redistest"
	"github.com/filemill/filemill/rest"
	"github.com/filemill/filemill/rest/openapitest"
	"github.com/filemill/filemill/storage"
	"github.com/filemill/filemill/storage/miniotest"
)

// bundle is a real server over real PostgreSQL and Redis, with a client whose every
// response is checked against the OpenAPI document.
type bundle struct {
	t        *testing.T
	store    *db.Store
	svc      *domain.Services
	api      *rest.Server
	srv      *httptest.Server
	client   *http.Client
	blobs    domain.Blobs
	redisOpt asynq.RedisConnOpt
	// Organization A with a live and a test key, organization B with a live key.
	orgA, orgB         *domain.Bootstrap
	liveA, testA, keyB string
	// dbProxy stands between the services and PostgreSQL when setupOpts.proxyDB is set.
	dbProxy *tcpProxy
}

type setupOpts struct {
	cfg     func(*domain.Config)
	backend string // "local" (default) or "s3" (a real MinIO server)
	worker  bool   // run a worker in-process
	fetcher domain.Fetcher
	clock   domain.Clock // the services' clock; nil is the system clock
	// storageClock, when set, is the clock the local storage host signs and checks URLs
	// by (an S3 store keeps its own time).
	storageClock func() time.Time
	// engine, when set, wraps the real inspect engine (to inject a fault).
	engine func(domain.Engine) domain.Engine
	// store, when set, wraps the real store the services use (to inject a fault).
	store func(domain.Store) domain.Store
	// registry, when set, replaces the real registry; engines add to the real ones.
	registry *domain.Registry
	engines  map[string]domain.Engine
	// scanner scans uploads whose policy asks for it.
	scanner domain.UploadScanner
	// guard vets webhook URLs at creation; nil checks their shape only.
	guard *netguard.Guard
	// webhooks, when set, runs the outbox relay and webhook delivery in-process,
	// trusting these certificates and loopback receivers.
	webhooks *x509.CertPool
	// log receives the services' log; nil is slog's default.
	log *slog.Logger
	// proxyDB puts a TCP proxy between the services and PostgreSQL (bundle.dbProxy),
	// to take the database away.
	proxyDB bool
	// postgres, when set, is a PostgreSQL server of the test's own, to stop and start.
	postgres *dbtest.Server
}

func setup(t *testing.T, opts ...setupOpts) *bundle {
	t.Helper()
	ctx := context.Background()
	var o setupOpts
	for _, x := range opts {
		o = x
	}
	var dbURL string
	if o.postgres != nil {
		dbURL = o.postgres.URL()
	} else {
		dbURL = dbtest.Postgres(t)
	}
	var proxy *tcpProxy
	if o.proxyDB {
		proxy, dbURL = proxied(t, dbURL)
	}
	store := dbtest.Open(t, dbURL)
	ropt, err := redis.ParseURL(redistest.URL(t))
	require.NoError(t, err)
	rdb := redis.NewClient(ropt)
	t.Cleanup(func() { rdb.Close() })

	cfg := domain.DefaultConfig()
	if o.cfg != nil {
		o.cfg(&cfg)
	}
	// The storage host reports bytes served; the services exist only after the blobs.
	var svc *domain.Services
	blobs := newBlobs(t, o.backend, o.storageClock, func(key string, n int64) { _ = svc.Usage.RecordEgress(context.Background(), key, n) })
	redisOpt, _, err := jobs.ParseRedisURL(redistest.URL(t))
	require.NoError(t, err)
	queue := jobs.NewQueue(redisOpt)
	t.Cleanup(func() { queue.Close() })
	insp, err := inspect.New(inspect.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	var engine domain.Engine = insp
	if o.engine != nil {
		engine = o.engine(engine)
	}
	var svcStore domain.Store = store
	if o.store != nil {
		svcStore = o.store(store)
	}
	reg, err := catalog.Registry()
	require.NoError(t, err)
	if o.registry != nil {
		reg = o.registry
	}
	engines := map[string]domain.Engine{"inspect": engine}
	maps.Copy(engines, o.engines)
	prober := catalog.Prober(engines) // counts pages as the service does
	deps := domain.Deps{Store: svcStore, Blobs: blobs, Queue: queue, Fetcher: o.fetcher, Clock: o.clock,
		Registry: reg, Engines: engines, Pages: prober, Scratch: storage.TempScratch{}, Verifier: prober, Scanner: o.scanner, Guard: o.guard,
		Limiter: ratelimit.New(rdb), Log: o.log}
	var bus *jobs.LocalBus
	var hooks *jobs.WebhookQueue
	if o.webhooks != nil {
		guard := &netguard.Guard{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
		sender := jobs.NewHTTPSender(jobs.SenderConfig{Guard: guard, RootCAs: o.webhooks})
		t.Cleanup(sender.Close)
		bus, hooks = jobs.NewLocalBus(), jobs.NewWebhookQueue(redisOpt)
		t.Cleanup(func() { hooks.Close() })
		store.OnOutbox(bus.Nudge)
		deps.Guard, deps.Bus, deps.Deliveries, deps.WebhookSender = guard, bus, hooks, sender
	}
	svc = domain.NewServices(cfg, deps)
	api := rest.NewServer(rest.DefaultConfig(), svc, slog.New(slog.NewTextHandler(io.Discard, nil)))
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(srv.Close)
	if o.worker || o.webhooks != nil {
		// Retries come quickly here; their spacing is the jobs package's concern.
		cfg := jobs.ServerConfig{Concurrency: 4, DelayedTaskCheckInterval: 100 * time.Millisecond,
			RetryDelayFunc:   func(int, error, *asynq.Task) time.Duration { return 50 * time.Millisecond },
			NotRunRetryDelay: 50 * time.Millisecond}
		if o.worker {
			cfg.Pools = jobs.EnginePools(reg, engines, func(string) jobs.FamilySettings { return jobs.FamilySettings{Concurrency: 4} })
		}
		if o.webhooks != nil {
			cfg.Pools, cfg.TaskCheckInterval = append(cfg.Pools, jobs.WebhookPool(8)), 5*time.Millisecond
		}
		w := jobs.NewServer(redisOpt, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if o.worker {
			jobs.RegisterTasks(w, svc, t.TempDir(), slog.Default())
		}
		if o.webhooks != nil {
			jobs.RegisterWebhookTasks(w, svc, hooks, jobs.WebhookConfig{Nudges: bus.Nudges()}, slog.New(slog.NewTextHandler(io.Discard, nil)))
		}
		require.NoError(t, w.Start())
		t.Cleanup(w.Shutdown)
	}

	b := &bundle{t: t, store: store, svc: svc, api: api, srv: srv, blobs: blobs, redisOpt: redisOpt, dbProxy: proxy,
		client: openapitest.New(t).Client(http.DefaultTransport)}
	b.orgA, err = svc.Organizations.Bootstrap(ctx, "org-a", "main", 100)
	require.NoError(t, err)
	b.orgB, err = svc.Organizations.Bootstrap(ctx, "org-b", "main", 100)
	require.NoError(t, err)
	b.liveA, b.testA, b.keyB = b.orgA.LiveSecret, b.orgA.TestSecret, b.orgB.LiveSecret
	return b
}

// response is a decoded answer.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(r.body, &m), string(r.body))
	return m
}

func (r response) errorCode(t *testing.T) string {
	t.Helper()
	e, ok := r.json(t)["error"].(map[string]any)
	require.True(t, ok, "not an error body: %s", r.body)
	return e["code"].(string)
}

// req is one request; key "" sends no Authorization header.
type req struct {
	method, path, key, idem string
	body                    any
	header                  map[string]string
	// added are header values sent besides those (a header sent twice).
	added http.Header
}

func (b *bundle) do(r req) response {
	b.t.Helper()
	var body io.Reader
	switch v := r.body.(type) {
	case nil:
	case string:
		body = bytes.NewBufferString(v)
	default:
		raw, err := json.Marshal(v)
		require.NoError(b.t, err)
		body = bytes.NewReader(raw)
	}
	hr, err := http.NewRequest(r.method, b.srv.URL+r.path, body)
	require.NoError(b.t, err)
	if r.key != "" {
		hr.Header.Set("Authorization", "Bearer "+r.key)
	}
	if body != nil {
		hr.Header.Set("Content-Type", "application/json")
	}
	if r.idem != "" {
		hr.Header.Set("Idempotency-Key", r.idem)
	}
	for k, v := range r.header {
		hr.Header.Set(k, v)
	}
	for k, vs := range r.added {
		for _, v := range vs {
			hr.Header.Add(k, v)
		}
	}
	resp, err := b.client.Do(hr)
	require.NoError(b.t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(b.t, err)
	return response{status: resp.StatusCode, header: resp.Header, body: raw}
}

// newKey mints a key for organization A's project with the given tweaks.
func (b *bundle) newKey(mod func(*domain.NewKey)) string {
	b.t.Helper()
	nk := domain.NewKey{OrganizationID: b.orgA.Organization.ID, ProjectID: b.orgA.Project.ID, Environment: domain.EnvLive}
	if mod != nil {
		mod(&nk)
	}
	_, secret, err := b.svc.Keys.CreateKey(context.Background(), nk)
	require.NoError(b.t, err)
	return secret
}

func past() *time.Time {
	t := time.Now().Add(-time.Minute)
	return &t
}

func webhookBody(url string) map[string]any {
	return map[string]any{"url": url, "enabled_events": []string{"job.succeeded", "file.ready"}}
}

// newBlobs starts a storage backend: the local disk with its own storage host, or a
// bucket on a real MinIO server.
func newBlobs(t *testing.T, backend string, now func() time.Time, onEgress func(key string, n int64)) domain.Blobs {
	t.Helper()
	if backend == "s3" {
		endpoint, access, secret := miniotest.Start(t)
		cfg, err := storage.ParseS3URL(fmt.Sprintf("s3://%s:%s@%s/filemill-test?secure=false&region=us-east-1", access, secret, endpoint))
		require.NoError(t, err)
		s3, err := storage.NewS3(context.Background(), cfg)
		require.NoError(t, err)
		return s3
	}
	host := httptest.NewUnstartedServer(nil)
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	local, err := storage.NewLocal(storage.LocalConfig{Dir: t.TempDir(), PublicURL: "http://" + host.Listener.Addr().String(), Secret: secret, OnEgress: onEgress, Now: now})
	require.NoError(t, err)
	host.Config.Handler = local.Handler()
	host.Start()
	t.Cleanup(host.Close)
	return local
}
