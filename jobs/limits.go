package jobs

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/filemill/filemill/domain"
)

// diskWatchInterval is how often a running job's scratch directory is measured. Engines
// write through code that is not ours (libvips' savers, PDFium, LibreOffice): the
// watcher is what bounds them all. A job may pass its bound by what its engine writes
// in one interval before it is stopped; what it made is never stored (the directory is
// measured again once each step returns).
const diskWatchInterval = 50 * time.Millisecond

// limitError is the cause of a run stopped for a resource limit.
type limitError struct{ err *domain.Error }

func (e *limitError) Error() string { return e.err.Error() }
func (e *limitError) Unwrap() error { return e.err }

// limitCause returns the resource limit that stopped ctx, or nil.
func limitCause(ctx context.Context) *domain.Error {
	var le *limitError
	if errors.As(context.Cause(ctx), &le) {
		return le.err
	}
	return nil
}

// scratchBytes is what the files under dir hold, by their sizes: what a job has
// written there (a sparse file counts at its full size, as it would when uploaded).
func scratchBytes(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil // a file removed under us, or not a file: nothing to count
		}
		if info, err := d.Info(); err == nil {
			n += info.Size()
		}
		return nil
	})
	return n
}

// checkDisk fails with resource_limit_exceeded when dir holds more than bound bytes
// (0: no bound).
func checkDisk(dir string, bound int64) error {
	if bound > 0 && scratchBytes(dir) > bound {
		return domain.ResourceLimit(domain.LimitDisk, bound)
	}
	return nil
}

// WatchScratch measures dir every diskWatchInterval until stop is called, and ends the
// run (cancel) with a resource limit cause once it holds more than bound bytes.
func WatchScratch(dir string, bound int64, cancel context.CancelCauseFunc) (stop func()) {
	if bound <= 0 {
		return func() {}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(diskWatchInterval)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			if err := checkDisk(dir, bound); err != nil {
				cancel(&limitError{domain.AsError(err)})
				return
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}
