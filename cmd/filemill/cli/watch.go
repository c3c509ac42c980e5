package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/spf13/cobra"

	"github.com/filemill/filemill/client"
	"github.com/filemill/filemill/client/api"
)

func watchCommand(g *globals) *cobra.Command {
	var jf jobFlags
	var uf uploadFlags
	var operation, dir, statePath string
	var deleteAfter bool
	var settle time.Duration
	cmd := &cobra.Command{
		Use:   "watch DIR --preset P|--operation OP -o OUT [--delete-after] [--option k=v]…",
		Short: "process each file that appears in a directory, once, and download the results",
		Long: `Watches DIR and processes each file that appears in it (and those already there): it
uploads the file, runs the preset or operation on it, and downloads the artifacts into
OUT under their names, printing "JOB_ID<TAB>STATE<TAB>FILE" and the paths written. A
file is taken once nothing has written to it for --settle. Hidden files and
subdirectories are left alone.

Each file is processed once, across restarts: a small state file (--state; by default
in $XDG_STATE_HOME/filemill/watch) records each file's upload and job as they are made,
so a restarted watch takes up a job left running instead of making another, and
passes over the files done. A file changed since (another size or time) is processed
again. With --delete-after, a file whose job succeeded is deleted once its outputs are
written. A failed job is reported and not retried. Stop it with Ctrl-C.`,
		Args: exactArgs(1, "one directory"),
		RunE: func(c *cobra.Command, args []string) error {
			if operation != "" && jf.preset != "" {
				return usagef(c.CommandPath(), "give --preset or --operation, not both")
			}
			var pre []string
			if operation != "" {
				pre = []string{operation}
			}
			w, _, err := jf.parse(c, pre)
			if err != nil {
				return usagef(c.CommandPath(), "name a preset (--preset) or an operation (--operation)")
			}
			if dir == "" {
				return usagef(c.CommandPath(), "-o OUT is required: where the outputs go")
			}
			policy, err := uf.check(c)
			if err != nil {
				return err
			}
			src, err := filepath.Abs(args[0])
			if err != nil {
				return err
			}
			if info, err := os.Stat(src); err != nil || !info.IsDir() {
				return usagef(c.CommandPath(), "%s is not a directory", args[0])
			}
			dst, err := filepath.Abs(dir)
			if err != nil {
				return err
			}
			if dst == src {
				// Its outputs would be taken for new files, without end.
				return usagef(c.CommandPath(), "-o must not be the watched directory")
			}
			if settle <= 0 {
				return usagef(c.CommandPath(), "--settle must be positive")
			}
			if statePath == "" {
				if statePath, err = watchStatePath(src); err != nil {
					return err
				}
			}
			st, err := loadWatchState(statePath, src)
			if err != nil {
				return err
			}
			cl, err := g.client()
			if err != nil {
				return err
			}
			out, err := newOutDir(dst)
			if err != nil {
				return err
			}
			// One line per file: bars for files that come and go without end would pile up.
			ui := newLineUI(c, g)
			wt := &watcher{cl: cl, ui: ui, dir: src, what: w, out: out, deleteAfter: deleteAfter, settle: settle,
				state: st, up: &uploader{cl: cl, ui: ui, flags: uf, policy: policy}, concurrency: uf.concurrency}
			return wt.run(c.Context())
		},
	}
	jf.register(g, cmd)
	uf.register(cmd, false)
	cmd.Flags().StringVar(&operation, "operation", "", "run this operation (instead of a preset)")
	_ = cmd.RegisterFlagCompletionFunc("operation", completeOperations(g, api.OperationKindOperation))
	cmd.ValidArgsFunction = func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return nil, cobra.ShellCompDirectiveFilterDirs
	}
	cmd.Flags().StringVarP(&dir, "output", "o", "", "the directory the outputs are written to (made if missing)")
	cmd.Flags().BoolVar(&deleteAfter, "delete-after", false, "delete each file once its job succeeded and its outputs are written")
	cmd.Flags().DurationVar(&settle, "settle", time.Second, "how long a file must go unwritten before it is taken")
	cmd.Flags().StringVar(&statePath, "state", "", "the state file (default: one per directory in $XDG_STATE_HOME/filemill/watch)")
	return cmd
}

// watchStatePath is the default state file of a watched directory.
func watchStatePath(dir string) (string, error) {
	base, err := stateDir()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(dir))
	return filepath.Join(base, "watch", hex.EncodeToString(sum[:16])+".json"), nil
}

// watchState records, per file name, how far its processing went; it is written whole
// after every step, so a restart resumes each file where it stood.
type watchState struct {
	path string
	mu   sync.Mutex

	Version int                    `json:"version"`
	Dir     string                 `json:"dir"`
	Files   map[string]*watchEntry `json:"files"`
}

// watchEntry is one file's progress. The idempotency key is chosen, and recorded,
// before the job is asked for: a watch that stopped after asking but before recording
// the job asks again with the same key and gets the same job.
type watchEntry struct {
	Size           int64     `json:"size"`
	ModTime        time.Time `json:"mod_time"`
	FileID         string    `json:"file_id,omitempty"`
	IdempotencyKey string    `json:"idempotency_key,omitempty"`
	JobID          string    `json:"job_id,omitempty"`
	// Result is how it ended (succeeded, failed, cancelled, rejected, refused); empty
	// while it goes on.
	Result string `json:"result,omitempty"`
}

const watchStateVersion = 1

func loadWatchState(path, dir string) (*watchState, error) {
	st := &watchState{path: path, Version: watchStateVersion, Dir: dir, Files: map[string]*watchEntry{}}
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(raw, st); err != nil || st.Version != watchStateVersion {
		return nil, fmt.Errorf("%s is not a watch state file (move it away to start afresh)", path)
	}
	if st.Dir != dir {
		return nil, fmt.Errorf("%s is the state of %s, not of %s", path, st.Dir, dir)
	}
	if st.Files == nil {
		st.Files = map[string]*watchEntry{}
	}
	return st, nil
}

// saveLocked writes the state whole (a new file renamed over the old); st.mu is held.
func (st *watchState) saveLocked() error {
	raw, err := json.Marshal(st)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(st.path), 0o700); err != nil {
		return err
	}
	tmp := st.path + ".tmp"
	if err := os.WriteFile(tmp, raw, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, st.path)
}

// update changes a file's entry and saves.
func (st *watchState) update(name string, fn func(e *watchEntry)) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	e := st.Files[name]
	if e == nil {
		e = &watchEntry{}
		st.Files[name] = e
	}
	fn(e)
	return st.saveLocked()
}

// entry answers a copy of a file's entry, nil when there is none.
func (st *watchState) entry(name string) *watchEntry {
	st.mu.Lock()
	defer st.mu.Unlock()
	if e := st.Files[name]; e != nil {
		c := *e
		return &c
	}
	return nil
}

// done tells whether a file, as it is now, was processed to its end.
func (st *watchState) done(name string, info fs.FileInfo) bool {
	e := st.entry(name)
	return e != nil && e.Result != "" && e.Size == info.Size() && e.ModTime.Equal(info.ModTime())
}

// succeeded tells whether a file, as it is now, was processed and its job succeeded.
func (st *watchState) succeeded(name string, info fs.FileInfo) bool {
	e := st.entry(name)
	return st.done(name, info) && e.Result == string(api.JobStateSucceeded)
}

func (st *watchState) forget(name string) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	delete(st.Files, name)
	return st.saveLocked()
}

// prune drops the entries of files no longer in the directory, so the state holds no
// more than the directory does.
func (st *watchState) prune(present map[string]bool) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	changed := false
	for name, e := range st.Files {
		// A file still on its way (a job running) is kept: its job is taken up.
		if !present[name] && e.Result != "" {
			delete(st.Files, name)
			changed = true
		}
	}
	if !changed {
		return nil
	}
	return st.saveLocked()
}

// watcher processes the files of a directory as they settle.
type watcher struct {
	cl          *client.Client
	ui          *progressUI
	up          *uploader
	dir         string
	what        what
	out         *outDir
	deleteAfter bool
	settle      time.Duration
	state       *watchState
	concurrency int

	mu       sync.Mutex
	timers   map[string]*time.Timer
	busy     map[string]bool // being processed
	again    map[string]bool // touched while being processed
	failures map[string]int  // failed tries in this run
	queue    chan string
	done     <-chan struct{} // closed as the watch stops
}

// retryDelay is the wait before a file whose processing met a passing failure (the
// deployment unreachable) is tried again; maxTries bounds the tries until a restart.
const (
	retryDelay = 10 * time.Second
	maxTries   = 5
)

func (w *watcher) run(ctx context.Context) error {
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer fsw.Close()
	// Watching starts before the scan, so no file falls between the two.
	if err := fsw.Add(w.dir); err != nil {
		return err
	}
	w.timers, w.busy, w.again, w.failures = map[string]*time.Timer{}, map[string]bool{}, map[string]bool{}, map[string]int{}
	w.queue = make(chan string, 1024)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w.done = ctx.Done()

	var workers sync.WaitGroup
	for range w.concurrency {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for {
				select {
				case <-ctx.Done():
					return
				case name := <-w.queue:
					w.process(ctx, name)
				}
			}
		}()
	}

	present, done, err := w.scan()
	if err != nil {
		cancel()
		workers.Wait()
		return err
	}
	if err := w.state.prune(present); err != nil {
		cancel()
		workers.Wait()
		return err
	}
	w.ui.note("watching %s: %s to %s (%d files done before; state in %s)", w.dir, w.what, w.out.dir, done, w.state.path)

	var loopErr error
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case ev, ok := <-fsw.Events:
			if !ok {
				break loop
			}
			name, ok := w.name(ev.Name)
			if !ok {
				continue
			}
			switch {
			case ev.Has(fsnotify.Create), ev.Has(fsnotify.Write):
				w.touchAfter(name, w.settle)
			case ev.Has(fsnotify.Remove), ev.Has(fsnotify.Rename):
				w.untouch(name)
			}
		case err, ok := <-fsw.Errors:
			if !ok {
				break loop
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				// Events were lost: the directory says what is there.
				w.ui.note("watch: %v; looking at the directory again", err)
				if _, _, err := w.scan(); err != nil {
					loopErr = err
					break loop
				}
				continue
			}
			loopErr = fmt.Errorf("watch %s: %w", w.dir, err)
			break loop
		}
	}
	cancel()
	w.mu.Lock()
	for _, t := range w.timers {
		t.Stop()
	}
	w.mu.Unlock()
	workers.Wait()
	if loopErr == nil {
		w.ui.note("stopped watching %s", w.dir)
	}
	return loopErr
}

// name is the name of a file of the watched directory that is processed, from an
// event's path: not hidden, not in a subdirectory.
func (w *watcher) name(path string) (string, bool) {
	if filepath.Dir(path) != w.dir {
		return "", false
	}
	name := filepath.Base(path)
	return name, !strings.HasPrefix(name, ".")
}

// scan touches every file in the directory that is not done, and answers the names
// of all and how many were done before. A file done and unchanged since is passed over
// here, before the watch says it is watching.
func (w *watcher) scan() (present map[string]bool, done int, err error) {
	entries, err := os.ReadDir(w.dir)
	if err != nil {
		return nil, 0, err
	}
	present = map[string]bool{}
	for _, e := range entries {
		name, ok := w.name(filepath.Join(w.dir, e.Name()))
		if !ok || e.IsDir() {
			continue
		}
		present[name] = true
		if info, err := e.Info(); err == nil && !(w.deleteAfter && w.state.succeeded(name, info)) && w.state.done(name, info) {
			done++
			continue
		}
		w.touchAfter(name, w.settle)
	}
	return present, done, nil
}

// touchAfter (re)starts a file's settle time: it is taken once nothing wrote to it for
// that long.
func (w *watcher) touchAfter(name string, d time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if t := w.timers[name]; t != nil {
		t.Reset(d)
		return
	}
	w.timers[name] = time.AfterFunc(d, func() { w.ready(name) })
}

func (w *watcher) untouch(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if t := w.timers[name]; t != nil {
		t.Stop()
		delete(w.timers, name)
	}
}

// ready queues a settled file, unless it is being processed (then it is looked at
// again after).
func (w *watcher) ready(name string) {
	w.mu.Lock()
	delete(w.timers, name)
	if w.busy[name] {
		w.again[name] = true
		w.mu.Unlock()
		return
	}
	w.busy[name] = true
	w.mu.Unlock()
	select {
	case w.queue <- name:
	case <-w.done:
	}
}

// process takes a file as far as it goes, recording each step; it is called for one
// name at a time.
func (w *watcher) process(ctx context.Context, name string) {
	retry := false
	defer func() {
		w.mu.Lock()
		delete(w.busy, name)
		again := w.again[name]
		delete(w.again, name)
		w.mu.Unlock()
		if again {
			w.touchAfter(name, w.settle)
		} else if retry && ctx.Err() == nil {
			w.touchAfter(name, retryDelay)
		}
	}()
	err := w.step(ctx, name)
	if err == nil || ctx.Err() != nil {
		return
	}
	if permanent(err) {
		w.ui.note("%s: %s", name, errorLine(err))
		_ = w.state.update(name, func(e *watchEntry) { e.Result = "refused" })
		return
	}
	tries := w.tries(name)
	if tries >= maxTries {
		w.ui.note("%s: %s (gave up after %d tries; a restart tries again)", name, errorLine(err), tries)
		return
	}
	w.ui.note("%s: %s (trying again in %s)", name, errorLine(err), retryDelay)
	retry = true
}

// tries counts a file's failed tries in this run.
func (w *watcher) tries(name string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.failures[name]++
	return w.failures[name]
}

// permanent tells a refusal that trying again would only repeat (a bad option, a
// format the operation does not take) from a passing failure.
func permanent(err error) bool {
	var ae *client.APIError
	if !errors.As(err, &ae) {
		return false
	}
	switch ae.Status {
	case http.StatusRequestTimeout, http.StatusConflict, http.StatusTooManyRequests, http.StatusUnauthorized:
		return false
	}
	return ae.Status >= 400 && ae.Status < 500
}

// step does what is left for a file: upload, job, wait, download, delete.
func (w *watcher) step(ctx context.Context, name string) error {
	path := filepath.Join(w.dir, name)
	info, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // gone before its turn
	}
	if err != nil {
		return err
	}
	if !info.Mode().IsRegular() {
		return nil
	}
	e := w.state.entry(name)
	same := e != nil && e.Size == info.Size() && e.ModTime.Equal(info.ModTime())
	if same && e.Result != "" {
		if e.Result == string(api.JobStateSucceeded) && w.deleteAfter {
			// Done before a stop that came ahead of the deletion.
			return w.remove(name, path)
		}
		return nil // done: each file once
	}
	if !same {
		// New, or changed since it was processed: a new entry.
		e = &watchEntry{Size: info.Size(), ModTime: info.ModTime()}
		if err := w.state.update(name, func(s *watchEntry) { *s = *e }); err != nil {
			return err
		}
	}
	if info.Size() == 0 {
		w.ui.note("%s: empty, left alone", name)
		return w.state.update(name, func(s *watchEntry) { s.Result = "empty" })
	}
	if e.FileID == "" {
		file, err := w.up.upload(ctx, path)
		var ae *client.APIError
		if errors.As(err, &ae) && ae.Code == client.CodeValidationFailed {
			w.ui.note("%s: rejected by the validation policy: %s", name, errorLine(err))
			return w.state.update(name, func(s *watchEntry) { s.Result = "rejected" })
		}
		if err != nil {
			return err
		}
		e.FileID = file.Id
		if err := w.state.update(name, func(s *watchEntry) { s.FileID = file.Id }); err != nil {
			return err
		}
	}
	if e.JobID == "" {
		if e.IdempotencyKey == "" {
			e.IdempotencyKey = client.NewIdempotencyKey()
			if err := w.state.update(name, func(s *watchEntry) { s.IdempotencyKey = e.IdempotencyKey }); err != nil {
				return err
			}
		}
		req := api.CreateJobRequest{FileId: e.FileID, Options: optionsPtr(w.what.options)}
		if w.what.preset != "" {
			req.Preset = client.Ptr(api.Preset(w.what.preset))
		} else {
			req.Operation = &w.what.operation
		}
		job, err := w.cl.CreateJob(client.WithIdempotencyKey(ctx, e.IdempotencyKey), req)
		if err != nil {
			return err
		}
		e.JobID = job.Id
		if err := w.state.update(name, func(s *watchEntry) { s.JobID = job.Id }); err != nil {
			return err
		}
	}
	job, err := w.cl.WaitJob(ctx, e.JobID)
	if err != nil {
		return err
	}
	var paths []string
	if job.State == api.JobStateSucceeded {
		if paths, err = saveArtifacts(ctx, w.cl, job.Id, stem(name), w.out); err != nil {
			return err
		}
	} else {
		msg := string(job.State)
		if job.Error != nil {
			msg += ": " + string(job.Error.Code) + ": " + job.Error.Message
		}
		w.ui.note("%s: job %s %s", name, job.Id, msg)
	}
	if err := w.state.update(name, func(s *watchEntry) { s.Result = string(job.State) }); err != nil {
		return err
	}
	w.ui.result("%s", strings.Join(append([]string{job.Id, string(job.State), name}, paths...), "\t"))
	if job.State == api.JobStateSucceeded && w.deleteAfter {
		return w.remove(name, path)
	}
	return nil
}

// remove deletes a processed file and its entry (a file of that name that comes later
// is a new one).
func (w *watcher) remove(name, path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return w.state.forget(name)
}
