//go:build !linux

package storage

import (
	"os"
	"path/filepath"
	"sync"
)

// fileLocks holds a mutex per file path for lockRange.
var fileLocks sync.Map

// lockRange, where open file description locks are missing, locks the whole file
// against the other users of this process (parts of one upload then land one at a
// time), and answers what releases it.
func lockRange(f *os.File, _, _ int64) (func(), error) {
	name, err := filepath.Abs(f.Name())
	if err != nil {
		return nil, err
	}
	v, _ := fileLocks.LoadOrStore(name, &sync.Mutex{})
	mu := v.(*sync.Mutex)
	mu.Lock()
	return mu.Unlock, nil
}
