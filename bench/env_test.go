package bench

import (
	"context"
	"crypto/rand"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/filemill/filemill/db"
	"github.com/filemill/filemill/db/dbtest"
	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/graph"
	"github.com/filemill/filemill/jobs"
	"github.com/filemill/filemill/jobs/ops/catalog"
	"github.com/filemill/filemill/jobs/ops/enginetest"
	"github.com/filemill/filemill/jobs/ops/inspect"
	"github.com/filemill/filemill/jobs/ops/probe"
	"github.com/filemill/filemill/jobs/ratelimit"
	"github.com/filemill/filemill/jobs/redistest"
	"github.com/filemill/filemill/rest"
	"github.com/filemill/filemill/storage"
)

// stack is one deployment under benchmark: its stores, services and the API on loopback.
type stack struct {
	store    *db.Store
	rdb      *redis.Client
	redisOpt asynq.RedisConnOpt
	svc      *domain.Services
	srv      *httptest.Server
	local    *storage.Local
	blobDir  string
	dbURL    string
	redisURL string
	key      string // a live key with a rate limit high enough not to interfere
	org      *domain.Bootstrap
	engines  map[string]domain.Engine
	registry *domain.Registry
	queue    *jobs.Queue
	clock    *aheadClock // the services' clock
}

// aheadClock is the real clock moved ahead by what a benchmark adds: time passes for the
// services (an authentication cache entry expires) without the benchmark waiting for it.
type aheadClock struct{ ahead atomic.Int64 }

func (c *aheadClock) Now() time.Time {
	return domain.SystemClock{}.Now().Add(time.Duration(c.ahead.Load()))
}

func (c *aheadClock) advance(d time.Duration) { c.ahead.Add(int64(d)) }

type stackOpts struct {
	embedded bool
	dataDir  string // where local blobs live; a temp dir when empty
	cfg      func(*domain.Config)
	// hooks, when set, gives the event bus and webhook delivery ports the services use.
	hooks func(s *stack) domain.Deps
	// gcfg adjusts the GraphQL door's settings.
	gcfg func(*graph.ServerConfig)
	// wrap, when set, wraps the handlers of the API and of the storage host (to watch
	// the requests they get).
	wrap func(http.Handler) http.Handler
}

// newStack starts the API over PostgreSQL + Redis (production parts) or over SQLite +
// the in-process Redis (the embedded default), with local storage and its host.
func newStack(tb testing.TB, o stackOpts) *stack {
	tb.Helper()
	benchTracing()
	ctx := context.Background()
	s := &stack{}
	var redisURL string
	if o.embedded {
		s.dbURL = dbtest.SQLite(tb)
		s.store = dbtest.Open(tb, s.dbURL)
		er, err := jobs.StartEmbeddedRedis()
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(er.Close)
		redisURL = er.URL()
	} else {
		s.dbURL = dbtest.Postgres(tb)
		if n := os.Getenv("BENCH_PG_POOL"); n != "" {
			s.dbURL += "&pool_max_conns=" + n
		}
		s.store = dbtest.Open(tb, s.dbURL)
		redisURL = redistest.URL(tb)
	}
	s.redisURL = redisURL
	var ropt *redis.Options
	var err error
	if s.redisOpt, ropt, err = jobs.ParseRedisURL(redisURL); err != nil {
		tb.Fatal(err)
	}
	s.rdb = redis.NewClient(ropt)
	tb.Cleanup(func() { s.rdb.Close() })

	s.blobDir = o.dataDir
	if s.blobDir == "" {
		s.blobDir = tb.TempDir()
	}
	host := httptest.NewUnstartedServer(nil)
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	if s.local, err = storage.NewLocal(storage.LocalConfig{Dir: s.blobDir, PublicURL: "http://" + host.Listener.Addr().String(), Secret: secret}); err != nil {
		tb.Fatal(err)
	}
	host.Config.Handler = s.local.Handler()
	if o.wrap != nil {
		host.Config.Handler = o.wrap(host.Config.Handler)
	}
	host.Start()
	tb.Cleanup(host.Close)

	queue := jobs.NewQueue(s.redisOpt)
	s.queue = queue
	tb.Cleanup(func() { queue.Close() })
	cfg := domain.DefaultConfig()
	cfg.DefaultConcurrencyLimit = 1 << 30
	insp, err := inspect.New(inspect.DefaultConfig())
	if err != nil {
		tb.Fatal(err)
	}
	s.engines = map[string]domain.Engine{"inspect": insp}
	if o.cfg != nil {
		o.cfg(&cfg)
	}
	if s.registry, err = catalog.Registry(); err != nil {
		tb.Fatal(err)
	}
	prober := probe.New(probe.DefaultConfig())
	s.clock = &aheadClock{}
	deps := domain.Deps{Store: s.store, Clock: s.clock, Blobs: s.local, Queue: queue,
		Registry: s.registry, Engines: s.engines, Pages: prober, Scratch: storage.TempScratch{}, Verifier: prober,
		Limiter: ratelimit.New(s.rdb), Log: discardLogger()}
	if o.hooks != nil {
		h := o.hooks(s)
		deps.Guard, deps.Bus, deps.Deliveries, deps.WebhookSender = h.Guard, h.Bus, h.Deliveries, h.WebhookSender
	}
	s.svc = domain.NewServices(cfg, deps)
	if s.org, err = s.svc.Organizations.Bootstrap(ctx, "bench", "bench", 1<<40); err != nil {
		tb.Fatal(err)
	}
	if _, s.key, err = s.svc.Keys.CreateKey(ctx, domain.NewKey{OrganizationID: s.org.Organization.ID,
		ProjectID: s.org.Project.ID, Environment: domain.EnvLive, RateLimit: 1 << 30}); err != nil {
		tb.Fatal(err)
	}
	api := rest.NewServer(rest.DefaultConfig(), s.svc, discardLogger())
	// Both doors on one listener, as the api process serves them.
	gcfg := graph.DefaultServerConfig()
	if o.gcfg != nil {
		o.gcfg(&gcfg)
	}
	gql := graph.NewServer(gcfg, s.svc, deps.Bus, discardLogger())
	mux := http.NewServeMux()
	mux.Handle("/graphql", gql.Handler())
	mux.Handle("/", api.Handler())
	var h http.Handler = mux
	if o.wrap != nil {
		h = o.wrap(h)
	}
	s.srv = httptest.NewServer(h)
	tb.Cleanup(s.srv.Close)
	return s
}

// startWorker runs a worker server against the stack's Redis, set up as the service
// sets up its workers (cmd/filemill): the default poll interval (BENCH_WORKER_POLL to
// change it) and each family's pool looking at its multiple of it, but every pool
// running concurrency jobs at once (0 or less: each family's default).
func (s *stack) startWorker(tb testing.TB, concurrency int) *jobs.Server {
	tb.Helper()
	poll := jobs.DefaultWorkerPollInterval
	if v := os.Getenv("BENCH_WORKER_POLL"); v != "" {
		var err error
		if poll, err = time.ParseDuration(v); err != nil {
			tb.Fatalf("BENCH_WORKER_POLL: %v", err)
		}
	}
	pools := jobs.EnginePools(s.registry, s.engines, func(family string) jobs.FamilySettings {
		fs := jobs.DefaultFamilySettings(family, runtime.NumCPU(), poll)
		if concurrency > 0 {
			fs.Concurrency = concurrency
		}
		return fs
	})
	w := jobs.NewServer(s.redisOpt, jobs.WorkerConfig(max(concurrency, 0), poll, pools), discardLogger())
	jobs.RegisterTasks(w, s.svc, tb.TempDir(), discardLogger())
	if err := w.Start(); err != nil {
		tb.Fatal(err)
	}
	return w
}

// engineOptions decodes options as the registry does, for running an engine directly.
func engineOptions(tb testing.TB, specs []domain.OperationSpec, op, raw string) any {
	return enginetest.Options(tb, specs, op, raw)
}
