package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
)

// progressUI shows how uploads and jobs go, on standard error: a bar for each on a
// terminal, a plain line for each step otherwise (a log, a CI job), nothing with
// --quiet. Results go to standard output. While bars are drawn, the lines for the
// terminal (results when standard output is the terminal too, notes) are held and
// printed once the bars are done, so neither garbles the other and none is lost with
// the bars.
type progressUI struct {
	stderr io.Writer
	stdout io.Writer
	bars   *mpb.Progress // nil: plain lines
	quiet  bool
	mu     sync.Mutex // one line at a time
	all    []*mpb.Bar // every bar made, ended by wait if nothing else did
	// heldOut and heldErr are the lines held while bars are drawn.
	heldOut, heldErr bytes.Buffer
	holdOut          bool
}

func newProgressUI(c *cobra.Command, g *globals) *progressUI {
	u := &progressUI{stderr: c.ErrOrStderr(), stdout: out(c), quiet: g.quiet}
	if !g.quiet && isTerminal(u.stderr) {
		u.bars = mpb.NewWithContext(c.Context(), mpb.WithOutput(u.stderr), mpb.WithWidth(30),
			mpb.WithRefreshRate(150*time.Millisecond))
		u.holdOut = isTerminal(u.stdout)
	}
	return u
}

// newLineUI writes plain lines even on a terminal.
func newLineUI(c *cobra.Command, g *globals) *progressUI {
	return &progressUI{stderr: c.ErrOrStderr(), stdout: out(c), quiet: g.quiet}
}

// result writes a line of results (standard output).
func (u *progressUI) result(format string, args ...any) {
	_ = u.resultWriter(func(w io.Writer) error {
		_, err := fmt.Fprintf(w, format+"\n", args...)
		return err
	})
}

// resultWriter writes results through f, one call at a time.
func (u *progressUI) resultWriter(f func(w io.Writer) error) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.holdOut {
		return f(&u.heldOut)
	}
	return f(u.stdout)
}

// note writes a line for the person watching (standard error), unless --quiet.
func (u *progressUI) note(format string, args ...any) {
	if u.quiet {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.bars != nil {
		fmt.Fprintf(&u.heldErr, format+"\n", args...)
		return
	}
	fmt.Fprintf(u.stderr, format+"\n", args...)
}

// plain tells whether steps are written as lines (no bars, not quiet).
func (u *progressUI) plain() bool { return u.bars == nil && !u.quiet }

// wait lets the bars draw their last state; a bar left running (its work cut short
// by an error) is marked failed.
func (u *progressUI) wait() {
	if u.bars == nil {
		return
	}
	u.mu.Lock()
	for _, b := range u.all {
		if !b.AbortedOrCompleted() {
			b.Abort(false)
		}
	}
	u.mu.Unlock()
	u.bars.Wait()
	u.mu.Lock()
	defer u.mu.Unlock()
	u.bars, u.holdOut = nil, false
	_, _ = u.stderr.Write(u.heldErr.Bytes())
	_, _ = u.stdout.Write(u.heldOut.Bytes())
	u.heldErr.Reset()
	u.heldOut.Reset()
}

// add keeps a bar for wait.
func (u *progressUI) add(b *mpb.Bar) *mpb.Bar {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.all = append(u.all, b)
	return b
}

// barName is a bar's label, of one width for all.
func barName(name string) decor.Decorator {
	return decor.Name(truncate(name, 32), decor.WCSyncSpaceR)
}

// transfer is the bar of bytes on their way.
type transfer struct{ bar *mpb.Bar }

// transfer starts a bar of total bytes; without bars it shows nothing.
func (u *progressUI) transfer(name string, total int64) *transfer {
	if u.bars == nil {
		return &transfer{}
	}
	return &transfer{bar: u.add(u.bars.AddBar(total,
		mpb.PrependDecorators(barName(name)),
		mpb.AppendDecorators(decor.CountersKibiByte("% .1f / % .1f", decor.WCSyncSpace),
			decor.OnComplete(decor.AverageSpeed(decor.SizeB1024(0), "% .1f", decor.WCSyncSpace), "done")),
		mpb.BarFillerOnAbort("failed")))}
}

func (t *transfer) set(n int64) {
	if t.bar != nil {
		t.bar.SetCurrent(n)
	}
}

// end completes the bar, or marks it failed.
func (t *transfer) end(ok bool) {
	if t.bar == nil {
		return
	}
	if ok {
		t.bar.SetTotal(-1, true)
	} else {
		t.bar.Abort(false)
	}
}

// jobLine shows a job's state and progress: a bar, or a line when its state changes.
type jobLine struct {
	u     *progressUI
	name  string
	bar   *mpb.Bar
	state atomic.Value    // string
	shown map[string]bool // the states written as lines
}

func (u *progressUI) job(name string) *jobLine {
	j := &jobLine{u: u, name: name, shown: map[string]bool{}}
	j.state.Store("queued")
	if u.bars != nil {
		j.bar = u.add(u.bars.AddBar(100,
			mpb.PrependDecorators(barName(name)),
			mpb.AppendDecorators(decor.Any(func(decor.Statistics) string { return j.state.Load().(string) }, decor.WCSyncSpace),
				decor.Percentage(decor.WCSyncSpace)),
			mpb.BarFillerOnAbort("failed")))
	}
	return j
}

// set shows the job's state and progress (0–100).
func (j *jobLine) set(state string, progress int) {
	j.state.Store(state)
	if j.bar != nil {
		j.bar.SetCurrent(int64(progress))
		return
	}
	j.line(state)
}

// line writes a state the first time it comes.
func (j *jobLine) line(state string) {
	if j.u.plain() && !j.shown[state] {
		j.shown[state] = true
		j.u.note("%s: %s", j.name, state)
	}
}

// end completes the line with its final word.
func (j *jobLine) end(state string, ok bool) {
	j.state.Store(state)
	if j.bar == nil {
		j.line(state)
		return
	}
	if ok {
		j.bar.SetTotal(-1, true)
	} else {
		j.bar.Abort(false)
	}
}

// ctxDone is ctx's error wrapped for a person: the work on the server goes on.
func ctxDone(ctx context.Context) error {
	return fmt.Errorf("interrupted (%v): jobs already created keep running; 'filemill jobs' lists them", context.Cause(ctx))
}
