package memcg_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/jobs/ops/internal/memcg"
	"github.com/filemill/filemill/jobs/ops/internal/memcg/memcgtest"
	"github.com/filemill/filemill/jobs/ops/runner"
)

// allocateEnv makes the test binary a child that touches that many MiB, says so and
// waits to be killed.
const allocateEnv = "MEMCG_TEST_ALLOCATE_MIB"

func TestMain(m *testing.M) {
	if v := os.Getenv(allocateEnv); v != "" {
		mib, _ := strconv.Atoi(v)
		b := make([]byte, mib<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		fmt.Println("allocated")
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// allocate starts the test binary in g touching mib MiB.
func allocate(t *testing.T, g *memcg.Group, mib int) (*runner.Process, *bufio.Reader) {
	t.Helper()
	p, _, out, err := runner.StartPiped(runner.Cmd{
		Path:   os.Args[0],
		Env:    []string{allocateEnv + "=" + strconv.Itoa(mib)},
		Cgroup: g.Dir(),
	})
	require.NoError(t, err)
	t.Cleanup(p.Kill)
	return p, bufio.NewReader(out)
}

// A child that needs more than its group's bound is killed by the kernel, the group
// counts the kill, and this process lives on.
func TestGroupKillsPastItsBound(t *testing.T) {
	p := memcgtest.Open(t)
	defer func() { require.NoError(t, p.Close()) }()
	g, err := p.NewGroup("kill", 64<<20)
	require.NoError(t, err)
	defer func() { require.NoError(t, g.Remove()) }()

	child, _ := allocate(t, g, 256)
	var xe *runner.ExitError
	require.ErrorAs(t, child.Wait(), &xe)
	require.Equal(t, "SIGKILL", xe.Signal)
	// One kill or more: with memory.oom.group (v2) the kernel kills the group and counts
	// its victim again. Callers read a rise of the count, never its size.
	n, err := g.OOMKills()
	require.NoError(t, err)
	require.Positive(t, n)
}

// A child within its bound runs on, counted by no kill, until its group is removed.
func TestRemoveKillsWhatIsLeft(t *testing.T) {
	p := memcgtest.Open(t)
	defer func() { require.NoError(t, p.Close()) }()
	g, err := p.NewGroup("within", 64<<20)
	require.NoError(t, err)

	child, out := allocate(t, g, 16)
	line, err := out.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "allocated\n", line)
	n, err := g.OOMKills()
	require.NoError(t, err)
	require.Zero(t, n)

	require.NoError(t, g.Remove())
	require.NoDirExists(t, g.Dir())
	select {
	case <-child.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the child outlived its group")
	}
}

// A group's bound moves both ways while its process runs; its usage counts what the
// process touched.
func TestSetLimitMovesTheBound(t *testing.T) {
	p := memcgtest.Open(t)
	defer func() { require.NoError(t, p.Close()) }()
	g, err := p.NewGroup("moves", 64<<20)
	require.NoError(t, err)
	defer func() { require.NoError(t, g.Remove()) }()

	child, out := allocate(t, g, 32)
	line, err := out.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "allocated\n", line)
	used, err := g.Usage()
	require.NoError(t, err)
	require.GreaterOrEqual(t, used, int64(32<<20))

	// Raised, lifted and lowered again above what the child uses: it runs on.
	for _, n := range []int64{256 << 20, 0, 48 << 20} {
		require.NoError(t, g.SetLimit(n), n)
		require.Equal(t, n, g.Limit())
	}
	kills, err := g.OOMKills()
	require.NoError(t, err)
	require.Zero(t, kills)
	select {
	case <-child.Done():
		t.Fatal("the child was killed within its bound")
	default:
	}

	// Lowered below it: v1 refuses the bound it cannot reclaim down to, v2 kills.
	if err := g.SetLimit(8 << 20); err == nil {
		require.ErrorAs(t, child.Wait(), new(*runner.ExitError))
		kills, err := g.OOMKills()
		require.NoError(t, err)
		require.Positive(t, kills)
	} else {
		require.False(t, p.V2(), err)
	}
}

// Closing the last user removes the parent; the next Open removes the parents of
// dead workers with whatever they left running.
func TestOpenRemovesParentsOfDeadWorkers(t *testing.T) {
	p := memcgtest.Open(t)
	dir, base := p.Dir(), filepath.Dir(p.Dir())
	require.Equal(t, "filemill-"+strconv.Itoa(os.Getpid()), filepath.Base(dir))
	require.NoError(t, p.Close())
	if !p.V2() {
		require.NoDirExists(t, dir)
	}

	gone := exec.Command("true")
	require.NoError(t, gone.Run())
	stale := filepath.Join(base, "filemill-"+strconv.Itoa(gone.Process.Pid))
	require.NoError(t, os.MkdirAll(filepath.Join(stale, "office-0"), 0o755))
	left, err := runner.Start(runner.Cmd{Path: "sleep", Args: []string{"60"}, Cgroup: filepath.Join(stale, "office-0")})
	require.NoError(t, err)
	t.Cleanup(left.Kill)

	p = memcgtest.Open(t)
	defer func() { require.NoError(t, p.Close()) }()
	require.NoDirExists(t, stale)
	select {
	case <-left.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("a dead worker's process outlived its group")
	}
}
