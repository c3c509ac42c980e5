package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/filemill/filemill/domain"
)

// ProgramEnv is the environment for a program the worker starts for jobs: only what a
// program needs to run (the path, home, user, locale, time zone, temporary directory),
// followed by extra. The worker's own settings (database and storage URLs, secrets,
// proxies) stay out: nothing a document makes the program do can read them.
func ProgramEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "PATH", k == "HOME", k == "USER", k == "LOGNAME", k == "LANG", k == "LANGUAGE", k == "TZ", k == "TMPDIR",
			strings.HasPrefix(k, "LC_"):
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// DefaultStderrTail is how many trailing bytes of a child's stderr are kept.
const DefaultStderrTail = 4 << 10

// Limits bound one child and, through inheritance, each process it starts.
type Limits struct {
	// Memory caps the child's address space in bytes (RLIMIT_AS): an allocation past it
	// fails inside the child. 0 sets no limit.
	Memory int64
	// CPUTime caps the CPU time of each process of the group (RLIMIT_CPU, whole
	// seconds, rounded up): past it the process gets SIGXCPU, a second later SIGKILL.
	// 0 sets no limit.
	CPUTime time.Duration
	// FileSize caps each file the child writes, in bytes (RLIMIT_FSIZE): a write past
	// it fails, and the child gets SIGXFSZ, which ends it unless it handles the signal
	// (ExitError.FileTooLarge). 0 sets no limit.
	FileSize int64
}

// Cmd is one external program to run.
type Cmd struct {
	Path   string   // resolved through PATH when it has no slash
	Args   []string // arguments after the program name
	Dir    string
	Env    []string // nil inherits the worker's environment
	Stdin  io.Reader
	Stdout io.Writer // nil discards
	Limits Limits
	// StderrTail is how many trailing bytes of stderr to keep; 0 takes DefaultStderrTail.
	StderrTail int
	// WaitDelay bounds how long the output pipes may stay open after the group was
	// killed (a descendant that left the group); 0 takes one second.
	WaitDelay time.Duration
	// Cgroup is the directory of a cgroup the child joins before its program's first
	// instruction, so that every process it starts is in it too: a shell adds itself
	// to the group and then execs the program. "" joins none.
	Cgroup string
}

// ExitError is a child that ended other than with status 0. Stderr is its trimmed tail,
// for the log: it is a tool's own words and never goes to clients.
type ExitError struct {
	Program string
	Code    int    // -1 when killed by a signal
	Signal  string // the signal's name when killed by one
	Stderr  string
}

// LimitError returns the resource_limit_exceeded error of a child that l stopped: one
// ended for writing past l.FileSize (disk), or one that ran out of memory under
// l.Memory. nil for any other outcome.
func LimitError(err error, l Limits) error {
	var xe *ExitError
	switch {
	case !errors.As(err, &xe):
		return nil
	case l.FileSize > 0 && xe.FileTooLarge():
		return domain.ResourceLimit(domain.LimitDisk, l.FileSize)
	case l.Memory > 0 && xe.OutOfMemory():
		return domain.ResourceLimit(domain.LimitMemory, l.Memory)
	}
	return nil
}

// FileTooLarge reports whether the child was ended for writing past Limits.FileSize.
func (e *ExitError) FileTooLarge() bool { return e.Signal == "SIGXFSZ" }

// OutOfMemory reports whether the child says it ran out of memory: under Limits.Memory
// an allocation fails inside the child, which then ends in its own words (C++'s
// std::bad_alloc, glib's and poppler's "out of memory", Python's MemoryError). A child
// that dies without a word about it is not recognised.
func (e *ExitError) OutOfMemory() bool {
	s := strings.ToLower(e.Stderr)
	for _, w := range []string{"bad_alloc", "out of memory", "cannot allocate memory", "memoryerror", "failed to allocate"} {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

func (e *ExitError) Error() string {
	how := "exit status " + strconv.Itoa(e.Code)
	if e.Signal != "" {
		how = "killed by " + e.Signal
	}
	if e.Stderr == "" {
		return fmt.Sprintf("%s: %s", e.Program, how)
	}
	return fmt.Sprintf("%s: %s: %s", e.Program, how, e.Stderr)
}

// ErrKilled marks a child that was killed because its context ended (deadline or
// cancellation); errors.Is also matches the context's own error.
var ErrKilled = errors.New("killed at deadline")

// prlimitPath is util-linux's prlimit, which sets the limits on itself and then execs
// the program: the limits hold from the program's first instruction. Without it the
// limits are applied with prlimit(2) right after start, which leaves a window of the
// program's first microseconds.
var prlimitPath, _ = exec.LookPath("prlimit")

// Process is a started child, the leader of its own process group.
type Process struct {
	cmd     *exec.Cmd
	program string
	stderr  *tail
	done    chan struct{}

	mu     sync.Mutex
	reaped bool // the leader was reaped: its pid may name another process now
	err    error
}

// Start starts c in a new process group. The caller must eventually call Kill or Wait.
// Stdin and Stdout may be nil; use StdinPipe-style access through StartPiped for
// long-lived helpers that talk over pipes.
func Start(c Cmd) (*Process, error) {
	return start(c, nil, nil)
}

// StartPiped starts c like Start and returns pipes to its stdin and from its stdout,
// for helpers that speak a line protocol.
func StartPiped(c Cmd) (*Process, io.WriteCloser, io.ReadCloser, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, nil, nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, nil, nil, err
	}
	p, err := start(c, inR, outW)
	// The child holds its own copies now; ours must go so EOF is seen when it exits.
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, nil, nil, err
	}
	return p, inW, outR, nil
}

func start(c Cmd, stdin, stdout *os.File) (*Process, error) {
	path := c.Path
	if filepath.Base(path) == path {
		lp, err := exec.LookPath(path)
		if err != nil {
			return nil, fmt.Errorf("runner: %s: %w", c.Path, err)
		}
		path = lp
	}
	args := c.Args
	wrapped := false
	if lim := c.Limits.flags(); len(lim) > 0 && prlimitPath != "" {
		args = append(append(lim, "--", path), c.Args...)
		path = prlimitPath
		wrapped = true
	}
	if c.Cgroup != "" {
		args = append([]string{"-c", `echo $$ > "$1" && shift && exec "$@"`, "cgroup", filepath.Join(c.Cgroup, "cgroup.procs"), path}, args...)
		path = "/bin/sh"
	}
	cmd := exec.Command(path, args...)
	cmd.Dir = c.Dir
	cmd.Env = c.Env
	// Its own group, to be killed as one; and killed if this process dies first (an
	// outright kill leaves no time to stop children).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if stdin != nil {
		cmd.Stdin = stdin
	} else {
		cmd.Stdin = c.Stdin
	}
	if stdout != nil {
		cmd.Stdout = stdout
	} else {
		cmd.Stdout = c.Stdout
	}
	n := c.StderrTail
	if n <= 0 {
		n = DefaultStderrTail
	}
	st := &tail{max: n}
	cmd.Stderr = st
	cmd.WaitDelay = c.WaitDelay
	if cmd.WaitDelay <= 0 {
		cmd.WaitDelay = time.Second
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("runner: start %s: %w", c.Path, err)
	}
	p := &Process{cmd: cmd, program: filepath.Base(c.Path), stderr: st, done: make(chan struct{})}
	if !wrapped {
		if err := c.Limits.apply(cmd.Process.Pid); err != nil {
			p.Kill()
			return nil, fmt.Errorf("runner: limit %s: %w", c.Path, err)
		}
	}
	go p.watch()
	return p, nil
}

// watch waits for the leader to exit without reaping it, kills what is left of its
// group while the leader's pid still reserves the group id, then reaps.
func (p *Process) watch() {
	pid := p.cmd.Process.Pid
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			break
		}
	}
	p.mu.Lock()
	_ = unix.Kill(-pid, unix.SIGKILL)
	p.reaped = true
	p.mu.Unlock()
	err := p.cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		xe := &ExitError{Program: p.program, Code: ee.ExitCode(), Stderr: p.stderr.String()}
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			xe.Signal = unix.SignalName(ws.Signal())
		}
		err = xe
	} else if err != nil {
		err = fmt.Errorf("runner: %s: %w", p.program, err)
	}
	p.mu.Lock()
	p.err = err
	p.mu.Unlock()
	close(p.done)
}

// PID is the child's process id, which is also its process group id.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Done is closed once the child has exited and been reaped.
func (p *Process) Done() <-chan struct{} { return p.done }

// Wait waits for the child to exit and returns nil for status 0, or *ExitError.
func (p *Process) Wait() error {
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// Kill kills the child's whole process group and waits until the leader is reaped.
// It is safe to call more than once and after the child has exited.
func (p *Process) Kill() {
	p.mu.Lock()
	if !p.reaped {
		_ = unix.Kill(-p.cmd.Process.Pid, unix.SIGKILL)
	}
	p.mu.Unlock()
	<-p.done
}

// Stderr returns the trimmed tail of what the child wrote to stderr so far.
func (p *Process) Stderr() string { return p.stderr.String() }

// Run runs c to completion. When ctx ends first, the child's whole group is killed and
// the error wraps both ErrKilled and ctx.Err(). A child that exits non-zero gives
// *ExitError.
func Run(ctx context.Context, c Cmd) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p, err := Start(c)
	if err != nil {
		return err
	}
	select {
	case <-p.done:
		return p.Wait()
	case <-ctx.Done():
		p.Kill()
		return &killedError{program: p.program, cause: ctx.Err(), stderr: p.Stderr()}
	}
}

type killedError struct {
	program string
	cause   error
	stderr  string
}

func (e *killedError) Error() string {
	s := fmt.Sprintf("%s: %v: %v", e.program, ErrKilled, e.cause)
	if e.stderr != "" {
		s += ": " + e.stderr
	}
	return s
}

func (e *killedError) Is(target error) bool { return target == ErrKilled }
func (e *killedError) Unwrap() error        { return e.cause }

// Output runs c and returns its stdout, of which at most max bytes are kept: more is
// an error, so a runaway tool cannot fill memory.
func Output(ctx context.Context, c Cmd, max int64) ([]byte, error) {
	w := &limitBuffer{max: max}
	c.Stdout = w
	err := Run(ctx, c)
	if w.over {
		return nil, fmt.Errorf("runner: %s: output larger than %d bytes", filepath.Base(c.Path), max)
	}
	return w.buf.Bytes(), err
}

func (l Limits) flags() []string {
	var f []string
	if l.Memory > 0 {
		f = append(f, fmt.Sprintf("--as=%d:%d", l.Memory, l.Memory))
	}
	if s := l.cpuSeconds(); s > 0 {
		f = append(f, fmt.Sprintf("--cpu=%d:%d", s, s+1))
	}
	if l.FileSize > 0 {
		f = append(f, fmt.Sprintf("--fsize=%d:%d", l.FileSize, l.FileSize))
	}
	return f
}

func (l Limits) cpuSeconds() uint64 {
	if l.CPUTime <= 0 {
		return 0
	}
	return uint64((l.CPUTime + time.Second - 1) / time.Second)
}

func (l Limits) apply(pid int) error {
	if l.Memory > 0 {
		r := unix.Rlimit{Cur: uint64(l.Memory), Max: uint64(l.Memory)}
		if err := unix.Prlimit(pid, unix.RLIMIT_AS, &r, nil); err != nil {
			return err
		}
	}
	if s := l.cpuSeconds(); s > 0 {
		r := unix.Rlimit{Cur: s, Max: s + 1}
		if err := unix.Prlimit(pid, unix.RLIMIT_CPU, &r, nil); err != nil {
			return err
		}
	}
	if l.FileSize > 0 {
		r := unix.Rlimit{Cur: uint64(l.FileSize), Max: uint64(l.FileSize)}
		if err := unix.Prlimit(pid, unix.RLIMIT_FSIZE, &r, nil); err != nil {
			return err
		}
	}
	return nil
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu   sync.Mutex
	max  int
	buf  []byte
	lost bool
}

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(b)
	if len(b) >= t.max {
		t.buf = append(t.buf[:0], b[len(b)-t.max:]...)
		t.lost = true
		return n, nil
	}
	if over := len(t.buf) + len(b) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
		t.lost = true
	}
	t.buf = append(t.buf, b...)
	return n, nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := string(bytes.TrimSpace(t.buf))
	if t.lost && s != "" {
		s = "…" + s
	}
	return s
}

type limitBuffer struct {
	buf  bytes.Buffer
	max  int64
	over bool
}

func (l *limitBuffer) Write(b []byte) (int, error) {
	if int64(l.buf.Len()+len(b)) > l.max {
		l.over = true
		return 0, errors.New("output limit exceeded")
	}
	return l.buf.Write(b)
}
