package jobs_test

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/domain/eventually"
	"github.com/filemill/filemill/jobs"
	"github.com/filemill/filemill/jobs/redistest"
)

func TestSweepWorkDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	now := time.Now()
	mk := func(name string, age time.Duration) string {
		t.Helper()
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Join(p, "step0"), 0o700))
		require.NoError(t, os.WriteFile(filepath.Join(p, "input"), []byte("x"), 0o600))
		require.NoError(t, os.Chtimes(p, now.Add(-age), now.Add(-age)))
		return p
	}
	stale := mk(jobs.WorkDirPrefix+"job_A-1", 2*time.Hour)
	fresh := mk(jobs.WorkDirPrefix+"job_B-1", time.Minute)
	other := mk("keep-me", 2*time.Hour)

	n, err := jobs.SweepWorkDir(dir, time.Hour, now)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.NoDirExists(t, stale, "left behind by a dead worker")
	require.DirExists(t, fresh, "a job may still run in it")
	require.DirExists(t, other, "not a job's")

	n, err = jobs.SweepWorkDir(filepath.Join(dir, "missing"), time.Hour, now)
	require.NoError(t, err)
	require.Zero(t, n)
}

func TestLocallyRunsAtStartAndEveryPeriodUntilShutdown(t *testing.T) {
	t.Parallel()
	b := setup(t, redistest.URL(t))
	var runs atomic.Int32
	var last atomic.Pointer[context.Context]
	s := b.server(t, fastConfig(), func(s *jobs.Server) {
		s.Locally(20*time.Millisecond, func(ctx context.Context) {
			last.Store(&ctx)
			runs.Add(1)
		})
	})
	eventually.True(t, "the condition to hold", func() bool { return runs.Load() >= 3 })
	s.Shutdown()
	// Shutdown returns once the loop has ended: its context is done, and no run can
	// follow, so there is nothing to wait for.
	require.Error(t, (*last.Load()).Err(), "nothing runs after Shutdown")
}
