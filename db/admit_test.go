package db_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/db"
	"github.com/filemill/filemill/db/dbtest"
	"github.com/filemill/filemill/domain"
)

func admission(t *testing.T, p *domain.Project, acct *domain.CreditAccount, batch *domain.Batch, prices ...int64) *domain.Admission {
	t.Helper()
	a := &domain.Admission{Batch: batch}
	for _, price := range prices {
		j := newJob(p, domain.EnvLive)
		j.CreditsReserved = price
		if batch != nil {
			j.BatchID = batch.ID
		}
		e, err := domain.NewEvent(domain.EventJobQueued, j.OrganizationID, j.ProjectID, j.Environment, j.FileID, j.View(), j.CreatedAt)
		require.NoError(t, err)
		a.Jobs = append(a.Jobs, j)
		a.Events = append(a.Events, e)
		a.Reserve = append(a.Reserve, &domain.LedgerEntry{AccountID: acct.ID, Kind: domain.LedgerReserve, Amount: price, JobID: j.ID, ProjectID: p.ID})
	}
	return a
}

func TestAdmitJobs(t *testing.T) {
	t.Parallel()
	dbtest.EachDialect(t, func(t *testing.T, s *db.Store) {
		t.Parallel()
		ctx := context.Background()
		tn := setupTenants(t, s)

		// Before any use the account does not exist: the facts make it.
		facts, err := s.FindAdmissionFacts(ctx, tn.prj.ID, tn.org.ID, domain.EnvLive, 50)
		require.NoError(t, err)
		require.Zero(t, facts.ConcurrencyLimit)
		require.Zero(t, facts.Active)
		acct := facts.Account
		require.NotEmpty(t, acct.ID)
		require.Zero(t, acct.Balance)
		require.NoError(t, s.ApplyLedgerEntry(ctx, entry(acct, domain.LedgerGrant, 10)))

		t.Run("WritesEverythingAndReserves", func(t *testing.T) {
			batch := &domain.Batch{ID: domain.NewID(domain.PrefixBatch), OrganizationID: tn.org.ID, ProjectID: tn.prj.ID,
				Environment: domain.EnvLive, Operation: "inspect", CreatedAt: now()}
			a := admission(t, tn.prj, acct, batch, 2, 0, 3)
			require.NoError(t, s.AdmitJobs(ctx, a))
			requireAccount(t, s, acct, 5, 5, 0)
			require.Equal(t, 3, countLedger(t, s, acct.ID), "the grant and the two priced reservations")
			for _, j := range a.Jobs {
				got, err := s.FindJobByID(ctx, j.ID)
				require.NoError(t, err)
				require.Equal(t, batch.ID, got.BatchID)
				evs, err := s.FindEventsBySubject(ctx, tn.org.ID, j.FileID)
				require.NoError(t, err)
				require.Len(t, evs, 1)
			}
			_, err := s.FindBatchByID(ctx, batch.ID)
			require.NoError(t, err)

			facts, err := s.FindAdmissionFacts(ctx, tn.prj.ID, tn.org.ID, domain.EnvLive, 50)
			require.NoError(t, err)
			require.Equal(t, 3, facts.Active)
			require.Equal(t, acct.ID, facts.Account.ID)
			require.EqualValues(t, 5, facts.Account.Balance)
			require.EqualValues(t, 5, facts.Account.Reserved)

			facts, err = s.FindAdmissionFacts(ctx, tn.prj.ID, tn.org.ID, domain.EnvLive, 2)
			require.NoError(t, err)
			require.Equal(t, 2, facts.Active, "counted up to the default limit")
			require.NoError(t, s.SetProjectConcurrencyLimit(ctx, tn.prj.ID, 1))
			facts, err = s.FindAdmissionFacts(ctx, tn.prj.ID, tn.org.ID, domain.EnvLive, 50)
			require.NoError(t, err)
			require.Equal(t, 1, facts.ConcurrencyLimit)
			require.Equal(t, 1, facts.Active, "counted up to the project's own limit")
			require.NoError(t, s.SetProjectConcurrencyLimit(ctx, tn.prj.ID, 0))
		})

		t.Run("ShortBalanceWritesNothing", func(t *testing.T) {
			a := admission(t, tn.prj, acct, nil, 4, 2)
			err := s.AdmitJobs(ctx, a)
			require.ErrorIs(t, err, domain.ErrInsufficientCredits)
			requireAccount(t, s, acct, 5, 5, 0)
			require.Equal(t, 3, countLedger(t, s, acct.ID))
			for _, j := range a.Jobs {
				_, err := s.FindJobByID(ctx, j.ID)
				require.ErrorIs(t, err, domain.ErrNotFound, "no job of a refused admission")
				evs, err := s.FindEventsBySubject(ctx, tn.org.ID, j.FileID)
				require.NoError(t, err)
				require.Empty(t, evs)
			}
		})

		t.Run("FreeWorkNeedsNoCredits", func(t *testing.T) {
			a := admission(t, tn.prj, acct, nil, 0)
			require.NoError(t, s.AdmitJobs(ctx, a))
			requireAccount(t, s, acct, 5, 5, 0)
		})

		t.Run("ConcurrentNeverOverdraw", func(t *testing.T) {
			var ok atomic.Int32
			var wg sync.WaitGroup
			for i := 0; i < 20; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					err := s.AdmitJobs(ctx, admission(t, tn.prj, acct, nil, 1))
					if err == nil {
						ok.Add(1)
					} else if !errors.Is(err, domain.ErrInsufficientCredits) {
						t.Error(err)
					}
				}()
			}
			wg.Wait()
			require.EqualValues(t, 5, ok.Load(), "5 credits hold 5 reservations of 1")
			requireAccount(t, s, acct, 0, 10, 0)
		})

		t.Run("OtherOrganizationsProjectIsNotFound", func(t *testing.T) {
			_, err := s.FindAdmissionFacts(ctx, tn.oprj.ID, tn.org.ID, domain.EnvLive, 50)
			require.ErrorIs(t, err, domain.ErrNotFound)
		})
	})
}
