package db_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/db"
	"github.com/filemill/filemill/db/dbtest"
	"github.com/filemill/filemill/domain"
)

func TestJobs(t *testing.T) {
	t.Parallel()
	dbtest.EachDialect(t, func(t *testing.T, s *db.Store) {
		t.Parallel()
		ctx := context.Background()
		tn := setupTenants(t, s)

		t.Run("RoundTrip", func(t *testing.T) {
			j := newJob(tn.prj, domain.EnvLive)
			j.Options = json.RawMessage(`{"width": 100, "format": "webp", "nested": {"b": [1, 2], "a": null}}`)
			j.BatchID, j.Preset, j.Progress, j.Attempts = domain.NewID(domain.PrefixBatch), "thumbnail", 40, 2
			j.CreditsCharged, j.ErrorCode, j.ErrorMessage = 2, "timeout", "took too long"
			j.StartedAt, j.FinishedAt = ptr(now()), ptr(now().Add(time.Second))
			require.NoError(t, s.CreateJob(ctx, j))
			got, err := s.FindJobByID(ctx, j.ID)
			require.NoError(t, err)
			requireJSONField(t, j.Options, &got.Options)
			require.Equal(t, j, got)

			_, err = s.FindJobByID(ctx, domain.NewID(domain.PrefixJob))
			require.ErrorIs(t, err, domain.ErrNotFound)
			require.ErrorIs(t, s.CreateJob(ctx, j), domain.ErrDuplicate)
		})
		t.Run("NilOptions", func(t *testing.T) {
			j := newJob(tn.prj, domain.EnvLive)
			j.Options = nil
			require.NoError(t, s.CreateJob(ctx, j))
			got, err := s.FindJobByID(ctx, j.ID)
			require.NoError(t, err)
			require.JSONEq(t, "null", string(got.Options))
		})
		t.Run("TransitionIsConditional", func(t *testing.T) {
			j := newJob(tn.prj, domain.EnvLive)
			require.NoError(t, s.CreateJob(ctx, j))
			run := *j
			run.State, run.Attempts, run.StartedAt, run.LeaseExpiresAt = domain.JobRunning, 1, ptr(now()), ptr(now().Add(time.Minute))
			require.NoError(t, s.TransitionJob(ctx, &domain.JobTransition{Job: &run, FromState: domain.JobQueued}))
			cancel := *j
			cancel.State = domain.JobCancelled
			err := s.TransitionJob(ctx, &domain.JobTransition{Job: &cancel, FromState: domain.JobQueued})
			require.ErrorIs(t, err, domain.ErrStaleJob, "no longer queued")
			again := run
			again.Attempts = 2
			err = s.TransitionJob(ctx, &domain.JobTransition{Job: &again, FromState: domain.JobRunning, FromAttempts: 0})
			require.ErrorIs(t, err, domain.ErrStaleJob, "not in that attempt")
			got, err := s.FindJobByID(ctx, j.ID)
			require.NoError(t, err)
			requireJSONField(t, run.Options, &got.Options)
			require.Equal(t, &run, got)

			ok, err := s.UpdateJobProgress(ctx, j.ID, 1, 40)
			require.NoError(t, err)
			require.True(t, ok)
			ok, err = s.UpdateJobProgress(ctx, j.ID, 2, 50)
			require.NoError(t, err)
			require.False(t, ok, "another attempt's progress")
			got, err = s.FindJobByID(ctx, j.ID)
			require.NoError(t, err)
			require.Equal(t, 40, got.Progress)
		})
		t.Run("TransitionWritesEverythingOrNothing", func(t *testing.T) {
			acct := funded(t, s, tn.org.ID, 10)
			require.NoError(t, s.ApplyLedgerEntry(ctx, entry(acct, domain.LedgerReserve, 5)))
			id, err := s.FindCreditAccountID(ctx, tn.org.ID, domain.EnvLive)
			require.NoError(t, err)
			require.Equal(t, acct.ID, id)
			j := newJob(tn.prj, domain.EnvLive)
			j.State, j.Attempts, j.CreditsReserved = domain.JobRunning, 1, 5
			j.Pricing = &domain.Pricing{Rule: "t: 1 credit per page read", Pages: 5, Credits: 5,
				Lines: []domain.PricingLine{{Step: "t", Operation: "t", Price: domain.Price{Credits: 1, Per: domain.PerPage}, Units: 5, Credits: 5}}}
			require.NoError(t, s.CreateJob(ctx, j))
			done := *j
			done.State, done.CreditsCharged, done.Progress, done.FinishedAt = domain.JobSucceeded, 2, 100, ptr(now())
			done.ArtifactCount = 1
			art := &domain.Artifact{ID: domain.NewID(domain.PrefixArtifact), OrganizationID: tn.org.ID, FileID: j.FileID, JobID: j.ID,
				Name: "a.json", MIMEType: "application/json", ByteSize: 3, SHA256: "x", StorageKey: "k", CreatedAt: now()}
			ev, err := domain.NewEvent(context.Background(), domain.EventJobSucceeded, j.OrganizationID, j.ProjectID, j.Environment, j.FileID, done.View(), now())
			require.NoError(t, err)
			settle := func(charge, release int64) error {
				return s.TransitionJob(ctx, &domain.JobTransition{Job: &done, FromState: domain.JobRunning, FromAttempts: 1,
					Artifacts: []*domain.Artifact{art}, Events: []*domain.Event{ev},
					Ledger: []*domain.LedgerEntry{
						{AccountID: acct.ID, Kind: domain.LedgerCharge, Amount: charge, JobID: j.ID, Description: "c", CreatedAt: now()},
						{AccountID: acct.ID, Kind: domain.LedgerRelease, Amount: release, JobID: j.ID, Description: "r", CreatedAt: now()}}})
			}
			require.ErrorIs(t, settle(2, 4), domain.ErrLedgerMismatch, "6 is more than the 5 reserved")
			got, err := s.FindJobByID(ctx, j.ID)
			require.NoError(t, err)
			require.Equal(t, domain.JobRunning, got.State, "nothing written")
			arts, err := s.FindArtifactsByJob(ctx, j.ID)
			require.NoError(t, err)
			require.Empty(t, arts)
			requireAccount(t, s, acct, 5, 5, 0)

			require.NoError(t, settle(2, 3))
			requireAccount(t, s, acct, 8, 0, 2)
			arts, err = s.FindArtifactsByJob(ctx, j.ID)
			require.NoError(t, err)
			require.Equal(t, []string{art.ID}, ids(arts, artifactID))
			got, err = s.FindJobByID(ctx, j.ID)
			require.NoError(t, err)
			require.Equal(t, 1, got.ArtifactCount, "the count is written with the artifacts")
			require.Equal(t, j.Pricing, got.Pricing, "the pricing is kept as admitted")
			evs, err := s.FindEventsByFile(ctx, tn.org.ID, j.FileID, 0)
			require.NoError(t, err)
			require.Equal(t, []string{ev.ID}, ids(evs, eventID))
			require.Equal(t, 4, countLedger(t, s, acct.ID))

			require.ErrorIs(t, settle(2, 3), domain.ErrStaleJob, "settling twice changes nothing")
			requireAccount(t, s, acct, 8, 0, 2)
			require.Equal(t, 4, countLedger(t, s, acct.ID))
		})
		t.Run("TransitionsWrittenTogether", func(t *testing.T) {
			org := createOrg(t, s, "org-settle")
			prj := createProject(t, s, org.ID, "main")
			acct := funded(t, s, org.ID, 10)
			require.NoError(t, s.ApplyLedgerEntry(ctx, entry(acct, domain.LedgerReserve, 9)))
			running := func() *domain.Job {
				j := newJob(prj, domain.EnvLive)
				j.State, j.Attempts, j.CreditsReserved = domain.JobRunning, 1, 3
				require.NoError(t, s.CreateJob(ctx, j))
				return j
			}
			settle := func(j *domain.Job, charge int64) *domain.JobTransition {
				done := *j
				done.State, done.CreditsCharged, done.Progress, done.FinishedAt = domain.JobSucceeded, charge, 100, ptr(now())
				done.ArtifactCount = 1
				art := &domain.Artifact{ID: domain.NewID(domain.PrefixArtifact), OrganizationID: j.OrganizationID, FileID: j.FileID,
					JobID: j.ID, Name: "a.json", MIMEType: "application/json", ByteSize: 3, SHA256: "x", StorageKey: "k/" + j.ID, CreatedAt: now()}
				ev, err := domain.NewEvent(ctx, domain.EventJobSucceeded, j.OrganizationID, j.ProjectID, j.Environment, j.FileID, done.View(), now())
				require.NoError(t, err)
				return &domain.JobTransition{Job: &done, FromState: domain.JobRunning, FromAttempts: 1,
					Artifacts: []*domain.Artifact{art}, Events: []*domain.Event{ev},
					Ledger: []*domain.LedgerEntry{
						{AccountID: acct.ID, Kind: domain.LedgerCharge, Amount: charge, JobID: j.ID, Description: "c", CreatedAt: now()},
						{AccountID: acct.ID, Kind: domain.LedgerRelease, Amount: 3 - charge, JobID: j.ID, Description: "r", CreatedAt: now()}}}
			}
			state := func(j *domain.Job) string {
				got, err := s.FindJobByID(ctx, j.ID)
				require.NoError(t, err)
				return got.State
			}
			a, b, c := running(), running(), running()
			require.NoError(t, s.WriteTransitions(ctx, []*domain.JobTransition{settle(a, 2), settle(b, 1)}))
			require.Equal(t, domain.JobSucceeded, state(a))
			require.Equal(t, domain.JobSucceeded, state(b))
			requireAccount(t, s, acct, 4, 3, 3)
			for _, j := range []*domain.Job{a, b} {
				arts, err := s.FindArtifactsByJob(ctx, j.ID)
				require.NoError(t, err)
				require.Len(t, arts, 1)
			}

			// All or nothing: a moved job refuses the whole write.
			again, last := settle(a, 2), settle(c, 3)
			err := s.WriteTransitions(ctx, []*domain.JobTransition{again, last})
			require.ErrorIs(t, err, domain.ErrStaleJob)
			require.Equal(t, domain.JobRunning, state(c), "nothing written")
			requireAccount(t, s, acct, 4, 3, 3)
			// The batcher then writes each alone: each gets its own answer.
			errs := s.WriteTransitionBatch(ctx, []*domain.JobTransition{again, last})
			require.ErrorIs(t, errs[0], domain.ErrStaleJob)
			require.NoError(t, errs[1])
			require.Equal(t, domain.JobSucceeded, state(c))
			requireAccount(t, s, acct, 4, 0, 6)

			// Many at once through TransitionJob, combined as they come: each answered,
			// the sums those of all.
			require.NoError(t, s.ApplyLedgerEntry(ctx, entry(acct, domain.LedgerGrant, 60)))
			require.NoError(t, s.ApplyLedgerEntry(ctx, entry(acct, domain.LedgerReserve, 60)))
			var jobs []*domain.Job
			for range 20 {
				jobs = append(jobs, running())
			}
			var wg sync.WaitGroup
			errs = make([]error, len(jobs))
			for i, j := range jobs {
				wg.Go(func() { errs[i] = s.TransitionJob(ctx, settle(j, 1)) })
			}
			wg.Wait()
			for i, j := range jobs {
				require.NoError(t, errs[i])
				require.Equal(t, domain.JobSucceeded, state(j))
			}
			requireAccount(t, s, acct, 4+40, 0, 6+20)
		})
		t.Run("CancelAndClaimRace", func(t *testing.T) {
			for round := range 100 {
				j := newJob(tn.prj, domain.EnvLive)
				require.NoError(t, s.CreateJob(ctx, j))
				claim, cancel := *j, *j
				claim.State, claim.Attempts, cancel.State = domain.JobRunning, 1, domain.JobCancelled
				var errs [2]error
				start := make(chan struct{})
				var wg sync.WaitGroup
				for i, upd := range []*domain.Job{&claim, &cancel} {
					wg.Go(func() {
						<-start
						errs[i] = s.TransitionJob(ctx, &domain.JobTransition{Job: upd, FromState: domain.JobQueued})
					})
				}
				close(start)
				wg.Wait()
				for _, err := range errs {
					if err != nil {
						require.ErrorIs(t, err, domain.ErrStaleJob)
					}
				}
				require.True(t, (errs[0] == nil) != (errs[1] == nil), "round %d: claim %v, cancel %v", round, errs[0], errs[1])
				got, err := s.FindJobByID(ctx, j.ID)
				require.NoError(t, err)
				if errs[0] == nil {
					require.Equal(t, domain.JobRunning, got.State)
				} else {
					require.Equal(t, domain.JobCancelled, got.State)
				}
			}
		})
	})
}

// A lazy transition is written like any other, and its relaxed commit stays its own:
// the connection's next write waits for the disk again.
func TestLazyTransition(t *testing.T) {
	t.Parallel()
	dbtest.EachDialect(t, func(t *testing.T, s *db.Store) {
		t.Parallel()
		ctx := context.Background()
		tn := setupTenants(t, s)
		j := newJob(tn.prj, domain.EnvLive)
		require.NoError(t, s.CreateJob(ctx, j))
		// One connection, so the setting read below is the one the write ran on.
		s.DB().SetMaxOpenConns(1)
		run := *j
		run.State, run.Attempts, run.StartedAt, run.LeaseExpiresAt = domain.JobRunning, 1, ptr(now()), ptr(now().Add(time.Minute))
		require.NoError(t, s.TransitionJob(ctx, &domain.JobTransition{Job: &run, FromState: domain.JobQueued, Lazy: true}))
		got, err := s.FindJobByID(ctx, j.ID)
		require.NoError(t, err)
		require.Equal(t, domain.JobRunning, got.State)
		require.Equal(t, 1, got.Attempts)
		stale := run
		stale.Attempts = 2
		err = s.TransitionJob(ctx, &domain.JobTransition{Job: &stale, FromState: domain.JobQueued, Lazy: true})
		require.ErrorIs(t, err, domain.ErrStaleJob, "a lazy move is as conditional as any")
		if s.Dialect() == db.DialectPostgres {
			var setting string
			require.NoError(t, s.DB().QueryRowContext(ctx, "SELECT current_setting('synchronous_commit')").Scan(&setting))
			require.Equal(t, "on", setting)
		}
	})
}

func TestJobQueries(t *testing.T) {
	t.Parallel()
	dbtest.EachDialect(t, func(t *testing.T, s *db.Store) {
		t.Parallel()
		ctx := context.Background()
		tn := setupTenants(t, s)
		batch := domain.NewID(domain.PrefixBatch)
		base := now().Add(-time.Hour)
		mk := func(p *domain.Project, env domain.Environment, state, batchID string, created time.Time) *domain.Job {
			j := newJob(p, env)
			j.State, j.BatchID, j.CreatedAt = state, batchID, created
			require.NoError(t, s.CreateJob(ctx, j))
			return j
		}
		q1 := mk(tn.prj, domain.EnvLive, domain.JobQueued, batch, base.Add(3*time.Minute))
		q2 := mk(tn.prj, domain.EnvLive, domain.JobQueued, "", base.Add(time.Minute))
		r1 := mk(tn.prj, domain.EnvLive, domain.JobRunning, batch, base)
		s1 := mk(tn.prj, domain.EnvLive, domain.JobSucceeded, batch, base)
		t1 := mk(tn.prj, domain.EnvTest, domain.JobQueued, "", base.Add(2*time.Minute))
		p2 := mk(tn.prj2, domain.EnvLive, domain.JobQueued, "", now())
		f1 := mk(tn.oprj, domain.EnvLive, domain.JobQueued, "", base)

		list := func(f domain.JobFilter) []string {
			t.Helper()
			f.Limit = 100
			got, more, err := s.FindJobs(ctx, f)
			require.NoError(t, err)
			require.False(t, more)
			return ids(got, jobID)
		}
		prj := domain.Scope{OrganizationID: tn.org.ID, ProjectID: tn.prj.ID}
		t.Run("Filters", func(t *testing.T) {
			require.Equal(t, []string{s1.ID, r1.ID, q2.ID, q1.ID}, list(domain.JobFilter{Scope: prj, Environment: domain.EnvLive}))
			require.Equal(t, []string{q2.ID, q1.ID}, list(domain.JobFilter{Scope: prj, Environment: domain.EnvLive, State: domain.JobQueued}))
			require.Equal(t, []string{s1.ID, r1.ID, q1.ID}, list(domain.JobFilter{Scope: prj, Environment: domain.EnvLive, BatchID: batch}))
			require.Equal(t, []string{r1.ID}, list(domain.JobFilter{Scope: prj, Environment: domain.EnvLive, BatchID: batch, State: domain.JobRunning}))
			require.Equal(t, []string{t1.ID}, list(domain.JobFilter{Scope: prj, Environment: domain.EnvTest}))
			require.Equal(t, []string{p2.ID, t1.ID, s1.ID, r1.ID, q2.ID, q1.ID}, list(domain.JobFilter{Scope: domain.Scope{OrganizationID: tn.org.ID}}))
			require.Equal(t, []string{f1.ID}, list(domain.JobFilter{Scope: domain.Scope{OrganizationID: tn.other.ID}}))
			require.Empty(t, list(domain.JobFilter{Scope: domain.Scope{OrganizationID: tn.other.ID, ProjectID: tn.prj.ID}}))
			_, _, err := s.FindJobs(ctx, domain.JobFilter{})
			require.Error(t, err)
		})
		t.Run("Pages", func(t *testing.T) {
			f := domain.JobFilter{Scope: prj, Environment: domain.EnvLive, Page: domain.Page{Limit: 3}}
			page, more, err := s.FindJobs(ctx, f)
			require.NoError(t, err)
			require.True(t, more)
			require.Equal(t, []string{s1.ID, r1.ID, q2.ID}, ids(page, jobID))
			f.StartingAfter = q2.ID
			page, more, err = s.FindJobs(ctx, f)
			require.NoError(t, err)
			require.False(t, more)
			require.Equal(t, []string{q1.ID}, ids(page, jobID))
		})
		t.Run("CountActive", func(t *testing.T) {
			active := func(prj *domain.Project, env domain.Environment) int {
				t.Helper()
				f := newFile(prj, env)
				require.NoError(t, s.CreateFile(ctx, f))
				facts, err := s.FindAdmissionFacts(ctx, domain.AdmissionQuery{OrganizationID: prj.OrganizationID, Environment: env, FileIDs: []string{f.ID}})
				require.NoError(t, err)
				return facts.Projects[prj.ID].Active
			}
			require.Equal(t, 3, active(tn.prj, domain.EnvLive), "queued and running of the environment")
			require.Equal(t, 1, active(tn.prj, domain.EnvTest))
			require.Zero(t, active(createProject(t, s, tn.org.ID, "idle"), domain.EnvLive))
		})
		t.Run("ToRedriveAndLeases", func(t *testing.T) {
			past, future := now().Add(-time.Second), now().Add(time.Hour)
			lapsed := mk(tn.prj, domain.EnvLive, domain.JobRunning, "", base)
			leased := mk(tn.prj, domain.EnvLive, domain.JobRunning, "", base)
			for j, until := range map[*domain.Job]time.Time{lapsed: past, leased: future} {
				ok, err := s.RenewJobLease(ctx, j.ID, 0, until)
				require.NoError(t, err)
				require.True(t, ok)
			}
			all := domain.RedriveQuery{QueuedBefore: base.Add(150 * time.Second), LeaseBefore: now(), Limit: 10}
			got, err := s.FindJobsToRedrive(ctx, all)
			require.NoError(t, err)
			require.Equal(t, []string{q2.ID, r1.ID, t1.ID, f1.ID, lapsed.ID}, ids(got, jobID),
				"by id: queued before the moment, running with a lapsed or no lease, every tenant")
			page := all
			page.Limit = 2
			got, err = s.FindJobsToRedrive(ctx, page)
			require.NoError(t, err)
			require.Equal(t, []string{q2.ID, r1.ID}, ids(got, jobID))
			page.After = r1.ID
			got, err = s.FindJobsToRedrive(ctx, page)
			require.NoError(t, err)
			require.Equal(t, []string{t1.ID, f1.ID}, ids(got, jobID))

			ok, err := s.RenewJobLease(ctx, lapsed.ID, 0, future)
			require.NoError(t, err)
			require.True(t, ok)
			ok, err = s.RenewJobLease(ctx, lapsed.ID, 1, future)
			require.NoError(t, err)
			require.False(t, ok, "another attempt's lease is not this one's")
			ok, err = s.RenewJobLease(ctx, q1.ID, 0, future)
			require.NoError(t, err)
			require.False(t, ok, "only running jobs hold a lease")
			got, err = s.FindJobsToRedrive(ctx, all)
			require.NoError(t, err)
			require.Equal(t, []string{q2.ID, r1.ID, t1.ID, f1.ID}, ids(got, jobID), "a renewed lease holds")
			found, err := s.FindJobByID(ctx, lapsed.ID)
			require.NoError(t, err)
			require.WithinDuration(t, future, *found.LeaseExpiresAt, time.Millisecond)
		})
	})
}

func TestBatches(t *testing.T) {
	t.Parallel()
	dbtest.EachDialect(t, func(t *testing.T, s *db.Store) {
		t.Parallel()
		ctx := context.Background()
		tn := setupTenants(t, s)
		b := &domain.Batch{ID: domain.NewID(domain.PrefixBatch), OrganizationID: tn.org.ID, ProjectID: tn.prj.ID,
			Environment: domain.EnvLive, Preset: "thumbnails", Options: json.RawMessage(`{"sizes":[64,128]}`),
			CreditsEstimated: 30, CreatedAt: now()}
		acct, err := s.FindCreditAccount(ctx, tn.org.ID, domain.EnvLive)
		require.NoError(t, err)
		j := newJob(tn.prj, domain.EnvLive)
		j.BatchID, j.CreditsReserved = b.ID, 0
		require.NoError(t, s.AdmitJobs(ctx, &domain.Admission{AccountID: acct.ID, Batch: b, Jobs: []*domain.Job{j}}))
		got, err := s.FindBatchByID(ctx, b.ID)
		require.NoError(t, err)
		requireJSONField(t, b.Options, &got.Options)
		require.Equal(t, b, got)
		_, err = s.FindBatchByID(ctx, domain.NewID(domain.PrefixBatch))
		require.ErrorIs(t, err, domain.ErrNotFound)
	})
}
