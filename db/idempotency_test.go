package db_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/db"
	"github.com/filemill/filemill/db/dbtest"
	"github.com/filemill/filemill/domain"
)

// testLease is the lease of the claims of these tests.
const testLease = 5 * time.Second

// testProject is the project the claims of these tests act on.
const testProject = "prj_main"

func newIdempotencyRecord(orgID, key string, at time.Time) *domain.IdempotencyRecord {
	return &domain.IdempotencyRecord{ID: domain.NewID(domain.PrefixIdempotency), OrganizationID: orgID, Environment: domain.EnvLive,
		ProjectID: testProject, Endpoint: "jobs.create", Key: key, Fingerprint: "fp-" + key, State: domain.IdempotencyInProgress, CreatedAt: at, ExpiresAt: at.Add(24 * time.Hour),
		LeaseUntil: at.Add(testLease)}
}

func TestIdempotencyKeys(t *testing.T) {
	t.Parallel()
	dbtest.EachDialect(t, func(t *testing.T, s *db.Store) {
		t.Parallel()
		ctx := context.Background()
		tn := setupTenants(t, s)

		t.Run("ClaimFinishReplay", func(t *testing.T) {
			rec := newIdempotencyRecord(tn.org.ID, "k1", now())
			existing, err := s.ClaimIdempotencyKey(ctx, rec)
			require.NoError(t, err)
			require.Nil(t, existing, "the first claim inserts")

			again := newIdempotencyRecord(tn.org.ID, "k1", now())
			existing, err = s.ClaimIdempotencyKey(ctx, again)
			require.NoError(t, err)
			require.Equal(t, rec, existing, "the second claim sees the first, still in progress")

			rec.State, rec.Answer = domain.IdempotencyDone, &domain.Answer{Result: domain.ResultCreated, Object: []byte(`{"id":"job_x"}`)}
			require.NoError(t, s.FinishIdempotencyKey(ctx, rec))
			existing, err = s.ClaimIdempotencyKey(ctx, again)
			require.NoError(t, err)
			require.Equal(t, rec, existing, "the replay gets the stored response")

			// Released only while in progress: a finished record stays.
			require.NoError(t, s.ReleaseIdempotencyKey(ctx, rec.ID))
			existing, err = s.ClaimIdempotencyKey(ctx, again)
			require.NoError(t, err)
			require.Equal(t, rec.ID, existing.ID)
		})
		t.Run("ScopedByOrganizationEnvironmentProjectEndpointAndKey", func(t *testing.T) {
			at := now()
			first := newIdempotencyRecord(tn.org.ID, "k2", at)
			require.NoError(t, claimed(t, s, first))
			for name, change := range map[string]func(*domain.IdempotencyRecord){
				"Organization": func(r *domain.IdempotencyRecord) { r.OrganizationID = tn.other.ID },
				"Environment":  func(r *domain.IdempotencyRecord) { r.Environment = domain.EnvTest },
				"Project":      func(r *domain.IdempotencyRecord) { r.ProjectID = "prj_second" },
				"Endpoint":     func(r *domain.IdempotencyRecord) { r.Endpoint = "uploads.create" },
				"APIKey":       func(r *domain.IdempotencyRecord) { r.APIKeyID = "key_other" },
			} {
				other := newIdempotencyRecord(tn.org.ID, "k2", at)
				change(other)
				require.NoError(t, claimed(t, s, other), name)
			}
			again := newIdempotencyRecord(tn.org.ID, "k2", at)
			existing, err := s.ClaimIdempotencyKey(ctx, again)
			require.NoError(t, err)
			require.Equal(t, first, existing, "the same scope finds the first claim")
		})
		t.Run("Release", func(t *testing.T) {
			rec := newIdempotencyRecord(tn.org.ID, "k3", now())
			require.NoError(t, claimed(t, s, rec))
			require.NoError(t, s.ReleaseIdempotencyKey(ctx, rec.ID))
			require.NoError(t, claimed(t, s, newIdempotencyRecord(tn.org.ID, "k3", now())), "a released key can be claimed again")
			require.NoError(t, s.ReleaseIdempotencyKey(ctx, "idem_missing"))
		})
		t.Run("FinishMissing", func(t *testing.T) {
			rec := newIdempotencyRecord(tn.org.ID, "k4", now())
			rec.Answer = &domain.Answer{Result: domain.ResultEmpty}
			require.ErrorIs(t, s.FinishIdempotencyKey(ctx, rec), domain.ErrNotFound)
		})
		t.Run("RefusalRoundTrip", func(t *testing.T) {
			rec := newIdempotencyRecord(tn.org.ID, "k4r", now())
			require.NoError(t, claimed(t, s, rec))
			rec.State, rec.Answer = domain.IdempotencyDone, &domain.Answer{Error: &domain.AnswerError{Code: domain.CodePaymentRequired,
				Message: "short", Param: "file_id", Details: []byte(`{"credits_required":3}`), RequestID: "req_1", RetryAfter: 7}}
			require.NoError(t, s.FinishIdempotencyKey(ctx, rec))
			existing, err := s.ClaimIdempotencyKey(ctx, newIdempotencyRecord(tn.org.ID, "k4r", now()))
			require.NoError(t, err)
			require.Equal(t, rec.Answer, existing.Answer)
		})
		t.Run("LeaseLapsedIsTakenOver", func(t *testing.T) {
			at := now()
			held := newIdempotencyRecord(tn.org.ID, "k8", at)
			require.NoError(t, claimed(t, s, held))
			// Within the lease the claim holds.
			existing, err := s.ClaimIdempotencyKey(ctx, newIdempotencyRecord(tn.org.ID, "k8", held.LeaseUntil.Add(-time.Millisecond)))
			require.NoError(t, err)
			require.Equal(t, held.ID, existing.ID)
			// A renewal moves the lease on.
			require.NoError(t, s.RenewIdempotencyKey(ctx, held.ID, at.Add(2*testLease)))
			existing, err = s.ClaimIdempotencyKey(ctx, newIdempotencyRecord(tn.org.ID, "k8", at.Add(testLease)))
			require.NoError(t, err)
			require.Equal(t, held.ID, existing.ID, "renewed: still held")
			require.True(t, existing.LeaseUntil.Equal(at.Add(2*testLease)))
			// Past the lease, a retry takes the key over.
			retry := newIdempotencyRecord(tn.org.ID, "k8", at.Add(2*testLease))
			existing, err = s.ClaimIdempotencyKey(ctx, retry)
			require.NoError(t, err)
			require.Nil(t, existing, "the lapsed claim gave way")
			held.Answer = &domain.Answer{Result: domain.ResultEmpty}
			require.ErrorIs(t, s.FinishIdempotencyKey(ctx, held), domain.ErrNotFound, "the old holder can no longer answer")
		})
		t.Run("AnsweredIsNeverTakenOver", func(t *testing.T) {
			at := now()
			rec := newIdempotencyRecord(tn.org.ID, "k9", at)
			require.NoError(t, claimed(t, s, rec))
			rec.Answer = &domain.Answer{Result: domain.ResultOK, Object: []byte(`{}`)}
			require.NoError(t, s.FinishIdempotencyKey(ctx, rec))
			existing, err := s.ClaimIdempotencyKey(ctx, newIdempotencyRecord(tn.org.ID, "k9", at.Add(time.Hour)))
			require.NoError(t, err)
			require.Equal(t, rec.ID, existing.ID)
			require.Equal(t, domain.IdempotencyDone, existing.State)
		})
		t.Run("NilResponseRoundTrip", func(t *testing.T) {
			rec := newIdempotencyRecord(tn.org.ID, "k5", now())
			require.NoError(t, claimed(t, s, rec))
			existing, err := s.ClaimIdempotencyKey(ctx, newIdempotencyRecord(tn.org.ID, "k5", now()))
			require.NoError(t, err)
			require.Equal(t, rec, existing)
		})
		t.Run("ExpiredIsReplaced", func(t *testing.T) {
			old := now().Add(-48 * time.Hour)
			stale := newIdempotencyRecord(tn.org.ID, "k6", old)
			require.NoError(t, claimed(t, s, stale))
			stale.Answer = &domain.Answer{Result: domain.ResultEmpty}
			require.NoError(t, s.FinishIdempotencyKey(ctx, stale))

			fresh := newIdempotencyRecord(tn.org.ID, "k6", now())
			existing, err := s.ClaimIdempotencyKey(ctx, fresh)
			require.NoError(t, err)
			require.Nil(t, existing, "the expired record gave way")
			existing, err = s.ClaimIdempotencyKey(ctx, newIdempotencyRecord(tn.org.ID, "k6", now()))
			require.NoError(t, err)
			require.Equal(t, fresh.ID, existing.ID)
		})
		t.Run("ExpiryIsInclusive", func(t *testing.T) {
			at := now().Add(-time.Hour)
			rec := newIdempotencyRecord(tn.org.ID, "k7", at)
			require.NoError(t, claimed(t, s, rec))
			next := newIdempotencyRecord(tn.org.ID, "k7", rec.ExpiresAt)
			existing, err := s.ClaimIdempotencyKey(ctx, next)
			require.NoError(t, err)
			require.Nil(t, existing, "expires_at <= created_at counts as expired")
		})
		t.Run("DeleteExpired", func(t *testing.T) {
			org := createOrg(t, s, "sweep")
			base := now().Add(-72 * time.Hour)
			for i := range 5 {
				require.NoError(t, claimed(t, s, newIdempotencyRecord(org.ID, label(i), base.Add(time.Duration(i)*time.Hour))))
			}
			live := newIdempotencyRecord(org.ID, "live", now())
			require.NoError(t, claimed(t, s, live))

			// Records of the other tests expire a day from now: they stay.
			n, err := s.DeleteExpiredIdempotencyKeys(ctx, base.Add(24*time.Hour+2*time.Hour))
			require.NoError(t, err)
			require.Equal(t, 3, n, "expires_at <= now")
			n, err = s.DeleteExpiredIdempotencyKeys(ctx, now().Add(-time.Hour))
			require.NoError(t, err)
			require.Equal(t, 2, n)
			existing, err := s.ClaimIdempotencyKey(ctx, newIdempotencyRecord(org.ID, "live", now()))
			require.NoError(t, err)
			require.Equal(t, live.ID, existing.ID)
		})
	})
}

// claimed claims rec and fails unless it was inserted.
func claimed(t *testing.T, s *db.Store, rec *domain.IdempotencyRecord) error {
	t.Helper()
	existing, err := s.ClaimIdempotencyKey(context.Background(), rec)
	if err != nil {
		return err
	}
	require.Nil(t, existing, "claim of %s found %v", rec.Key, existing)
	return nil
}

func TestIdempotencyConcurrentClaims(t *testing.T) {
	t.Parallel()
	dbtest.EachDialect(t, func(t *testing.T, s *db.Store) {
		t.Parallel()
		tn := setupTenants(t, s)

		for _, tc := range []struct {
			name    string
			expired bool
		}{{"Fresh", false}, {"ReplacingExpired", true}} {
			t.Run(tc.name, func(t *testing.T) {
				key := "race-" + tc.name
				if tc.expired {
					require.NoError(t, claimed(t, s, newIdempotencyRecord(tn.org.ID, key, now().Add(-48*time.Hour))))
				}
				const n = 50
				recs := make([]*domain.IdempotencyRecord, n)
				for i := range recs {
					recs[i] = newIdempotencyRecord(tn.org.ID, key, now())
				}
				results := make([]*domain.IdempotencyRecord, n)
				errs := make([]error, n)
				start := make(chan struct{})
				var wg sync.WaitGroup
				for i := range n {
					wg.Go(func() {
						<-start
						results[i], errs[i] = s.ClaimIdempotencyKey(context.Background(), recs[i])
					})
				}
				close(start)
				wg.Wait()

				var winner string
				for i := range n {
					require.NoError(t, errs[i])
					if results[i] == nil {
						require.Empty(t, winner, "two claims inserted")
						winner = recs[i].ID
					}
				}
				require.NotEmpty(t, winner, "no claim inserted")
				for i := range n {
					if results[i] != nil {
						require.Equal(t, winner, results[i].ID, "every loser sees the winner")
					}
				}
			})
		}
	})
}
