package memcg

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// root is where the cgroup hierarchies are mounted.
const root = "/sys/fs/cgroup"

// ErrUnavailable: this host offers no memory cgroup this process can make groups in.
var ErrUnavailable = errors.New("memcg: no usable memory cgroup")

// prefix names the parent of each worker: prefix + its pid.
const prefix = "filemill-"

// Parent is the worker's parent group, shared by every user in the process.
type Parent struct {
	dir string
	v2  bool
}

var shared struct {
	sync.Mutex
	p    *Parent
	refs int
	// moved: this process moved itself into its parent (cgroup v2), which therefore
	// stays until the process exits.
	moved bool
}

// Open returns the worker's parent group, making it on first use, and removes the
// parents of dead workers. Each Open needs a Close. Errors wrap ErrUnavailable when
// the host offers no memory cgroup to use.
func Open() (*Parent, error) {
	shared.Lock()
	defer shared.Unlock()
	if shared.p == nil {
		p, err := open()
		if err != nil {
			return nil, err
		}
		shared.p = p
	} else {
		// Kept open (by another user, or for good once this process moved into it):
		// workers may have died since it was made.
		removeStale(filepath.Dir(shared.p.dir), shared.p.dir)
	}
	shared.refs++
	return shared.p, nil
}

// Close removes the parent once its last user closed it; its groups should be
// removed by then, and what is left of them is killed.
func (p *Parent) Close() error {
	shared.Lock()
	defer shared.Unlock()
	if shared.refs--; shared.refs > 0 || shared.moved {
		return nil
	}
	shared.p = nil
	return removeTree(p.dir)
}

// Dir is the parent's directory.
func (p *Parent) Dir() string { return p.dir }

// V2 reports whether the groups are cgroup v2's.
func (p *Parent) V2() bool { return p.v2 }

func open() (*Parent, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(root, &st); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrUnavailable, root, err)
	}
	if st.Type == unix.CGROUP2_SUPER_MAGIC {
		return openV2()
	}
	return openV1()
}

func openV1() (*Parent, error) {
	mnt := filepath.Join(root, "memory")
	var st unix.Statfs_t
	if err := unix.Statfs(mnt, &st); err != nil || st.Type != unix.CGROUP_SUPER_MAGIC {
		return nil, fmt.Errorf("%w: %s is neither cgroup v2 nor has a v1 memory hierarchy", ErrUnavailable, root)
	}
	base, err := ownGroup(mnt, func(controllers string) bool {
		return strings.Contains(","+controllers+",", ",memory,")
	})
	if err != nil {
		return nil, err
	}
	removeStale(base, "")
	dir := filepath.Join(base, prefix+strconv.Itoa(os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return &Parent{dir: dir}, nil
}

// openV2 makes the parent below the worker's own group with the memory controller
// enabled for the groups in it. A v2 group that holds processes cannot hand a
// controller down (only the root may), so a worker alone in its group moves itself
// into a leaf of its parent first, as systemd asks of a service with delegation.
func openV2() (*Parent, error) {
	base, err := ownGroup(root, func(controllers string) bool { return controllers == "" })
	if err != nil {
		return nil, err
	}
	if !hasWord(filepath.Join(base, "cgroup.controllers"), "memory") {
		return nil, fmt.Errorf("%w: the memory controller is not enabled for %s", ErrUnavailable, base)
	}
	removeStale(base, "")
	dir := filepath.Join(base, prefix+strconv.Itoa(os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	fail := func(err error) (*Parent, error) {
		_ = removeTree(dir)
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	err = enableMemory(base)
	if errors.Is(err, unix.EBUSY) {
		leaf := filepath.Join(dir, "worker")
		if err := os.Mkdir(leaf, 0o755); err != nil {
			return fail(err)
		}
		if err := joinSelf(leaf); err != nil {
			return fail(err)
		}
		if err = enableMemory(base); err != nil {
			_ = joinSelf(base)
			return fail(fmt.Errorf("%s holds processes other than this worker: %w", base, err))
		}
		shared.moved = true
	}
	if err != nil {
		return fail(err)
	}
	if err := enableMemory(dir); err != nil {
		if shared.moved {
			return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		return fail(err)
	}
	return &Parent{dir: dir, v2: true}, nil
}

// ownGroup is this process's group in the hierarchy mounted at mnt, the line of
// /proc/self/cgroup whose controllers match. A group the mount does not show is the
// mount's root: a container sees its own group there.
func ownGroup(mnt string, match func(controllers string) bool) (string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), ":", 3)
		if len(f) != 3 || !match(f[1]) {
			continue
		}
		dir := filepath.Join(mnt, f[2])
		if _, err := os.Stat(dir); err != nil {
			dir = mnt
		}
		return dir, nil
	}
	return "", fmt.Errorf("%w: this process is in no memory cgroup", ErrUnavailable)
}

func enableMemory(dir string) error {
	if hasWord(filepath.Join(dir, "cgroup.subtree_control"), "memory") {
		return nil
	}
	return os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+memory"), 0)
}

func joinSelf(dir string) error {
	return os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0)
}

func hasWord(path, word string) bool {
	b, err := os.ReadFile(path)
	return err == nil && strings.Contains(" "+strings.Join(strings.Fields(string(b)), " ")+" ", " "+word+" ")
}

// removeStale removes the parents of workers that are gone (and one of a worker that
// had this process's pid before it), killing what they left running; never keep, this
// process's own parent.
func removeStale(base, keep string) {
	entries, _ := os.ReadDir(base)
	for _, e := range entries {
		if filepath.Join(base, e.Name()) == keep {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimPrefix(e.Name(), prefix))
		if !e.IsDir() || !strings.HasPrefix(e.Name(), prefix) || err != nil || pid <= 0 {
			continue
		}
		if pid != os.Getpid() && syscall.Kill(pid, 0) != syscall.ESRCH {
			continue
		}
		_ = removeTree(filepath.Join(base, e.Name()))
	}
}

// Group bounds the memory of the processes in it.
type Group struct {
	dir   string
	v2    bool
	limit int64
}

// NewGroup makes a group named name in the parent whose processes may use limit bytes
// together (page cache included, swap excluded); past it the kernel kills the largest
// of them.
func (p *Parent) NewGroup(name string, limit int64) (*Group, error) {
	g := &Group{dir: filepath.Join(p.dir, name), v2: p.v2, limit: limit}
	if err := os.Mkdir(g.dir, 0o755); err != nil {
		return nil, fmt.Errorf("memcg: %w", err)
	}
	if err := g.setLimit(limit); err != nil {
		_ = remove(g.dir)
		return nil, err
	}
	return g, nil
}

// SetLimit changes the group's bound to n bytes (0: none). Lowered below what its
// processes use, the kernel reclaims what it can and then kills.
func (g *Group) SetLimit(n int64) error {
	if err := g.setLimit(n); err != nil {
		return err
	}
	g.limit = n
	return nil
}

func (g *Group) setLimit(n int64) error {
	v := strconv.FormatInt(n, 10)
	if n <= 0 {
		v = "-1"
		if g.v2 {
			v = "max"
		}
	}
	settings := [][2]string{{"memory.limit_in_bytes", v}, {"memory.memsw.limit_in_bytes", v}}
	if n <= 0 || (g.limit > 0 && n > g.limit) {
		// v1 keeps memory+swap at or above memory alone: a raise goes to it first.
		settings[0], settings[1] = settings[1], settings[0]
	}
	if g.v2 {
		// No swap: a group past its bound would only slow down. One kill takes the
		// whole group, so no half of a process tree is left serving.
		settings = [][2]string{{"memory.max", v}, {"memory.swap.max", "0"}, {"memory.oom.group", "1"}}
	}
	for _, s := range settings {
		err := os.WriteFile(filepath.Join(g.dir, s[0]), []byte(s[1]), 0)
		// Only the bound itself is required: swap accounting and group kills are not
		// built into every kernel.
		if err != nil && (s[0] == "memory.limit_in_bytes" || s[0] == "memory.max" || !errors.Is(err, fs.ErrNotExist)) {
			return fmt.Errorf("memcg: %s: %w", s[0], err)
		}
	}
	return nil
}

// Dir is the group's directory; a process joins it by writing its pid to
// cgroup.procs there.
func (g *Group) Dir() string { return g.dir }

// Limit is the group's bound in bytes.
func (g *Group) Limit() int64 { return g.limit }

// Usage is what the group's processes use now, in bytes (page cache included).
func (g *Group) Usage() (int64, error) {
	name := "memory.usage_in_bytes"
	if g.v2 {
		name = "memory.current"
	}
	b, err := os.ReadFile(filepath.Join(g.dir, name))
	if err != nil {
		return 0, fmt.Errorf("memcg: %w", err)
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}

// OOMKills counts the processes the kernel killed in the group for its bound.
func (g *Group) OOMKills() (int64, error) {
	if g.v2 {
		return field(filepath.Join(g.dir, "memory.events"), "oom_kill")
	}
	n, err := field(filepath.Join(g.dir, "memory.oom_control"), "oom_kill")
	if errors.Is(err, errNoField) {
		// Kernels before 4.13 count no kills: count the times the bound was reached.
		b, err := os.ReadFile(filepath.Join(g.dir, "memory.failcnt"))
		if err != nil {
			return 0, fmt.Errorf("memcg: %w", err)
		}
		return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	}
	return n, err
}

var errNoField = errors.New("memcg: no such field")

// field reads one "name value" line of a cgroup file.
func field(path, name string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("memcg: %w", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, name+" "); ok {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, fmt.Errorf("%w %s in %s", errNoField, name, path)
}

// Remove kills the processes left in the group and removes it.
func (g *Group) Remove() error { return remove(g.dir) }

// removeTree removes dir's group and every group below it.
func removeTree(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	for _, e := range entries {
		if e.IsDir() {
			if err := removeTree(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	return remove(dir)
}

// remove kills what is left in dir's group and removes it. A killed process leaves
// the group as it exits, a moment after the signal: the removal is tried again until
// then.
func remove(dir string) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil && pid != os.Getpid() {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		err := unix.Rmdir(dir)
		switch {
		case err == nil, errors.Is(err, unix.ENOENT):
			return nil
		case !errors.Is(err, unix.EBUSY) || time.Now().After(deadline):
			return fmt.Errorf("memcg: remove %s: %w", dir, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
