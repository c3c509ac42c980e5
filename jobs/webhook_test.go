package jobs_test

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/db"
	"github.com/filemill/filemill/db/dbtest"
	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/domain/eventually"
	"github.com/filemill/filemill/domain/netguard"
	"github.com/filemill/filemill/jobs"
	"github.com/filemill/filemill/jobs/ops/catalog"
	"github.com/filemill/filemill/jobs/ops/inspect"
	"github.com/filemill/filemill/jobs/redistest"
)

// These tests drive the relay and delivery attempts through the domain with an injected
// clock: the retry schedule runs in simulated time, never slept through. The receiver
// is a real HTTPS server on loopback, reached through the real sender and its guard.

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.After(c.now) {
		c.now = t
	}
}

func (c *fakeClock) Advance(d time.Duration) { c.Set(c.Now().Add(d)) }

// received is one request the receiver got.
type received struct {
	header http.Header
	body   []byte
	event  domain.EventView
	at     time.Time // on the fake clock
}

// receiver is an HTTPS webhook endpoint on loopback; answer decides each response.
type receiver struct {
	srv    *httptest.Server
	pool   *x509.CertPool
	clock  *fakeClock
	mu     sync.Mutex
	got    []received
	answer func(n int, r *http.Request) (status int, header map[string]string)
}

func newReceiver(t *testing.T, clock *fakeClock) *receiver {
	t.Helper()
	rc := &receiver{clock: clock, answer: func(int, *http.Request) (int, map[string]string) { return 200, nil }}
	rc.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var ev domain.EventView
		_ = json.Unmarshal(body, &ev)
		rc.mu.Lock()
		n := len(rc.got)
		at := time.Now()
		if rc.clock != nil {
			at = rc.clock.Now()
		}
		rc.got = append(rc.got, received{header: r.Header.Clone(), body: body, event: ev, at: at})
		answer := rc.answer
		rc.mu.Unlock()
		status, header := answer(n, r)
		for k, v := range header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(status)
		fmt.Fprintf(w, "answer %d", n)
	}))
	rc.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	rc.srv.StartTLS()
	t.Cleanup(rc.srv.Close)
	rc.pool = x509.NewCertPool()
	rc.pool.AddCert(rc.srv.Certificate())
	return rc
}

func (rc *receiver) URL() string { return rc.srv.URL + "/hook" }

func (rc *receiver) requests() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.got...)
}

func (rc *receiver) setAnswer(f func(n int, r *http.Request) (int, map[string]string)) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.answer = f
}

// hookEnv is a store with its services, a receiver and an endpoint on it.
type hookEnv struct {
	t        *testing.T
	store    *db.Store
	svc      *domain.Services
	clock    *fakeClock
	recv     *receiver
	boot     *domain.Bootstrap
	p        *domain.Principal
	endpoint *domain.WebhookEndpoint
	bus      *jobs.LocalBus
}

var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}

func newHookEnv(t *testing.T, s *db.Store, events ...string) *hookEnv {
	t.Helper()
	ctx := context.Background()
	clock := &fakeClock{now: time.Now().UTC().Truncate(time.Millisecond)}
	rc := newReceiver(t, clock)
	guard := &netguard.Guard{Allow: loopback}
	sender := jobs.NewHTTPSender(jobs.SenderConfig{Guard: guard, RootCAs: rc.pool})
	t.Cleanup(sender.Close)
	bus := jobs.NewLocalBus()
	cfg := domain.DefaultConfig()
	cfg.DefaultConcurrencyLimit = 10000
	reg, err := catalog.Registry()
	require.NoError(t, err)
	insp, err := inspect.New(inspect.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	svc := domain.NewServices(cfg, domain.Deps{Store: s, Clock: clock, Guard: guard, Bus: bus, WebhookSender: sender,
		Registry: reg, Engines: map[string]domain.Engine{"inspect": insp}})
	boot, err := svc.Organizations.Bootstrap(ctx, domain.NewID("org-"), "main", 1_000_000)
	require.NoError(t, err)
	p, err := svc.Keys.Authenticate(ctx, boot.LiveSecret, netip.MustParseAddr("127.0.0.1"))
	require.NoError(t, err)
	if len(events) == 0 {
		events = domain.SubscribableEvents
	}
	ep, err := svc.Webhooks.CreateEndpoint(ctx, p, domain.NewWebhookEndpoint{URL: rc.URL(), EnabledEvents: events})
	require.NoError(t, err)
	return &hookEnv{t: t, store: s, svc: svc, clock: clock, recv: rc, boot: boot, p: p, endpoint: ep, bus: bus}
}

// readyFile stores a ready file row of the project, as completion would leave it.
func (e *hookEnv) readyFile() *domain.File {
	e.t.Helper()
	now := e.clock.Now()
	f := &domain.File{ID: domain.NewID(domain.PrefixFile), OrganizationID: e.boot.Organization.ID, ProjectID: e.boot.Project.ID,
		Environment: domain.EnvLive, UploadID: domain.NewID(domain.PrefixUpload), Filename: "a.pdf", Status: domain.FileReady,
		ByteSize: 100, DetectedExt: "pdf", DetectedMIMEType: "application/pdf", StorageKey: "files/x", CreatedAt: now, ReadyAt: &now}
	require.NoError(e.t, e.store.CreateFile(context.Background(), f))
	return f
}

// jobEvent writes a job.succeeded event the way a settled job does, and returns it.
func (e *hookEnv) jobEvent() *domain.Event {
	e.t.Helper()
	ev := e.newJobEvent()
	require.NoError(e.t, e.store.CreateEvent(context.Background(), ev))
	return ev
}

func (e *hookEnv) newJobEvent() *domain.Event {
	e.t.Helper()
	j := &domain.Job{ID: domain.NewID(domain.PrefixJob), OrganizationID: e.boot.Organization.ID, ProjectID: e.boot.Project.ID,
		Environment: domain.EnvLive, FileID: domain.NewID(domain.PrefixFile), Preset: "inspect", State: domain.JobSucceeded,
		Progress: 100, CreatedAt: e.clock.Now()}
	ev, err := domain.NewEvent(context.Background(), domain.EventJobSucceeded, j.OrganizationID, j.ProjectID, j.Environment, j.ID, j.View(), e.clock.Now())
	require.NoError(e.t, err)
	ev.FileID = j.FileID
	return ev
}

// relay relays until none of this env's events is left in the outbox and returns how
// many events it claimed. Parallel tests share the outbox: another test's relay may
// hold this env's events claimed, their deliveries not yet committed, when this one
// finds nothing left to claim.
func (e *hookEnv) relay() int {
	e.t.Helper()
	ctx := context.Background()
	total := 0
	eventually.True(e.t, "this test's events relayed", func() bool {
		for {
			n, err := e.svc.Webhooks.Relay(ctx, 50)
			require.NoError(e.t, err)
			total += n
			if n == 0 {
				break
			}
		}
		var left int
		require.NoError(e.t, e.store.DB().NewRaw(`SELECT count(*) FROM event_outbox o JOIN events ev ON ev.id = o.event_id
			WHERE ev.organization_id = ?`, e.boot.Organization.ID).Scan(ctx, &left))
		return left == 0
	})
	return total
}

// runDue makes every attempt due now, as the queue would at its time.
func (e *hookEnv) runDue() int {
	e.t.Helper()
	ctx := context.Background()
	ds := e.due(e.clock.Now().Add(time.Millisecond))
	for _, d := range ds {
		require.NoError(e.t, e.svc.Webhooks.Attempt(ctx, domain.DeliveryTask{DeliveryID: d.ID, EndpointID: d.EndpointID, Attempt: d.Attempts}))
	}
	return len(ds)
}

// due returns this env's pending deliveries due before a moment: tests sharing a
// database see only their own.
func (e *hookEnv) due(before time.Time) []*domain.Delivery {
	e.t.Helper()
	all, err := e.store.FindDueDeliveries(context.Background(), before, 100000)
	require.NoError(e.t, err)
	var ds []*domain.Delivery
	for _, d := range all {
		if d.EndpointID == e.endpoint.ID {
			ds = append(ds, d)
		}
	}
	return ds
}

// nextDue moves the clock to the earliest pending attempt; false when none is pending.
func (e *hookEnv) nextDue() bool {
	e.t.Helper()
	ds := e.due(e.clock.Now().Add(100 * 24 * time.Hour))
	if len(ds) == 0 {
		return false
	}
	e.clock.Set(*ds[0].NextAttemptAt)
	return true
}

func (e *hookEnv) deliveries() []*domain.Delivery {
	e.t.Helper()
	list, err := e.svc.Webhooks.ListDeliveries(context.Background(), e.p, e.endpoint.ID, domain.Page{Limit: 100})
	require.NoError(e.t, err)
	require.False(e.t, list.HasMore)
	return list.Data
}

func (e *hookEnv) getEndpoint() *domain.WebhookEndpoint {
	e.t.Helper()
	ep, err := e.svc.Webhooks.FindEndpoint(context.Background(), e.p, e.endpoint.ID)
	require.NoError(e.t, err)
	return ep
}

func TestWebhookSignaturesDuringRotation(t *testing.T) {
	t.Parallel()
	dbtest.EachDialect(t, func(t *testing.T, s *db.Store) {
		t.Parallel()
		e := newHookEnv(t, s)
		ctx := context.Background()
		oldSecret := e.endpoint.Secret
		e.jobEvent()
		e.relay()
		require.Equal(t, 1, e.runDue())

		rotated, err := e.svc.Webhooks.RotateSecret(ctx, e.p, e.endpoint.ID)
		require.NoError(t, err)
		require.NotEqual(t, oldSecret, rotated.Secret)
		require.Regexp(t, `^whsec_[A-Za-z0-9+/]+=*$`, rotated.Secret)
		e.jobEvent()
		e.relay()
		require.Equal(t, 1, e.runDue())

		e.clock.Advance(domain.WebhookSecretOverlap + time.Second)
		e.jobEvent()
		e.relay()
		require.Equal(t, 1, e.runDue())

		got := e.recv.requests()
		require.Len(t, got, 3)
		verify := func(secret string, r received) error {
			wh, err := standardwebhooks.NewWebhook(secret)
			require.NoError(t, err)
			// The fake clock has moved a day ahead of the library's: check the signature,
			// and the timestamp against the fake clock.
			require.Equal(t, fmt.Sprint(r.at.Unix()), r.header.Get("webhook-timestamp"))
			return wh.VerifyIgnoringTimestamp(r.body, r.header)
		}
		// Before the rotation: the one secret.
		require.NoError(t, verify(oldSecret, got[0]))
		require.NoError(t, (func() error {
			wh, _ := standardwebhooks.NewWebhook(oldSecret)
			return wh.Verify(got[0].body, got[0].header)
		})())
		require.Error(t, verify(rotated.Secret, got[0]))
		// During the overlap: both sign, in one header.
		require.Len(t, splitSignatures(got[1].header.Get("webhook-signature")), 2)
		require.NoError(t, verify(oldSecret, got[1]))
		require.NoError(t, verify(rotated.Secret, got[1]))
		// After it: only the new one.
		require.Len(t, splitSignatures(got[2].header.Get("webhook-signature")), 1)
		require.NoError(t, verify(rotated.Secret, got[2]))
		require.Error(t, verify(oldSecret, got[2]))
		for _, r := range got {
			require.Equal(t, r.event.ID, r.header.Get("webhook-id"))
			require.Equal(t, "application/json", r.header.Get("Content-Type"))
		}
	})
}

func splitSignatures(h string) []string {
	var out []string
	for _, f := range splitSpace(h) {
		out = append(out, f)
	}
	return out
}

func splitSpace(s string) []string {
	var out []string
	start := -1
	for i, c := range s + " " {
		if c == ' ' {
			if start >= 0 {
				out = append(out, s[start:i])
			}
			start = -1
		} else if start < 0 {
			start = i
		}
	}
	return out
}

func TestWebhookRetries(t *testing.T) {
	t.Parallel()
	dbtest.EachDialect(t, func(t *testing.T, s *db.Store) {
		t.Parallel()
		t.Run("FailsTwiceThenSucceeds", func(t *testing.T) {
			t.Parallel()
			e := newHookEnv(t, s)
			e.recv.setAnswer(func(n int, _ *http.Request) (int, map[string]string) {
				if n < 2 {
					return 500, nil
				}
				return 204, nil
			})
			ev := e.jobEvent()
			e.relay()
			start := e.clock.Now()
			require.Equal(t, 1, e.runDue())
			require.Equal(t, 0, e.runDue(), "the retry is not due yet")
			for e.nextDue() {
				e.runDue()
			}
			got := e.recv.requests()
			require.Len(t, got, 3)
			for _, r := range got {
				require.Equal(t, ev.ID, r.header.Get("webhook-id"), "one webhook-id for every attempt")
			}
			require.Equal(t, start, got[0].at)
			require.Equal(t, start.Add(5*time.Second), got[1].at)
			require.Equal(t, start.Add(5*time.Second+5*time.Minute), got[2].at)

			ds := e.deliveries()
			require.Len(t, ds, 1)
			d := ds[0]
			require.Equal(t, domain.DeliverySucceeded, d.Status)
			require.Equal(t, 3, d.Attempts)
			require.Len(t, d.History, 3)
			require.Equal(t, []int{500, 500, 204}, []int{d.History[0].StatusCode, d.History[1].StatusCode, d.History[2].StatusCode})
			require.Equal(t, "answer 0", d.History[0].ResponseSnippet)
			require.Equal(t, start.Add(5*time.Second), *d.History[0].NextAttemptAt)
			require.Nil(t, d.History[2].NextAttemptAt)
			require.Nil(t, e.getEndpoint().FailingSince, "a success clears the failing mark")
		})
		t.Run("HonoursRetryAfter", func(t *testing.T) {
			t.Parallel()
			e := newHookEnv(t, s)
			e.recv.setAnswer(func(n int, _ *http.Request) (int, map[string]string) {
				if n == 0 {
					return 429, map[string]string{"Retry-After": "600"}
				}
				return 200, nil
			})
			e.jobEvent()
			e.relay()
			start := e.clock.Now()
			e.runDue()
			require.True(t, e.nextDue())
			require.Equal(t, start.Add(600*time.Second), e.clock.Now(), "not the schedule's 5 s: the endpoint asked for 10 minutes")
			e.runDue()
			require.Equal(t, domain.DeliverySucceeded, e.deliveries()[0].Status)
		})
		t.Run("GiveUpAfterTheSchedule", func(t *testing.T) {
			t.Parallel()
			e := newHookEnv(t, s)
			e.recv.setAnswer(func(int, *http.Request) (int, map[string]string) { return 503, nil })
			e.jobEvent()
			e.relay()
			start := e.clock.Now()
			e.runDue()
			for e.nextDue() {
				e.runDue()
			}
			got := e.recv.requests()
			require.Len(t, got, 1+len(domain.WebhookRetrySchedule))
			at := start
			for i, d := range domain.WebhookRetrySchedule {
				at = at.Add(d)
				require.Equal(t, at, got[i+1].at, "attempt %d", i+2)
			}
			d := e.deliveries()[0]
			require.Equal(t, domain.DeliveryFailed, d.Status)
			require.Equal(t, 8, d.Attempts)
			require.Equal(t, "the endpoint answered 503", d.LastError)
			require.Equal(t, domain.EndpointEnabled, e.getEndpoint().Status, "28 hours of failures are not 3 days")

			// A manual retry makes one more attempt, now, and ends the delivery either way.
			e.recv.setAnswer(func(int, *http.Request) (int, map[string]string) { return 200, nil })
			_, err := e.svc.Webhooks.RetryDelivery(context.Background(), e.p, e.endpoint.ID, d.ID)
			require.NoError(t, err)
			require.Equal(t, 1, e.runDue())
			d = e.deliveries()[0]
			require.Equal(t, domain.DeliverySucceeded, d.Status)
			require.Equal(t, 9, d.Attempts)
		})
	})
}

func TestWebhookEndpointDisabling(t *testing.T) {
	t.Parallel()
	dbtest.EachDialect(t, func(t *testing.T, s *db.Store) {
		t.Parallel()
		ctx := context.Background()
		// One after another: the relay takes every endpoint's events from the shared store,
		// so a sibling's relay could hold this one's event while it looks.
		t.Run("GoneDisablesAtOnce", func(t *testing.T) {
			e := newHookEnv(t, s)
			e.recv.setAnswer(func(int, *http.Request) (int, map[string]string) { return 410, nil })
			e.jobEvent()
			e.jobEvent()
			e.relay()
			e.runDue()
			ep := e.getEndpoint()
			require.Equal(t, domain.EndpointDisabled, ep.Status)
			require.Equal(t, "the endpoint answered 410 Gone", ep.DisabledReason)
			require.Equal(t, e.clock.Now(), *ep.DisabledAt)
			require.Len(t, e.recv.requests(), 1, "the second delivery is not attempted once the endpoint is gone")
			for _, d := range e.deliveries() {
				require.Equal(t, domain.DeliveryFailed, d.Status)
			}

			e.jobEvent()
			e.relay()
			require.Len(t, e.deliveries(), 2, "a disabled endpoint gets no new deliveries")
			_, _, err := e.svc.Webhooks.SendTest(ctx, e.p, e.endpoint.ID)
			require.Equal(t, domain.CodeConflict, domain.ErrorCode(err))
			// Its URL may be registered again.
			_, err = e.svc.Webhooks.CreateEndpoint(ctx, e.p, domain.NewWebhookEndpoint{URL: e.recv.URL(), EnabledEvents: []string{domain.EventFileReady}})
			require.NoError(t, err)
			_, err = e.svc.Webhooks.CreateEndpoint(ctx, e.p, domain.NewWebhookEndpoint{URL: e.recv.URL(), EnabledEvents: []string{domain.EventFileReady}})
			require.Equal(t, domain.CodeConflict, domain.ErrorCode(err), "but not twice while enabled")
		})
		t.Run("ThreeDaysOfFailuresDisable", func(t *testing.T) {
			e := newHookEnv(t, s)
			e.recv.setAnswer(func(int, *http.Request) (int, map[string]string) { return 500, nil })
			first := e.clock.Now()
			for day := 0; day < 4 && e.getEndpoint().Status == domain.EndpointEnabled; day++ {
				e.jobEvent()
				e.relay()
				e.runDue()
				for e.nextDue() && e.getEndpoint().Status == domain.EndpointEnabled {
					e.runDue()
				}
				require.Equal(t, first, *e.getEndpoint().FailingSince)
				e.clock.Advance(24 * time.Hour)
			}
			ep := e.getEndpoint()
			require.Equal(t, domain.EndpointDisabled, ep.Status)
			require.Contains(t, ep.DisabledReason, "every delivery failed from "+first.Format(time.RFC3339))
			require.False(t, ep.DisabledAt.Before(first.Add(domain.WebhookDisableAfter)))
		})
		t.Run("DeletedEndpointGetsNothingMore", func(t *testing.T) {
			e := newHookEnv(t, s)
			e.recv.setAnswer(func(int, *http.Request) (int, map[string]string) { return 500, nil })
			e.jobEvent()
			e.relay()
			e.runDue()
			require.Len(t, e.recv.requests(), 1)
			d := e.deliveries()[0]
			require.Equal(t, domain.DeliveryPending, d.Status, "a retry is queued")

			require.NoError(t, e.svc.Webhooks.DeleteEndpoint(ctx, e.p, e.endpoint.ID))
			e.recv.setAnswer(func(int, *http.Request) (int, map[string]string) { return 200, nil })
			e.jobEvent()
			e.relay()
			for e.nextDue() {
				e.runDue()
			}
			// The queued retry, run as the queue would run it.
			require.NoError(t, e.svc.Webhooks.Attempt(ctx, domain.DeliveryTask{DeliveryID: d.ID, EndpointID: d.EndpointID, Attempt: 1}))
			require.Len(t, e.recv.requests(), 1, "nothing more after the deletion, queued retries included")
			got, err := e.store.FindDeliveryByID(ctx, d.ID)
			require.NoError(t, err)
			require.Equal(t, domain.DeliveryFailed, got.Status)
			require.Equal(t, "the endpoint was deleted", got.LastError)
		})
	})
}

func TestWebhookReceiverDownForAnHour(t *testing.T) {
	t.Parallel()
	dbtest.EachDialect(t, func(t *testing.T, s *db.Store) {
		t.Parallel()
		e := newHookEnv(t, s)
		start := e.clock.Now()
		up := start.Add(time.Hour)
		e.recv.setAnswer(func(int, *http.Request) (int, map[string]string) {
			if e.clock.Now().Before(up) {
				return 503, nil
			}
			return 200, nil
		})
		var events []string
		for i := 0; i < 20; i++ {
			events = append(events, e.jobEvent().ID)
			e.clock.Advance(time.Minute) // spread over the first 20 minutes
		}
		require.Equal(t, 20, e.relay())
		for e.runDue() > 0 || e.nextDue() {
		}
		var delivered []string
		attempts := map[string][]time.Time{}
		for _, r := range e.recv.requests() {
			id := r.header.Get("webhook-id")
			attempts[id] = append(attempts[id], r.at)
			if !r.at.Before(up) {
				delivered = append(delivered, id)
			}
		}
		sort.Strings(delivered)
		require.Equal(t, events, delivered, "every event arrives once the receiver is back, once")
		for _, id := range events {
			ts := attempts[id]
			// Each delivery followed the schedule from its own first attempt.
			at := ts[0]
			for i := 1; i < len(ts); i++ {
				at = at.Add(domain.WebhookRetrySchedule[i-1])
				require.Equal(t, at, ts[i], "%s attempt %d", id, i+1)
			}
			require.False(t, ts[len(ts)-1].Before(up))
			require.True(t, ts[len(ts)-2].Before(up), "the first attempt after the outage succeeded")
		}
		for _, d := range e.deliveries() {
			require.Equal(t, domain.DeliverySucceeded, d.Status)
		}
	})
}

// faultyStore fails ReleaseOutbox while armed: a relay that dies after recording its
// deliveries and before its commit.
type faultyStore struct {
	domain.Store
	armed *bool
	mu    *sync.Mutex
}

var errKilled = errors.New("relay killed")

func (f faultyStore) InTx(ctx context.Context, fn func(tx domain.Store) error) error {
	return f.Store.InTx(ctx, func(tx domain.Store) error { return fn(faultyStore{Store: tx, armed: f.armed, mu: f.mu}) })
}

func (f faultyStore) ReleaseOutbox(ctx context.Context, ids []string) error {
	f.mu.Lock()
	armed := *f.armed
	f.mu.Unlock()
	if armed {
		return errKilled
	}
	return f.Store.ReleaseOutbox(ctx, ids)
}

func TestRelay(t *testing.T) {
	t.Parallel()
	dbtest.EachDialect(t, func(t *testing.T, s *db.Store) {
		t.Parallel()
		ctx := context.Background()
		t.Run("CommitsOutOfIdOrder", func(t *testing.T) {
			e := newHookEnv(t, s)
			early, late := e.newJobEvent(), e.newJobEvent()
			require.Less(t, early.ID, late.ID)
			require.NoError(t, s.CreateEvent(ctx, late)) // the larger id commits first
			require.Equal(t, 1, e.relay())
			require.NoError(t, s.CreateEvent(ctx, early))
			require.Equal(t, 1, e.relay(), "the smaller id, committed later, is not skipped")
			e.runDue()
			require.ElementsMatch(t, []string{early.ID, late.ID}, webhookIDs(e.recv.requests()))
		})
		t.Run("KilledMidBatchResumes", func(t *testing.T) {
			e := newHookEnv(t, s)
			armed, mu := true, &sync.Mutex{}
			w := *e.svc.Webhooks
			w.Store = faultyStore{Store: s, armed: &armed, mu: mu}
			var ids []string
			for i := 0; i < 7; i++ {
				ids = append(ids, e.jobEvent().ID)
			}
			n, err := w.Relay(ctx, 5)
			require.ErrorIs(t, err, errKilled)
			require.Zero(t, n)
			require.Empty(t, e.deliveries(), "the killed relay's transaction left nothing")
			mu.Lock()
			armed = false
			mu.Unlock()
			for {
				n, err := w.Relay(ctx, 5)
				require.NoError(t, err)
				if n == 0 {
					break
				}
			}
			ds := e.deliveries()
			require.Len(t, ds, 7, "one delivery per event: nothing lost, nothing twice")
			var got []string
			for _, d := range ds {
				got = append(got, d.EventID)
			}
			require.ElementsMatch(t, ids, got)
		})
		t.Run("LostScheduleIsSwept", func(t *testing.T) {
			e := newHookEnv(t, s)
			q := &recordingQueue{fail: true}
			e.svc.Webhooks.Deliveries = q
			e.jobEvent()
			n, err := e.svc.Webhooks.Relay(ctx, 10)
			require.Equal(t, 1, n)
			require.Error(t, err, "the relay committed, then could not schedule")
			q.fail = false
			require.NoError(t, err2(e.svc.Webhooks.RequeueDueDeliveries(ctx, time.Minute, 100)))
			require.Empty(t, q.tasks, "not overdue yet")
			e.clock.Advance(2 * time.Minute)
			_, err = e.svc.Webhooks.RequeueDueDeliveries(ctx, time.Minute, 100)
			require.NoError(t, err)
			var ours []domain.DeliveryTask
			for _, task := range q.tasks {
				if task.EndpointID == e.endpoint.ID { // the database is shared with the cases above
					ours = append(ours, task)
				}
			}
			require.Len(t, ours, 1)
			require.Equal(t, 0, ours[0].Attempt)
			require.NoError(t, e.svc.Webhooks.Attempt(ctx, ours[0]))
			require.Len(t, e.recv.requests(), 1)
		})
	})
}

// recordingQueue stands in for the queue where a test needs to see what was scheduled.
type recordingQueue struct {
	mu    sync.Mutex
	fail  bool
	tasks []domain.DeliveryTask
}

func (q *recordingQueue) EnqueueDelivery(_ context.Context, t domain.DeliveryTask) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.fail {
		return errors.New("redis is down")
	}
	q.tasks = append(q.tasks, t)
	return nil
}

func webhookIDs(rs []received) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.header.Get("webhook-id"))
	}
	return out
}

// TestRelayConcurrentAdmissions admits 200 jobs at once while three relays run; the
// admissions' commits interleave out of id order (ids are minted before the batched
// writes commit). Then the 200 jobs are cancelled at once. Every event reaches live
// subscribers exactly once and every job.cancelled gets exactly one delivery.
func TestRelayConcurrentAdmissions(t *testing.T) {
	t.Parallel()
	dbtest.EachDialect(t, func(t *testing.T, s *db.Store) {
		t.Parallel()
		ctx := context.Background()
		e := newHookEnv(t, s, domain.EventJobCancelled)
		sub, err := e.bus.Subscribe(ctx, domain.ProjectTopic(e.boot.Project.ID, domain.EnvLive))
		require.NoError(t, err)
		defer sub.Close()
		seen := map[string]int{}
		var seenMu sync.Mutex
		collected := make(chan struct{})
		go func() {
			defer close(collected)
			for ev := range sub.Events() {
				seenMu.Lock()
				seen[ev.ID]++
				seenMu.Unlock()
			}
		}()

		const n = 200
		files := make([]*domain.File, n)
		for i := range files {
			files[i] = e.readyFile()
		}
		relayCtx, stopRelays := context.WithCancel(ctx)
		var relays sync.WaitGroup
		for r := 0; r < 3; r++ {
			relays.Add(1)
			go func() {
				defer relays.Done()
				for relayCtx.Err() == nil {
					if _, err := e.svc.Webhooks.Relay(relayCtx, 7); err != nil && relayCtx.Err() == nil {
						t.Errorf("relay: %v", err)
						stopRelays()
						return
					}
				}
			}()
		}
		defer func() { stopRelays(); relays.Wait() }()
		jobIDs := make([]string, n)
		var wg sync.WaitGroup
		for i := range files {
			wg.Add(1)
			go func() {
				defer wg.Done()
				j, err := e.svc.Jobs.CreateJob(ctx, e.p, domain.JobRequest{FileID: files[i].ID, Operation: "inspect"})
				if err != nil {
					t.Errorf("admit: %v", err)
					return
				}
				jobIDs[i] = j.ID
			}()
		}
		wg.Wait()
		require.False(t, t.Failed())
		for i := range jobIDs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := e.svc.Jobs.CancelJob(ctx, e.p, jobIDs[i]); err != nil {
					t.Errorf("cancel: %v", err)
				}
			}()
		}
		wg.Wait()
		stopRelays()
		relays.Wait()
		e.relay() // whatever committed after the relays stopped
		sub.Close()
		<-collected

		var queued, cancelled []string
		for _, id := range jobIDs {
			evs, err := s.FindEventsByFile(ctx, e.boot.Organization.ID, filesOf(t, s, id), 0)
			require.NoError(t, err)
			require.Len(t, evs, 2, "job.queued and job.cancelled in the file's history")
			require.Equal(t, id, evs[0].SubjectID, "a job event is about the job")
			queued, cancelled = append(queued, evs[0].ID), append(cancelled, evs[1].ID)
		}
		for _, id := range append(queued, cancelled...) {
			require.Equal(t, 1, seen[id], "event %s published exactly once", id)
		}
		require.Len(t, seen, 2*n)

		ds := e.deliveries100(n)
		require.Len(t, ds, n, "one delivery per job.cancelled")
		var got []string
		for _, d := range ds {
			got = append(got, d.EventID)
		}
		require.ElementsMatch(t, cancelled, got)
		for e.runDue() > 0 {
		}
		require.ElementsMatch(t, cancelled, webhookIDs(e.recv.requests()), "each delivered exactly once")
	})
}

func filesOf(t *testing.T, s *db.Store, jobID string) string {
	t.Helper()
	j, err := s.FindJobByID(context.Background(), jobID)
	require.NoError(t, err)
	return j.FileID
}

// deliveries100 pages through all of the endpoint's deliveries.
func (e *hookEnv) deliveries100(max int) []*domain.Delivery {
	e.t.Helper()
	var out []*domain.Delivery
	page := domain.Page{Limit: 100}
	for {
		list, err := e.svc.Webhooks.ListDeliveries(context.Background(), e.p, e.endpoint.ID, page)
		require.NoError(e.t, err)
		out = append(out, list.Data...)
		if !list.HasMore || len(out) > max {
			return out
		}
		page.StartingAfter = list.Data[len(list.Data)-1].ID
	}
}

func err2(_ int, err error) error { return err }

func TestEventRetentionSweep(t *testing.T) {
	t.Parallel()
	dbtest.EachDialect(t, func(t *testing.T, s *db.Store) {
		t.Parallel()
		ctx := context.Background()
		e := newHookEnv(t, s)
		e.recv.setAnswer(func(int, *http.Request) (int, map[string]string) { return 500, nil })
		old := e.jobEvent()
		e.relay()
		e.runDue()
		unrelayed := e.jobEvent() // still in the outbox when the sweep comes
		e.clock.Advance(e.svc.Config.EventRetention + time.Hour)
		n, err := e.svc.Webhooks.SweepEvents(ctx, 1000)
		require.NoError(t, err)
		require.GreaterOrEqual(t, n, 1)
		_, err = s.FindEventByID(ctx, old.ID)
		require.ErrorIs(t, err, domain.ErrNotFound)
		require.Empty(t, e.deliveries(), "its deliveries went with it")
		_, err = s.FindEventByID(ctx, unrelayed.ID)
		require.NoError(t, err, "an event not relayed yet is never swept")
		var attempts int
		require.NoError(t, s.DB().NewRaw("SELECT count(*) FROM delivery_attempts").Scan(ctx, &attempts))
		require.Zero(t, attempts, "nor their attempts")
		require.Equal(t, 1, e.relay())
		_, err = e.svc.Webhooks.FindEvent(ctx, e.p, unrelayed.ID)
		require.Equal(t, domain.CodeNotFound, domain.ErrorCode(err), "GET shows no event older than the retention")
	})
}

// TestSlowEndpointDoesNotHoldUpOthers runs the real delivery server: one endpoint that
// never answers in time gets many deliveries, and another endpoint's deliveries still
// arrive while it stalls, because each endpoint may take only a few of the goroutines.
func TestSlowEndpointDoesNotHoldUpOthers(t *testing.T) {
	t.Parallel()
	dbtest.EachDialect(t, func(t *testing.T, s *db.Store) {
		t.Parallel()
		ctx := context.Background()
		e := newHookEnv(t, s, domain.EventJobSucceeded) // the fast one
		release := make(chan struct{})
		var inFlight, most atomic.Int32
		slow := newReceiver(t, nil)
		slow.setAnswer(func(int, *http.Request) (int, map[string]string) {
			n := inFlight.Add(1)
			for {
				m := most.Load()
				if n <= m || most.CompareAndSwap(m, n) {
					break
				}
			}
			<-release
			inFlight.Add(-1)
			return 200, nil
		})
		t.Cleanup(func() { close(release) })
		_, err := e.svc.Webhooks.CreateEndpoint(ctx, e.p, domain.NewWebhookEndpoint{URL: slow.URL(), EnabledEvents: []string{domain.EventJobFailed}})
		require.NoError(t, err)

		opt, _, err := jobs.ParseRedisURL(redistest.URL(t))
		require.NoError(t, err)
		q := jobs.NewWebhookQueue(opt)
		t.Cleanup(func() { q.Close() })
		e.svc.Webhooks.Deliveries = q
		s.OnOutbox(e.bus.Nudge)
		d := jobs.NewServer(opt, jobs.ServerConfig{Pools: []jobs.Pool{jobs.WebhookPool(6)},
			TaskCheckInterval: 5 * time.Millisecond, DelayedTaskCheckInterval: 100 * time.Millisecond, ShutdownTimeout: time.Second},
			slog.New(slog.NewTextHandler(io.Discard, nil)))
		jobs.RegisterWebhookTasks(d, e.svc, q, jobs.WebhookConfig{PerEndpoint: 2, Nudges: e.bus.Nudges()}, slog.New(slog.NewTextHandler(io.Discard, nil)))
		require.NoError(t, d.Start())
		t.Cleanup(d.Shutdown)

		for i := 0; i < 20; i++ {
			ev := e.newJobEvent()
			ev.Type = domain.EventJobFailed
			require.NoError(t, s.CreateEvent(ctx, ev))
		}
		eventually.True(t, "the condition to hold", func() bool { return inFlight.Load() == 2 })
		var fast []string
		for i := 0; i < 5; i++ {
			fast = append(fast, e.jobEvent().ID)
		}
		eventually.True(t, "the fast endpoint is served while the slow one stalls", func() bool { return len(e.recv.requests()) == 5 })
		require.ElementsMatch(t, fast, webhookIDs(e.recv.requests()))
		require.EqualValues(t, 2, most.Load(), "never more than its share at the slow endpoint")
	})
}

// TestDeliveryVetsEveryConnection: an endpoint accepted at creation whose name now
// leads to a refused address (DNS changed, or the operator closed the network) gets no
// request; the attempt is recorded as refused.
func TestDeliveryVetsEveryConnection(t *testing.T) {
	t.Parallel()
	dbtest.EachDialect(t, func(t *testing.T, s *db.Store) {
		t.Parallel()
		ctx := context.Background()
		e := newHookEnv(t, s)
		u, err := url.Parse(e.recv.URL())
		require.NoError(t, err)
		named := "https://localhost:" + u.Port() + "/named"
		ep, err := e.svc.Webhooks.CreateEndpoint(ctx, e.p, domain.NewWebhookEndpoint{URL: named, EnabledEvents: []string{domain.EventJobFailed}})
		require.NoError(t, err, "loopback is open at creation")
		strict := jobs.NewHTTPSender(jobs.SenderConfig{Guard: &netguard.Guard{}, RootCAs: e.recv.pool})
		t.Cleanup(strict.Close)
		e.svc.Webhooks.Sender = strict
		ev := e.newJobEvent()
		ev.Type = domain.EventJobFailed
		require.NoError(t, s.CreateEvent(ctx, ev))
		e.relay()
		e.endpoint = ep
		require.Equal(t, 1, e.runDue())
		require.Empty(t, e.recv.requests(), "the connection was refused before any byte was sent")
		d := e.deliveries()[0]
		require.Equal(t, domain.DeliveryPending, d.Status, "retried later: the network may open again")
		require.Zero(t, d.History[0].StatusCode)
		require.Contains(t, d.History[0].Error, "loopback address")
	})
}
