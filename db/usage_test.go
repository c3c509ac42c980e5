package db_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/db"
	"github.com/filemill/filemill/db/dbtest"
	"github.com/filemill/filemill/domain"
)

func TestUsageSums(t *testing.T) {
	t.Parallel()
	dbtest.EachDialect(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		tn := setupTenants(t, s)
		acct, err := s.FindCreditAccount(ctx, tn.org.ID, domain.EnvLive)
		require.NoError(t, err)
		move := func(kind string, amount int64, prj string, at time.Time) {
			require.NoError(t, s.ApplyLedgerEntry(ctx, &domain.LedgerEntry{AccountID: acct.ID, Kind: kind, Amount: amount, ProjectID: prj, Description: kind, CreatedAt: at}))
		}
		lastMonth := now().AddDate(0, -1, 0)
		move(domain.LedgerGrant, 100, "", now())
		move(domain.LedgerReserve, 10, tn.prj.ID, lastMonth)
		move(domain.LedgerCharge, 4, tn.prj.ID, lastMonth) // charged last month
		move(domain.LedgerRelease, 1, tn.prj.ID, lastMonth)
		move(domain.LedgerReserve, 5, tn.prj.ID, now())
		move(domain.LedgerCharge, 3, tn.prj.ID, now())
		move(domain.LedgerReserve, 7, tn.prj2.ID, now())
		// What is held is read from the project's live jobs of the environment.
		for _, j := range []struct {
			prj   *domain.Project
			env   domain.Environment
			state string
			held  int64
		}{
			{tn.prj, domain.EnvLive, domain.JobQueued, 4},
			{tn.prj, domain.EnvLive, domain.JobRunning, 2},
			{tn.prj, domain.EnvLive, domain.JobSucceeded, 9},
			{tn.prj, domain.EnvTest, domain.JobQueued, 100},
			{tn.prj2, domain.EnvLive, domain.JobQueued, 50},
		} {
			job := newJob(j.prj, j.env)
			job.State, job.CreditsReserved = j.state, j.held
			require.NoError(t, s.CreateJob(ctx, job))
		}
		reserved, used, err := s.SumProjectCredits(ctx, acct.ID, tn.prj.ID, domain.EnvLive, domain.MonthStart(now()))
		require.NoError(t, err)
		require.EqualValues(t, 4+2, reserved)
		require.EqualValues(t, 3, used)

		file := func(prj *domain.Project, env domain.Environment, status string, size int64) *domain.File {
			f := &domain.File{ID: domain.NewID(domain.PrefixFile), OrganizationID: prj.OrganizationID, ProjectID: prj.ID, Environment: env,
				UploadID: domain.NewID(domain.PrefixUpload), Filename: "f", Status: status, ByteSize: size, StorageKey: "k", CreatedAt: now()}
			require.NoError(t, s.CreateFile(ctx, f))
			return f
		}
		ready := file(tn.prj, domain.EnvLive, domain.FileReady, 100)
		file(tn.prj, domain.EnvLive, domain.FileRejected, 20)
		file(tn.prj, domain.EnvLive, domain.FileDeleted, 1000)
		file(tn.prj, domain.EnvLive, domain.FileAwaitingUpload, 1000)
		file(tn.prj, domain.EnvTest, domain.FileReady, 1000)
		file(tn.prj2, domain.EnvLive, domain.FileReady, 1000)
		require.NoError(t, s.CreateArtifact(ctx, &domain.Artifact{ID: domain.NewID(domain.PrefixArtifact), OrganizationID: tn.org.ID, FileID: ready.ID,
			JobID: domain.NewID(domain.PrefixJob), Name: "a", MIMEType: "x", ByteSize: 7, StorageKey: "a", CreatedAt: now()}))
		bytes, files, err := s.SumStoredFiles(ctx, tn.prj.ID, domain.EnvLive)
		require.NoError(t, err)
		require.EqualValues(t, 127, bytes)
		require.Equal(t, 2, files)

		require.NoError(t, s.AddEgress(ctx, tn.org.ID, tn.prj.ID, domain.EnvLive, now(), 10))
		require.NoError(t, s.AddEgress(ctx, tn.org.ID, tn.prj.ID, domain.EnvLive, now(), 5))
		require.NoError(t, s.AddEgress(ctx, tn.org.ID, tn.prj.ID, domain.EnvLive, lastMonth, 1000))
		require.NoError(t, s.AddEgress(ctx, tn.org.ID, tn.prj.ID, domain.EnvTest, now(), 1000))
		n, err := s.SumEgress(ctx, tn.prj.ID, domain.EnvLive, now())
		require.NoError(t, err)
		require.EqualValues(t, 15, n)
		n, err = s.SumEgress(ctx, tn.prj2.ID, domain.EnvLive, now())
		require.NoError(t, err)
		require.Zero(t, n)
	})
}
