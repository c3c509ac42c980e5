package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/driver/pgdriver"

	"github.com/filemill/filemill/cmd/filemill/listener"
	"github.com/filemill/filemill/db"
	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/domain/logging"
	"github.com/filemill/filemill/domain/netguard"
	"github.com/filemill/filemill/graph"
	"github.com/filemill/filemill/jobs"
	"github.com/filemill/filemill/jobs/ops/catalog"
	"github.com/filemill/filemill/jobs/ops/scan"
	"github.com/filemill/filemill/jobs/ratelimit"
	"github.com/filemill/filemill/rest"
	"github.com/filemill/filemill/storage"
	"github.com/filemill/filemill/storage/fetch"
	"github.com/filemill/filemill/web"
)

type role int

const (
	roleAPI role = 1 << iota
	roleWorker
)

// app holds the parts one process runs on. The choice between embedded and production
// parts is made here, once; everything above sees only domain interfaces.
type app struct {
	cfg      *Config
	log      *slog.Logger
	store    *db.Store
	embedded *jobs.EmbeddedRedis
	redisOpt asynq.RedisConnOpt
	redis    *redis.Client
	blobs    domain.Blobs
	local    *storage.Local // nil unless blobs live on local disk
	queue    *jobs.Queue
	registry *domain.Registry
	engines  map[string]domain.Engine // the engine families this process runs
	// closeEngines stops the engines' pools and processes.
	closeEngines func()
	// enginesNotStarted says why each engine family this machine cannot run did not
	// start; clamd is the clamd of filemill's own, when this process runs one.
	enginesNotStarted map[string]error
	clamd             *scan.Daemon
	// The event stream and webhook delivery.
	bus      eventBus
	webhooks *jobs.WebhookQueue
	sender   *jobs.HTTPSender
	svc      *domain.Services
	// metrics is the registry the process's /metrics serves; jobMetrics what the
	// services measure into it.
	metrics    *prometheus.Registry
	jobMetrics *jobs.Metrics
}

// eventBus is the domain's bus and the relay's nudge.
type eventBus interface {
	domain.EventBus
	Nudge()
	Nudges() <-chan struct{}
}

// logRepeatInterval: a failure that repeats (a dependency down) is logged once per
// interval, with a count.
const logRepeatInterval = 10 * time.Second

// newLogger returns the process's logger and sends the drivers' own log lines through
// it, so every line is structured, and one per interval while a server is down.
func newLogger(cfg *Config) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel))
	opts := &slog.HandlerOptions{Level: level}
	var l *slog.Logger
	if cfg.LogFormat == "text" {
		l = slog.New(slog.NewTextHandler(os.Stderr, opts))
	} else {
		l = slog.New(slog.NewJSONHandler(os.Stderr, opts))
	}
	repeated := logging.NewRepeated(l, logRepeatInterval)
	redis.SetLogger(logging.Printer{R: repeated, Level: slog.LevelWarn, Component: "redis"})
	pgdriver.Logger = logging.Printer{R: repeated, Level: slog.LevelWarn, Component: "postgres"}
	bun.SetLogger(logging.PlainPrinter{Printer: logging.Printer{R: repeated, Level: slog.LevelWarn, Component: "bun"}})
	return l
}

// openStore opens and migrates the metadata store.
func openStore(ctx context.Context, cfg *Config) (*db.Store, error) {
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("FILEMILL_DATA_DIR: %w", err)
	}
	store, err := db.Open(ctx, cfg.databaseURL())
	if err != nil {
		return nil, fmt.Errorf("FILEMILL_DATABASE_URL: %w", err)
	}
	if err := store.Migrate(ctx); err != nil {
		store.Close()
		return nil, fmt.Errorf("migrate: %w", err)
	}
	return store, nil
}

func openApp(ctx context.Context, cfg *Config, roles role) (_ *app, err error) {
	a := &app{cfg: cfg, log: newLogger(cfg)}
	defer func() {
		if err != nil {
			a.close()
		}
	}()
	if a.store, err = openStore(ctx, cfg); err != nil {
		return nil, err
	}
	redisURL := cfg.RedisURL
	if redisURL == "" {
		if roles != roleAPI|roleWorker {
			return nil, errors.New("FILEMILL_REDIS_URL: required for 'api' and 'worker': the embedded Redis lives inside one 'serve' process")
		}
		if a.embedded, err = jobs.StartEmbeddedRedis(); err != nil {
			return nil, fmt.Errorf("embedded redis: %w", err)
		}
		redisURL = a.embedded.URL()
	}
	var ropts *redis.Options
	if a.redisOpt, ropts, err = jobs.ParseRedisURL(redisURL); err != nil {
		return nil, fmt.Errorf("FILEMILL_REDIS_URL: %w", err)
	}
	a.redis = redis.NewClient(ropts)
	if err := a.redis.Ping(ctx).Err(); err != nil {
		return nil, fmt.Errorf("FILEMILL_REDIS_URL: cannot reach redis: %w", err)
	}
	if cfg.StorageURL == "" {
		secret, err := cfg.storageSecret()
		if err != nil {
			return nil, fmt.Errorf("FILEMILL_STORAGE_SECRET: %w", err)
		}
		a.local, err = storage.NewLocal(storage.LocalConfig{Dir: filepath.Join(cfg.DataDir, "blobs"),
			PublicURL: cfg.StoragePublicURL, Secret: secret, OnEgress: a.recordEgress,
			Logger: a.log, LogRepeatInterval: logRepeatInterval})
		if err != nil {
			return nil, fmt.Errorf("local storage: %w", err)
		}
		a.blobs = storage.Traced(a.local)
	} else {
		s3cfg, err := storage.ParseS3URL(cfg.StorageURL)
		if err != nil {
			return nil, fmt.Errorf("FILEMILL_STORAGE_URL: %w", err)
		}
		s3, err := storage.NewS3(ctx, s3cfg)
		if err != nil {
			return nil, fmt.Errorf("FILEMILL_STORAGE_URL: %w", err)
		}
		a.blobs = storage.Traced(s3)
	}
	a.queue = jobs.NewQueue(a.redisOpt)
	fetcher := fetch.New(fetch.Config{AllowCIDRs: cfg.OutboundAllowCIDRs})
	if a.registry, err = catalog.Registry(); err != nil {
		return nil, fmt.Errorf("operations: %w", err)
	}
	if a.clamd, err = ownClamd(ctx, cfg, roles, a.log); err != nil {
		return nil, err
	}
	scanner, err := newScanner(cfg, a.clamd, a.log)
	if err != nil {
		return nil, err
	}
	if roles&roleWorker != 0 {
		if a.engines, a.closeEngines, a.enginesNotStarted, err = newEngines(cfg, scanner, a.log); err != nil {
			return nil, err
		}
	}
	prober := catalog.Prober(a.engines)
	// The embedded default is one process: its stream stays in it. Otherwise every
	// process shares Redis pub/sub, so a relay in any worker reaches subscribers in any
	// API process.
	if a.embedded != nil {
		a.bus = jobs.NewLocalBus()
	} else {
		a.bus = jobs.NewRedisBus(a.redis, a.log)
	}
	a.store.OnOutbox(a.bus.Nudge)
	a.webhooks = jobs.NewWebhookQueue(a.redisOpt)
	guard := &netguard.Guard{Allow: cfg.OutboundAllowCIDRs}
	a.sender = jobs.NewHTTPSender(jobs.SenderConfig{Guard: guard})
	a.metrics = prometheus.NewRegistry()
	a.jobMetrics = jobs.NewMetrics(a.metrics)
	a.metrics.MustRegister(jobs.NewQueueCollector(asynq.NewInspectorFromRedisClient(a.redis)))
	a.svc = domain.NewServices(cfg.Domain, domain.Deps{Store: a.store, Blobs: a.blobs, Queue: a.queue,
		Fetcher: fetcher, Registry: a.registry, Engines: a.engines,
		Directory: jobs.NewDirectory(a.redis, 250*time.Millisecond), Pages: prober, Scratch: storage.TempScratch{}, Verifier: prober, Scanner: scanner,
		Guard: guard, Bus: a.bus, Deliveries: a.webhooks, WebhookSender: jobs.ObserveSender(a.sender, a.jobMetrics),
		Limiter: ratelimit.New(a.redis), Observer: a.jobMetrics, Log: a.log})
	return a, nil
}

// recordEgress counts bytes the storage host served. It runs after the response, so a
// failure is logged rather than surfaced to anyone.
func (a *app) recordEgress(key string, n int64) {
	if a.svc == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := a.svc.Usage.RecordEgress(ctx, key, n); err != nil {
		a.log.Warn("record egress", "key", key, "bytes", n, "error", err.Error())
	}
}

func (a *app) close() {
	if a.closeEngines != nil {
		a.closeEngines()
	}
	if a.clamd != nil {
		a.clamd.Close()
	}
	if a.queue != nil {
		a.queue.Close()
	}
	if a.webhooks != nil {
		a.webhooks.Close()
	}
	if a.sender != nil {
		a.sender.Close()
	}
	if c, ok := a.bus.(interface{ Close() error }); ok {
		c.Close()
	}
	if a.redis != nil {
		a.redis.Close()
	}
	if a.embedded != nil {
		a.embedded.Close()
	}
	if a.store != nil {
		a.store.Close()
	}
}

// serverCommand is serve, api or worker: the configuration flags, and the parts of the
// service the roles name.
func serverCommand(name, short string, roles role) *cobra.Command {
	cmd := &cobra.Command{Use: name, Short: short, Args: noArgs}
	rc := registerConfigFlags(cmd.Flags())
	cmd.RunE = func(c *cobra.Command, _ []string) error {
		cfg, err := loadConfig(rc)
		if err != nil {
			return err
		}
		return runServer(c.Context(), cfg, roles)
	}
	return cmd
}

func migrateCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "migrate", Short: "apply database migrations (also done on start)", Args: noArgs}
	rc := registerConfigFlags(cmd.Flags())
	cmd.RunE = func(c *cobra.Command, _ []string) error {
		cfg, err := loadConfig(rc)
		if err != nil {
			return err
		}
		return runMigrate(c.Context(), cfg)
	}
	return cmd
}

// noArgs refuses positional arguments as a usage error.
func noArgs(c *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageError(fmt.Sprintf("%s takes no arguments (got %q)\nRun '%s --help' for usage.", c.CommandPath(), args[0], c.CommandPath()))
	}
	return nil
}

func runServer(ctx context.Context, cfg *Config, roles role) error {
	shutdownTracing, err := setupTracing(ctx, roleName(roles), os.Stdout)
	if err != nil {
		return err
	}
	defer func() {
		// Spans still buffered are sent, within a bound: an unreachable collector must
		// not hold the shutdown.
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = shutdownTracing(sctx)
	}()
	a, err := openApp(ctx, cfg, roles)
	if err != nil {
		return err
	}
	defer a.close()
	log := a.log

	if roles&roleAPI != 0 && cfg.DatabaseURL == "" {
		if err := firstStartBootstrap(ctx, a); err != nil {
			return err
		}
	}

	var worker *jobs.Server
	if roles&roleWorker != 0 {
		pools := jobs.EnginePools(a.registry, a.engines, engineSettings(cfg))
		// Webhook attempts have a pool of their own, so endpoints that are slow to answer
		// never take the slots jobs run in.
		pools = append(pools, jobs.WebhookPool(cfg.WebhookConcurrency))
		wc := jobs.WorkerConfig(cfg.WorkerConcurrency, cfg.WorkerPollInterval, pools)
		wc.SweepInterval, wc.LogRepeatInterval = cfg.SweepInterval, logRepeatInterval
		worker = jobs.NewServer(a.redisOpt, wc, log)
		jobs.RegisterTasks(worker, a.svc, cfg.WorkDir, log)
		jobs.RegisterWebhookTasks(worker, a.svc, a.webhooks, jobs.WebhookConfig{PerEndpoint: cfg.WebhookEndpointConcurrency,
			Nudges: a.bus.Nudges()}, log)
		a.metrics.MustRegister(worker.PoolCollector(a.engines))
		checks := worker.AdvertiseEngines(a.engines)
		if err := worker.Start(); err != nil {
			return fmt.Errorf("start workers: %w", err)
		}
		log.Info("workers started")
		go reportEngines(ctx, checks, a.enginesNotStarted, os.Stdout, log)
	}

	errc := make(chan error, 3) // one per listener: a failure to listen is sent before anything reads
	var servers []*listener.Server
	if roles&roleAPI != 0 {
		api := rest.NewServer(rest.Config{
			RequestTimeout:  30 * time.Second,
			ReadinessChecks: a.readinessChecks(roles),
			Metrics:         a.metrics,
		}, a.svc, log)
		gcfg := graph.DefaultServerConfig()
		gcfg.StatusOf = rest.StatusOf
		// The console is served at the public URL: its pages are the console's origin,
		// and a public URL on HTTPS makes the session's cookies Secure.
		if o := originOf(cfg.PublicURL); o != "" {
			gcfg.ConsoleOrigins = []string{o}
			gcfg.SecureCookies = strings.HasPrefix(o, "https://")
		}
		gql := graph.NewServer(gcfg, a.svc, a.bus, log)
		console := web.New(web.Config{StorageOrigins: storageOrigins(cfg)})
		if s := listen(cfg, cfg.Addr, apiHandler(api, gql, console), "api", log, errc); s != nil {
			servers = append(servers, s)
		}
		if cfg.MetricsAddr != "" {
			if s := listen(cfg, cfg.MetricsAddr, api.MetricsHandler(), "metrics", log, errc); s != nil {
				servers = append(servers, s)
			}
		}
		if a.local != nil {
			if s := listen(cfg, cfg.StorageAddr, a.local.Handler(), "storage", log, errc); s != nil {
				servers = append(servers, s)
			}
		}
	} else if cfg.MetricsAddr != "" {
		// A worker alone serves the figures of its jobs, pools and queues on a listener
		// of its own, with the Go runtime's and the process's.
		a.metrics.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", promhttp.HandlerFor(a.metrics, promhttp.HandlerOpts{}))
		if s := listen(cfg, cfg.MetricsAddr, mux, "metrics", log, errc); s != nil {
			servers = append(servers, s)
		}
	}

	var retired <-chan struct{} // stays nil without a worker
	if worker != nil {
		retired = worker.Retired()
	}
	select {
	case <-ctx.Done():
		log.Info("shutting down")
	case err = <-errc:
		log.Error("server failed", "error", err.Error())
	case <-retired:
		// Work this process cannot stop runs on in it: only a new process is clean.
		err = fmt.Errorf("worker out of service (%s); exiting for a fresh process to take over", worker.RetiredReason())
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, s := range servers {
		_ = s.Shutdown(shutdownCtx)
	}
	if worker != nil {
		// Running jobs get the shutdown timeout to finish; the rest go back to the queue.
		worker.Shutdown()
	}
	return err
}

// apiHandler serves both front doors on one listener: GraphQL under /graphql, the
// console under /console/ and its playground at /graphql/play, REST (with health and
// readiness) everywhere else; a browser asking for / is sent to the console. The
// metrics have a listener of their own.
func apiHandler(api *rest.Server, gql *graph.Server, console *web.Handler) http.Handler {
	mux := http.NewServeMux()
	g := gql.Handler()
	mux.Handle("/graphql", g)
	mux.Handle("/graphql/", g)
	mux.HandleFunc("GET /graphql/play", console.ServePlayground)
	mux.HandleFunc("/console", console.ServeConsole)
	mux.HandleFunc("/console/", console.ServeConsole)
	rest := api.Handler()
	mux.Handle("/", rest)
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		if web.WantsHTML(r) {
			http.Redirect(w, r, web.Prefix, http.StatusFound)
			return
		}
		rest.ServeHTTP(w, r)
	})
	return mux
}

// storageOrigins are the origins browsers reach storage at through pre-signed URLs:
// the console's pages allow them (uploads, previews, downloads).
func storageOrigins(cfg *Config) []string {
	if cfg.StorageURL == "" {
		return []string{originOf(cfg.StoragePublicURL)}
	}
	s3, err := storage.ParseS3URL(cfg.StorageURL)
	if err != nil {
		return nil
	}
	if s3.PublicURL != "" {
		return []string{originOf(s3.PublicURL)}
	}
	scheme := "https://"
	if !s3.Secure {
		scheme = "http://"
	}
	// Path-style URLs use the endpoint; virtual-hosted ones a subdomain of it.
	return []string{scheme + s3.Endpoint, scheme + "*." + s3.Endpoint}
}

func originOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// listen serves h on addr with the configured limits (see package listener); nil, with
// the error sent on errc, when it cannot listen.
func listen(cfg *Config, addr string, h http.Handler, name string, log *slog.Logger, errc chan<- error) *listener.Server {
	lc := cfg.Listener
	lc.Name, lc.Logger, lc.LogRepeatInterval = name, log, logRepeatInterval
	srv, err := listener.Listen(addr, h, lc)
	if err != nil {
		errc <- fmt.Errorf("%s listener on %s: %w", name, addr, err)
		return nil
	}
	log.Info("listening", "server", name, "addr", srv.Addr().String(), "body_read_timeout", lc.BodyReadTimeout.String(),
		"body_min_rate", lc.MinBodyRate, "max_conns_per_address", lc.MaxConnsPerAddress)
	go func() {
		if err := srv.Serve(); err != nil {
			errc <- err
		}
	}()
	return srv
}

func (a *app) readinessChecks(roles role) []rest.Checker {
	checks := []rest.Checker{
		{Name: "database", Check: a.store.Ping},
		{Name: "redis", Check: func(ctx context.Context) error { return a.redis.Ping(ctx).Err() }},
		{Name: "storage", Check: a.blobs.Ping},
	}
	if roles&roleWorker != 0 {
		// Jobs copy their input here: a full work directory fails every job.
		dir := a.cfg.WorkDir
		checks = append(checks, rest.Checker{Name: "work_dir", Check: func(context.Context) error {
			err := os.MkdirAll(dir, 0o700)
			if err == nil {
				err = storage.WritableDir(dir)
			}
			if err != nil {
				return fmt.Errorf("work directory cannot be written: %w", err)
			}
			return nil
		}})
	}
	return checks
}

// roleName is the name of the command that runs roles, for the default service name
// of its traces.
func roleName(roles role) string {
	switch roles {
	case roleAPI:
		return "api"
	case roleWorker:
		return "worker"
	}
	return "serve"
}

// firstOwnerEmail is the console's first owner on the embedded default.
const firstOwnerEmail = "owner@localhost"

// firstStartBootstrap creates the default organization, project and keys the first
// time the embedded default starts, and its first console owner, and prints the keys
// and the owner's one-time link to set a password once.
func firstStartBootstrap(ctx context.Context, a *app) error {
	path := filepath.Join(a.cfg.DataDir, "bootstrap.json")
	org, err := a.store.FindOrganizationByName(ctx, "default")
	if err == nil {
		// A data directory from before the console had people gets its owner now.
		if n, err := a.store.CountMembers(ctx, org.ID, ""); err != nil || n > 0 {
			a.log.Info("bootstrap keys were printed on first start", "file", path)
			return err
		}
		link, err := firstOwner(ctx, a, org.ID)
		if err != nil {
			return err
		}
		fmt.Printf("\nfilemill: the console's first owner is %s.\n  set the password (one-time link): %s\n\n", firstOwnerEmail, link)
		return nil
	}
	if !errors.Is(err, domain.ErrNotFound) {
		return err
	}
	b, err := a.svc.Organizations.Bootstrap(ctx, "default", "default", 1000)
	if err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	link, err := firstOwner(ctx, a, b.Organization.ID)
	if err != nil {
		return err
	}
	boot := bootstrapJSON(b)
	boot["console_url"] = strings.TrimSuffix(a.cfg.PublicURL, "/") + web.Prefix
	boot["owner_email"] = firstOwnerEmail
	boot["set_password_url"] = link
	out, _ := json.MarshalIndent(boot, "", "  ")
	if err := os.WriteFile(path, append(out, '\n'), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	fmt.Printf("\nfilemill first start: organization %q, project %q, 1000 credits per environment.\n", "default", "default")
	fmt.Printf("  live API key: %s\n  test API key: %s\n", b.LiveSecret, b.TestSecret)
	fmt.Printf("  console:      %s (owner %s; set the password, one-time link: %s)\n", boot["console_url"], firstOwnerEmail, link)
	fmt.Printf("  (also in %s; shown here once)\n", path)
	fmt.Printf("  try: curl -H 'Authorization: Bearer %s' %s/v1/jobs\n\n", b.LiveSecret, a.cfg.PublicURL)
	return nil
}

// firstOwner makes the console's first owner of an organization and returns the
// one-time link to set their password.
func firstOwner(ctx context.Context, a *app, orgID string) (string, error) {
	u, err := a.svc.People.CreateUser(ctx, domain.NewUser{OrganizationID: orgID, Email: firstOwnerEmail, Role: domain.RoleOwner})
	if err != nil {
		return "", fmt.Errorf("create the console's first owner: %w", err)
	}
	return strings.TrimSuffix(a.cfg.PublicURL, "/") + domain.SetPasswordPath + u.PasswordToken, nil
}

func bootstrapJSON(b *domain.Bootstrap) map[string]string {
	return map[string]string{"organization_id": b.Organization.ID, "project_id": b.Project.ID,
		"api_key": b.LiveSecret, "test_api_key": b.TestSecret}
}

func runMigrate(ctx context.Context, cfg *Config) error {
	store, err := openStore(ctx, cfg)
	if err != nil {
		return err
	}
	store.Close()
	fmt.Println("migrations applied")
	return nil
}
