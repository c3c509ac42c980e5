package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/domain/eventually"
	"github.com/filemill/filemill/jobs/ops/scan"
	"github.com/filemill/filemill/jobs/ops/scan/clamdtest"
)

// clamdStartMode is what the tests set FILEMILL_CLAMD_START to: auto, what `make run`
// does, where no clamd answers at the default socket (as on a machine where clamd is
// installed but not running); always where one does, so the test still runs its own.
func clamdStartMode(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat(clamdtest.Binary); err != nil {
		t.Fatalf("%s not found: the scan tests need a real clamd (apt-get install clamav-daemon)", clamdtest.Binary)
	}
	probe, err := scan.New(scan.DefaultConfig())
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if probe.Check(ctx) == nil {
		t.Log("a clamd answers at the default socket: FILEMILL_CLAMD_START=always")
		return "always"
	}
	return "auto"
}

// serveWithClamd starts `filemill serve` on the embedded defaults with the scan and
// inspect engines and the signatures in db.
func serveWithClamd(t *testing.T, db string) (*proc, string, string) {
	t.Helper()
	dir := t.TempDir()
	addr := freeAddr(t)
	env := cleanEnv("FILEMILL_ADDR="+addr, "FILEMILL_STORAGE_ADDR="+freeAddr(t), "FILEMILL_ENGINES=scan,inspect",
		"FILEMILL_CLAMD_START="+clamdStartMode(t), "FILEMILL_CLAMD_DATABASE_DIR="+db)
	p := start(t, dir, env, "serve")
	base := "http://" + addr
	waitReady(t, base)
	return p, base, bootstrapFileKey(t, dir)
}

// waitReport waits for serve's plain report of its engines on stdout.
func waitReport(t *testing.T, p *proc) string {
	t.Helper()
	eventually.True(t, fmt.Sprintf("serve reports its engines at start; stdout:\n%s", p.stdout.String()), func() bool { return strings.Contains(p.stdout.String(), "filemill engines available:") })
	return p.stdout.String()
}

// clamdChild is the pid of the clamd serve started, 0 when there is none.
func clamdChild(t *testing.T, parent int) int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		s := string(stat)
		end := strings.LastIndexByte(s, ')')
		if end < 0 || s[strings.IndexByte(s, '(')+1:end] != "clamd" {
			continue
		}
		if f := strings.Fields(s[end+1:]); len(f) > 1 && f[1] == strconv.Itoa(parent) {
			return pid
		}
	}
	return 0
}

// scanJob scans content through the API and waits for the job's end.
func scanJob(t *testing.T, base, key, content string) map[string]any {
	t.Helper()
	file := uploadText(t, base, key, content)
	status, job := apiPost(t, base+"/v1/jobs", key, map[string]any{"file_id": file, "operation": "scan"})
	require.Equal(t, 202, status, "%v", job)
	var j map[string]any
	eventually.True(t, "the scan job ends", func() bool {
		_, j = apiGet(t, base+"/v1/jobs/"+job["id"].(string), key)
		return j["state"] == "succeeded" || j["state"] == "failed"
	})
	return j
}

// TestServeRunsItsOwnClamd: where clamd is installed but not running, `filemill serve`
// starts one on the machine's signatures and supervises it: scans go through it, it
// is started again after it dies, and it stops with serve.
func TestServeRunsItsOwnClamd(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "clamav")
	require.NoError(t, clamdtest.WriteDatabase(db))
	p, base, key := serveWithClamd(t, db)
	report := waitReport(t, p)
	require.Contains(t, report, "filemill engines available: inspect, scan\n", report)
	waitAvailable(t, base, key, "scan")

	j := scanJob(t, base, key, "a text with "+clamdtest.Marker+" in it\n")
	require.Equal(t, "failed", j["state"], "%v", j)
	require.Contains(t, fmt.Sprint(j["error"]), "malware_detected")
	require.Contains(t, fmt.Sprint(j["error"]), clamdtest.MarkerSignature, "found by clamd's signatures")

	first := clamdChild(t, p.cmd.Process.Pid)
	require.Positive(t, first, "serve's clamd runs as its child")
	require.NoError(t, syscall.Kill(first, syscall.SIGKILL))
	var second int
	eventually.True(t, "a clamd that died is started again", func() bool {
		second = clamdChild(t, p.cmd.Process.Pid)
		return second != 0 && second != first
	})
	j = scanJob(t, base, key, "nothing to see\n")
	require.Equal(t, "succeeded", j["state"], "%v", j)

	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, p.cmd.Wait())
	require.ErrorIs(t, syscall.Kill(second, 0), syscall.ESRCH, "clamd stops with serve")
}

// TestServeWithoutSignatures: Debian's packages install no signature database and
// none can be downloaded here. serve runs every other engine and says plainly at start
// that scan is unavailable, why, and what to do; scan is shown unavailable.
func TestServeWithoutSignatures(t *testing.T) {
	t.Parallel()
	db := t.TempDir()
	p, base, key := serveWithClamd(t, db)
	report := waitReport(t, p)
	require.Contains(t, report, "filemill engines available: inspect\n", report)
	require.Contains(t, report, "  scan: no ClamAV signature database in "+db, report)
	require.Contains(t, report, "run freshclam", report)
	waitAvailable(t, base, key, "inspect")
	require.False(t, operationAvailable(t, base, key, "scan"))
}
