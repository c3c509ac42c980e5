// Package miniotest runs a real MinIO server for tests of the S3 storage backend.
//
// One server serves every test of a test binary: it starts on the first Start, lives
// until the binary exits (the kernel kills it then, see startProcess), and each caller
// works in buckets of its own. A TestMain may call Shutdown to stop it early.
package miniotest

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// installHint is printed when no binary is found: the tests never skip.
const installHint = "install it with: bash .ci/minio.sh (builds the pinned version into /usr/local/bin), or point MINIO_BIN at it"

type server struct {
	endpoint, access, secret string
	root                     string // temp directory: data/, minio.log, owner.pid
	cmd                      *exec.Cmd
	exited                   chan struct{}
}

var (
	mu      sync.Mutex
	shared  *server
	lastErr error
)

// Start returns the address (host:port) and root credentials of the shared MinIO
// server, starting it on first use. It fails the test loudly when MinIO cannot run.
func Start(t testing.TB) (endpoint, accessKey, secretKey string) {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	if shared != nil {
		select {
		case <-shared.exited:
			t.Fatalf("miniotest: the MinIO server exited:\n%s", shared.logTail())
		default:
			return shared.endpoint, shared.access, shared.secret
		}
	}
	if lastErr != nil { // do not retry a start that already failed in this binary
		t.Fatalf("miniotest: %v", lastErr)
	}
	shared, lastErr = start()
	if lastErr != nil {
		t.Fatalf("miniotest: %v", lastErr)
	}
	return shared.endpoint, shared.access, shared.secret
}

// Shutdown stops the shared server and removes its data; for a TestMain after m.Run.
func Shutdown() {
	mu.Lock()
	defer mu.Unlock()
	if shared != nil {
		shared.stop()
		shared = nil
	}
}

// Binary finds the MinIO executable: $MINIO_BIN, then minio on PATH, then
// /usr/local/bin/minio.
func Binary() (string, error) {
	if p := os.Getenv("MINIO_BIN"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("MINIO_BIN=%s: %v; %s", p, err, installHint)
		}
		return p, nil
	}
	if p, err := exec.LookPath("minio"); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/usr/local/bin/minio"); err == nil {
		return "/usr/local/bin/minio", nil
	}
	return "", errors.New("no MinIO binary (looked at $MINIO_BIN, PATH, /usr/local/bin/minio); " + installHint)
}

func start() (*server, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	removeStaleRoots()
	var lastErr error
	// The free port is found by binding and releasing it, so another process can take
	// it before MinIO does: try again on a new one.
	for attempt := 0; attempt < 3; attempt++ {
		s, err := startOnce(bin)
		if err == nil {
			return s, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

func startOnce(bin string) (*server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	root, err := os.MkdirTemp("", rootPrefix+"*")
	if err != nil {
		return nil, err
	}
	_ = os.WriteFile(filepath.Join(root, "owner.pid"), []byte(strconv.Itoa(os.Getpid())), 0o644)
	data := filepath.Join(root, "data")
	if err := os.Mkdir(data, 0o755); err != nil {
		return nil, err
	}
	s := &server{endpoint: "127.0.0.1:" + strconv.Itoa(port), access: "mt" + randomHex(8), secret: randomHex(20),
		root: root, exited: make(chan struct{})}
	logFile, err := os.Create(filepath.Join(root, "minio.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "server", "--quiet", "--address", s.endpoint, data)
	cmd.Env = append(withoutMinioEnv(os.Environ()),
		"MINIO_ROOT_USER="+s.access, "MINIO_ROOT_PASSWORD="+s.secret,
		"MINIO_BROWSER=off", // no console listener, so one port is all we need
		"MINIO_UPDATE=off", "MINIO_CI_CD=on")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	s.cmd = cmd
	if err := startProcess(cmd, s.exited, logFile); err != nil {
		os.RemoveAll(root)
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	if err := s.waitReady(30 * time.Second); err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

func (s *server) waitReady(timeout time.Duration) error {
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case <-s.exited:
			return fmt.Errorf("MinIO exited before it was ready:\n%s", s.logTail())
		default:
		}
		resp, err := client.Get("http://" + s.endpoint + "/minio/health/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("MinIO not ready on %s after %s:\n%s", s.endpoint, timeout, s.logTail())
}

func (s *server) stop() {
	if s.cmd.Process != nil {
		_ = s.cmd.Process.Kill()
		select {
		case <-s.exited:
		case <-time.After(10 * time.Second):
		}
	}
	_ = os.RemoveAll(s.root)
}

func (s *server) logTail() string {
	b, _ := os.ReadFile(filepath.Join(s.root, "minio.log"))
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(bytes.TrimSpace(b))
}

const rootPrefix = "filemill-miniotest-"

// removeStaleRoots deletes the data of servers whose test binary has exited: a shared
// server outlives every test, so nobody else removes it.
func removeStaleRoots() {
	roots, _ := filepath.Glob(filepath.Join(os.TempDir(), rootPrefix+"*"))
	for _, r := range roots {
		raw, err := os.ReadFile(filepath.Join(r, "owner.pid"))
		if err != nil {
			if info, err := os.Stat(r); err == nil && time.Since(info.ModTime()) > time.Hour {
				_ = os.RemoveAll(r)
			}
			continue
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(raw))); err == nil && !processAlive(pid) {
			_ = os.RemoveAll(r)
		}
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func withoutMinioEnv(env []string) []string {
	out := env[:0:0]
	for _, e := range env {
		if !strings.HasPrefix(e, "MINIO_") {
			out = append(out, e)
		}
	}
	return out
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
