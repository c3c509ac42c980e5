package jobs

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/domain"
)

// The scratch watcher counts every file under the directory, nested ones too, and
// ends the run with the disk limit as its cause once they hold more than the bound.
func TestScratchWatcherStopsARunPastItsBound(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "step0", "pages"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "input"), make([]byte, 3000), 0o600))
	require.EqualValues(t, 3000, scratchBytes(dir))
	require.NoError(t, checkDisk(dir, 4096))

	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	stop := WatchScratch(dir, 4096, cancel)
	defer stop()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "step0", "pages", "1.png"), make([]byte, 2000), 0o600))
	<-ctx.Done()
	le := limitCause(ctx)
	require.NotNil(t, le)
	require.Equal(t, domain.CodeResourceLimitExceeded, le.Code)
	require.Equal(t, map[string]any{"limit": domain.LimitDisk, "bound_bytes": int64(4096)}, le.Details)
	require.EqualValues(t, 5000, scratchBytes(dir))
	require.Equal(t, domain.CodeResourceLimitExceeded, domain.ErrorCode(checkDisk(dir, 4096)))
	require.NoError(t, checkDisk(dir, 0), "0 is no bound")
	require.False(t, domain.Retryable(le), "the same input needs as much again")
}

// BenchmarkScratchBytes is one measure of the watcher (every 50 ms while a job runs)
// on a scratch directory as an image job leaves it: the input and one output in its
// step's directory.
func BenchmarkScratchBytes(b *testing.B) {
	dir := b.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "step0"), 0o700); err != nil {
		b.Fatal(err)
	}
	for _, p := range []string{"input", "step0/image.webp"} {
		if err := os.WriteFile(filepath.Join(dir, p), make([]byte, 1<<20), 0o600); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		if scratchBytes(dir) != 2<<20 {
			b.Fatal("wrong size")
		}
	}
}
