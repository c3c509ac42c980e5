// Package memcgtest opens the worker's memory cgroup parent for tests.
package memcgtest

import (
	"os"
	"testing"

	"github.com/filemill/filemill/jobs/ops/internal/memcg"
)

// Open opens the worker's parent group. Without a usable memory cgroup the test fails
// in CI (which runs as root on a host with one) and is skipped elsewhere.
func Open(t testing.TB) *memcg.Parent {
	t.Helper()
	p, err := memcg.Open()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%v: CI needs root and a memory cgroup (v2, or v1 at /sys/fs/cgroup/memory)", err)
		}
		t.Skipf("%v (needs root and a memory cgroup)", err)
	}
	// FILEMILL_MEMCG_WANT=v2: the test must run on cgroup v2 (in the virtual machine of
	// TestCgroupV2InAVirtualMachine).
	if os.Getenv("FILEMILL_MEMCG_WANT") == "v2" && !p.V2() {
		t.Fatalf("FILEMILL_MEMCG_WANT=v2, and %s is not a cgroup v2 group", p.Dir())
	}
	return p
}
