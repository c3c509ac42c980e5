package db_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/db"
	"github.com/filemill/filemill/db/dbtest"
	"github.com/filemill/filemill/domain"
)

func entry(acct *domain.CreditAccount, kind string, amount int64) *domain.LedgerEntry {
	return &domain.LedgerEntry{ID: domain.NewID(domain.PrefixLedgerEntry), AccountID: acct.ID, Kind: kind,
		Amount: amount, Description: kind, CreatedAt: now()}
}

// funded returns the organization's live credit account with amount granted.
func funded(t *testing.T, s *db.Store, orgID string, amount int64) *domain.CreditAccount {
	t.Helper()
	acct, err := s.FindCreditAccount(context.Background(), orgID, domain.EnvLive)
	require.NoError(t, err)
	require.NoError(t, s.ApplyLedgerEntry(context.Background(), entry(acct, domain.LedgerGrant, amount)))
	return acct
}

func requireAccount(t *testing.T, s *db.Store, acct *domain.CreditAccount, balance, reserved, used int64) {
	t.Helper()
	got, err := s.FindCreditAccount(context.Background(), acct.OrganizationID, acct.Environment)
	require.NoError(t, err)
	require.Equal(t, [3]int64{balance, reserved, used}, [3]int64{got.Balance, got.Reserved, got.Used},
		"balance, reserved, used")
}

func countLedger(t *testing.T, s *db.Store, accountID string) int {
	t.Helper()
	n, err := s.DB().NewSelect().Model((*domain.LedgerEntry)(nil)).Where("account_id = ?", accountID).Count(context.Background())
	require.NoError(t, err)
	return int(n)
}

func TestCreditAccounts(t *testing.T) {
	t.Parallel()
	dbtest.EachDialect(t, func(t *testing.T, s *db.Store) {
		t.Parallel()
		ctx := context.Background()
		tn := setupTenants(t, s)

		live, err := s.FindCreditAccount(ctx, tn.org.ID, domain.EnvLive)
		require.NoError(t, err)
		require.Equal(t, tn.org.ID, live.OrganizationID)
		require.Equal(t, domain.EnvLive, live.Environment)
		require.Zero(t, live.Balance+live.Reserved+live.Used)
		require.Equal(t, time.UTC, live.CreatedAt.Location())

		again, err := s.FindCreditAccount(ctx, tn.org.ID, domain.EnvLive)
		require.NoError(t, err)
		require.Equal(t, live, again)

		test, err := s.FindCreditAccount(ctx, tn.org.ID, domain.EnvTest)
		require.NoError(t, err)
		require.NotEqual(t, live.ID, test.ID, "one account per environment")

		_, err = s.FindCreditAccount(ctx, "org_missing", domain.EnvLive)
		require.ErrorIs(t, err, domain.ErrNotFound)

		t.Run("ConcurrentFirstUse", func(t *testing.T) {
			var wg sync.WaitGroup
			got := make([]string, 20)
			errs := make([]error, 20)
			for i := range got {
				wg.Go(func() {
					a, err := s.FindCreditAccount(ctx, tn.other.ID, domain.EnvLive)
					errs[i] = err
					if err == nil {
						got[i] = a.ID
					}
				})
			}
			wg.Wait()
			for i := range got {
				require.NoError(t, errs[i])
				require.Equal(t, got[0], got[i], "everyone sees the one account")
			}
		})
	})
}

func TestApplyLedgerEntry(t *testing.T) {
	t.Parallel()
	dbtest.EachDialect(t, func(t *testing.T, s *db.Store) {
		t.Parallel()
		ctx := context.Background()
		tn := setupTenants(t, s)
		acct, err := s.FindCreditAccount(ctx, tn.org.ID, domain.EnvLive)
		require.NoError(t, err)

		t.Run("Arithmetic", func(t *testing.T) {
			require.NoError(t, s.ApplyLedgerEntry(ctx, entry(acct, domain.LedgerGrant, 100)))
			requireAccount(t, s, acct, 100, 0, 0)
			require.NoError(t, s.ApplyLedgerEntry(ctx, entry(acct, domain.LedgerReserve, 30)))
			requireAccount(t, s, acct, 70, 30, 0)
			require.NoError(t, s.ApplyLedgerEntry(ctx, entry(acct, domain.LedgerCharge, 20)))
			requireAccount(t, s, acct, 70, 10, 20)
			require.NoError(t, s.ApplyLedgerEntry(ctx, entry(acct, domain.LedgerRelease, 10)))
			requireAccount(t, s, acct, 80, 0, 20)
			require.Equal(t, 4, countLedger(t, s, acct.ID))
		})
		t.Run("Refusals", func(t *testing.T) {
			before := countLedger(t, s, acct.ID)
			require.ErrorIs(t, s.ApplyLedgerEntry(ctx, entry(acct, domain.LedgerReserve, 81)), domain.ErrInsufficientCredits)
			require.ErrorIs(t, s.ApplyLedgerEntry(ctx, entry(acct, domain.LedgerCharge, 1)), domain.ErrLedgerMismatch)
			require.ErrorIs(t, s.ApplyLedgerEntry(ctx, entry(acct, domain.LedgerRelease, 1)), domain.ErrLedgerMismatch)
			requireAccount(t, s, acct, 80, 0, 20)
			require.Equal(t, before, countLedger(t, s, acct.ID), "a refused movement writes no entry")

			require.NoError(t, s.ApplyLedgerEntry(ctx, entry(acct, domain.LedgerReserve, 80)), "the whole balance may be reserved")
			requireAccount(t, s, acct, 0, 80, 20)
			require.ErrorIs(t, s.ApplyLedgerEntry(ctx, entry(acct, domain.LedgerCharge, 81)), domain.ErrLedgerMismatch)
			require.NoError(t, s.ApplyLedgerEntry(ctx, entry(acct, domain.LedgerRelease, 80)))
			requireAccount(t, s, acct, 80, 0, 20)
		})
		t.Run("ZeroIsNoOp", func(t *testing.T) {
			before := countLedger(t, s, acct.ID)
			require.NoError(t, s.ApplyLedgerEntry(ctx, entry(acct, domain.LedgerReserve, 0)))
			require.Equal(t, before, countLedger(t, s, acct.ID))
			requireAccount(t, s, acct, 80, 0, 20)
		})
		t.Run("Invalid", func(t *testing.T) {
			require.Error(t, s.ApplyLedgerEntry(ctx, entry(acct, domain.LedgerGrant, -5)))
			require.Error(t, s.ApplyLedgerEntry(ctx, entry(acct, "gift", 5)))
			missing := &domain.CreditAccount{ID: "acct_missing"}
			require.ErrorIs(t, s.ApplyLedgerEntry(ctx, entry(missing, domain.LedgerGrant, 5)), domain.ErrNotFound)
			require.ErrorIs(t, s.ApplyLedgerEntry(ctx, entry(missing, domain.LedgerReserve, 5)), domain.ErrNotFound)
		})
		t.Run("AssignsIDWhenEmpty", func(t *testing.T) {
			e := entry(acct, domain.LedgerGrant, 1)
			e.ID = ""
			require.NoError(t, s.ApplyLedgerEntry(ctx, e))
			require.True(t, domain.ValidID(domain.PrefixLedgerEntry, e.ID), e.ID)
			require.NoError(t, s.ApplyLedgerEntry(ctx, entry(acct, domain.LedgerReserve, 1)))
			requireAccount(t, s, acct, 80, 1, 20)
			require.NoError(t, s.ApplyLedgerEntry(ctx, entry(acct, domain.LedgerRelease, 1)))
		})
		t.Run("RoundTrip", func(t *testing.T) {
			e := entry(acct, domain.LedgerGrant, 9)
			e.JobID, e.APIKeyID, e.ProjectID = domain.NewID(domain.PrefixJob), domain.NewID(domain.PrefixAPIKey), tn.prj.ID
			require.NoError(t, s.ApplyLedgerEntry(ctx, e))
			bare := entry(acct, domain.LedgerReserve, 9)
			require.NoError(t, s.ApplyLedgerEntry(ctx, bare))
			for _, want := range []*domain.LedgerEntry{e, bare} {
				got := new(domain.LedgerEntry)
				require.NoError(t, s.DB().NewSelect().Model(got).Where("id = ?", want.ID).Scan(ctx))
				got.CreatedAt = got.CreatedAt.UTC()
				require.Equal(t, want, got)
			}
			require.NoError(t, s.ApplyLedgerEntry(ctx, entry(acct, domain.LedgerRelease, 9)))
		})
		t.Run("InsideTransaction", func(t *testing.T) {
			before := countLedger(t, s, acct.ID)
			boom := errors.New("boom")
			err := s.InTx(ctx, func(tx domain.Store) error {
				require.NoError(t, tx.ApplyLedgerEntry(ctx, entry(acct, domain.LedgerGrant, 1000)))
				// A refusal inside the caller's transaction leaves it usable.
				require.ErrorIs(t, tx.ApplyLedgerEntry(ctx, entry(acct, domain.LedgerCharge, 5000)), domain.ErrLedgerMismatch)
				a, err := tx.FindCreditAccount(ctx, tn.org.ID, domain.EnvLive)
				require.NoError(t, err)
				require.EqualValues(t, 1090, a.Balance, "the transaction sees its own grant")
				return boom
			})
			require.ErrorIs(t, err, boom)
			requireAccount(t, s, acct, 90, 0, 20)
			require.Equal(t, before, countLedger(t, s, acct.ID), "the rollback took the entry too")
		})
		t.Run("DuplicateEntryChangesNothing", func(t *testing.T) {
			e := entry(acct, domain.LedgerGrant, 1)
			require.NoError(t, s.ApplyLedgerEntry(ctx, e))
			err := s.InTx(ctx, func(tx domain.Store) error {
				require.ErrorIs(t, tx.ApplyLedgerEntry(ctx, e), domain.ErrDuplicate)
				// The savepoint undid the account update of the failed entry.
				a, err := tx.FindCreditAccount(ctx, tn.org.ID, domain.EnvLive)
				require.NoError(t, err)
				require.EqualValues(t, 91, a.Balance)
				return nil
			})
			require.NoError(t, err)
			requireAccount(t, s, acct, 91, 0, 20)
		})
	})
}

func TestConcurrentReserves(t *testing.T) {
	t.Parallel()
	dbtest.EachDialect(t, func(t *testing.T, s *db.Store) {
		t.Parallel()
		ctx := context.Background()
		tn := setupTenants(t, s)
		acct := funded(t, s, tn.org.ID, 150)

		var ok, refused atomic.Int64
		var wg sync.WaitGroup
		errs := make(chan error, 200)
		stop := make(chan struct{})
		negative := make(chan int64, 1)
		go func() { // watch the balance while the reserves run
			for {
				select {
				case <-stop:
					close(negative)
					return
				default:
				}
				a, err := s.FindCreditAccount(ctx, tn.org.ID, domain.EnvLive)
				if err == nil && a.Balance < 0 {
					negative <- a.Balance
				}
			}
		}()
		for range 200 {
			wg.Go(func() {
				err := s.ApplyLedgerEntry(ctx, entry(acct, domain.LedgerReserve, 1))
				switch {
				case err == nil:
					ok.Add(1)
				case errors.Is(err, domain.ErrInsufficientCredits):
					refused.Add(1)
				default:
					errs <- err
				}
			})
		}
		wg.Wait()
		close(stop)
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		for b := range negative {
			t.Fatalf("balance seen at %d", b)
		}
		require.EqualValues(t, 150, ok.Load())
		require.EqualValues(t, 50, refused.Load())
		requireAccount(t, s, acct, 0, 150, 0)
		require.Equal(t, 151, countLedger(t, s, acct.ID))
	})
}

func TestKeySpend(t *testing.T) {
	t.Parallel()
	dbtest.EachDialect(t, func(t *testing.T, s *db.Store) {
		t.Parallel()
		ctx := context.Background()
		tn := setupTenants(t, s)
		acct := funded(t, s, tn.org.ID, 1000)

		key, otherKey := domain.NewID(domain.PrefixAPIKey), domain.NewID(domain.PrefixAPIKey)
		old := now().Add(-48 * time.Hour)
		move := func(kind string, amount int64, apiKey string, at time.Time) {
			t.Helper()
			e := entry(acct, kind, amount)
			e.APIKeyID, e.CreatedAt = apiKey, at
			require.NoError(t, s.ApplyLedgerEntry(ctx, e))
		}
		move(domain.LedgerReserve, 50, key, old)
		move(domain.LedgerCharge, 40, key, old) // charged before the window
		move(domain.LedgerRelease, 10, key, old)
		move(domain.LedgerReserve, 30, key, now())
		move(domain.LedgerCharge, 12, key, now())
		move(domain.LedgerReserve, 7, otherKey, now())
		// What is held is read from the key's live jobs.
		for _, st := range []string{domain.JobQueued, domain.JobRunning, domain.JobSucceeded, domain.JobCancelled} {
			j := newJob(tn.prj, domain.EnvLive)
			j.APIKeyID, j.State, j.CreditsReserved = key, st, 5
			require.NoError(t, s.CreateJob(ctx, j))
		}

		sum, err := s.SumKeySpend(ctx, key, now().Add(-time.Hour))
		require.NoError(t, err)
		require.EqualValues(t, 12+5+5, sum)
		sum, err = s.SumKeySpend(ctx, key, old)
		require.NoError(t, err)
		require.EqualValues(t, 52+5+5, sum, "since is inclusive")
		sum, err = s.SumKeySpend(ctx, "key_none", old)
		require.NoError(t, err)
		require.Zero(t, sum)
	})
}
