package domain

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/filemill/filemill/domain/netguard"
)

// Config holds the deployment's limits and defaults that the services enforce.
type Config struct {
	DefaultRateLimit        int           // requests per minute per key
	DefaultConcurrencyLimit int           // queued+running jobs per project
	MaxFileSize             int64         // bytes
	HashWindow              int64         // files larger than this get no sha256
	UploadURLTTL            time.Duration // lifetime of upload URLs
	UploadSessionTTL        time.Duration // an open session is swept after this
	IdempotencyTTL          time.Duration
	MaxWebhookEndpoints     int // per project and environment
	// EventRetention is how long events are kept (GET /v1/events, file history) before
	// they are swept.
	EventRetention time.Duration
	// AuthCacheTTL is how long an authenticated key is remembered in-process; a key
	// revoked or an organization suspended from another process is refused within it.
	// Zero disables the cache.
	AuthCacheTTL time.Duration
	// JobLease is how long a worker's claim on a running job holds without being
	// renewed; the worker renews it every third of it. A job whose lease ran out lost its
	// worker: the sweep hands it to another, and no other worker takes it before.
	JobLease time.Duration
	// MaxJobClaims bounds how often a job may be claimed, attempts cut short by a killed
	// worker or an outage included; a job claimed that often fails instead of stopping
	// another worker.
	MaxJobClaims int
	// JobTimeout bounds one attempt of an operation that has no timeout of its own in
	// OperationTimeouts and declares none (OperationSpec.Timeout); a preset's attempt
	// gets the sum of its steps'.
	JobTimeout        time.Duration
	OperationTimeouts map[string]time.Duration
	// StopGrace is how long an attempt past its deadline waits for its engine to stop
	// before it records the timeout anyway and reports the engine stuck
	// (jobs.Attempts.OnStuck): the attempt's slot stays taken until the engine has
	// really stopped.
	StopGrace time.Duration
	// IdempotencyLease is how long a request's claim of its Idempotency-Key outlives its
	// holder's last renewal (renewed five times per lease while the request runs): a
	// retry takes over the claim of a request whose process died this long after it died.
	IdempotencyLease time.Duration
	// MaxArtifactsPerJob bounds the artifacts one job makes: a job whose plan shows more
	// is refused at creation, and one that makes more fails.
	MaxArtifactsPerJob int
	// JobMemory bounds the memory one job's engine may use, in bytes, where the engine
	// can bound it per job (libvips' tracked memory, a child started for the job); past
	// it the job fails resource_limit_exceeded. 0: no bound of the job's own.
	JobMemory int64
	// JobDisk bounds the bytes one job may keep in its scratch directory (its input's
	// copy, what its engines write); 0 derives it from the job's input (JobDiskLimit).
	// JobDiskMax caps either. Past the bound the job fails resource_limit_exceeded.
	JobDisk    int64
	JobDiskMax int64

	// The console's people. Zero values take DefaultConfig's.
	ConsoleRateLimit   int           // requests per minute of one signed-in person
	SessionIdleTimeout time.Duration // a session unused this long ends
	SessionLifetime    time.Duration // a session ends this long after sign-in, however used
	SignInPerIP        int           // sign-in attempts per minute from one client address
	// SignInMaxFailures failed sign-ins of one email within SignInLockout lock it for
	// SignInLockout.
	SignInMaxFailures int
	SignInLockout     time.Duration
	InvitationTTL     time.Duration // how long an invitation link may be accepted
	PasswordLinkTTL   time.Duration // how long a set-password link works
	MaxProjects       int           // per organization
	MaxAPIKeys        int           // active keys per organization
	MaxMembers        int           // members and pending invitations per organization
}

// OperationTimeout bounds one attempt of op: FILEMILL_OPERATION_TIMEOUTS' word on it,
// else the deadline op declares, else JobTimeout. A nil op takes JobTimeout.
func (c Config) OperationTimeout(op *Operation) time.Duration {
	if op != nil {
		if d, ok := c.OperationTimeouts[op.Name]; ok && d > 0 {
			return d
		}
		if op.Timeout > 0 {
			return op.Timeout
		}
	}
	if c.JobTimeout > 0 {
		return c.JobTimeout
	}
	return 10 * time.Minute
}

// The scratch disk a job gets when JobDisk is 0: a base for its engines' own files
// (LibreOffice's, a render's pages) and a multiple of its input, since an output is
// often several times its input (a PDF rendered to PNG pages, a PNG to TIFF).
const (
	jobDiskBase     = 1 << 30
	jobDiskPerInput = 20
)

// JobDiskLimit is the scratch disk bound of a job whose inputs hold inputBytes:
// JobDisk, or the base plus a multiple of the inputs when it is 0, capped by JobDiskMax.
// 0: no bound.
func (c Config) JobDiskLimit(inputBytes int64) int64 {
	n := c.JobDisk
	if n == 0 {
		n = jobDiskBase + jobDiskPerInput*max(inputBytes, 0)
	}
	if c.JobDiskMax > 0 {
		n = min(n, c.JobDiskMax)
	}
	return n
}

// DefaultConfig returns the contract's defaults.
func DefaultConfig() Config {
	return Config{
		DefaultRateLimit:        600,
		DefaultConcurrencyLimit: 50,
		MaxFileSize:             5 << 30,
		HashWindow:              5 << 30,
		UploadURLTTL:            time.Hour,
		UploadSessionTTL:        24 * time.Hour,
		IdempotencyTTL:          24 * time.Hour,
		IdempotencyLease:        5 * time.Second,
		MaxWebhookEndpoints:     20,
		EventRetention:          30 * 24 * time.Hour,
		AuthCacheTTL:            time.Second,
		JobLease:                30 * time.Second,
		MaxJobClaims:            10,
		JobTimeout:              10 * time.Minute,
		StopGrace:               10 * time.Second,
		MaxArtifactsPerJob:      1000,
		JobMemory:               2 << 30,
		JobDiskMax:              20 << 30,
		ConsoleRateLimit:        1200,
		SessionIdleTimeout:      12 * time.Hour,
		SessionLifetime:         7 * 24 * time.Hour,
		SignInPerIP:             30,
		SignInMaxFailures:       10,
		SignInLockout:           15 * time.Minute,
		InvitationTTL:           7 * 24 * time.Hour,
		PasswordLinkTTL:         24 * time.Hour,
		MaxProjects:             100,
		MaxAPIKeys:              500,
		MaxMembers:              1000,
	}
}

// withPeopleDefaults fills the console's settings left zero.
func (c Config) withPeopleDefaults() Config {
	d := DefaultConfig()
	set := func(v *int, def int) {
		if *v == 0 {
			*v = def
		}
	}
	setD := func(v *time.Duration, def time.Duration) {
		if *v == 0 {
			*v = def
		}
	}
	set(&c.ConsoleRateLimit, d.ConsoleRateLimit)
	set(&c.SignInPerIP, d.SignInPerIP)
	set(&c.SignInMaxFailures, d.SignInMaxFailures)
	set(&c.MaxProjects, d.MaxProjects)
	set(&c.MaxAPIKeys, d.MaxAPIKeys)
	set(&c.MaxMembers, d.MaxMembers)
	setD(&c.SessionIdleTimeout, d.SessionIdleTimeout)
	setD(&c.SessionLifetime, d.SessionLifetime)
	setD(&c.SignInLockout, d.SignInLockout)
	setD(&c.InvitationTTL, d.InvitationTTL)
	setD(&c.PasswordLinkTTL, d.PasswordLinkTTL)
	return c
}

// Validate names the first setting that is out of range.
func (c Config) Validate() error {
	switch {
	case c.DefaultRateLimit < 1:
		return errors.New("FILEMILL_RATE_LIMIT_PER_MINUTE must be at least 1")
	case c.DefaultConcurrencyLimit < 1:
		return errors.New("FILEMILL_PROJECT_CONCURRENCY_LIMIT must be at least 1")
	case c.MaxFileSize < 1:
		return errors.New("FILEMILL_MAX_FILE_SIZE must be at least 1")
	case c.HashWindow < 0:
		return errors.New("FILEMILL_HASH_WINDOW must not be negative")
	case c.UploadURLTTL < time.Minute:
		return errors.New("FILEMILL_UPLOAD_URL_TTL must be at least 1m")
	case c.EventRetention < time.Hour:
		return errors.New("FILEMILL_EVENT_RETENTION must be at least 1h")
	case c.AuthCacheTTL < 0 || c.AuthCacheTTL > time.Minute:
		return errors.New("FILEMILL_AUTH_CACHE_TTL must be between 0 and 1m")
	case c.IdempotencyLease < 10*time.Millisecond || c.IdempotencyLease > time.Minute:
		return errors.New("the idempotency lease must be between 10ms and 1m")
	case c.JobLease != 0 && (c.JobLease < time.Second || c.JobLease > time.Hour):
		return errors.New("FILEMILL_JOB_LEASE must be between 1s and 1h")
	case c.MaxJobClaims < 0:
		return errors.New("MaxJobClaims must not be negative")
	case c.JobTimeout < 0:
		return errors.New("FILEMILL_JOB_TIMEOUT must not be negative")
	case c.StopGrace < 0:
		return errors.New("StopGrace must not be negative")
	case c.MaxArtifactsPerJob < 1:
		return errors.New("FILEMILL_MAX_ARTIFACTS_PER_JOB must be at least 1")
	case c.JobMemory < 0:
		return errors.New("FILEMILL_JOB_MEMORY_LIMIT must not be negative")
	case c.JobDisk < 0 || c.JobDiskMax < 0:
		return errors.New("FILEMILL_JOB_DISK_LIMIT and FILEMILL_JOB_DISK_LIMIT_MAX must not be negative")
	case c.ConsoleRateLimit < 0:
		return errors.New("FILEMILL_CONSOLE_RATE_LIMIT_PER_MINUTE must be at least 1")
	case c.SessionIdleTimeout < 0 || c.SessionIdleTimeout > 0 && c.SessionIdleTimeout < time.Minute:
		return errors.New("FILEMILL_SESSION_IDLE_TIMEOUT must be at least 1m")
	case c.SessionLifetime < 0 || c.SessionLifetime > 0 && c.SessionLifetime < time.Minute:
		return errors.New("FILEMILL_SESSION_LIFETIME must be at least 1m")
	}
	for name, d := range c.OperationTimeouts {
		if d <= 0 {
			return fmt.Errorf("FILEMILL_OPERATION_TIMEOUTS: %s needs a positive duration", name)
		}
	}
	return nil
}

// Services bundles the use cases both front doors call. It holds the whole Store, the
// one every service's ports are narrowed from: it keeps the idempotency records of the
// requests Do runs, and the processes built on it ping it and look tenants up through
// it.
type Services struct {
	Config        Config
	Store         Store
	Clock         Clock
	Keys          *Keys
	Organizations *Organizations
	Credits       *Credits
	Webhooks      *Webhooks
	Jobs          *Jobs
	Files         *Files
	Uploads       *Uploads
	Usage         *Usage
	RateLimits    *RateLimits
	People        *People
	Log           *slog.Logger
}

// Deps are the ports the services run on. Blobs, Fetcher, Queue, Engines, Directory,
// Pages, Verifier and Limiter may be nil in processes that touch no bytes, run no jobs
// and serve no requests (admin commands); Bus, Deliveries and WebhookSender in processes
// that relay and deliver no events. Log defaults to slog's default logger.
type Deps struct {
	Store    Store
	Clock    Clock
	Blobs    Blobs
	Fetcher  Fetcher
	Queue    Queue
	Registry *Registry // every operation and preset; empty when nil
	// Engines are the engine families this process runs, by family name.
	Engines map[string]Engine
	// Directory tells which families live workers run; nil: only this process's Engines.
	Directory EngineDirectory
	Pages     PageCounter
	// Scratch holds the local copies completion checks read; nil: pages are not counted
	// at completion and uploads asking for a scan are refused.
	Scratch  Scratch
	Verifier OutputVerifier
	Scanner  UploadScanner // scans uploads whose policy asks (validation.scan)
	// Guard vets webhook endpoint URLs; nil checks their shape only.
	Guard         *netguard.Guard
	Bus           EventBus
	Deliveries    DeliveryQueue
	WebhookSender WebhookSender
	Limiter       RateLimiter
	// Observer receives the figures the services measure (metrics); nil measures nothing.
	Observer Observer
	Log      *slog.Logger
}

// NewServices wires the services over their ports.
func NewServices(cfg Config, d Deps) *Services {
	if d.Clock == nil {
		d.Clock = SystemClock{}
	}
	if d.Log == nil {
		d.Log = slog.Default()
	}
	def := DefaultConfig()
	if cfg.JobLease == 0 {
		cfg.JobLease = def.JobLease
	}
	if cfg.MaxJobClaims == 0 {
		cfg.MaxJobClaims = def.MaxJobClaims
	}
	if cfg.IdempotencyLease == 0 {
		cfg.IdempotencyLease = def.IdempotencyLease
	}
	cfg = cfg.withPeopleDefaults()
	store, clock := d.Store, d.Clock
	s := &Services{Config: cfg, Store: store, Clock: clock, Log: d.Log}
	s.Keys = &Keys{Store: store, Clock: clock, cache: newAuthCache(cfg.AuthCacheTTL, 10000)}
	s.Credits = &Credits{Store: store, Clock: clock}
	s.Organizations = &Organizations{Store: store, Clock: clock, Config: cfg, Keys: s.Keys, Credits: s.Credits}
	s.Webhooks = &Webhooks{Store: store, Clock: clock, Config: cfg, Guard: d.Guard, Bus: d.Bus,
		Deliveries: d.Deliveries, Sender: d.WebhookSender}
	if d.Registry == nil {
		d.Registry = NewRegistry()
	}
	s.Jobs = &Jobs{Store: store, Blobs: d.Blobs, Queue: d.Queue, Clock: clock, Config: cfg, Registry: d.Registry,
		Engines: d.Engines, Directory: d.Directory, Verifier: d.Verifier, Bus: d.Bus, Observer: d.Observer, Log: d.Log}
	s.Files = &Files{Store: store, Blobs: d.Blobs, Clock: clock, Config: cfg, Pages: d.Pages, Scanner: d.Scanner, Scratch: d.Scratch,
		Log: d.Log}
	s.Uploads = &Uploads{Store: store, Blobs: d.Blobs, Fetcher: d.Fetcher, Clock: clock, Config: cfg, Files: s.Files}
	m, ok := d.Blobs.(EgressMeter)
	metered := ok && m.MetersEgress()
	s.Usage = &Usage{Store: store, Clock: clock, EgressAtServe: metered}
	s.Files.Usage = s.Usage
	s.RateLimits = NewRateLimits(d.Limiter, cfg.DefaultRateLimit, clock, d.Log)
	s.People = &People{Store: store, Clock: clock, Config: cfg, Limits: s.RateLimits}
	return s
}

// OrganizationsPorts is what Organizations uses of the Store: organizations, projects
// and keys, and the credit accounts a bootstrap grants to in the same transaction.
type OrganizationsPorts interface {
	Transactor
	TenantStore
	CreditStore
}

// Organizations manages tenants and their projects (operator actions).
type Organizations struct {
	Store   OrganizationsPorts
	Clock   Clock
	Config  Config
	Keys    *Keys
	Credits *Credits
}

// inTx runs fn in one transaction, on the ports Organizations declares.
func (o *Organizations) inTx(ctx context.Context, fn func(tx OrganizationsPorts) error) error {
	return o.Store.InTx(ctx, func(tx Store) error { return fn(tx) })
}

// Bootstrap is the result of Organizations.Bootstrap.
type Bootstrap struct {
	Organization *Organization
	Project      *Project
	LiveKey      *APIKey
	LiveSecret   string
	TestKey      *APIKey
	TestSecret   string
}

// Bootstrap creates (or reuses) an organization and a project, mints one live and one
// test key, and grants credits to both environments when credits > 0.
func (o *Organizations) Bootstrap(ctx context.Context, orgName, projectName string, credits int64) (*Bootstrap, error) {
	if orgName == "" || projectName == "" {
		return nil, InvalidParam("org", "organization and project names are required")
	}
	if credits < 0 {
		return nil, InvalidParam("credits", "credits must not be negative")
	}
	var b Bootstrap
	err := o.inTx(ctx, func(tx OrganizationsPorts) error {
		org, err := o.ensureOrganization(ctx, tx, orgName)
		if err != nil {
			return err
		}
		prj, err := o.ensureProject(ctx, tx, org.ID, projectName)
		if err != nil {
			return err
		}
		b.Organization, b.Project = org, prj
		keys := &Keys{Store: tx, Clock: o.Clock}
		for _, env := range []Environment{EnvLive, EnvTest} {
			k, secret, err := keys.CreateKey(ctx, NewKey{OrganizationID: org.ID, ProjectID: prj.ID, Environment: env, Name: "bootstrap " + string(env)})
			if err != nil {
				return err
			}
			if env == EnvLive {
				b.LiveKey, b.LiveSecret = k, secret
			} else {
				b.TestKey, b.TestSecret = k, secret
			}
			if credits > 0 {
				if _, err := (&Credits{Store: tx, Clock: o.Clock}).Grant(ctx, org.ID, env, credits, "bootstrap"); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &b, nil
}

func (o *Organizations) ensureOrganization(ctx context.Context, tx TenantStore, name string) (*Organization, error) {
	org, err := tx.FindOrganizationByName(ctx, name)
	if err == nil {
		return org, nil
	}
	if !errors.Is(err, ErrNotFound) {
		return nil, err
	}
	org = &Organization{ID: NewID(PrefixOrganization), Name: name, Status: OrgActive, CreatedAt: o.Clock.Now()}
	return org, tx.CreateOrganization(ctx, org)
}

func (o *Organizations) ensureProject(ctx context.Context, tx TenantStore, orgID, name string) (*Project, error) {
	prj, err := tx.FindProjectByName(ctx, orgID, name)
	if err == nil {
		return prj, nil
	}
	if !errors.Is(err, ErrNotFound) {
		return nil, err
	}
	prj = &Project{ID: NewID(PrefixProject), OrganizationID: orgID, Name: name, CreatedAt: o.Clock.Now()}
	return prj, tx.CreateProject(ctx, prj)
}

// FindOrganization finds an organization by id or by name.
func (o *Organizations) FindOrganization(ctx context.Context, idOrName string) (*Organization, error) {
	var org *Organization
	var err error
	if ValidID(PrefixOrganization, idOrName) {
		org, err = o.Store.FindOrganizationByID(ctx, idOrName)
	} else {
		org, err = o.Store.FindOrganizationByName(ctx, idOrName)
	}
	if errors.Is(err, ErrNotFound) {
		return nil, NotFound("organization " + idOrName)
	}
	return org, err
}

// SetSuspended suspends or resumes an organization: a suspended organization's keys
// answer 403 organization_suspended.
func (o *Organizations) SetSuspended(ctx context.Context, idOrName string, suspended bool) (*Organization, error) {
	org, err := o.FindOrganization(ctx, idOrName)
	if err != nil {
		return nil, err
	}
	status := OrgActive
	if suspended {
		status = OrgSuspended
	}
	if err := o.Store.SetOrganizationStatus(ctx, org.ID, status); err != nil {
		return nil, err
	}
	o.Keys.cache.forget(func(key *APIKey) bool { return key.OrganizationID == org.ID })
	org.Status = status
	return org, nil
}

// SetConcurrencyLimit sets a project's limit of queued+running jobs (0 = default).
func (o *Organizations) SetConcurrencyLimit(ctx context.Context, projectID string, limit int) error {
	if limit < 0 {
		return InvalidParam("concurrency_limit", "must not be negative")
	}
	if _, err := o.Store.FindProjectByID(ctx, projectID); err != nil {
		if errors.Is(err, ErrNotFound) {
			return NotFound("project")
		}
		return err
	}
	return o.Store.SetProjectConcurrencyLimit(ctx, projectID, limit)
}

// CreditsPorts is what Credits uses of the Store: the credit accounts and their ledger.
type CreditsPorts interface {
	Transactor
	CreditStore
}

// Credits moves credits through the ledger.
type Credits struct {
	Store CreditsPorts
	Clock Clock
}

// inTx runs fn in one transaction, on the ports Credits declares.
func (c *Credits) inTx(ctx context.Context, fn func(tx CreditsPorts) error) error {
	return c.Store.InTx(ctx, func(tx Store) error { return fn(tx) })
}

// Grant adds credits to an organization's account for one environment.
func (c *Credits) Grant(ctx context.Context, orgID string, env Environment, amount int64, why string) (*CreditAccount, error) {
	if amount <= 0 {
		return nil, InvalidParam("amount", "a grant must be positive")
	}
	if !env.Valid() {
		return nil, InvalidParam("environment", "environment must be live or test")
	}
	var acct *CreditAccount
	err := c.inTx(ctx, func(tx CreditsPorts) error {
		a, err := tx.FindCreditAccount(ctx, orgID, env)
		if err != nil {
			return fmt.Errorf("credit account: %w", err)
		}
		e := &LedgerEntry{ID: NewID(PrefixLedgerEntry), AccountID: a.ID, Kind: LedgerGrant, Amount: amount,
			Description: why, CreatedAt: c.Clock.Now()}
		if err := tx.ApplyLedgerEntry(ctx, e); err != nil {
			return err
		}
		acct, err = tx.FindCreditAccount(ctx, orgID, env)
		return err
	})
	return acct, err
}

// Account returns the credit account of an organization's environment.
func (c *Credits) Account(ctx context.Context, orgID string, env Environment) (*CreditAccount, error) {
	return c.Store.FindCreditAccount(ctx, orgID, env)
}

// CreateProject adds a project to an organization. Codes: invalid_request, conflict.
func (o *Organizations) CreateProject(ctx context.Context, orgID, name string) (*Project, error) {
	if name == "" || len(name) > 200 {
		return nil, InvalidParam("name", "a project name of 1 to 200 characters is required")
	}
	if _, err := o.Store.FindProjectByName(ctx, orgID, name); err == nil {
		return nil, &Error{Code: CodeConflict, Message: "a project named " + name + " exists", Param: "name"}
	}
	prj := &Project{ID: NewID(PrefixProject), OrganizationID: orgID, Name: name, CreatedAt: o.Clock.Now()}
	if err := o.Store.CreateProject(ctx, prj); err != nil {
		return nil, err
	}
	return prj, nil
}
