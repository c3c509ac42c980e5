package redistest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Server is a redis-server of one test's own on a free loopback port, keeping nothing
// on disk (--save "" --appendonly no): a test that stops Redis must never stop the one
// other tests share, so fault tests use this one. Stop and Start take it down and bring
// it back, empty, on the same port.
type Server struct {
	t    testing.TB
	bin  string
	port int

	mu   sync.Mutex
	cmd  *exec.Cmd
	out  *bytes.Buffer
	done chan struct{} // closed when cmd exits
}

const serverTimeout = 30 * time.Second

// StartRedis starts a redis-server and stops it when the test ends. It fails the test,
// never skips it, when redis-server is missing.
func StartRedis(t testing.TB) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redistest: redis-server not found on PATH: %v\n"+
			"Install it: apt-get install redis-server (.ci/ensure-deps does).", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	s := &Server{t: t, bin: bin, port: port}
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() && s.out != nil {
			t.Logf("redistest: redis-server output:\n%s", s.out.String())
		}
	})
	s.Start()
	return s
}

// URL is the redis:// URL of database 0.
func (s *Server) URL() string { return fmt.Sprintf("redis://127.0.0.1:%d/0", s.port) }

// Pid is the running server's process id (0: stopped).
func (s *Server) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Start starts the server (again), empty, and waits until it answers.
func (s *Server) Start() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return
	}
	cmd := exec.Command(s.bin, "--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", s.t.TempDir(), "--daemonize", "no")
	s.out = &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = s.out, s.out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("redistest: start redis-server: %v", err)
	}
	s.cmd, s.done = cmd, make(chan struct{})
	go func(done chan struct{}) {
		_ = cmd.Wait()
		close(done)
	}(s.done)

	c := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", s.port), MaxRetries: -1,
		DialTimeout: time.Second})
	defer c.Close()
	deadline := time.Now().Add(serverTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return
		}
		select {
		case <-s.done:
			s.t.Fatalf("redistest: redis-server exited at start:\n%s", s.out.String())
		default:
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("redistest: redis-server on port %d did not answer within %s: %v", s.port, serverTimeout, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Stop stops the server and waits until it has exited; what it held is gone. Stopping a
// stopped server does nothing.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(serverTimeout):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	s.cmd, s.done = nil, nil
}
