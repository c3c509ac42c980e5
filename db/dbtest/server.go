package dbtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/uptrace/bun/driver/pgdriver"
)

// Server is a PostgreSQL cluster of one test's own: initdb into a temporary directory,
// a postgres process on a free loopback port. A test that stops a database server must
// never stop the one other tests share, so fault tests use this one. Stop and Start
// take it down and bring it back on the same port with the same data.
type Server struct {
	t       testing.TB
	bin     string // the directory of initdb and postgres
	dir     string // data directory and socket, removed at the end
	port    int
	attr    *syscall.SysProcAttr
	logPath string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd exits
}

// serverTimeout bounds initdb, a start and a stop; each takes about a second.
const serverTimeout = 60 * time.Second

// StartPostgres creates a cluster with a database named filemill, starts it, and
// stops it and removes its files when the test ends. It fails the test, never skips it,
// when PostgreSQL's server programs are missing.
func StartPostgres(t testing.TB) *Server {
	t.Helper()
	bin, err := postgresBin()
	if err != nil {
		t.Fatalf("dbtest: %v\nInstall PostgreSQL's server programs: apt-get install postgresql "+
			"(.ci/ensure-deps does), or put initdb and postgres on PATH.", err)
	}
	s := &Server{t: t, bin: bin, attr: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}}
	uid, gid := -1, -1
	if os.Geteuid() == 0 {
		// PostgreSQL refuses to run as root: run it as the postgres user the package
		// creates.
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("dbtest: running as root needs the postgres user to run PostgreSQL as (apt-get install postgresql creates it): %v", err)
		}
		uid, _ = strconv.Atoi(u.Uid)
		gid, _ = strconv.Atoi(u.Gid)
		s.attr.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	// Not t.TempDir: its parents are private to this user, and postgres may be another.
	if s.dir, err = os.MkdirTemp("", "filemill-pg-"); err != nil {
		t.Fatalf("dbtest: %v", err)
	}
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			if b, err := os.ReadFile(s.logPath); err == nil {
				t.Logf("dbtest: PostgreSQL log:\n%s", tail(string(b), 4000))
			}
		}
		os.RemoveAll(s.dir)
	})
	if uid >= 0 {
		if err := os.Chown(s.dir, uid, gid); err != nil {
			t.Fatalf("dbtest: %v", err)
		}
	}
	s.logPath = filepath.Join(s.dir, "postgres.log")
	s.port = freePort(t)

	ctx, cancel := context.WithTimeout(context.Background(), serverTimeout)
	defer cancel()
	initdb := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), "-D", filepath.Join(s.dir, "data"),
		"-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: s.attr.Credential}
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("dbtest: initdb: %v\n%s", err, out)
	}
	s.Start()
	admin := s.open("postgres")
	defer admin.Close()
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE filemill"); err != nil {
		t.Fatalf("dbtest: create database: %v", err)
	}
	return s
}

// URL is the postgres:// URL of the cluster's database filemill.
func (s *Server) URL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/filemill?sslmode=disable", s.port)
}

// Pid is the running postmaster's process id (0: stopped); the server's other
// processes are its children.
func (s *Server) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Start starts the server (again) and waits until it answers queries.
func (s *Server) Start() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return
	}
	logf, err := os.OpenFile(s.logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		s.t.Fatalf("dbtest: %v", err)
	}
	defer logf.Close()
	cmd := exec.Command(filepath.Join(s.bin, "postgres"), "-D", filepath.Join(s.dir, "data"),
		"-p", strconv.Itoa(s.port), "-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="+s.dir,
		// Nothing here must survive a crash of the machine: trade durability for speed.
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "max_connections=200")
	cmd.Stdout, cmd.Stderr, cmd.SysProcAttr = logf, logf, s.attr
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("dbtest: start postgres: %v", err)
	}
	s.cmd, s.done = cmd, make(chan struct{})
	go func(done chan struct{}) {
		_ = cmd.Wait()
		close(done)
	}(s.done)

	db := s.open("postgres")
	defer db.Close()
	deadline := time.Now().Add(serverTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := db.PingContext(ctx)
		cancel()
		if err == nil {
			return
		}
		select {
		case <-s.done:
			b, _ := os.ReadFile(s.logPath)
			s.t.Fatalf("dbtest: postgres exited at start:\n%s", tail(string(b), 4000))
		default:
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("dbtest: postgres on port %d did not answer within %s: %v", s.port, serverTimeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop shuts the server down the fast way (open sessions are ended, as when an operator
// stops it) and waits until it has exited. Stopping a stopped server does nothing.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-s.done:
	case <-time.After(serverTimeout):
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.done
	}
	s.cmd, s.done = nil, nil
}

func (s *Server) open(database string) *sql.DB {
	dsn := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.port, url.PathEscape(database))
	db := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(dsn), pgdriver.WithDialTimeout(2*time.Second)))
	db.SetMaxOpenConns(1)
	return db
}

// postgresBin finds the directory holding initdb and postgres: on PATH (following a
// link to the real directory), else the newest /usr/lib/postgresql/N/bin.
func postgresBin() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			dir := filepath.Dir(real)
			if _, err := os.Stat(filepath.Join(dir, "postgres")); err == nil {
				return dir, nil
			}
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, dir := range dirs {
		_, e1 := os.Stat(filepath.Join(dir, "initdb"))
		_, e2 := os.Stat(filepath.Join(dir, "postgres"))
		if e1 == nil && e2 == nil {
			return dir, nil
		}
	}
	return "", errors.New("initdb and postgres not found on PATH or in /usr/lib/postgresql/*/bin")
}

func version(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

// freePort returns a loopback port nothing listens on now.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("dbtest: %v", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[strings.IndexByte(s[len(s)-n:], '\n')+len(s)-n+1:]
}
