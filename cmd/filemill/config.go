package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/filemill/filemill/cmd/filemill/listener"
	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/jobs"
	"github.com/filemill/filemill/jobs/ops/office"
	"github.com/filemill/filemill/storage/fetch"
)

// Config is every setting of the binary. Flags win over FILEMILL_* variables, which win
// over the embedded defaults.
type Config struct {
	Addr        string
	StorageAddr string
	// MetricsAddr is where the process serves GET /metrics; "" serves none.
	MetricsAddr        string
	DataDir            string
	WorkDir            string
	DatabaseURL        string
	RedisURL           string
	StorageURL         string
	PublicURL          string
	StoragePublicURL   string
	StorageSecret      string
	OutboundAllowCIDRs []netip.Prefix
	LogLevel           string
	LogFormat          string
	WorkerConcurrency  int
	WorkerPollInterval time.Duration
	SweepInterval      time.Duration
	// Engines are the engine families a worker runs; nil: every one it has.
	Engines []string
	// EngineConcurrency overrides the jobs a worker runs at once per engine family.
	EngineConcurrency map[string]int
	// Office and OCR are the settings of those engines' pools.
	OfficeInstances, OfficeConversions int
	OfficeTimeout, OfficeQueueTimeout  time.Duration
	OfficeMemoryLimit                  int64
	OfficeSandbox                      string
	OCRParallel, OCRDPI, OCRMaxPages   int
	// ClamdAddress is clamd's socket (unix:/path or tcp://host:port); ClamdMaxStream the
	// largest file it is sent.
	ClamdAddress   string
	ClamdMaxStream int64
	// ClamdAddressSet is whether FILEMILL_CLAMD_ADDRESS was given rather than defaulted.
	ClamdAddressSet bool
	// ClamdStart says when a process runs a clamd of its own (auto, always, never), on
	// the signatures in ClamdDatabaseDir ("": the system clamd's).
	ClamdStart       string
	ClamdDatabaseDir string
	// WebhookConcurrency is how many delivery attempts a worker process makes at once;
	// WebhookEndpointConcurrency how many of them may go to one endpoint.
	WebhookConcurrency         int
	WebhookEndpointConcurrency int
	// Listener is the limits of the API and storage listeners (bodies, connections).
	Listener listener.Config
	Domain   domain.Config
}

// The metrics listen on loopback unless told otherwise: they show every tenant's queue
// depths and ask for no key. metricsOff turns them off.
const (
	defaultMetricsAddr = "127.0.0.1:9090"
	metricsOff         = "off"
)

// setting describes one configuration value: its flag, its variable and its default.
type setting struct {
	flag, env, def, help string
	target               *string
}

type rawConfig struct {
	addr, storageAddr, metricsAddr, dataDir, databaseURL, redisURL, storageURL, publicURL, storagePublicURL string
	storageSecret, outboundAllow, logLevel, logFormat, rateLimit, concurrency, maxFileSize                  string
	hashWindow, workerConcurrency, uploadURLTTL, authCacheTTL, workerPoll, workDir                          string
	engines, engineConcurrency, jobTimeout, operationTimeouts                                               string
	jobLease, sweepInterval, maxArtifacts, jobMemory, jobDisk, jobDiskMax                                   string
	officeInstances, officeConversions, officeTimeout, officeQueueTimeout, officeMemory                     string
	officeSandbox                                                                                           string
	ocrParallel, ocrDPI, ocrMaxPages                                                                        string
	clamdAddress, clamdMaxStream, clamdStart, clamdDatabaseDir                                              string
	eventRetention, webhookConcurrency, webhookEndpointConcurrency                                          string
	bodyReadTimeout, bodyMinRate, maxConnsPerAddress                                                        string
	consoleRateLimit, sessionIdleTimeout, sessionLifetime                                                   string
	// defaulted names the settings (by variable) that took their default.
	defaulted map[string]bool
}

func (rc *rawConfig) settings() []setting {
	return []setting{
		{"addr", "FILEMILL_ADDR", "127.0.0.1:8080", "API listen address", &rc.addr},
		{"storage-addr", "FILEMILL_STORAGE_ADDR", "127.0.0.1:8081", "storage host listen address (local storage)", &rc.storageAddr},
		{"metrics-addr", "FILEMILL_METRICS_ADDR", defaultMetricsAddr, "listen address of GET /metrics (Prometheus; every tenant's figures, no key asked: keep it on the operator's network) in serve, api and worker processes; empty or off serves none", &rc.metricsAddr},
		{"data-dir", "FILEMILL_DATA_DIR", "./data", "directory for the embedded database, local blobs and secrets", &rc.dataDir},
		{"work-dir", "FILEMILL_WORK_DIR", "", "scratch space of running jobs, a directory per attempt removed as it ends (default: tmp in the data dir)", &rc.workDir},
		{"database-url", "FILEMILL_DATABASE_URL", "", "postgres://… or a SQLite path (default: SQLite in the data dir)", &rc.databaseURL},
		{"redis-url", "FILEMILL_REDIS_URL", "", "redis://host:port/db (default: embedded in-process server)", &rc.redisURL},
		{"storage-url", "FILEMILL_STORAGE_URL", "", "s3://key:secret@host:port/bucket (default: local disk in the data dir)", &rc.storageURL},
		{"public-url", "FILEMILL_PUBLIC_URL", "", "base URL clients use for the API (default: http://ADDR)", &rc.publicURL},
		{"storage-public-url", "FILEMILL_STORAGE_PUBLIC_URL", "", "base URL clients use for the storage host (default: http://STORAGE_ADDR)", &rc.storagePublicURL},
		{"storage-secret", "FILEMILL_STORAGE_SECRET", "", "HMAC key (hex, ≥ 32 bytes) signing local storage URLs (default: generated into the data dir)", &rc.storageSecret},
		{"outbound-allow-cidrs", "FILEMILL_OUTBOUND_ALLOW_CIDRS", "", "comma-separated networks outbound fetches may reach despite being private", &rc.outboundAllow},
		{"log-level", "FILEMILL_LOG_LEVEL", "info", "debug, info, warn or error", &rc.logLevel},
		{"log-format", "FILEMILL_LOG_FORMAT", "json", "json or text", &rc.logFormat},
		{"rate-limit-per-minute", "FILEMILL_RATE_LIMIT_PER_MINUTE", "600", "default requests per minute per key", &rc.rateLimit},
		{"project-concurrency-limit", "FILEMILL_PROJECT_CONCURRENCY_LIMIT", "50", "default queued+running jobs per project", &rc.concurrency},
		{"max-file-size", "FILEMILL_MAX_FILE_SIZE", "5368709120", "largest accepted file in bytes", &rc.maxFileSize},
		{"hash-window", "FILEMILL_HASH_WINDOW", "5368709120", "files up to this many bytes get a SHA-256", &rc.hashWindow},
		{"worker-concurrency", "FILEMILL_WORKER_CONCURRENCY", "0", "jobs run at once per worker process (0: twice the CPUs)", &rc.workerConcurrency},
		{"upload-url-ttl", "FILEMILL_UPLOAD_URL_TTL", "1h", "lifetime of upload URLs", &rc.uploadURLTTL},
		{"worker-poll-interval", "FILEMILL_WORKER_POLL_INTERVAL", jobs.DefaultWorkerPollInterval.String(), "how often an idle worker looks for jobs no enqueue announced (an enqueue wakes it at once): retries, a lost wake-up", &rc.workerPoll},
		{"job-lease", "FILEMILL_JOB_LEASE", "30s", "how long a worker's claim on a running job holds unrenewed; a job whose worker died runs again after it", &rc.jobLease},
		{"office-instances", "FILEMILL_OFFICE_INSTANCES", "0", "LibreOffice instances a worker keeps warm for convert (0: the CPUs)", &rc.officeInstances},
		{"office-conversions-per-instance", "FILEMILL_OFFICE_CONVERSIONS_PER_INSTANCE", "200", "an instance is replaced after this many conversions", &rc.officeConversions},
		{"office-timeout", "FILEMILL_OFFICE_TIMEOUT", "2m", "one conversion on an instance, waiting for a free one not counted", &rc.officeTimeout},
		{"office-queue-timeout", "FILEMILL_OFFICE_QUEUE_TIMEOUT", "5m", "longest wait for a free LibreOffice instance", &rc.officeQueueTimeout},
		{"office-memory-limit", "FILEMILL_OFFICE_MEMORY_LIMIT", "4294967296", "address-space limit of each LibreOffice instance, bytes", &rc.officeMemory},
		{"office-sandbox", "FILEMILL_OFFICE_SANDBOX", "auto", "confine each LibreOffice instance with bubblewrap so documents cannot read the worker's files: auto (when bubblewrap works here, else a warning), on (required), off", &rc.officeSandbox},
		{"ocr-parallel", "FILEMILL_OCR_PARALLEL", "0", "pages of one OCR job recognised at once, one core each (0: the CPUs)", &rc.ocrParallel},
		{"ocr-dpi", "FILEMILL_OCR_DPI", "300", "resolution PDF pages are rendered at for OCR", &rc.ocrDPI},
		{"ocr-max-pages", "FILEMILL_OCR_MAX_PAGES", "500", "longest PDF OCR accepts", &rc.ocrMaxPages},
		{"clamd-address", "FILEMILL_CLAMD_ADDRESS", "unix:/run/clamav/clamd.ctl", "clamd's socket for scan and validation.scan: unix:/path or tcp://host:port", &rc.clamdAddress},
		{"clamd-start", "FILEMILL_CLAMD_START", "auto", "run a clamd of filemill's own: auto (serve, when FILEMILL_CLAMD_ADDRESS is not set, nothing answers there and clamd is installed), always, or never", &rc.clamdStart},
		{"clamd-database-dir", "FILEMILL_CLAMD_DATABASE_DIR", "", "signatures of filemill's own clamd (default: the DatabaseDirectory of /etc/clamav/clamd.conf, else /var/lib/clamav)", &rc.clamdDatabaseDir},
		{"clamd-max-stream-bytes", "FILEMILL_CLAMD_MAX_STREAM_BYTES", "26214400", "largest file sent to clamd (its StreamMaxLength); larger files fail the scan", &rc.clamdMaxStream},
		{"sweep-interval", "FILEMILL_SWEEP_INTERVAL", "30s", "how often workers look for jobs lost in an outage or with a dead worker, and run them again", &rc.sweepInterval},
		{"event-retention", "FILEMILL_EVENT_RETENTION", "720h", "how long events are kept (GET /v1/events, file history) before they are swept", &rc.eventRetention},
		{"webhook-concurrency", "FILEMILL_WEBHOOK_CONCURRENCY", "64", "webhook delivery attempts one worker process makes at once", &rc.webhookConcurrency},
		{"webhook-endpoint-concurrency", "FILEMILL_WEBHOOK_ENDPOINT_CONCURRENCY", "8", "of those, how many may go to one endpoint at once, so a slow endpoint cannot hold up the others", &rc.webhookEndpointConcurrency},
		{"body-read-timeout", "FILEMILL_BODY_READ_TIMEOUT", "1m", "longest wait for the next bytes of a request body (API and storage host), and the grace before the minimum rate applies; a body past it is answered 408 (0 disables)", &rc.bodyReadTimeout},
		{"body-min-rate", "FILEMILL_BODY_MIN_RATE", "1024", "bytes a second a request body must average once the read timeout has passed since it began (0: only the read timeout)", &rc.bodyMinRate},
		{"max-conns-per-address", "FILEMILL_MAX_CONNS_PER_ADDRESS", "128", "connections one client address may hold open on each listener; more are answered 429 (0: no cap; behind a proxy every client has its address)", &rc.maxConnsPerAddress},
		{"auth-cache-ttl", "FILEMILL_AUTH_CACHE_TTL", "1s", "how long a process remembers an authenticated key (0 disables); a revocation made elsewhere takes effect within it", &rc.authCacheTTL},
		{"engines", "FILEMILL_ENGINES", "", "comma-separated engine families a worker runs (default: all it has)", &rc.engines},
		{"engine-concurrency", "FILEMILL_ENGINE_CONCURRENCY", "", "jobs a worker runs at once per engine family, e.g. office=2,ocr=1 (defaults in README)", &rc.engineConcurrency},
		{"max-artifacts-per-job", "FILEMILL_MAX_ARTIFACTS_PER_JOB", "1000", "most artifacts one job makes; a job whose page count shows more is refused at creation", &rc.maxArtifacts},
		{"job-memory-limit", "FILEMILL_JOB_MEMORY_LIMIT", "2147483648", "bytes of memory one job's engine may use where it can be bounded per job (0: no bound)", &rc.jobMemory},
		{"job-disk-limit", "FILEMILL_JOB_DISK_LIMIT", "auto", "bytes one job may keep in its scratch directory; auto: 1 GiB plus 20 times its input", &rc.jobDisk},
		{"job-disk-limit-max", "FILEMILL_JOB_DISK_LIMIT_MAX", "21474836480", "most bytes any job may keep in its scratch directory (0: no cap)", &rc.jobDiskMax},
		{"job-timeout", "FILEMILL_JOB_TIMEOUT", "10m", "deadline of one attempt of an operation without its own", &rc.jobTimeout},
		{"operation-timeouts", "FILEMILL_OPERATION_TIMEOUTS", "", "deadlines of one attempt per operation, e.g. convert=2m,ocr=20m", &rc.operationTimeouts},
		{"console-rate-limit-per-minute", "FILEMILL_CONSOLE_RATE_LIMIT_PER_MINUTE", "1200", "requests per minute of one person signed in to the console", &rc.consoleRateLimit},
		{"session-idle-timeout", "FILEMILL_SESSION_IDLE_TIMEOUT", "12h", "a console session unused this long ends", &rc.sessionIdleTimeout},
		{"session-lifetime", "FILEMILL_SESSION_LIFETIME", "168h", "a console session ends this long after sign-in, however used", &rc.sessionLifetime},
	}
}

// registerConfigFlags adds the configuration flags to fs; call loadConfig after Parse.
func registerConfigFlags(fs *pflag.FlagSet) *rawConfig {
	rc := &rawConfig{}
	for _, s := range rc.settings() {
		fs.StringVar(s.target, s.flag, "", s.help+" ["+s.env+"]")
	}
	return rc
}

// loadConfig fills unset flags from the environment and defaults, and validates. An
// error names the setting to change.
func loadConfig(rc *rawConfig) (*Config, error) {
	// An empty FILEMILL_METRICS_ADDR turns the metrics off, where an empty variable
	// elsewhere means its default.
	if v, set := os.LookupEnv("FILEMILL_METRICS_ADDR"); set && v == "" && rc.metricsAddr == "" {
		rc.metricsAddr = metricsOff
	}
	rc.defaulted = map[string]bool{}
	for _, s := range rc.settings() {
		if *s.target == "" {
			*s.target = os.Getenv(s.env)
		}
		if *s.target == "" {
			*s.target = s.def
			rc.defaulted[s.env] = true
		}
	}
	c := &Config{Addr: rc.addr, StorageAddr: rc.storageAddr, MetricsAddr: rc.metricsAddr, DatabaseURL: rc.databaseURL, RedisURL: rc.redisURL,
		StorageURL: rc.storageURL, LogLevel: rc.logLevel, LogFormat: rc.logFormat, Domain: domain.DefaultConfig()}
	var err error
	if c.DataDir, err = filepath.Abs(rc.dataDir); err != nil {
		return nil, fmt.Errorf("FILEMILL_DATA_DIR: %w", err)
	}
	c.WorkDir = filepath.Join(c.DataDir, "tmp")
	if rc.workDir != "" {
		if c.WorkDir, err = filepath.Abs(rc.workDir); err != nil {
			return nil, fmt.Errorf("FILEMILL_WORK_DIR: %w", err)
		}
	}
	addrs := []struct{ name, v string }{{"FILEMILL_ADDR", c.Addr}, {"FILEMILL_STORAGE_ADDR", c.StorageAddr}, {"FILEMILL_METRICS_ADDR", c.MetricsAddr}}
	if c.MetricsAddr == metricsOff {
		c.MetricsAddr, addrs = "", addrs[:2]
	}
	for _, a := range addrs {
		if _, _, err := net.SplitHostPort(a.v); err != nil {
			return nil, fmt.Errorf("%s: %q is not host:port", a.name, a.v)
		}
	}
	if c.PublicURL, err = baseURL("FILEMILL_PUBLIC_URL", rc.publicURL, c.Addr); err != nil {
		return nil, err
	}
	if c.StoragePublicURL, err = baseURL("FILEMILL_STORAGE_PUBLIC_URL", rc.storagePublicURL, c.StorageAddr); err != nil {
		return nil, err
	}
	if c.DatabaseURL != "" && !strings.HasPrefix(c.DatabaseURL, "postgres://") && !strings.HasPrefix(c.DatabaseURL, "postgresql://") &&
		strings.Contains(c.DatabaseURL, "://") && !strings.HasPrefix(c.DatabaseURL, "sqlite://") && !strings.HasPrefix(c.DatabaseURL, "file:") {
		return nil, fmt.Errorf("FILEMILL_DATABASE_URL: %q is neither postgres://… nor a SQLite path", c.DatabaseURL)
	}
	if c.RedisURL != "" && !strings.HasPrefix(c.RedisURL, "redis://") && !strings.HasPrefix(c.RedisURL, "rediss://") {
		return nil, fmt.Errorf("FILEMILL_REDIS_URL: %q must start with redis:// or rediss://", c.RedisURL)
	}
	if c.StorageURL != "" && !strings.HasPrefix(c.StorageURL, "s3://") {
		return nil, fmt.Errorf("FILEMILL_STORAGE_URL: %q must be s3://… (leave it empty for local disk)", c.StorageURL)
	}
	if rc.storageSecret != "" {
		b, err := hex.DecodeString(rc.storageSecret)
		if err != nil || len(b) < 32 {
			return nil, errors.New("FILEMILL_STORAGE_SECRET: must be at least 64 hex characters (32 bytes)")
		}
		c.StorageSecret = rc.storageSecret
	}
	if c.OutboundAllowCIDRs, err = fetch.ParseAllowCIDRs(rc.outboundAllow); err != nil {
		return nil, err
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		return nil, fmt.Errorf("FILEMILL_LOG_LEVEL: %q is not debug, info, warn or error", c.LogLevel)
	}
	if c.LogFormat != "json" && c.LogFormat != "text" {
		return nil, fmt.Errorf("FILEMILL_LOG_FORMAT: %q is not json or text", c.LogFormat)
	}
	ints := []struct {
		name string
		v    string
		dst  *int
	}{
		{"FILEMILL_RATE_LIMIT_PER_MINUTE", rc.rateLimit, &c.Domain.DefaultRateLimit},
		{"FILEMILL_PROJECT_CONCURRENCY_LIMIT", rc.concurrency, &c.Domain.DefaultConcurrencyLimit},
		{"FILEMILL_MAX_ARTIFACTS_PER_JOB", rc.maxArtifacts, &c.Domain.MaxArtifactsPerJob},
		{"FILEMILL_CONSOLE_RATE_LIMIT_PER_MINUTE", rc.consoleRateLimit, &c.Domain.ConsoleRateLimit},
		{"FILEMILL_WORKER_CONCURRENCY", rc.workerConcurrency, &c.WorkerConcurrency},
		{"FILEMILL_WEBHOOK_CONCURRENCY", rc.webhookConcurrency, &c.WebhookConcurrency},
		{"FILEMILL_WEBHOOK_ENDPOINT_CONCURRENCY", rc.webhookEndpointConcurrency, &c.WebhookEndpointConcurrency},
	}
	for _, i := range ints {
		n, err := strconv.Atoi(i.v)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not an integer", i.name, i.v)
		}
		*i.dst = n
	}
	if c.WorkerConcurrency < 0 {
		return nil, errors.New("FILEMILL_WORKER_CONCURRENCY: must not be negative")
	}
	if c.Domain.ConsoleRateLimit < 1 {
		return nil, errors.New("FILEMILL_CONSOLE_RATE_LIMIT_PER_MINUTE: must be at least 1")
	}
	if c.WebhookConcurrency < 1 || c.WebhookConcurrency > 10000 {
		return nil, errors.New("FILEMILL_WEBHOOK_CONCURRENCY: must be between 1 and 10000")
	}
	if c.WebhookEndpointConcurrency < 1 || c.WebhookEndpointConcurrency > c.WebhookConcurrency {
		return nil, errors.New("FILEMILL_WEBHOOK_ENDPOINT_CONCURRENCY: must be between 1 and FILEMILL_WEBHOOK_CONCURRENCY")
	}
	if c.Domain.EventRetention, err = time.ParseDuration(rc.eventRetention); err != nil {
		return nil, fmt.Errorf("FILEMILL_EVENT_RETENTION: %q is not a duration like 720h", rc.eventRetention)
	}
	if c.Domain.MaxFileSize, err = strconv.ParseInt(rc.maxFileSize, 10, 64); err != nil {
		return nil, fmt.Errorf("FILEMILL_MAX_FILE_SIZE: %q is not a number of bytes", rc.maxFileSize)
	}
	if c.Domain.JobMemory, err = strconv.ParseInt(rc.jobMemory, 10, 64); err != nil || c.Domain.JobMemory < 0 {
		return nil, fmt.Errorf("FILEMILL_JOB_MEMORY_LIMIT: %q is not a number of bytes", rc.jobMemory)
	}
	if rc.jobDisk != "auto" {
		if c.Domain.JobDisk, err = strconv.ParseInt(rc.jobDisk, 10, 64); err != nil || c.Domain.JobDisk < 1 {
			return nil, fmt.Errorf("FILEMILL_JOB_DISK_LIMIT: %q is neither auto nor a positive number of bytes", rc.jobDisk)
		}
	}
	if c.Domain.JobDiskMax, err = strconv.ParseInt(rc.jobDiskMax, 10, 64); err != nil || c.Domain.JobDiskMax < 0 {
		return nil, fmt.Errorf("FILEMILL_JOB_DISK_LIMIT_MAX: %q is not a number of bytes", rc.jobDiskMax)
	}
	if c.Domain.HashWindow, err = strconv.ParseInt(rc.hashWindow, 10, 64); err != nil {
		return nil, fmt.Errorf("FILEMILL_HASH_WINDOW: %q is not a number of bytes", rc.hashWindow)
	}
	if c.Domain.UploadURLTTL, err = time.ParseDuration(rc.uploadURLTTL); err != nil {
		return nil, fmt.Errorf("FILEMILL_UPLOAD_URL_TTL: %q is not a duration like 1h", rc.uploadURLTTL)
	}
	if c.WorkerPollInterval, err = time.ParseDuration(rc.workerPoll); err != nil || c.WorkerPollInterval < time.Millisecond || c.WorkerPollInterval > 10*time.Second {
		return nil, fmt.Errorf("FILEMILL_WORKER_POLL_INTERVAL: %q is not a duration between 1ms and 10s", rc.workerPoll)
	}
	if c.Domain.JobLease, err = time.ParseDuration(rc.jobLease); err != nil || c.Domain.JobLease < time.Second || c.Domain.JobLease > time.Hour {
		return nil, fmt.Errorf("FILEMILL_JOB_LEASE: %q is not a duration between 1s and 1h", rc.jobLease)
	}
	if c.SweepInterval, err = time.ParseDuration(rc.sweepInterval); err != nil || c.SweepInterval < time.Second || c.SweepInterval > time.Hour {
		return nil, fmt.Errorf("FILEMILL_SWEEP_INTERVAL: %q is not a duration between 1s and 1h", rc.sweepInterval)
	}
	if c.Domain.SessionIdleTimeout, err = time.ParseDuration(rc.sessionIdleTimeout); err != nil || c.Domain.SessionIdleTimeout < time.Minute {
		return nil, fmt.Errorf("FILEMILL_SESSION_IDLE_TIMEOUT: %q is not a duration of at least 1m", rc.sessionIdleTimeout)
	}
	if c.Domain.SessionLifetime, err = time.ParseDuration(rc.sessionLifetime); err != nil || c.Domain.SessionLifetime < time.Minute {
		return nil, fmt.Errorf("FILEMILL_SESSION_LIFETIME: %q is not a duration of at least 1m", rc.sessionLifetime)
	}
	if c.Domain.AuthCacheTTL, err = time.ParseDuration(rc.authCacheTTL); err != nil {
		return nil, fmt.Errorf("FILEMILL_AUTH_CACHE_TTL: %q is not a duration like 1s", rc.authCacheTTL)
	}
	if c.Domain.JobTimeout, err = time.ParseDuration(rc.jobTimeout); err != nil || c.Domain.JobTimeout <= 0 {
		return nil, fmt.Errorf("FILEMILL_JOB_TIMEOUT: %q is not a positive duration like 10m", rc.jobTimeout)
	}
	if c.Domain.OperationTimeouts, err = parsePairs("FILEMILL_OPERATION_TIMEOUTS", rc.operationTimeouts, func(v string) (time.Duration, error) {
		d, err := time.ParseDuration(v)
		if err == nil && d <= 0 {
			err = errors.New("not positive")
		}
		return d, err
	}); err != nil {
		return nil, err
	}
	if c.EngineConcurrency, err = parsePairs("FILEMILL_ENGINE_CONCURRENCY", rc.engineConcurrency, func(v string) (int, error) {
		n, err := strconv.Atoi(v)
		if err == nil && n < 1 {
			err = errors.New("below 1")
		}
		return n, err
	}); err != nil {
		return nil, err
	}
	if rc.engines != "" {
		for _, e := range strings.Split(rc.engines, ",") {
			if e = strings.TrimSpace(e); e != "" {
				c.Engines = append(c.Engines, e)
			}
		}
	}
	if err := c.loadEngineSettings(rc); err != nil {
		return nil, err
	}
	if err := c.loadListenerSettings(rc); err != nil {
		return nil, err
	}
	if err := c.Domain.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// loadEngineSettings reads the settings of the engines' pools.
func (c *Config) loadEngineSettings(rc *rawConfig) error {
	for _, i := range []struct {
		name, v string
		min     int
		dst     *int
	}{
		{"FILEMILL_OFFICE_INSTANCES", rc.officeInstances, 0, &c.OfficeInstances},
		{"FILEMILL_OFFICE_CONVERSIONS_PER_INSTANCE", rc.officeConversions, 1, &c.OfficeConversions},
		{"FILEMILL_OCR_PARALLEL", rc.ocrParallel, 0, &c.OCRParallel},
		{"FILEMILL_OCR_DPI", rc.ocrDPI, 72, &c.OCRDPI},
		{"FILEMILL_OCR_MAX_PAGES", rc.ocrMaxPages, 1, &c.OCRMaxPages},
	} {
		n, err := strconv.Atoi(i.v)
		if err != nil || n < i.min {
			return fmt.Errorf("%s: %q is not an integer of at least %d", i.name, i.v, i.min)
		}
		*i.dst = n
	}
	for _, d := range []struct {
		name, v string
		dst     *time.Duration
	}{
		{"FILEMILL_OFFICE_TIMEOUT", rc.officeTimeout, &c.OfficeTimeout},
		{"FILEMILL_OFFICE_QUEUE_TIMEOUT", rc.officeQueueTimeout, &c.OfficeQueueTimeout},
	} {
		v, err := time.ParseDuration(d.v)
		if err != nil || v <= 0 {
			return fmt.Errorf("%s: %q is not a positive duration like 2m", d.name, d.v)
		}
		*d.dst = v
	}
	var err error
	c.ClamdAddress, c.ClamdAddressSet = rc.clamdAddress, !rc.defaulted["FILEMILL_CLAMD_ADDRESS"]
	c.ClamdStart, c.ClamdDatabaseDir = rc.clamdStart, rc.clamdDatabaseDir
	switch c.ClamdStart {
	case clamdStartAuto, clamdStartAlways, clamdStartNever:
	default:
		return fmt.Errorf("FILEMILL_CLAMD_START: %q is not auto, always or never", c.ClamdStart)
	}
	if c.ClamdMaxStream, err = strconv.ParseInt(rc.clamdMaxStream, 10, 64); err != nil || c.ClamdMaxStream < 1 {
		return fmt.Errorf("FILEMILL_CLAMD_MAX_STREAM_BYTES: %q is not a positive number of bytes", rc.clamdMaxStream)
	}
	if c.OfficeMemoryLimit, err = strconv.ParseInt(rc.officeMemory, 10, 64); err != nil || c.OfficeMemoryLimit < 256<<20 {
		return fmt.Errorf("FILEMILL_OFFICE_MEMORY_LIMIT: %q is not a number of bytes of at least 268435456", rc.officeMemory)
	}
	c.OfficeSandbox = rc.officeSandbox
	if err := office.CheckSandboxMode(c.OfficeSandbox); err != nil {
		return fmt.Errorf("FILEMILL_OFFICE_SANDBOX: %w", err)
	}
	return nil
}

// loadListenerSettings reads the limits of the API and storage listeners.
func (c *Config) loadListenerSettings(rc *rawConfig) error {
	c.Listener = listener.DefaultConfig()
	var err error
	if c.Listener.BodyReadTimeout, err = time.ParseDuration(rc.bodyReadTimeout); err != nil || c.Listener.BodyReadTimeout < 0 {
		return fmt.Errorf("FILEMILL_BODY_READ_TIMEOUT: %q is not a duration like 1m (0 disables)", rc.bodyReadTimeout)
	}
	if c.Listener.MinBodyRate, err = strconv.ParseInt(rc.bodyMinRate, 10, 64); err != nil || c.Listener.MinBodyRate < 0 {
		return fmt.Errorf("FILEMILL_BODY_MIN_RATE: %q is not a number of bytes a second (0 disables)", rc.bodyMinRate)
	}
	if c.Listener.MinBodyRate > 0 && c.Listener.BodyReadTimeout == 0 {
		return errors.New("FILEMILL_BODY_MIN_RATE: needs FILEMILL_BODY_READ_TIMEOUT, the grace before it applies; set it, or set the rate to 0")
	}
	if c.Listener.MaxConnsPerAddress, err = strconv.Atoi(rc.maxConnsPerAddress); err != nil || c.Listener.MaxConnsPerAddress < 0 {
		return fmt.Errorf("FILEMILL_MAX_CONNS_PER_ADDRESS: %q is not a number of connections (0: no cap)", rc.maxConnsPerAddress)
	}
	return nil
}

// parsePairs reads "name=value,name=value" into a map, naming the setting in errors.
func parsePairs[T any](setting, raw string, parse func(string) (T, error)) (map[string]T, error) {
	out := map[string]T{}
	for _, part := range strings.Split(raw, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" {
			return nil, fmt.Errorf("%s: %q is not name=value", setting, part)
		}
		t, err := parse(v)
		if err != nil {
			return nil, fmt.Errorf("%s: the value of %s, %q, is not valid", setting, k, v)
		}
		out[k] = t
	}
	return out, nil
}

func baseURL(name, v, addr string) (string, error) {
	if v == "" {
		return "http://" + addr, nil
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%s: %q must be an http(s) base URL", name, v)
	}
	return strings.TrimRight(v, "/"), nil
}

// databaseURL is the configured database, or the embedded SQLite file.
func (c *Config) databaseURL() string {
	if c.DatabaseURL != "" {
		return c.DatabaseURL
	}
	return filepath.Join(c.DataDir, "filemill.db")
}

// storageSecret returns the HMAC key for local storage URLs: the configured one, or one
// generated once and kept in the data directory so URLs survive restarts.
func (c *Config) storageSecret() ([]byte, error) {
	if c.StorageSecret != "" {
		return hex.DecodeString(c.StorageSecret)
	}
	path := filepath.Join(c.DataDir, "storage.secret")
	if b, err := os.ReadFile(path); err == nil {
		return hex.DecodeString(strings.TrimSpace(string(b)))
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	// O_EXCL: when two processes start at once, one writes and the other reads its key.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		time.Sleep(100 * time.Millisecond)
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		return hex.DecodeString(strings.TrimSpace(string(b)))
	}
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	defer f.Close()
	if _, err := f.WriteString(hex.EncodeToString(key) + "\n"); err != nil {
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	return key, f.Sync()
}
