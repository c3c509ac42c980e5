package domain_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/db"
	"github.com/filemill/filemill/db/dbtest"
	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/domain/eventually"
	"github.com/filemill/filemill/jobs/ops/catalog"
	"github.com/filemill/filemill/jobs/ops/inspect"
	"github.com/filemill/filemill/storage"
)

// manualClock is a clock the test moves.
type manualClock struct{ offset atomic.Int64 }

func (c *manualClock) Now() time.Time {
	return time.Now().UTC().Add(time.Duration(c.offset.Load()))
}

func (c *manualClock) advance(d time.Duration) { c.offset.Add(int64(d)) }

// env is the services over a real store and local storage, with an organization whose
// live key is p.
type env struct {
	t     *testing.T
	svc   *domain.Services
	store domain.Store // what the services use
	db    *db.Store    // the real store under it
	clock *manualClock
	org   *domain.Bootstrap
	p     *domain.Principal
}

type envOpts struct {
	cfg   func(*domain.Config)
	store func(domain.Store) domain.Store // wraps the real store, to inject a fault
}

func newEnv(t *testing.T, s *db.Store, opts ...envOpts) *env {
	t.Helper()
	var o envOpts
	for _, x := range opts {
		o = x
	}
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	blobs, err := storage.NewLocal(storage.LocalConfig{Dir: t.TempDir(), PublicURL: "http://127.0.0.1:9", Secret: secret})
	require.NoError(t, err)
	cfg := domain.DefaultConfig()
	if o.cfg != nil {
		o.cfg(&cfg)
	}
	var store domain.Store = s
	if o.store != nil {
		store = o.store(s)
	}
	clock := &manualClock{}
	reg, err := catalog.Registry()
	require.NoError(t, err)
	require.NoError(t, reg.AddOperations(tunedOperation))
	insp, err := inspect.New(inspect.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	svc := domain.NewServices(cfg, domain.Deps{Store: store, Blobs: blobs, Clock: clock, Registry: reg,
		Engines: map[string]domain.Engine{"inspect": insp}})
	e := &env{t: t, svc: svc, store: store, db: s, clock: clock}
	e.org, err = svc.Organizations.Bootstrap(context.Background(), "org", "main", 100)
	require.NoError(t, err)
	e.p = e.principal(e.org.LiveSecret)
	return e
}

func (e *env) principal(secret string) *domain.Principal {
	e.t.Helper()
	p, err := e.svc.Keys.Authenticate(context.Background(), secret, netip.MustParseAddr("127.0.0.1"))
	require.NoError(e.t, err)
	return p
}

// key mints a key of the organization's project with the given tweaks.
func (e *env) key(mod func(*domain.NewKey)) *domain.Principal {
	e.t.Helper()
	nk := domain.NewKey{OrganizationID: e.org.Organization.ID, ProjectID: e.org.Project.ID, Environment: domain.EnvLive}
	if mod != nil {
		mod(&nk)
	}
	_, secret, err := e.svc.Keys.CreateKey(context.Background(), nk)
	require.NoError(e.t, err)
	return e.principal(secret)
}

// readyFile stores a ready PDF file of p's project and returns its id.
func (e *env) readyFile(t *testing.T, p *domain.Principal) string {
	t.Helper()
	const content = "%PDF-1.4\n%%EOF\n"
	now := e.clock.Now()
	f := &domain.File{ID: domain.NewID(domain.PrefixFile), OrganizationID: p.Organization.ID, ProjectID: p.Key.ProjectID,
		Environment: p.Environment(), Filename: "a.pdf", Status: domain.FileReady, ByteSize: int64(len(content)),
		DetectedExt: "pdf", DetectedMIMEType: "application/pdf", CreatedAt: now, ReadyAt: &now}
	f.StorageKey = p.Organization.ID + "/" + f.ProjectID + "/" + f.ID + "/original"
	require.NoError(t, e.svc.Uploads.Blobs.Put(context.Background(), f.StorageKey, strings.NewReader(content), f.ByteSize))
	require.NoError(t, e.store.CreateFile(context.Background(), f))
	return f.ID
}

// tunedOptions are the options of tunedOperation, an operation of these tests that takes
// some (on the inspect engine, which these tests never run).
type tunedOptions struct {
	A int   `json:"a,omitempty" doc:"a number" schema:"min=0"`
	B []int `json:"b,omitempty" doc:"numbers" schema:"maxItems=5"`
}

var tunedOperation = domain.OperationSpec{Name: "inspect.tuned", Engine: "inspect", Description: "takes options",
	InputFormats: []string{"*"}, Price: domain.Price{Credits: 1, Per: "file"}, Options: tunedOptions{}}

func call(key, requestID string) domain.Call {
	return domain.Call{IdempotencyKey: key, RequestID: requestID}
}

func object(t *testing.T, a *domain.Answer) map[string]any {
	t.Helper()
	require.Nil(t, a.Error, "%+v", a.Error)
	var m map[string]any
	require.NoError(t, json.Unmarshal(a.Object, &m))
	return m
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

func requireCode(t *testing.T, err error, code string) *domain.Error {
	t.Helper()
	e := domain.AsError(err)
	require.NotNil(t, e, "%v", err)
	require.Equal(t, code, e.Code, e.Message)
	return e
}

func hook(url string) domain.NewWebhookEndpoint {
	return domain.NewWebhookEndpoint{URL: url, EnabledEvents: []string{domain.EventJobSucceeded}}
}

func TestIdempotencyProtocol(t *testing.T) {
	t.Parallel()
	dbtest.EachDialect(t, func(t *testing.T, s *db.Store) {
		t.Parallel()
		ctx := context.Background()
		e := newEnv(t, s)

		t.Run("ReplayGetsTheStoredAnswerAndNoNewEffect", func(t *testing.T) {
			first, err := e.svc.Do(ctx, e.p, call("k-replay", "req_1"), hook("https://example.com/replay"))
			require.NoError(t, err)
			require.Equal(t, domain.ResultCreated, first.Result)
			require.False(t, first.Replayed)
			again, err := e.svc.Do(ctx, e.p, call("k-replay", "req_2"), hook("https://example.com/replay"))
			require.NoError(t, err)
			require.True(t, again.Replayed)
			require.Equal(t, first.Result, again.Result)
			require.JSONEq(t, string(first.Object), string(again.Object))
			// The first answer carries the view it was made from, for a door that renders
			// values (GraphQL); a replay has the stored JSON alone.
			v, ok := first.Value.(domain.WebhookEndpointView)
			require.True(t, ok, "%T", first.Value)
			require.Equal(t, first.Object, mustJSON(t, v))
			require.Nil(t, again.Value)
			list, err := e.svc.Webhooks.ListEndpoints(ctx, e.p, "", domain.Page{})
			require.NoError(t, err)
			require.Len(t, list.Data, 1)
		})
		t.Run("AnotherRequestUnderTheKeyIsAConflict", func(t *testing.T) {
			_, err := e.svc.Do(ctx, e.p, call("k-replay", "req_3"), hook("https://example.com/other"))
			ce := requireCode(t, err, domain.CodeIdempotencyConflict)
			require.Nil(t, ce.Details, "not in progress: another request")
		})
		t.Run("SameRequestWhateverTheOrderOfItsFreeFormJSON", func(t *testing.T) {
			file := e.readyFile(t, e.p)
			req := func(options string) domain.JobRequest {
				return domain.JobRequest{FileID: file, Operation: tunedOperation.Name, Options: json.RawMessage(options)}
			}
			first, err := e.svc.Do(ctx, e.p, call("k-order", "req_1"), req(`{"a":1,"b":[1,2]}`))
			require.NoError(t, err)
			require.Equal(t, domain.ResultAccepted, first.Result)
			again, err := e.svc.Do(ctx, e.p, call("k-order", "req_2"), req(` { "b" : [1,2], "a":1 }`))
			require.NoError(t, err)
			require.True(t, again.Replayed, "the same request written another way")
			_, err = e.svc.Do(ctx, e.p, call("k-order", "req_3"), req(`{"a":1,"b":[2,1]}`))
			requireCode(t, err, domain.CodeIdempotencyConflict)
		})
		t.Run("KeptRefusalKeepsTheRequestIDThatGotIt", func(t *testing.T) {
			bad := hook("http://example.com/plain")
			first, err := e.svc.Do(ctx, e.p, call("k-refused", "req_first"), bad)
			require.NoError(t, err)
			require.Equal(t, domain.CodeInvalidRequest, first.Error.Code)
			require.Equal(t, "url", first.Error.Param)
			again, err := e.svc.Do(ctx, e.p, call("k-refused", "req_again"), bad)
			require.NoError(t, err)
			require.True(t, again.Replayed)
			require.Equal(t, *first.Error, *again.Error)
			require.Equal(t, "req_first", again.Error.RequestID)
			// Either way the door gets the refusal as the error it is.
			for _, r := range []*domain.Error{first.Refusal(), again.Refusal()} {
				require.Equal(t, []string{domain.CodeInvalidRequest, "url", first.Error.Message}, []string{r.Code, r.Param, r.Message})
			}
		})
		t.Run("AuthorizationRefusalIsDecidedFirstAndNeverStored", func(t *testing.T) {
			readOnly := e.key(func(k *domain.NewKey) { k.Scopes = []string{domain.ScopeWebhooksRead} })
			_, err := e.svc.Do(ctx, readOnly, call("k-auth", "req_1"), hook("https://example.com/auth"))
			requireCode(t, err, domain.CodeInsufficientScope)
			a, err := e.svc.Do(ctx, e.p, call("k-auth", "req_2"), hook("https://example.com/auth"))
			require.NoError(t, err)
			require.False(t, a.Replayed, "the refusal left the key free")
			_, err = e.svc.Do(ctx, readOnly, call("k-auth", "req_3"), hook("https://example.com/auth"))
			requireCode(t, err, domain.CodeInsufficientScope)
		})
		t.Run("ReplayIsAuthorizedFirst", func(t *testing.T) {
			file := e.readyFile(t, e.p)
			job := domain.JobRequest{FileID: file, Operation: "inspect"}
			first, err := e.svc.Do(ctx, e.p, call("k-job", "req_1"), job)
			require.NoError(t, err)
			require.Equal(t, domain.ResultAccepted, first.Result)
			other, err := e.svc.Organizations.CreateProject(ctx, e.org.Organization.ID, "elsewhere")
			require.NoError(t, err)
			for _, c := range []struct {
				p    *domain.Principal
				code string
			}{
				{e.principal(e.org.TestSecret), domain.CodeEnvironmentMismatch},
				{e.key(func(k *domain.NewKey) { k.AllowedOperations = []string{"scan"} }), domain.CodeOperationNotAllowed},
				{e.key(func(k *domain.NewKey) { k.ProjectID, k.AllowedProjects = other.ID, []string{other.ID} }), domain.CodeKeyRestricted},
				{e.key(func(k *domain.NewKey) { k.Scopes = []string{domain.ScopeJobsRead} }), domain.CodeInsufficientScope},
			} {
				a, err := e.svc.Do(ctx, c.p, call("k-job", "req_2"), job)
				require.Nil(t, a)
				requireCode(t, err, c.code)
			}
			dl := domain.DownloadURLRequest{FileID: file}
			_, err = e.svc.Do(ctx, e.p, call("k-dl", "req_1"), dl)
			require.NoError(t, err)
			_, err = e.svc.Do(ctx, e.key(func(k *domain.NewKey) { k.Scopes = []string{domain.ScopeUsageRead} }), call("k-dl", "req_2"), dl)
			requireCode(t, err, domain.CodeInsufficientScope)
		})
		t.Run("KeyIsRequiredAndWellFormed", func(t *testing.T) {
			for _, key := range []string{"", strings.Repeat("k", 256), "tab\there"} {
				_, err := e.svc.Do(ctx, e.p, call(key, "req_1"), hook("https://example.com/k"))
				require.Equal(t, "Idempotency-Key", requireCode(t, err, domain.CodeInvalidRequest).Param)
			}
		})
		t.Run("ConcurrentRequestsHaveOneEffect", func(t *testing.T) {
			const n = 20
			answers := make([]*domain.Answer, n)
			errs := make([]error, n)
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range n {
				wg.Go(func() {
					<-start
					answers[i], errs[i] = e.svc.Do(ctx, e.p, call("k-race", "req"), hook("https://example.com/race"))
				})
			}
			close(start)
			wg.Wait()
			ran := 0
			for i := range n {
				if errs[i] != nil {
					ce := requireCode(t, errs[i], domain.CodeIdempotencyConflict)
					require.Equal(t, true, ce.Details["in_progress"])
					require.Equal(t, 1, ce.RetryAfter)
					continue
				}
				require.Equal(t, domain.ResultCreated, answers[i].Result)
				if !answers[i].Replayed {
					ran++
				}
			}
			require.Equal(t, 1, ran)
		})
	})
}

// faulty is the real store, except for the faults a test switches on: the next
// admission fails as if the database were unreachable, or waits until released.
type faulty struct {
	domain.Store
	failNext atomic.Bool
	stallOne atomic.Bool
	stalled  chan struct{}
	release  chan struct{}
}

func (f *faulty) AdmitJobs(ctx context.Context, a *domain.Admission) error {
	if f.failNext.CompareAndSwap(true, false) {
		return domain.MarkUnavailable("database", errors.New("connection refused"))
	}
	if f.stallOne.CompareAndSwap(true, false) {
		f.stalled <- struct{}{}
		<-f.release
	}
	return f.Store.AdmitJobs(ctx, a)
}

// OpenUpload stalls like AdmitJobs: an upload's claim is made before its effect, which
// the lease test needs (an admission claims its key with its own write).
func (f *faulty) OpenUpload(ctx context.Context, file *domain.File, u *domain.Upload, e *domain.Event) error {
	if f.stallOne.CompareAndSwap(true, false) {
		f.stalled <- struct{}{}
		<-f.release
	}
	return f.Store.OpenUpload(ctx, file, u, e)
}

func TestIdempotencyFailuresAndLeases(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fs := &faulty{stalled: make(chan struct{}), release: make(chan struct{})}
	// Long enough that a renewal (every fifth of it) is never late by a whole lease on
	// a loaded machine; the test moves the clock rather than wait for it.
	const lease = 5 * time.Second
	e := newEnv(t, dbtest.Open(t, dbtest.Postgres(t)), envOpts{
		cfg:   func(c *domain.Config) { c.IdempotencyLease = lease },
		store: func(s domain.Store) domain.Store { fs.Store = s; return fs }})
	file := e.readyFile(t, e.p)
	job := domain.JobRequest{FileID: file, Operation: "inspect"}

	t.Run("FailureOnOurSideFreesTheKey", func(t *testing.T) {
		fs.failNext.Store(true)
		_, err := e.svc.Do(ctx, e.p, call("k-fail", "req_1"), job)
		require.ErrorIs(t, err, domain.ErrUnavailable)
		require.Equal(t, domain.CodeDependencyUnavailable, domain.ErrorOf(err).Code)
		a, err := e.svc.Do(ctx, e.p, call("k-fail", "req_2"), job)
		require.NoError(t, err)
		require.False(t, a.Replayed, "nothing was stored: the retry ran")
		require.Equal(t, domain.ResultAccepted, a.Result)
	})
	t.Run("RefusalThatSaysComeBackLaterIsNotStored", func(t *testing.T) {
		require.NoError(t, e.svc.Organizations.SetConcurrencyLimit(ctx, e.org.Project.ID, 1))
		_, err := e.svc.Do(ctx, e.p, call("k-limit", "req_1"), job)
		requireCode(t, err, domain.CodeConcurrencyLimit)
		require.NoError(t, e.svc.Organizations.SetConcurrencyLimit(ctx, e.org.Project.ID, 100))
		a, err := e.svc.Do(ctx, e.p, call("k-limit", "req_2"), job)
		require.NoError(t, err)
		require.Equal(t, domain.ResultAccepted, a.Result)
		require.False(t, a.Replayed)
	})
	t.Run("InProgressWhileTheHolderLives", func(t *testing.T) {
		fs.stallOne.Store(true)
		type result struct {
			a   *domain.Answer
			err error
		}
		upload := domain.UploadRequest{Filename: "a.pdf", ByteSize: ptr[int64](100)}
		holder := make(chan result, 1)
		go func() {
			a, err := e.svc.Do(ctx, e.p, call("k-lease", "req_1"), upload)
			holder <- result{a, err}
		}()
		<-fs.stalled
		_, err := e.svc.Do(ctx, e.p, call("k-lease", "req_2"), upload)
		ce := requireCode(t, err, domain.CodeIdempotencyConflict)
		require.Equal(t, map[string]any{"in_progress": true}, ce.Details)
		require.Equal(t, 1, ce.RetryAfter)

		// The holder lives, so it renews: its claim holds however late it is.
		e.clock.advance(10 * lease)
		eventually.True(t, "the holder renews its lease", func() bool {
			var until time.Time
			require.NoError(t, e.db.DB().NewSelect().Table("idempotency_records").Column("lease_until").
				Where(`"key" = ?`, "k-lease").Scan(ctx, &until))
			return until.After(e.clock.Now())
		})
		_, err = e.svc.Do(ctx, e.p, call("k-lease", "req_3"), upload)
		requireCode(t, err, domain.CodeIdempotencyConflict)
		fs.release <- struct{}{}
		r := <-holder
		require.NoError(t, r.err)
		require.Equal(t, domain.ResultCreated, r.a.Result)
	})
	// A job request claims its key with its admission's write. A request with the same
	// key that gets there first has the one effect; the other, its write refused, is
	// given that answer.
	t.Run("AdmissionClaimsItsKeyWithItsWrite", func(t *testing.T) {
		jobsOn := func(fileID string) int {
			n, err := e.db.DB().NewSelect().Table("jobs").Where("file_id = ?", fileID).Count(ctx)
			require.NoError(t, err)
			return int(n)
		}
		before := jobsOn(file)
		fs.stallOne.Store(true)
		type result struct {
			a   *domain.Answer
			err error
		}
		first := make(chan result, 1)
		go func() {
			a, err := e.svc.Do(ctx, e.p, call("k-write", "req_1"), job)
			first <- result{a, err}
		}()
		<-fs.stalled
		claims, err := e.db.DB().NewSelect().Table("idempotency_records").Where(`"key" = ?`, "k-write").Count(ctx)
		require.NoError(t, err)
		require.Zero(t, claims, "no claim is written before the admission")
		second, err := e.svc.Do(ctx, e.p, call("k-write", "req_2"), job)
		require.NoError(t, err)
		require.False(t, second.Replayed)
		fs.release <- struct{}{}
		r := <-first
		require.NoError(t, r.err)
		require.True(t, r.a.Replayed, "the key was taken by the other's write")
		require.JSONEq(t, string(second.Object), string(r.a.Object))
		require.Equal(t, before+1, jobsOn(file), "one effect")

		// Another request with the key: a conflict, found by its write; nothing admitted.
		other := e.readyFile(t, e.p)
		_, err = e.svc.Do(ctx, e.p, call("k-write", "req_3"), domain.JobRequest{FileID: other, Operation: "inspect"})
		ce := requireCode(t, err, domain.CodeIdempotencyConflict)
		require.Nil(t, ce.Details)
		require.Zero(t, jobsOn(other))
	})
	t.Run("ClaimOfAHolderThatDiedIsTakenOver", func(t *testing.T) {
		now := e.clock.Now()
		dead := &domain.IdempotencyRecord{ID: domain.NewID(domain.PrefixIdempotency), OrganizationID: e.org.Organization.ID,
			Environment: e.p.Environment(), ProjectID: e.p.Key.ProjectID, Endpoint: job.Action(), Key: "k-dead", Fingerprint: "a request that never finished",
			CreatedAt: now, ExpiresAt: now.Add(time.Hour), LeaseUntil: now.Add(lease)}
		existing, err := e.store.ClaimIdempotencyKey(ctx, dead)
		require.NoError(t, err)
		require.Nil(t, existing)
		_, err = e.svc.Do(ctx, e.p, call("k-dead", "req_1"), job)
		requireCode(t, err, domain.CodeIdempotencyConflict)
		e.clock.advance(lease)
		a, err := e.svc.Do(ctx, e.p, call("k-dead", "req_2"), job)
		require.NoError(t, err)
		require.False(t, a.Replayed)
		require.Equal(t, domain.ResultAccepted, a.Result)
	})
}

// flaky is the real limiter, except while down: then it fails as an unreachable Redis.
type flaky struct {
	domain.RateLimiter
	down atomic.Bool
}

func (f *flaky) Allow(ctx context.Context, key string, perMinute, cost int) (domain.RateDecision, error) {
	if f.down.Load() {
		return domain.RateDecision{}, domain.MarkUnavailable("redis", errors.New("dial tcp: connection refused"))
	}
	return f.RateLimiter.Allow(ctx, key, perMinute, cost)
}

// A job's scratch bound is JobDisk when set, else a base plus twenty times its input;
// JobDiskMax caps both. A resource limit fails a job at once, naming limit and bound.
func TestJobDiskLimit(t *testing.T) {
	t.Parallel()
	c := domain.DefaultConfig()
	require.EqualValues(t, 1<<30+20*(100<<20), c.JobDiskLimit(100<<20))
	require.EqualValues(t, 20<<30, c.JobDiskLimit(2<<30), "capped by JobDiskMax")
	c.JobDisk = 5 << 20
	require.EqualValues(t, 5<<20, c.JobDiskLimit(100<<20))
	c.JobDisk, c.JobDiskMax = 0, 0
	require.EqualValues(t, 1<<30+20*(5<<30), c.JobDiskLimit(5<<30), "no cap")

	err := domain.ResourceLimit(domain.LimitMemory, 512<<20)
	require.Equal(t, domain.CodeResourceLimitExceeded, domain.ErrorCode(err))
	require.Equal(t, "the job needed more memory than the 512 MiB one job may use (limit: memory, bound: 536870912 bytes)", err.Message)
	require.False(t, domain.Retryable(err))
	require.Equal(t, "1.5 GiB", domain.FormatBytes(3<<29))
}
