package jobs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// staleWorkDir is how long a job's scratch directory may go untouched before it counts
// as left behind by a worker that died (SIGKILL, a crash, a lost host): far longer than
// an attempt may run (10 minutes by default), so no running job loses its files.
const staleWorkDir = time.Hour

// SweepWorkDir removes the job directories under dir that were last changed before
// now-olderThan, and returns how many. A worker killed mid-job never removes its own,
// and each may hold a copy of a large input; nor the spares it kept (a live worker uses
// none older than spareFresh).
func SweepWorkDir(dir string, olderThan time.Duration, now time.Time) (int, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	removed := 0
	var errs []error
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), WorkDirPrefix) && !strings.HasPrefix(e.Name(), SpareDirPrefix) {
			continue
		}
		info, err := e.Info()
		if err != nil || !info.ModTime().Before(now.Add(-olderThan)) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			errs = append(errs, err)
			continue
		}
		removed++
	}
	return removed, errors.Join(errs...)
}
