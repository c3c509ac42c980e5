// Package clamdtest starts a real clamd for a test, listening on a unix socket in a
// temporary directory, with a signature database the test writes: no signature can be
// downloaded where the tests run, and clamd refuses an empty database. The database
// holds the EICAR test signature and filemill's own test signatures (Marker, MarkerMD5),
// plus any the test adds. A machine without clamd fails the test with how to install
// it; it is never skipped.
package clamdtest

import (
	"bufio"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Binary is where Debian's clamav-daemon installs clamd.
const Binary = "/usr/sbin/clamd"

// EICAR is the standard anti-virus test file.
const EICAR = `X5O!P%@AP[4\PZX54(P^)7CC)7}$EICAR-STANDARD-ANTIVIRUS-TEST-FILE!$H+H*`

// Marker is a byte string the database flags anywhere in a file (an .ndb body
// signature), as MarkerSignature.
const (
	Marker          = "FILEMILL-TEST-MALWARE-MARKER-7f3a9c"
	MarkerSignature = "Filemill.Test.Marker.UNOFFICIAL"
)

// MarkerFile is a file the database flags by its MD5 hash (an .hdb signature), as
// MarkerMD5Signature.
var MarkerFile = []byte("filemill test sample flagged by its hash\n")

// MarkerMD5Signature is the name clamd reports for MarkerFile.
const MarkerMD5Signature = "Filemill.Test.Hash.UNOFFICIAL"

// EICARSignature is the name clamd reports for the EICAR file.
const EICARSignature = "Eicar-Test-Signature.UNOFFICIAL"

// Signature is an extra body signature: clamd reports Name + ".UNOFFICIAL" for a file
// holding Pattern.
type Signature struct {
	Name    string
	Pattern []byte
}

// Clamd is a running clamd.
type Clamd struct {
	// Address is the unix socket, as "unix:" + path; TCPAddress the same clamd on
	// loopback TCP, as "tcp://127.0.0.1:port".
	Address    string
	TCPAddress string
	// Socket is the socket's path.
	Socket string
	// Dir holds the configuration, database and socket.
	Dir string
	cmd *exec.Cmd
}

// Options adjust the clamd started.
type Options struct {
	// Signatures are added to the test database.
	Signatures []Signature
	// StreamMaxLength is clamd's INSTREAM limit in bytes (default 200 MiB).
	StreamMaxLength int64
	// MaxFileSize is the largest file clamd scans (default 200 MiB); a larger one is
	// reported as Heuristics.Limits.Exceeded (AlertExceedsMax is on, as it should be
	// in production).
	MaxFileSize int64
	// DisableCache turns off clamd's cache of clean files' hashes, so that scanning
	// the same bytes again costs the same (for benchmarks).
	DisableCache bool
}

// Start starts clamd for t and stops it when t ends. It waits until clamd answers
// PING, for as long as loading the database takes (bounded).
func Start(t testing.TB, extra ...Signature) *Clamd {
	t.Helper()
	return StartWith(t, Options{Signatures: extra})
}

// StartWith is Start with options.
func StartWith(t testing.TB, o Options) *Clamd {
	t.Helper()
	if o.StreamMaxLength <= 0 {
		o.StreamMaxLength = 200 << 20
	}
	if o.MaxFileSize <= 0 {
		o.MaxFileSize = 200 << 20
	}
	if _, err := os.Stat(Binary); err != nil {
		t.Fatalf("clamdtest: %s not found: %v\nThe scan tests need a real clamd. Install it with\n"+
			"    apt-get install -y --no-install-recommends clamav clamav-daemon clamdscan", Binary, err)
	}
	// Unix socket paths are limited to about 100 bytes: t.TempDir() can be longer.
	dir, err := os.MkdirTemp("", "clamd-")
	if err != nil {
		t.Fatalf("clamdtest: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	c := &Clamd{Dir: dir, Socket: filepath.Join(dir, "clamd.sock")}
	c.Address = "unix:" + c.Socket
	if err := WriteDatabase(filepath.Join(dir, "db"), o.Signatures...); err != nil {
		t.Fatalf("clamdtest: %v", err)
	}
	conf := filepath.Join(dir, "clamd.conf")
	for _, d := range []string{"tmp"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatalf("clamdtest: %v", err)
		}
	}
	port, err := freePort()
	if err != nil {
		t.Fatalf("clamdtest: %v", err)
	}
	c.TCPAddress = fmt.Sprintf("tcp://127.0.0.1:%d", port)
	settings := []string{
		"LocalSocket " + c.Socket,
		"TCPAddr 127.0.0.1",
		fmt.Sprintf("TCPSocket %d", port),
		"DatabaseDirectory " + filepath.Join(dir, "db"),
		"TemporaryDirectory " + filepath.Join(dir, "tmp"),
		"LogFile " + filepath.Join(dir, "clamd.log"),
		"Foreground yes",
		fmt.Sprintf("StreamMaxLength %d", o.StreamMaxLength),
		fmt.Sprintf("MaxFileSize %d", o.MaxFileSize),
		fmt.Sprintf("MaxScanSize %d", 2*max(o.MaxFileSize, o.StreamMaxLength)),
		"AlertExceedsMax yes",
		"MaxThreads 4",
		"SelfCheck 3600",
	}
	if o.DisableCache {
		settings = append(settings, "DisableCache yes")
	}
	if err := os.WriteFile(conf, []byte(strings.Join(settings, "\n")+"\n"), 0o600); err != nil {
		t.Fatalf("clamdtest: %v", err)
	}
	c.cmd = exec.Command(Binary, "-c", conf)
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("clamdtest: start clamd: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- c.cmd.Wait() }()
	t.Cleanup(func() {
		// The whole group: clamd starts no children, but nothing it started may stay.
		_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	})
	deadline := time.Now().Add(90 * time.Second)
	for {
		if err := ping(c.Socket); err == nil {
			return c
		}
		select {
		case err := <-exited:
			log, _ := os.ReadFile(filepath.Join(dir, "clamd.log"))
			t.Fatalf("clamdtest: clamd exited (%v) before answering:\n%s", err, log)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("clamdtest: clamd did not answer PING within 90 s")
		}
	}
}

// WriteDatabase writes the test signature database (EICAR, Marker, MarkerFile's hash
// and extra) into the directory db, creating it: for a clamd started otherwise than by
// Start (filemill's own).
func WriteDatabase(db string, extra ...Signature) error {
	if err := os.MkdirAll(db, 0o700); err != nil {
		return err
	}
	ndb := []string{
		// Target 0 (any file), any offset.
		fmt.Sprintf("Eicar-Test-Signature:0:*:%s", hex.EncodeToString([]byte(EICAR))),
		fmt.Sprintf("Filemill.Test.Marker:0:*:%s", hex.EncodeToString([]byte(Marker))),
	}
	for _, s := range extra {
		ndb = append(ndb, fmt.Sprintf("%s:0:*:%s", s.Name, hex.EncodeToString(s.Pattern)))
	}
	if err := os.WriteFile(filepath.Join(db, "filemill-test.ndb"), []byte(strings.Join(ndb, "\n")+"\n"), 0o600); err != nil {
		return err
	}
	sum := md5.Sum(MarkerFile)
	hdb := fmt.Sprintf("%s:%d:Filemill.Test.Hash\n", hex.EncodeToString(sum[:]), len(MarkerFile))
	return os.WriteFile(filepath.Join(db, "filemill-test.hdb"), []byte(hdb), 0o600)
}

// freePort asks the kernel for a free loopback port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// ping sends PING and expects PONG.
func ping(socket string) error {
	conn, err := net.DialTimeout("unix", socket, time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Write([]byte("zPING\x00")); err != nil {
		return err
	}
	reply, err := bufio.NewReader(conn).ReadString(0)
	if err != nil {
		return err
	}
	if strings.TrimRight(reply, "\x00") != "PONG" {
		return errors.New("clamd answered " + reply)
	}
	return nil
}

// PID is clamd's process id (for measuring its CPU time).
func (c *Clamd) PID() int { return c.cmd.Process.Pid }

// ClientConfig writes a clamdscan configuration pointing at this clamd and returns
// its path, for running clamdscan side by side.
func (c *Clamd) ClientConfig(t testing.TB) string {
	t.Helper()
	p := filepath.Join(c.Dir, "clamdscan.conf")
	if err := os.WriteFile(p, []byte("LocalSocket "+c.Socket+"\n"), 0o600); err != nil {
		t.Fatalf("clamdtest: %v", err)
	}
	return p
}
