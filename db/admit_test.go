package db_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/db"
	"github.com/filemill/filemill/db/dbtest"
	"github.com/filemill/filemill/domain"
)

// admission builds an admission of one job per price into p for key, on acct.
func admission(t *testing.T, p *domain.Project, acct *domain.CreditAccount, key string, batch *domain.Batch, prices ...int64) *domain.Admission {
	t.Helper()
	a := &domain.Admission{AccountID: acct.ID, Batch: batch}
	for _, price := range prices {
		j := newJob(p, domain.EnvLive)
		j.CreditsReserved, j.APIKeyID = price, key
		if batch != nil {
			j.BatchID = batch.ID
		}
		e, err := domain.NewEvent(context.Background(), domain.EventJobQueued, j.OrganizationID, j.ProjectID, j.Environment, j.FileID, j.View(), j.CreatedAt)
		require.NoError(t, err)
		a.Jobs = append(a.Jobs, j)
		a.Events = append(a.Events, e)
		a.Reserve = append(a.Reserve, &domain.LedgerEntry{AccountID: acct.ID, Kind: domain.LedgerReserve, Amount: price,
			JobID: j.ID, APIKeyID: key, ProjectID: p.ID})
	}
	return a
}

// claim claims a fresh idempotency key and returns the record, still in progress.
func claim(t *testing.T, s *db.Store, orgID string) *domain.IdempotencyRecord {
	t.Helper()
	rec := newIdempotencyRecord(orgID, domain.NewID("k_"), now())
	require.NoError(t, claimed(t, s, rec))
	return rec
}

// answered returns the stored record of rec's key.
func answered(t *testing.T, s *db.Store, rec *domain.IdempotencyRecord) *domain.IdempotencyRecord {
	t.Helper()
	probe := *rec
	probe.ID = domain.NewID("idem_")
	got, err := s.ClaimIdempotencyKey(context.Background(), &probe)
	require.NoError(t, err)
	require.NotNil(t, got, "the key is taken")
	return got
}

// concurrently runs n admissions built by mk at once and counts those written; any
// refusal other than want fails the test.
func concurrently(t *testing.T, s *db.Store, n int, want error, mk func() *domain.Admission) int {
	t.Helper()
	var ok atomic.Int32
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range n {
		a := mk()
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			err := s.AdmitJobs(context.Background(), a)
			if err == nil {
				ok.Add(1)
			} else if !errors.Is(err, want) {
				t.Error(err)
			}
		}()
	}
	close(start)
	wg.Wait()
	return int(ok.Load())
}

func TestAdmitJobs(t *testing.T) {
	t.Parallel()
	dbtest.EachDialect(t, func(t *testing.T, s *db.Store) {
		t.Parallel()
		ctx := context.Background()
		tn := setupTenants(t, s)
		key := domain.NewID(domain.PrefixAPIKey)
		f := newFile(tn.prj, domain.EnvLive)
		require.NoError(t, s.CreateFile(ctx, f))
		of := newFile(tn.oprj, domain.EnvLive)
		require.NoError(t, s.CreateFile(ctx, of))

		// Before any use the account does not exist: the facts make it.
		facts, err := s.FindAdmissionFacts(ctx, domain.AdmissionQuery{OrganizationID: tn.org.ID, Environment: domain.EnvLive,
			FileIDs: []string{f.ID, of.ID, "file_01ARZ3NDEKTSV4RRFFQ69G5FAV"}})
		require.NoError(t, err)
		require.Len(t, facts.Files, 1, "another organization's file and a missing one are not found")
		require.Equal(t, f.Filename, facts.Files[f.ID].Filename)
		require.Equal(t, domain.ProjectLoad{}, facts.Projects[tn.prj.ID])
		acct := facts.Account
		require.NotEmpty(t, acct.ID)
		require.Zero(t, acct.Balance)
		require.NoError(t, s.ApplyLedgerEntry(ctx, entry(acct, domain.LedgerGrant, 10)))

		t.Run("WritesEverythingAndReserves", func(t *testing.T) {
			batch := &domain.Batch{ID: domain.NewID(domain.PrefixBatch), OrganizationID: tn.org.ID, ProjectID: tn.prj.ID,
				Environment: domain.EnvLive, Operation: "inspect", CreatedAt: now()}
			a := admission(t, tn.prj, acct, key, batch, 2, 0, 3)
			rec := claim(t, s, tn.org.ID)
			answer := *rec
			answer.State, answer.Answer = domain.IdempotencyDone, &domain.Answer{Result: domain.ResultAccepted, Object: []byte(`{"id":"bat"}`)}
			a.Answer = &answer
			require.NoError(t, s.AdmitJobs(ctx, a))
			requireAccount(t, s, acct, 5, 5, 0)
			require.Equal(t, 3, countLedger(t, s, acct.ID), "the grant and the two priced reservations")
			for _, j := range a.Jobs {
				got, err := s.FindJobByID(ctx, j.ID)
				require.NoError(t, err)
				require.Equal(t, batch.ID, got.BatchID)
				evs, err := s.FindEventsByFile(ctx, tn.org.ID, j.FileID, 0)
				require.NoError(t, err)
				require.Len(t, evs, 1)
			}
			_, err := s.FindBatchByID(ctx, batch.ID)
			require.NoError(t, err)
			stored := answered(t, s, rec)
			require.Equal(t, domain.IdempotencyDone, stored.State)
			require.Equal(t, answer.Answer, stored.Answer)

			facts, err := s.FindAdmissionFacts(ctx, domain.AdmissionQuery{OrganizationID: tn.org.ID, Environment: domain.EnvLive, FileIDs: []string{f.ID}})
			require.NoError(t, err)
			require.Equal(t, domain.ProjectLoad{Active: 3}, facts.Projects[tn.prj.ID])
			require.Equal(t, acct.ID, facts.Account.ID)
			require.EqualValues(t, 5, facts.Account.Balance)
			require.EqualValues(t, 5, facts.Account.Reserved)
			facts, err = s.FindAdmissionFacts(ctx, domain.AdmissionQuery{OrganizationID: tn.org.ID, Environment: domain.EnvTest, FileIDs: []string{f.ID}})
			require.NoError(t, err)
			require.NotEqual(t, acct.ID, facts.Account.ID, "the test environment has an account of its own")

			require.NoError(t, s.SetProjectConcurrencyLimit(ctx, tn.prj.ID, 7))
			facts, err = s.FindAdmissionFacts(ctx, domain.AdmissionQuery{OrganizationID: tn.org.ID, Environment: domain.EnvLive, FileIDs: []string{f.ID}})
			require.NoError(t, err)
			require.Equal(t, domain.ProjectLoad{ConcurrencyLimit: 7, Active: 3}, facts.Projects[tn.prj.ID])
			require.NoError(t, s.SetProjectConcurrencyLimit(ctx, tn.prj.ID, 0))
		})

		t.Run("ShortBalanceWritesNothing", func(t *testing.T) {
			a := admission(t, tn.prj, acct, key, nil, 4, 2)
			rec := claim(t, s, tn.org.ID)
			answer := *rec
			answer.State, answer.Answer = domain.IdempotencyDone, &domain.Answer{Result: domain.ResultAccepted, Object: []byte("{}")}
			a.Answer = &answer
			err := s.AdmitJobs(ctx, a)
			require.ErrorIs(t, err, domain.ErrInsufficientCredits)
			requireAccount(t, s, acct, 5, 5, 0)
			require.Equal(t, 3, countLedger(t, s, acct.ID))
			for _, j := range a.Jobs {
				_, err := s.FindJobByID(ctx, j.ID)
				require.ErrorIs(t, err, domain.ErrNotFound, "no job of a refused admission")
				evs, err := s.FindEventsByFile(ctx, tn.org.ID, j.FileID, 0)
				require.NoError(t, err)
				require.Empty(t, evs)
			}
			require.Equal(t, domain.IdempotencyInProgress, answered(t, s, rec).State, "no answer of a refused admission")
		})

		t.Run("AnswerOfAClaimTakenOverWritesNothing", func(t *testing.T) {
			// The claim's holder stalled past its lease and a retry took the key over:
			// the admission answering the old claim must not be written beside the
			// retry's, or the work would be admitted twice.
			a := admission(t, tn.prj, acct, key, nil, 1)
			rec := claim(t, s, tn.org.ID)
			answer := *rec
			answer.State, answer.Answer = domain.IdempotencyDone, &domain.Answer{Result: domain.ResultAccepted, Object: []byte("{}")}
			a.Answer = &answer
			retry := newIdempotencyRecord(tn.org.ID, rec.Key, rec.LeaseUntil)
			existing, err := s.ClaimIdempotencyKey(ctx, retry)
			require.NoError(t, err)
			require.Nil(t, existing, "the lease had lapsed: the retry took the key")

			require.ErrorIs(t, s.AdmitJobs(ctx, a), domain.ErrClaimLost)
			requireAccount(t, s, acct, 5, 5, 0)
			_, err = s.FindJobByID(ctx, a.Jobs[0].ID)
			require.ErrorIs(t, err, domain.ErrNotFound)
		})

		t.Run("ClaimWrittenWithTheAdmission", func(t *testing.T) {
			// The claim is inserted by the admission itself, answered: a second admission
			// claiming the same key writes nothing, and says the key is taken.
			answering := func(k string) (*domain.Admission, *domain.IdempotencyRecord) {
				a := admission(t, tn.prj, acct, key, nil, 0) // free: the account stays as the next tests need it
				rec := newIdempotencyRecord(tn.org.ID, k, now())
				rec.ID = domain.NewID(domain.PrefixIdempotency)
				rec.State, rec.Answer = domain.IdempotencyDone, &domain.Answer{Result: domain.ResultAccepted, Object: []byte(`{"n":1}`)}
				a.Answer, a.ClaimAtWrite = rec, true
				return a, rec
			}
			a, rec := answering("k-at-write")
			require.NoError(t, s.AdmitJobs(ctx, a))
			got, err := s.FindIdempotencyKey(ctx, rec)
			require.NoError(t, err)
			require.Equal(t, rec.ID, got.ID)
			require.Equal(t, domain.IdempotencyDone, got.State)
			require.Equal(t, rec.Answer, got.Answer)

			again, _ := answering("k-at-write")
			require.ErrorIs(t, s.AdmitJobs(ctx, again), domain.ErrIdempotencyTaken)
			_, err = s.FindJobByID(ctx, again.Jobs[0].ID)
			require.ErrorIs(t, err, domain.ErrNotFound, "no job of a refused admission")

			// Sent together (and so written together where the store combines writes), the
			// admissions on free keys are written and those on the taken key refused.
			var made atomic.Int32
			n := concurrently(t, s, 6, domain.ErrIdempotencyTaken, func() *domain.Admission {
				k := "k-at-write"
				if i := made.Add(1); i%2 == 0 {
					k = fmt.Sprintf("k-free-%d", i)
				}
				a, _ := answering(k)
				return a
			})
			require.Equal(t, 3, n)
		})

		t.Run("FreeWorkNeedsNoCredits", func(t *testing.T) {
			a := admission(t, tn.prj, acct, key, nil, 0)
			require.NoError(t, s.AdmitJobs(ctx, a))
			requireAccount(t, s, acct, 5, 5, 0)
		})

		t.Run("ConcurrentNeverOverdraw", func(t *testing.T) {
			n := concurrently(t, s, 20, domain.ErrInsufficientCredits, func() *domain.Admission {
				return admission(t, tn.prj, acct, key, nil, 1)
			})
			require.Equal(t, 5, n, "5 credits hold 5 reservations of 1")
			requireAccount(t, s, acct, 0, 10, 0)
		})
	})
}

// TestAdmissionLimitsAreExact sends concurrent admissions at a project's concurrency
// limit and at a key's spend limit: the limits hold exactly, never overshot by requests
// in flight, whether their writes are combined or not.
func TestAdmissionLimitsAreExact(t *testing.T) {
	t.Parallel()
	dbtest.EachDialect(t, func(t *testing.T, s *db.Store) {
		t.Parallel()
		ctx := context.Background()
		tn := setupTenants(t, s)
		acct := funded(t, s, tn.org.ID, 100000)
		active := func(prj *domain.Project) int {
			facts, err := s.FindAdmissionFacts(ctx, domain.AdmissionQuery{OrganizationID: tn.org.ID, Environment: domain.EnvLive,
				FileIDs: []string{fileIn(t, s, prj)}})
			require.NoError(t, err)
			return facts.Projects[prj.ID].Active
		}

		t.Run("ConcurrencyLimit", func(t *testing.T) {
			key := domain.NewID(domain.PrefixAPIKey)
			n := concurrently(t, s, 40, domain.ErrConcurrencyLimit, func() *domain.Admission {
				a := admission(t, tn.prj, acct, key, nil, 1)
				a.ProjectLimit = 7
				return a
			})
			require.Equal(t, 7, n)
			require.Equal(t, 7, active(tn.prj))

			// A job of the test environment does not count against the live one.
			tj := newJob(tn.prj, domain.EnvTest)
			require.NoError(t, s.CreateJob(ctx, tj))
			require.Equal(t, 7, active(tn.prj))
		})

		t.Run("ConcurrencyLimitAdmitsABatchWhileBelow", func(t *testing.T) {
			key := domain.NewID(domain.PrefixAPIKey)
			// Under a limit of 5 a batch is admitted while the project has fewer than 5
			// jobs active: 3 on an idle project, 3 more with 3 active, then no more.
			a := admission(t, tn.prj2, acct, key, nil, 1, 1, 1)
			a.ProjectLimit = 5
			require.NoError(t, s.AdmitJobs(ctx, a))
			b := admission(t, tn.prj2, acct, key, nil, 1, 1, 1)
			b.ProjectLimit = 5
			require.NoError(t, s.AdmitJobs(ctx, b))
			c := admission(t, tn.prj2, acct, key, nil, 1)
			c.ProjectLimit = 5
			require.ErrorIs(t, s.AdmitJobs(ctx, c), domain.ErrConcurrencyLimit)
			require.Equal(t, 6, active(tn.prj2))
		})

		t.Run("SpendLimit", func(t *testing.T) {
			prj := createProject(t, s, tn.org.ID, "spend")
			key := domain.NewID(domain.PrefixAPIKey)
			since := domain.MonthStart(now())
			// Charged earlier this month and last month (which does not count).
			for _, e := range []*domain.LedgerEntry{
				{AccountID: acct.ID, Kind: domain.LedgerReserve, Amount: 9, APIKeyID: key, CreatedAt: since.AddDate(0, 0, -3)},
				{AccountID: acct.ID, Kind: domain.LedgerCharge, Amount: 9, APIKeyID: key, CreatedAt: since.AddDate(0, 0, -3)},
				{AccountID: acct.ID, Kind: domain.LedgerReserve, Amount: 4, APIKeyID: key, CreatedAt: now()},
				{AccountID: acct.ID, Kind: domain.LedgerCharge, Amount: 4, APIKeyID: key, CreatedAt: now()},
			} {
				e.Description = e.Kind
				require.NoError(t, s.ApplyLedgerEntry(ctx, e))
			}
			n := concurrently(t, s, 30, domain.ErrSpendLimit, func() *domain.Admission {
				a := admission(t, prj, acct, key, nil, 2)
				a.SpendLimit, a.SpendSince = 20, since
				return a
			})
			require.Equal(t, 8, n, "4 charged + 8 jobs of 2 held = 20")
			spent, err := s.SumKeySpend(ctx, key, since)
			require.NoError(t, err)
			require.EqualValues(t, 20, spent)
			spent, err = s.SumKeySpend(ctx, domain.NewID(domain.PrefixAPIKey), since)
			require.NoError(t, err)
			require.Zero(t, spent)
		})
	})
}

// fileIn stores a ready file in prj and returns its id.
func fileIn(t *testing.T, s *db.Store, prj *domain.Project) string {
	t.Helper()
	f := newFile(prj, domain.EnvLive)
	require.NoError(t, s.CreateFile(context.Background(), f))
	return f.ID
}
