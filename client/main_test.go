package client_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
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
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/client"
	"github.com/filemill/filemill/db/dbtest"
	"github.com/filemill/filemill/domain/eventually"
	"github.com/filemill/filemill/jobs/redistest"
	"github.com/filemill/filemill/storage/miniotest"
)

// The SDK is tested against the real program: filemill is built once, and a `serve`
// on its embedded defaults (SQLite, in-process Redis, local disk) runs for the whole
// package; TestSplitDeployment adds separate `api` and `worker` processes on
// PostgreSQL, Redis and MinIO. The tests reach them only over HTTP, as integrators do.
var (
	binary   string
	embedded *deployment
	receiver *webhookReceiver
)

func TestMain(m *testing.M) {
	code, err := run(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(code)
}

func run(m *testing.M) (int, error) {
	dir, err := os.MkdirTemp("", "filemill-client-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	binary = filepath.Join(dir, "filemill")
	if out, err := exec.Command("go", "build", "-o", binary, "../cmd/filemill").CombinedOutput(); err != nil {
		return 0, fmt.Errorf("build filemill: %v\n%s", err, out)
	}
	if receiver, err = startReceiver(dir); err != nil {
		return 0, err
	}
	defer receiver.srv.Close()
	data := filepath.Join(dir, "serve")
	addr, storageAddr := freeAddr(), freeAddr()
	embedded = &deployment{name: "serve", dir: data, base: "http://" + addr,
		env: serverEnv("FILEMILL_DATA_DIR="+data, "FILEMILL_ADDR="+addr, "FILEMILL_STORAGE_ADDR="+storageAddr)}
	p, err := startProcess(data, embedded.env, "serve")
	if err != nil {
		return 0, err
	}
	defer p.stop()
	if err := waitReady(embedded.base, p); err != nil {
		return 0, fmt.Errorf("%v\n%s", err, p.logs())
	}
	// The examples (and the README's code) read the deployment from the environment,
	// as a program of an integrator would.
	key, err := embedded.bootstrap("examples")
	if err != nil {
		return 0, err
	}
	os.Setenv("FILEMILL_API_URL", embedded.base)
	os.Setenv("FILEMILL_API_KEY", key)
	if err := waitOperation(embedded.base, key, "inspect"); err != nil {
		return 0, err
	}
	code := m.Run()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "filemill serve logs (tail):\n%s\n", tail(p.logs(), 8000))
	}
	miniotest.Shutdown()
	return code, nil
}

// serverEnv is the environment of the processes under test: no FILEMILL_ setting of
// the caller's, a rate limit no test reaches, only the inspect engine (fast to check
// and to run), outbound webhooks allowed to the local HTTPS receiver, and no metrics
// listener (its one default address would be fought over by the processes started here).
func serverEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "FILEMILL_") {
			env = append(env, kv)
		}
	}
	env = append(env, "FILEMILL_RATE_LIMIT_PER_MINUTE=1000000", "FILEMILL_PROJECT_CONCURRENCY_LIMIT=1000",
		"FILEMILL_ENGINES=inspect", "FILEMILL_LOG_LEVEL=warn", "FILEMILL_METRICS_ADDR=", "FILEMILL_OUTBOUND_ALLOW_CIDRS=127.0.0.1",
		"SSL_CERT_FILE="+receiver.caFile)
	return append(env, extra...)
}

// deployment is a running filemill reached at base.
type deployment struct {
	name string
	dir  string // the processes' working and data directory
	env  []string
	base string
}

// bootstrap makes a new organization and project (so counts are the test's own) and
// answers its live key.
func (d *deployment) bootstrap(org string) (string, error) {
	cmd := exec.Command(binary, "admin", "bootstrap", "--org", org, "--project", "p", "--credits", "1000000", "--json")
	cmd.Dir, cmd.Env = d.dir, d.env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("admin bootstrap: %v: %s", err, errb.String())
	}
	var b struct {
		APIKey string `json:"api_key"`
	}
	if err := json.Unmarshal(out.Bytes(), &b); err != nil || b.APIKey == "" {
		return "", fmt.Errorf("admin bootstrap answered %q", out.String())
	}
	return b.APIKey, nil
}

// key is bootstrap for a test: an organization of its own.
func (d *deployment) key(t *testing.T) string {
	t.Helper()
	key, err := d.bootstrap("org-" + randomHex(6))
	require.NoError(t, err)
	return key
}

// client is a client of the deployment (or of base, a proxy in front of it) whose
// retries are recorded.
func (d *deployment) client(t *testing.T, base, key string, opts ...client.Option) (*client.Client, *retries) {
	t.Helper()
	if base == "" {
		base = d.base
	}
	r := &retries{}
	policy := client.DefaultRetryPolicy()
	policy.OnRetry = r.add
	c, err := client.New(base, key, append([]client.Option{client.WithRetryPolicy(policy)}, opts...)...)
	require.NoError(t, err)
	return c, r
}

// retries records the retries a client made.
type retries struct {
	mu   sync.Mutex
	list []client.Retry
}

func (r *retries) add(x client.Retry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.list = append(r.list, x)
}

func (r *retries) all() []client.Retry {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]client.Retry(nil), r.list...)
}

// startSplit runs one api and one worker process on PostgreSQL, Redis and MinIO.
func startSplit(t *testing.T) *deployment {
	t.Helper()
	endpoint, access, secret := miniotest.Start(t)
	dir := t.TempDir()
	addr := freeAddr()
	storageSecret := randomHex(32)
	d := &deployment{name: "split", dir: dir, base: "http://" + addr, env: serverEnv(
		"FILEMILL_DATABASE_URL="+dbtest.Postgres(t), "FILEMILL_REDIS_URL="+redistest.URL(t),
		"FILEMILL_STORAGE_URL="+fmt.Sprintf("s3://%s:%s@%s/sdk-%s?secure=false&region=us-east-1", access, secret, endpoint, randomHex(4)),
		"FILEMILL_STORAGE_SECRET="+storageSecret, "FILEMILL_DATA_DIR="+dir, "FILEMILL_ADDR="+addr,
		"FILEMILL_WORK_DIR="+t.TempDir())}
	migrate := exec.Command(binary, "migrate")
	migrate.Dir, migrate.Env = dir, d.env
	out, err := migrate.CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, role := range []string{"api", "worker"} {
		p, err := startProcess(dir, d.env, role)
		require.NoError(t, err)
		t.Cleanup(func() {
			p.stop()
			if t.Failed() {
				t.Logf("filemill %s logs (tail):\n%s", role, tail(p.logs(), 6000))
			}
		})
		if role == "api" {
			require.NoError(t, waitReady(d.base, p))
		}
	}
	return d
}

// proc is a running filemill process.
type proc struct {
	cmd  *exec.Cmd
	out  *lockedBuffer
	done chan struct{}
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func startProcess(dir string, env []string, args ...string) (*proc, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	cmd := exec.Command(binary, args...)
	p := &proc{cmd: cmd, out: &lockedBuffer{}, done: make(chan struct{})}
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, env, p.out, p.out
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

func (p *proc) logs() string {
	p.out.mu.Lock()
	defer p.out.mu.Unlock()
	return p.out.buf.String()
}

func (p *proc) stop() {
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// waitReady waits for /readyz to answer 200, or for the process to die.
func waitReady(base string, p *proc) error {
	exited, err := eventually.Wait(eventually.Bound, func() (bool, bool) {
		select {
		case <-p.done:
			return true, true
		default:
		}
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return false, false
		}
		resp.Body.Close()
		return false, resp.StatusCode == 200
	})
	if exited {
		return fmt.Errorf("filemill %s exited:\n%s", strings.Join(p.cmd.Args[1:], " "), p.logs())
	}
	if err != nil {
		return fmt.Errorf("%s/readyz never answered 200", base)
	}
	return nil
}

// waitOperation waits until a live worker runs the operation: jobs are admitted only then.
func waitOperation(base, key, operation string) error {
	c, err := client.New(base, key)
	if err != nil {
		return err
	}
	var failed error
	_, err = eventually.Wait(eventually.Bound, func() (struct{}, bool) {
		ops, err := c.Operations(context.Background())
		if err != nil {
			failed = err
			return struct{}{}, true
		}
		for _, op := range ops {
			if op.Name == operation && string(op.Kind) == "operation" && op.Available {
				return struct{}{}, true
			}
		}
		return struct{}{}, false
	})
	if failed != nil {
		return failed
	}
	if err != nil {
		return fmt.Errorf("no worker advertised %s", operation)
	}
	return nil
}

func freeAddr() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// webhookReceiver is the HTTPS endpoint deliveries go to: each test listens on a path
// of its own.
type webhookReceiver struct {
	srv    *httptest.Server
	caFile string
	mu     sync.Mutex
	paths  map[string]chan delivery
}

type delivery struct {
	header http.Header
	body   []byte
}

func startReceiver(dir string) (*webhookReceiver, error) {
	r := &webhookReceiver{paths: map[string]chan delivery{}}
	r.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		ch := r.paths[req.URL.Path]
		r.mu.Unlock()
		if ch == nil {
			w.WriteHeader(http.StatusGone)
			return
		}
		select {
		case ch <- delivery{header: req.Header.Clone(), body: body}:
		default:
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	r.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	r.srv.StartTLS()
	r.caFile = filepath.Join(dir, "receiver-ca.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: r.srv.Certificate().Raw})
	return r, os.WriteFile(r.caFile, pemBytes, 0o600)
}

// listen answers the URL of a new path and the channel of its deliveries.
func (r *webhookReceiver) listen() (string, <-chan delivery) {
	path := "/hook/" + randomHex(6)
	ch := make(chan delivery, 16)
	r.mu.Lock()
	r.paths[path] = ch
	r.mu.Unlock()
	return r.srv.URL + path, ch
}
