package jobs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// An attempt's scratch directory is made again from an emptied one when it can be: on
// some file systems making a directory costs far more than renaming one (ext4 here: 380
// µs of CPU against 20), and each attempt makes two (its own and its first step's).

// SpareDirPrefix begins the name of an emptied scratch directory kept for the next
// attempt: not WorkDirPrefix, so nothing takes it for an attempt under way.
const SpareDirPrefix = "spare-"

// spareFresh is how long a spare is kept: older, it is removed rather than used, so the
// stale sweep (SweepWorkDir, an hour) only ever meets spares of a process that died.
const spareFresh = 30 * time.Minute

// maxSpares bounds the spares kept per scratch root.
const maxSpares = 16

type spareDir struct {
	path string
	kept time.Time
}

// scratchPool holds the spare directories of each scratch root.
type scratchPool struct {
	mu     sync.Mutex
	byRoot map[string][]spareDir
}

var spares = &scratchPool{byRoot: map[string][]spareDir{}}

// take returns a spare of root still fresh at now; "" when there is none. Stale ones
// met on the way are removed.
func (p *scratchPool) take(root string, now time.Time) string {
	var stale []string
	defer func() {
		for _, path := range stale {
			os.RemoveAll(path)
		}
	}()
	p.mu.Lock()
	defer p.mu.Unlock()
	list := p.byRoot[root]
	for len(list) > 0 {
		s := list[len(list)-1]
		list = list[:len(list)-1]
		p.byRoot[root] = list
		if now.Sub(s.kept) < spareFresh {
			return s.path
		}
		stale = append(stale, s.path)
	}
	return ""
}

// put keeps path as a spare of root; false when the pool is full.
func (p *scratchPool) put(root, path string, now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.byRoot[root]) >= maxSpares {
		return false
	}
	p.byRoot[root] = append(p.byRoot[root], spareDir{path: path, kept: now})
	return true
}

// newScratch makes the directory one attempt of job works in, under tmpRoot, named for
// the job: a spare renamed when there is one, a new directory otherwise.
func newScratch(tmpRoot, jobID string) (string, error) {
	now := time.Now()
	if spare := spares.take(tmpRoot, now); spare != "" {
		dir := filepath.Join(tmpRoot, WorkDirPrefix+jobID+"-"+randomHex(6))
		if os.Rename(spare, dir) == nil {
			// The stale sweep goes by modification time, which a rename leaves alone.
			if os.Chtimes(dir, now, now) == nil {
				return dir, nil
			}
			os.RemoveAll(dir)
		} else {
			os.RemoveAll(spare)
		}
	}
	err := os.MkdirAll(tmpRoot, 0o700)
	var dir string
	if err == nil {
		dir, err = os.MkdirTemp(tmpRoot, WorkDirPrefix+jobID+"-")
	}
	if err != nil {
		return "", scratchUnavailable(err)
	}
	return dir, nil
}

// releaseScratch empties an attempt's directory and keeps it as a spare, its first
// step's directory (empty) kept in it; it is removed instead when it cannot be emptied
// or the pool is full.
func releaseScratch(tmpRoot, dir string) {
	if !emptyScratch(dir) {
		os.RemoveAll(dir)
		return
	}
	spare := filepath.Join(tmpRoot, SpareDirPrefix+randomHex(6))
	if err := os.Rename(dir, spare); err != nil {
		os.RemoveAll(dir)
		return
	}
	if !spares.put(tmpRoot, spare, time.Now()) {
		os.RemoveAll(spare)
	}
}

// emptyScratch removes what dir holds but the directory of its first step, which it
// empties; false when anything is left.
func emptyScratch(dir string) bool {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if e.Name() == stepDir(0) && e.IsDir() {
			if !emptyScratch(p) {
				return false
			}
			continue
		}
		if os.RemoveAll(p) != nil {
			return false
		}
	}
	return true
}

// stepDir names the directory step i of an attempt works in, inside its scratch.
func stepDir(i int) string { return "step" + strconv.Itoa(i) }

// makeStepDir makes the directory step i works in: an empty one kept from a spare
// serves as well as a new one.
func makeStepDir(dir string, i int) (string, error) {
	work := filepath.Join(dir, stepDir(i))
	err := os.Mkdir(work, 0o700)
	if errors.Is(err, fs.ErrExist) {
		if st, serr := os.Lstat(work); serr == nil && st.IsDir() {
			if entries, rerr := os.ReadDir(work); rerr == nil && len(entries) == 0 {
				return work, nil
			}
		}
	}
	return work, err
}
