package scan_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/domain/eventually"
	"github.com/filemill/filemill/jobs/ops/scan"
	"github.com/filemill/filemill/jobs/ops/scan/clamdtest"
)

// startDaemon starts a clamd of filemill's own on the signatures in db, with short
// intervals, and stops it when the test ends.
func startDaemon(t *testing.T, db, runDir string) *scan.Daemon {
	t.Helper()
	if _, err := os.Stat(clamdtest.Binary); err != nil {
		t.Fatalf("%s not found: apt-get install clamav-daemon", clamdtest.Binary)
	}
	d, err := scan.StartDaemon(scan.DaemonConfig{DatabaseDir: db, RunDir: runDir, MaxStreamBytes: 1 << 20, Threads: 2,
		StartTimeout: 90 * time.Second, HealthInterval: time.Second, RecheckInterval: 50 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(d.Close)
	return d
}

// ready waits for clamd (bounded: the start loads a database of a few signatures).
func ready(t *testing.T, d *scan.Daemon) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	require.NoError(t, d.Ready(ctx))
}

// TestDaemon runs filemill's own clamd on the real binary: scans go through it, it is
// started again after it dies, and Close leaves no clamd behind.
func TestDaemon(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "db")
	require.NoError(t, clamdtest.WriteDatabase(db))
	run := filepath.Join(t.TempDir(), "clamd")
	d := startDaemon(t, db, run)
	require.Equal(t, "unix:"+filepath.Join(run, "clamd.sock"), d.Address())
	e, err := scan.New(scan.Config{Daemon: d, MaxStreamBytes: 1 << 20})
	require.NoError(t, err)
	require.NoError(t, e.Check(context.Background()))
	require.Contains(t, e.Version(), "ClamAV 1.")

	v, fs := scanBytes(t, e, "notes.txt", "text/plain", []byte("text "+clamdtest.Marker+" text"))
	require.Equal(t, scan.Malicious, v)
	require.Contains(t, findRule(t, fs, "clamav").Message, clamdtest.MarkerSignature, "clamd's signatures")

	t.Run("RestartedAfterItDies", func(t *testing.T) {
		first := d.PID()
		require.Positive(t, first)
		require.NoError(t, syscall.Kill(first, syscall.SIGKILL))
		eventually.True(t, "a new clamd", func() bool { return d.PID() != first && d.PID() != 0 })
		ready(t, d)
		v, _ := scanBytes(t, e, "eicar.com", "", []byte(clamdtest.EICAR))
		require.Equal(t, scan.Malicious, v)
	})

	t.Run("CloseStopsIt", func(t *testing.T) {
		pid := d.PID()
		d.Close()
		require.ErrorIs(t, syscall.Kill(pid, 0), syscall.ESRCH, "clamd is gone")
		require.Error(t, d.Ready(context.Background()))
		require.NoFileExists(t, filepath.Join(run, "clamd.sock"))
		require.FileExists(t, filepath.Join(run, "clamd.conf"), "kept for the next start")
	})
}

// TestDaemonWithoutSignatures: where the signature directory is empty (Debian's
// packages install none), the engine says so plainly and how to fix it, a scan fails
// dependency_unavailable (never a pass), and clamd starts by itself once the
// signatures are there.
func TestDaemonWithoutSignatures(t *testing.T) {
	t.Parallel()
	db := t.TempDir()
	// A directory whose socket path would be too long: a temporary one instead.
	d := startDaemon(t, db, filepath.Join(t.TempDir(), strings.Repeat("long-", 20)))
	require.NotContains(t, d.Address(), "long-")
	e, err := scan.New(scan.Config{Daemon: d})
	require.NoError(t, err)
	err = e.Check(context.Background())
	require.ErrorIs(t, err, scan.ErrNoSignatures)
	require.ErrorContains(t, err, db)
	require.ErrorContains(t, err, "freshclam")
	p := filepath.Join(t.TempDir(), "f.txt")
	require.NoError(t, os.WriteFile(p, []byte("plain text"), 0o600))
	_, _, err = e.Scan(context.Background(), p, "f.txt", "text/plain")
	require.Equal(t, domain.CodeDependencyUnavailable, domain.ErrorCode(err), "%v", err)

	require.NoError(t, clamdtest.WriteDatabase(db))
	eventually.True(t, "clamd started once the signatures came", func() bool { return d.PID() != 0 })
	ready(t, d)
	require.NoError(t, e.Check(context.Background()))
}

func TestDaemonWithoutClamd(t *testing.T) {
	t.Parallel()
	d, err := scan.StartDaemon(scan.DaemonConfig{Binary: filepath.Join(t.TempDir(), "clamd"), DatabaseDir: t.TempDir(),
		RecheckInterval: time.Hour})
	require.NoError(t, err)
	defer d.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rerr := d.Ready(ctx) // waits out the first look, then says why
	require.ErrorIs(t, rerr, scan.ErrNoClamd)
	require.ErrorContains(t, rerr, "clamav-daemon")
}

func TestDatabaseDirOf(t *testing.T) {
	t.Parallel()
	conf := filepath.Join(t.TempDir(), "clamd.conf")
	require.NoError(t, os.WriteFile(conf, []byte("LocalSocket /x\nDatabaseDirectory /srv/clamav\n"), 0o600))
	require.Equal(t, "/srv/clamav", scan.DatabaseDirOf(conf))
	require.Equal(t, "/var/lib/clamav", scan.DatabaseDirOf(filepath.Join(t.TempDir(), "none")))
}
