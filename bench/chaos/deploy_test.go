//go:build chaos

package chaos

import (
	"context"
	"crypto/tls"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/filemill/filemill/domain/eventually"
	"github.com/filemill/filemill/internal/testaddr"
	"github.com/filemill/filemill/storage/miniotest"
)

// startChild starts cmd so that the kernel kills it when this process ends, however it
// ends, and closes done once it has exited. Pdeathsig fires when the *thread* that
// forked the child exits, and Go ends a thread when a goroutine locked to it returns:
// so every child is forked by one goroutine locked to its thread for the whole run,
// which never returns. (Forking on a locked goroutine that then returned would end its
// thread, and with it whatever else had been forked on that thread with Pdeathsig,
// PostgreSQL or Redis among them.) The child gets a process group of its own, so a
// kill -9 of it reaches it alone, as the OOM killer's would.
func startChild(cmd *exec.Cmd) (done chan struct{}, err error) {
	forkOnce.Do(func() {
		go func() {
			runtime.LockOSThread() // never unlocked, never returns
			for req := range forks {
				req.err <- req.cmd.Start()
			}
		}()
	})
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	req := forkRequest{cmd: cmd, err: make(chan error, 1)}
	forks <- req
	if err := <-req.err; err != nil {
		return nil, err
	}
	done = make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	return done, nil
}

type forkRequest struct {
	cmd *exec.Cmd
	err chan error
}

var (
	forkOnce sync.Once
	forks    = make(chan forkRequest)
)

// minioServer is a MinIO of the campaign's own on a fixed port and data directory, so it
// can be stopped and started again with its objects.
type minioServer struct {
	bin, dir, addr, access, secret string
	log                            *os.File

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

func startMinio(t testing.TB, root string) *minioServer {
	t.Helper()
	bin, err := miniotest.Binary()
	if err != nil {
		t.Fatal(err)
	}
	m := &minioServer{bin: bin, dir: filepath.Join(root, "minio"), addr: freeAddr(t), access: "chaos", secret: "chaos-secret-0123456789"}
	if err := os.MkdirAll(m.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if m.log, err = os.Create(filepath.Join(root, "logs", "minio.log")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.stop(); m.log.Close() })
	m.start(t)
	return m
}

func (m *minioServer) start(t testing.TB) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	cmd := exec.Command(m.bin, "server", "--quiet", "--address", m.addr, m.dir)
	cmd.Env = append(os.Environ(), "MINIO_ROOT_USER="+m.access, "MINIO_ROOT_PASSWORD="+m.secret,
		"MINIO_BROWSER=off", "MINIO_UPDATE=off", "MINIO_CI_CD=on")
	cmd.Stdout, cmd.Stderr = m.log, m.log
	done, err := startChild(cmd)
	if err != nil {
		t.Fatalf("start minio: %v", err)
	}
	m.cmd, m.done = cmd, done
	waitFor(t, "MinIO to answer", 60*time.Second, func() bool {
		resp, err := http.Get("http://" + m.addr + "/minio/health/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
}

// stop kills the server outright: what it had acknowledged is on disk.
func (m *minioServer) stop() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil {
		return
	}
	_ = m.cmd.Process.Kill()
	<-m.done
	m.cmd = nil
}

// pid answers the server's process id (0: stopped).
func (m *minioServer) pid() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil {
		return 0
	}
	return m.cmd.Process.Pid
}

func (m *minioServer) client(t testing.TB) *minio.Client {
	c, err := minio.New(m.addr, &minio.Options{Creds: credentials.NewStaticV4(m.access, m.secret, "")})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// slot is one supervised filemill process: restarted whenever it exits, until the
// campaign ends, as systemd or Kubernetes would.
type slot struct {
	name string
	args []string
	env  []string
	dir  string
	bin  string
	log  *os.File

	mu       sync.Mutex
	cmd      *exec.Cmd
	done     chan struct{}
	starts   int
	stopping bool
	exited   chan struct{} // closed when the supervisor has given up the slot
}

// run starts the supervisor; a slot stopped may be run again.
func (s *slot) run(t testing.TB) {
	s.mu.Lock()
	s.stopping = false
	s.mu.Unlock()
	s.exited = make(chan struct{})
	go func() {
		defer close(s.exited)
		for {
			s.mu.Lock()
			if s.stopping {
				s.mu.Unlock()
				return
			}
			cmd := exec.Command(s.bin, s.args...)
			cmd.Dir, cmd.Env = s.dir, s.env
			cmd.Stdout, cmd.Stderr = s.log, s.log
			done, err := startChild(cmd)
			if err != nil {
				s.mu.Unlock()
				t.Errorf("%s: start: %v", s.name, err)
				return
			}
			s.cmd, s.done = cmd, done
			s.starts++
			fmt.Fprintf(s.log, "chaos: started pid %d (start %d) at %s\n", cmd.Process.Pid, s.starts, time.Now().UTC().Format(time.RFC3339Nano))
			s.mu.Unlock()
			<-done
			// A process that exits at once (its database is down at start) is not
			// restarted in a tight loop.
			time.Sleep(200 * time.Millisecond)
		}
	}()
}

// pid answers the running process's id (0: none).
func (s *slot) pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.stopping {
		return 0
	}
	return s.cmd.Process.Pid
}

// kill sends SIGKILL to the running process; the supervisor starts it again. It
// answers the pid killed (0: none was running).
func (s *slot) kill() int {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.mu.Unlock()
	if cmd == nil {
		return 0
	}
	select {
	case <-done:
		return 0
	default:
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-done
	return cmd.Process.Pid
}

// stop ends the slot: SIGTERM, as a deploy would, and no restart.
func (s *slot) stop(grace time.Duration) {
	s.mu.Lock()
	s.stopping = true
	cmd, done := s.cmd, s.done
	s.mu.Unlock()
	if cmd != nil {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(grace):
			fmt.Fprintf(s.log, "chaos: no exit %s after SIGTERM: killed\n", grace)
			_ = cmd.Process.Kill()
			<-done
		}
	}
	<-s.exited
}

// receiver is the webhook endpoint: HTTPS on a fixed address, which the campaign takes
// down (connections refused) and brings back.
type receiver struct {
	addr    string
	cert    tls.Certificate
	handler http.Handler

	mu  sync.Mutex
	srv *http.Server
}

func startReceiver(t testing.TB, root string, h http.Handler) (r *receiver, caFile string) {
	t.Helper()
	// httptest's certificate is for 127.0.0.1; only its certificate is used.
	ts := httptest.NewUnstartedServer(h)
	ts.StartTLS()
	cert := ts.TLS.Certificates[0]
	caFile = filepath.Join(root, "receiver-ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	ts.Close()
	r = &receiver{addr: freeAddr(t), cert: cert, handler: h}
	r.up(t)
	t.Cleanup(r.down)
	return r, caFile
}

func (r *receiver) up(t testing.TB) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.srv != nil {
		return
	}
	var ln net.Listener
	var err error
	waitFor(t, "the receiver's address to be free again", 30*time.Second, func() bool {
		ln, err = net.Listen("tcp", r.addr)
		return err == nil
	})
	srv := &http.Server{Handler: r.handler, TLSConfig: &tls.Config{Certificates: []tls.Certificate{r.cert}},
		ErrorLog: log.New(io.Discard, "", 0)}
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	r.srv = srv
}

func (r *receiver) down() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.srv != nil {
		_ = r.srv.Close()
		r.srv = nil
	}
}

// ports is a range apart from cmd/filemill's tests'.
var ports = &testaddr.Ports{Lo: 30000, Hi: 32000, Stride: 20}

func freeAddr(t testing.TB) string { t.Helper(); return ports.Free(t) }

// waitFor polls cond until it holds, failing the test after bound: bounds here are
// generous, so a slow machine waits longer and never fails for it.
func waitFor(t testing.TB, what string, bound time.Duration, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	if _, err := eventually.Wait(bound, func() (struct{}, bool) { return struct{}{}, cond() }); err != nil {
		t.Fatalf("waited %s for %s", bound, what)
	}
	return time.Since(start)
}

// processesUnder lists the live processes whose command line names a path under root,
// but this one: what a campaign leaves behind.
func processesUnder(root string) []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(raw), root) {
			continue
		}
		if stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil {
			if i := strings.LastIndexByte(string(stat), ')'); i > 0 && strings.HasPrefix(string(stat[i:]), ") Z") {
				continue // a zombie holds nothing; its parent will reap it
			}
		}
		out = append(out, fmt.Sprintf("%d %s", pid, strings.ReplaceAll(strings.TrimRight(string(raw), "\x00"), "\x00", " ")))
	}
	return out
}

// mountTmpfs mounts a tmpfs of size at dir (root is needed, as for cmd/filemill's
// TestDiskFull).
func mountTmpfs(t testing.TB, dir, size string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Fatalf("mount a %s tmpfs at %s for a worker's full disk: %v (run as root, as make test and CI do)", size, dir, err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
}

var _ = context.Background
