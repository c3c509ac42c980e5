package rest_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/domain/eventually"
)

// stalling is the real store, except that the first admission waits until released
// (a request caught in the middle of its effect), and that renewals of claims fail
// while renewFails is set (a holder that can no longer renew: as good as dead).
type stalling struct {
	domain.Store
	first      atomic.Bool
	entered    chan struct{}
	release    chan struct{}
	renewFails atomic.Bool
}

func newStalling() *stalling {
	return &stalling{entered: make(chan struct{}), release: make(chan struct{})}
}

// AdmitJobs stalls the first admission made under a claim held before it (a job
// request claims its key with its admission's write, and holds a claim first only when
// that write finds the key taken: the tests leave a lapsed claim on the key for that).
func (s *stalling) AdmitJobs(ctx context.Context, a *domain.Admission) error {
	if !a.ClaimAtWrite && s.first.CompareAndSwap(false, true) {
		close(s.entered)
		<-s.release
	}
	return s.Store.AdmitJobs(ctx, a)
}

func (s *stalling) RenewIdempotencyKey(ctx context.Context, id string, until time.Time) error {
	if s.renewFails.Load() {
		return errors.New("the holder cannot renew")
	}
	return s.Store.RenewIdempotencyKey(ctx, id, until)
}

// leaseSetup is a server whose clock the test moves, with a short lease, over a
// stalling store.
func leaseSetup(t *testing.T) (*bundle, *shiftedClock, *stalling, time.Duration) {
	t.Helper()
	// Long enough that a renewal (every fifth of it) is never late by a whole lease on
	// a loaded machine; the tests move the clock rather than wait for it.
	const lease = 3 * time.Second
	clock, stall := &shiftedClock{}, newStalling()
	b := setup(t, setupOpts{clock: clock, cfg: func(c *domain.Config) { c.IdempotencyLease = lease },
		store: func(s domain.Store) domain.Store { stall.Store = s; return stall }})
	return b, clock, stall, lease
}

// lapsedClaim leaves on key (a job request of b.liveA's project) a claim in progress
// whose lease has lapsed, as a holder that died leaves it: the next request with the key
// takes it over, holding the claim while its effect runs.
func (b *bundle) lapsedClaim(clock *shiftedClock, key string) {
	b.t.Helper()
	now := clock.Now()
	dead := &domain.IdempotencyRecord{ID: domain.NewID(domain.PrefixIdempotency), OrganizationID: b.orgA.Organization.ID,
		Environment: domain.EnvLive, ProjectID: b.orgA.Project.ID, Endpoint: "jobs.create", Key: key,
		Fingerprint: "of a request that died", CreatedAt: now.Add(-time.Hour), ExpiresAt: now.Add(24 * time.Hour), LeaseUntil: now}
	existing, err := b.store.ClaimIdempotencyKey(context.Background(), dead)
	require.NoError(b.t, err)
	require.Nil(b.t, existing)
}

// async sends r in the background.
func (b *bundle) async(r req) <-chan response {
	out := make(chan response, 1)
	go func() { out <- b.do(r) }()
	return out
}

func waitFor[T any](t *testing.T, c <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(30 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

func requireInProgress(t *testing.T, r response) {
	t.Helper()
	require.Equal(t, 409, r.status, string(r.body))
	e := r.json(t)["error"].(map[string]any)
	require.Equal(t, domain.CodeIdempotencyConflict, e["code"])
	require.Equal(t, true, e["details"].(map[string]any)["in_progress"])
	require.Equal(t, "1", r.header.Get("Retry-After"))
}

// leaseOf reads the lease of the claim of an Idempotency-Key.
func (b *bundle) leaseOf(key string) time.Time {
	b.t.Helper()
	var until time.Time
	require.NoError(b.t, b.store.DB().NewSelect().Table("idempotency_records").Column("lease_until").
		Where(`"key" = ?`, key).Scan(context.Background(), &until))
	return until
}

func TestIdempotencyLease(t *testing.T) {
	t.Parallel()

	t.Run("LiveHolderKeepsItsClaim", func(t *testing.T) {
		t.Parallel()
		b, clock, stall, lease := leaseSetup(t)
		job := map[string]any{"file_id": b.readyFile(b.liveA, "a.pdf", []byte(minimalPDF)), "operation": "inspect"}
		r := req{method: "POST", path: "/v1/jobs", key: b.liveA, idem: "live-1", body: job}
		b.lapsedClaim(clock, "live-1")
		first := b.async(r)
		waitFor(t, stall.entered, "the first request to reach its effect")
		requireInProgress(t, b.do(r))

		// Far past the lease the holder took; it renews while it runs.
		clock.advance(10 * lease)
		eventually.True(t, "the running request renews its lease", func() bool { return b.leaseOf("live-1").After(clock.Now()) })
		requireInProgress(t, b.do(r))

		close(stall.release)
		done := waitFor(t, first, "the first request")
		require.Equal(t, 202, done.status, string(done.body))
		replay := b.do(r)
		require.Equal(t, "true", replay.header.Get("Idempotent-Replayed"))
		require.Equal(t, string(done.body), string(replay.body))
	})

	t.Run("HolderThatStopsRenewingIsTakenOver", func(t *testing.T) {
		t.Parallel()
		b, clock, stall, lease := leaseSetup(t)
		stall.renewFails.Store(true)
		job := map[string]any{"file_id": b.readyFile(b.liveA, "a.pdf", []byte(minimalPDF)), "operation": "inspect"}
		before := b.account(b.orgA.Organization.ID)
		r := req{method: "POST", path: "/v1/jobs", key: b.liveA, idem: "dead-1", body: job}
		b.lapsedClaim(clock, "dead-1")
		first := b.async(r)
		waitFor(t, stall.entered, "the first request to reach its effect")
		requireInProgress(t, b.do(r))

		// Its lease lapses: a retry takes the key over and runs the request itself.
		clock.advance(lease)
		taken := b.do(r)
		require.Equal(t, 202, taken.status, string(taken.body))
		require.Empty(t, taken.header.Get("Idempotent-Replayed"))

		// The old holder wakes up: its claim is gone, so its admission writes nothing.
		close(stall.release)
		late := waitFor(t, first, "the first request")
		requireInProgress(t, late)
		jobs := b.do(req{method: "GET", path: "/v1/jobs", key: b.liveA}).json(t)["data"].([]any)
		require.Len(t, jobs, 1, "one job for the two holders")
		require.Equal(t, taken.json(t)["id"], jobs[0].(map[string]any)["id"])
		after := b.account(b.orgA.Organization.ID)
		require.Equal(t, before.Reserved+1, after.Reserved, "reserved once")

		replay := b.do(r)
		require.Equal(t, "true", replay.header.Get("Idempotent-Replayed"))
		require.Equal(t, string(taken.body), string(replay.body))
	})

	t.Run("ClaimLeftByADeadProcessIsFreedByItsLease", func(t *testing.T) {
		t.Parallel()
		// As a process killed mid-request leaves it: a claim in progress, never renewed
		// (made here for another body: the key is taken whatever the request).
		clock := &shiftedClock{}
		b := setup(t, setupOpts{clock: clock})
		now := clock.Now()
		dead := &domain.IdempotencyRecord{ID: domain.NewID(domain.PrefixIdempotency), OrganizationID: b.orgA.Organization.ID,
			Environment: domain.EnvLive, ProjectID: b.orgA.Project.ID, APIKeyID: b.keyID(b.liveA),
			Endpoint: "webhook_endpoints.create", Key: "killed-1", Fingerprint: "of the request that died",
			CreatedAt: now, ExpiresAt: now.Add(24 * time.Hour), LeaseUntil: now.Add(b.svc.Config.IdempotencyLease)}
		existing, err := b.store.ClaimIdempotencyKey(context.Background(), dead)
		require.NoError(t, err)
		require.Nil(t, existing)
		r := req{method: "POST", path: "/v1/webhook-endpoints", key: b.liveA, idem: "killed-1", body: webhookBody("https://example.com/k")}
		held := b.do(r)
		require.Equal(t, 409, held.status, string(held.body))
		require.Equal(t, domain.CodeIdempotencyConflict, held.errorCode(t))

		clock.advance(b.svc.Config.IdempotencyLease)
		created := b.do(r)
		require.Equal(t, 201, created.status, string(created.body))
		require.Empty(t, created.header.Get("Idempotent-Replayed"))
		require.Equal(t, 1, countEndpoints(t, b, b.liveA))
	})
}
