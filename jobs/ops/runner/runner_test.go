package runner_test

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/jobs/ops/runner"
)

// python is Debian's interpreter (a version manager's shim may stand first on PATH).
const python = "/usr/bin/python3"

func need(t *testing.T, path string) {
	t.Helper()
	if _, err := exec.LookPath(path); err != nil {
		t.Fatalf("%s is missing: install it (apt-get install -y --no-install-recommends python3 util-linux)", path)
	}
}

// groupMembers lists the live (not zombie) processes whose process group is pgid.
func groupMembers(t *testing.T, pgid int) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // gone meanwhile
		}
		// Fields after the parenthesised command: state ppid pgrp ...
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) < 3 || f[0] == "Z" {
			continue
		}
		if g, _ := strconv.Atoi(f[2]); g == pgid {
			out = append(out, pid)
		}
	}
	return out
}

// groupGone waits for every process of group pgid to die: SIGKILL reaches them all at
// once, but a killed process is gone only when the kernel has run its exit, which a busy
// machine may delay.
func groupGone(t *testing.T, pgid int) {
	t.Helper()
	waitFor(t, "every process of the group to be gone", func() bool { return len(groupMembers(t, pgid)) == 0 })
}

func TestHangingChildIsKilledWithItsWholeGroup(t *testing.T) {
	t.Parallel()
	// The child starts two grandchildren that would outlive it, reports their pids
	// and then hangs.
	pr, pw, err := os.Pipe()
	require.NoError(t, err)
	defer pr.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		errc <- runner.Run(ctx, runner.Cmd{
			Path:   "sh",
			Args:   []string{"-c", `sleep 600 & a=$!; sleep 600 & b=$!; echo "$$ $a $b"; exec sleep 600`},
			Stdout: pw,
		})
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	require.NoError(t, err)
	var pids []int
	for _, f := range strings.Fields(line) {
		n, err := strconv.Atoi(f)
		require.NoError(t, err)
		pids = append(pids, n)
	}
	require.Len(t, pids, 3)
	leader := pids[0]
	require.ElementsMatch(t, pids, groupMembers(t, leader), "the child and its grandchildren share its own group")
	require.NotEqual(t, syscall.Getpgrp(), leader, "the child is not in the worker's group")

	cancel() // the deadline
	select {
	case err = <-errc:
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	require.ErrorIs(t, err, runner.ErrKilled)
	require.ErrorIs(t, err, context.Canceled)
	groupGone(t, leader)
}

func TestKillEndsTheWholeGroup(t *testing.T) {
	t.Parallel()
	p, err := runner.Start(runner.Cmd{Path: "sh", Args: []string{"-c", "sleep 600 & exec sleep 600"}})
	require.NoError(t, err)
	p.Kill()
	groupGone(t, p.PID())
	var xe *runner.ExitError
	require.ErrorAs(t, p.Wait(), &xe)
	require.Equal(t, "SIGKILL", xe.Signal)
}

func TestLeftoverDescendantsAreKilledWhenTheChildExits(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	err := runner.Run(context.Background(), runner.Cmd{
		Path: "sh", Args: []string{"-c", `sleep 600 >/dev/null 2>&1 & echo $$`}, Stdout: &out,
	})
	require.NoError(t, err)
	pgid, err := strconv.Atoi(strings.TrimSpace(out.String()))
	require.NoError(t, err)
	// Killed as the child exits; the kernel takes its moment to end them.
	groupGone(t, pgid)
}

func TestMemoryLimitStopsAChildThatAllocatesTooMuch(t *testing.T) {
	t.Parallel()
	need(t, python)
	// Touch every page so the allocation is real, not only reserved.
	alloc := func(limit int64) error {
		return runner.Run(context.Background(), runner.Cmd{
			Path:   python,
			Args:   []string{"-c", "b = bytearray(400 << 20)\nb[::4096] = b'\\x01' * len(b[::4096])"},
			Limits: runner.Limits{Memory: limit},
		})
	}
	require.NoError(t, alloc(2<<30), "400 MiB fits under 2 GiB")
	err := alloc(200 << 20)
	var xe *runner.ExitError
	require.ErrorAs(t, err, &xe, "400 MiB does not fit under 200 MiB")
	require.Contains(t, xe.Stderr, "MemoryError")
	require.True(t, xe.OutOfMemory(), "the child's own words say memory ran out")
	le := domain.AsError(runner.LimitError(err, runner.Limits{Memory: 200 << 20}))
	require.Equal(t, map[string]any{"limit": domain.LimitMemory, "bound_bytes": int64(200 << 20)}, le.Details)
}

// A child writing past Limits.FileSize is ended by SIGXFSZ and leaves no more than the
// limit on disk.
func TestFileSizeLimitStopsAChildThatWritesTooMuch(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	err := runner.Run(context.Background(), runner.Cmd{
		Path: "head", Args: []string{"-c", "10000000", "/dev/zero"}, Stdout: nil,
		Limits: runner.Limits{FileSize: 1 << 20},
	})
	require.NoError(t, err, "stdout discarded: nothing written to a file")
	err = runner.Run(context.Background(), runner.Cmd{
		Path: "dd", Args: []string{"if=/dev/zero", "of=" + out, "bs=65536", "count=160"},
		Limits: runner.Limits{FileSize: 1 << 20},
	})
	var xe *runner.ExitError
	require.ErrorAs(t, err, &xe)
	require.True(t, xe.FileTooLarge(), "%v", err)
	require.Equal(t, domain.CodeResourceLimitExceeded, domain.ErrorCode(runner.LimitError(err, runner.Limits{FileSize: 1 << 20})))
	require.Nil(t, runner.LimitError(err, runner.Limits{}), "no file size limit: not a resource limit")
	st, err := os.Stat(out)
	require.NoError(t, err)
	require.LessOrEqual(t, st.Size(), int64(1<<20))
}

func TestCPULimitStopsASpinningChild(t *testing.T) {
	t.Parallel()
	start := time.Now()
	err := runner.Run(context.Background(), runner.Cmd{
		Path:   "sh",
		Args:   []string{"-c", "while :; do :; done"},
		Limits: runner.Limits{CPUTime: time.Second},
	})
	var xe *runner.ExitError
	require.ErrorAs(t, err, &xe)
	require.Contains(t, []string{"SIGXCPU", "SIGKILL"}, xe.Signal)
	require.Less(t, time.Since(start), 5*time.Minute) // a bound, not a speed check
}

func TestStderrIsKeptTrimmed(t *testing.T) {
	t.Parallel()
	err := runner.Run(context.Background(), runner.Cmd{
		Path:       "sh",
		Args:       []string{"-c", `i=0; while [ $i -lt 500 ]; do echo "line $i" >&2; i=$((i+1)); done; exit 3`},
		StderrTail: 64,
	})
	var xe *runner.ExitError
	require.ErrorAs(t, err, &xe)
	require.Equal(t, 3, xe.Code)
	require.LessOrEqual(t, len(xe.Stderr), 64+len("…"))
	require.True(t, strings.HasSuffix(xe.Stderr, "line 499"), xe.Stderr)
	require.True(t, strings.HasPrefix(xe.Stderr, "…"))
}

func TestOutputIsBounded(t *testing.T) {
	t.Parallel()
	b, err := runner.Output(context.Background(), runner.Cmd{Path: "echo", Args: []string{"hello"}}, 100)
	require.NoError(t, err)
	require.Equal(t, "hello\n", string(b))
	_, err = runner.Output(context.Background(), runner.Cmd{Path: "head", Args: []string{"-c", "100000", "/dev/zero"}}, 100)
	require.Error(t, err)
	require.False(t, errors.Is(err, runner.ErrKilled))
}

func killGroup(pgid int) error { return syscall.Kill(-pgid, syscall.SIGKILL) }
