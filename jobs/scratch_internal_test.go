package jobs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// An attempt's directory, emptied, is the next attempt's: its first step's directory
// kept and empty, nothing else of the attempt before left in it.
func TestScratchIsReusedEmpty(t *testing.T) {
	root := t.TempDir()
	dir, err := newScratch(root, "job_A")
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(filepath.Base(dir), WorkDirPrefix+"job_A-"))
	work, err := makeStepDir(dir, 0)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "input"), []byte("in"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(work, "out.json"), []byte("{}"), 0o600))
	require.NoError(t, os.MkdirAll(filepath.Join(work, "deep", "er"), 0o700))
	step1, err := makeStepDir(dir, 1)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(step1, "x"), nil, 0o600))
	st, err := os.Stat(dir)
	require.NoError(t, err)

	releaseScratch(root, dir)
	_, err = os.Stat(dir)
	require.True(t, os.IsNotExist(err), "the attempt's name is gone")

	kept, err := filepath.Glob(filepath.Join(root, SpareDirPrefix+"*"))
	require.NoError(t, err)
	require.Len(t, kept, 1, "emptied and kept as a spare")

	next, err := newScratch(root, "job_B")
	require.NoError(t, err)
	_, err = os.Stat(kept[0])
	require.True(t, os.IsNotExist(err), "the spare was taken")
	st2, err := os.Stat(next)
	require.NoError(t, err)
	require.True(t, os.SameFile(st, st2), "the directory was reused")
	entries, err := os.ReadDir(next)
	require.NoError(t, err)
	require.Len(t, entries, 1)
	require.Equal(t, "step0", entries[0].Name())
	work, err = makeStepDir(next, 0)
	require.NoError(t, err)
	inner, err := os.ReadDir(work)
	require.NoError(t, err)
	require.Empty(t, inner)
	require.WithinDuration(t, time.Now(), st2.ModTime(), time.Minute, "fresh for the stale sweep")

	// A step directory that is not empty is never taken as new.
	require.NoError(t, os.WriteFile(filepath.Join(work, "left"), nil, 0o600))
	_, err = makeStepDir(next, 0)
	require.Error(t, err)
}

// A spare kept past spareFresh is removed rather than used; the stale sweep removes the
// spares a dead process left.
func TestOldSparesAreNotUsed(t *testing.T) {
	root := t.TempDir()
	dir, err := newScratch(root, "job_A")
	require.NoError(t, err)
	releaseScratch(root, dir)
	kept, err := filepath.Glob(filepath.Join(root, SpareDirPrefix+"*"))
	require.NoError(t, err)
	require.Len(t, kept, 1)
	require.Empty(t, spares.take(root, time.Now().Add(spareFresh+time.Minute)), "too old to use")
	_, err = os.Stat(kept[0])
	require.True(t, os.IsNotExist(err), "removed, not kept")
	next, err := newScratch(root, "job_B")
	require.NoError(t, err)

	left := filepath.Join(root, SpareDirPrefix+"of-a-dead-process")
	require.NoError(t, os.Mkdir(left, 0o700))
	old := time.Now().Add(-2 * time.Hour)
	require.NoError(t, os.Chtimes(left, old, old))
	n, err := SweepWorkDir(root, staleWorkDir, time.Now())
	require.NoError(t, err)
	require.Equal(t, 1, n)
	_, err = os.Stat(left)
	require.True(t, os.IsNotExist(err))
	_, err = os.Stat(next)
	require.NoError(t, err, "an attempt under way is kept")
}
