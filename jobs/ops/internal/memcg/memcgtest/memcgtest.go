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
	return p
}
