package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/domain/eventually"
)

// binary is filemill built once for the whole package: these tests drive the real
// program the way an operator does.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "filemill-bin-")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "filemill")
	out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build filemill: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// cleanEnv is the environment without any FILEMILL_ setting but one: the metrics are
// off (FILEMILL_METRICS_ADDR empty), or the processes the tests start at once would all
// claim the default metrics port. A later value in extra wins.
func cleanEnv(extra ...string) []string {
	env := []string{"FILEMILL_METRICS_ADDR="}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "FILEMILL_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// proc is a running filemill process with its output captured.
type proc struct {
	cmd    *exec.Cmd
	stdout *lockedBuffer // read while the process writes it
	stderr *syncBuffer
}

// lockedBuffer is a buffer a process writes while a test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

type syncBuffer struct {
	buf  bytes.Buffer
	done chan struct{}
}

func start(t *testing.T, dir string, env []string, args ...string) *proc {
	t.Helper()
	return startCommand(t, exec.Command(binary, args...), dir, env, args)
}

// startCommand starts cmd, filemill run with args (perhaps through a program that
// execs it, keeping the process id), in dir with env.
func startCommand(t *testing.T, cmd *exec.Cmd, dir string, env []string, args []string) *proc {
	t.Helper()
	cmd.Dir, cmd.Env = dir, env
	p := &proc{cmd: cmd, stdout: &lockedBuffer{}, stderr: &syncBuffer{done: make(chan struct{})}}
	cmd.Stdout = p.stdout
	errPipe, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	go func() {
		_, _ = io.Copy(&p.stderr.buf, errPipe)
		close(p.stderr.done)
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		if t.Failed() {
			t.Logf("%s stderr:\n%s", strings.Join(args, " "), p.stderr.buf.String())
		}
	})
	return p
}

func runCLI(t *testing.T, dir string, env []string, args ...string) (string, string, error) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir, cmd.Env = dir, env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}

func waitReady(t *testing.T, base string) {
	t.Helper()
	eventually.True(t, base+"/readyz to answer 200", func() bool {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
}

func apiGet(t *testing.T, url, key string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	return apiDo(t, req, key)
}

// apiDo sends req with the key and decodes the JSON answer.
func apiDo(t *testing.T, req *http.Request, key string) (int, map[string]any) {
	t.Helper()
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

func TestServeFromEmptyDirectoryWithNoConfiguration(t *testing.T) {
	for _, port := range []string{"8080", "8081"} {
		ln, err := net.Listen("tcp", "127.0.0.1:"+port)
		require.NoError(t, err, "the default port %s must be free for this test", port)
		ln.Close()
	}
	dir := t.TempDir()
	env := cleanEnv()
	p := start(t, dir, env, "serve")
	base := "http://127.0.0.1:8080"
	waitReady(t, base)

	raw, err := os.ReadFile(filepath.Join(dir, "data", "bootstrap.json"))
	require.NoError(t, err)
	var boot map[string]string
	require.NoError(t, json.Unmarshal(raw, &boot))
	require.Contains(t, p.stdout.String(), boot["api_key"], "the first start prints the key")
	status, body := apiGet(t, base+"/v1/jobs", boot["api_key"])
	require.Equal(t, 200, status, "%v", body)
	require.Equal(t, "list", body["object"])
	status, _ = apiGet(t, base+"/v1/jobs", boot["test_api_key"])
	require.Equal(t, 200, status)

	t.Run("AdminCommandsWhileServing", func(t *testing.T) {
		out, stderr, err := runCLI(t, dir, env, "admin", "bootstrap", "--org", "acme", "--project", "web", "--credits", "50", "--json")
		require.NoError(t, err, stderr)
		var b map[string]string
		require.NoError(t, json.Unmarshal([]byte(out), &b))
		for _, k := range []string{"organization_id", "project_id", "api_key", "test_api_key"} {
			require.NotEmpty(t, b[k], k)
		}
		status, _ := apiGet(t, base+"/v1/jobs", b["api_key"])
		require.Equal(t, 200, status)

		// Reusing the organization and project mints new keys.
		out2, _, err := runCLI(t, dir, env, "admin", "bootstrap", "--org", "acme", "--project", "web", "--json")
		require.NoError(t, err)
		var b2 map[string]string
		require.NoError(t, json.Unmarshal([]byte(out2), &b2))
		require.Equal(t, b["organization_id"], b2["organization_id"])
		require.Equal(t, b["project_id"], b2["project_id"])
		require.NotEqual(t, b["api_key"], b2["api_key"])

		out, stderr, err = runCLI(t, dir, env, "admin", "keys", "create", "--org", "acme", "--project", "web", "--rate-limit", "2",
			"--scopes", "jobs:read", "--ip-allow", "127.0.0.0/8", "--spend-limit", "10", "--allowed-operations", "inspect", "--expires-in", "24h", "--json")
		require.NoError(t, err, stderr)
		var k map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &k))
		secret := k["api_key"].(string)
		req, _ := http.NewRequest("GET", base+"/v1/jobs", nil)
		req.Header.Set("Authorization", "Bearer "+secret)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, "2", resp.Header.Get("X-RateLimit-Limit"), "--rate-limit overrides the deployment default")

		list, stderr, err := runCLI(t, dir, env, "admin", "keys", "list", "--org", "acme")
		require.NoError(t, err, stderr)
		require.Contains(t, list, k["id"].(string))

		// Changes made by another process reach the server within FILEMILL_AUTH_CACHE_TTL
		// (1 s by default).
		_, stderr, err = runCLI(t, dir, env, "admin", "keys", "revoke", k["id"].(string))
		require.NoError(t, err, stderr)
		awaitStatus(t, base+"/v1/jobs", secret, 401, "revoked_api_key")

		_, stderr, err = runCLI(t, dir, env, "admin", "org", "suspend", "acme")
		require.NoError(t, err, stderr)
		awaitStatus(t, base+"/v1/jobs", b["api_key"], 403, "organization_suspended")
		_, _, err = runCLI(t, dir, env, "admin", "org", "resume", "acme")
		require.NoError(t, err)
		awaitStatus(t, base+"/v1/jobs", b["api_key"], 200, "")

		out, stderr, err = runCLI(t, dir, env, "admin", "credits", "grant", "--org", "acme", "--amount", "25", "--json")
		require.NoError(t, err, stderr)
		var acct map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &acct))
		require.EqualValues(t, 75, acct["balance"])

		_, stderr, err = runCLI(t, dir, env, "admin", "projects", "update", "--org", "acme", "--project", "web", "--concurrency-limit", "3")
		require.NoError(t, err, stderr)

		_, stderr, err = runCLI(t, dir, env, "admin", "keys", "revoke", "key_nope")
		require.Error(t, err)
		require.Contains(t, stderr, "not_found")
	})

	t.Run("ConsolePeople", func(t *testing.T) {
		// The first start made the console's owner and printed the link to set a password.
		require.Equal(t, "owner@localhost", boot["owner_email"])
		require.Equal(t, base+"/console/", boot["console_url"])
		require.Contains(t, p.stdout.String(), boot["set_password_url"], "the first start prints the owner's link")
		_, token, ok := strings.Cut(boot["set_password_url"], "/console/set-password#token=")
		require.True(t, ok, boot["set_password_url"])
		const setPassword = `mutation($t: String!, $p: String!) { setPassword(token: $t, password: $p) { role user { email } } }`
		body, cookies := consolePost(t, base, setPassword, map[string]any{"t": token, "p": "owner's password 1"})
		require.Equal(t, "owner", body["data"].(map[string]any)["setPassword"].(map[string]any)["role"], "%v", body)
		require.Contains(t, cookies, "filemill_session")
		body, _ = consolePost(t, base, setPassword, map[string]any{"t": token, "p": "owner's password 2"})
		require.Contains(t, fmt.Sprint(body["errors"]), "not_found", "the link works once")

		// users create: with a password from standard input, or a link to set one.
		cmd := exec.Command(binary, "admin", "users", "create", "--org", "acme", "--email", "Dev@Example.com", "--role", "developer",
			"--password-stdin", "--json")
		cmd.Dir, cmd.Env, cmd.Stdin = dir, env, strings.NewReader("a developer's password\n")
		out, err := cmd.Output()
		require.NoError(t, err)
		var u map[string]string
		require.NoError(t, json.Unmarshal(out, &u))
		require.Equal(t, "dev@example.com", u["email"])
		require.Empty(t, u["set_password_url"])
		const signIn = `mutation($e: String!, $p: String!) { signIn(email: $e, password: $p) { role organization { name } } }`
		body, _ = consolePost(t, base, signIn, map[string]any{"e": "dev@example.com", "p": "a developer's password"})
		require.Equal(t, "developer", body["data"].(map[string]any)["signIn"].(map[string]any)["role"], "%v", body)

		text, stderr, err := runCLI(t, dir, env, "admin", "users", "create", "--org", "acme", "--email", "viewer@example.com", "--role", "viewer")
		require.NoError(t, err, stderr)
		require.Contains(t, text, base+"/console/set-password#token=fmp_")
		_, stderr, err = runCLI(t, dir, env, "admin", "users", "create", "--org", "acme", "--email", "viewer@example.com", "--role", "viewer")
		require.Error(t, err)
		require.Contains(t, stderr, "conflict")
		_, stderr, err = runCLI(t, dir, env, "admin", "users", "create", "--org", "acme", "--email", "x@example.com", "--role", "root")
		require.Error(t, err)
		require.Contains(t, stderr, "role")
	})

	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		require.NoError(t, err, "a graceful shutdown exits 0")
	case <-time.After(40 * time.Second):
		t.Fatal("serve did not stop after SIGTERM")
	}
	<-p.stderr.done
	logs := p.stderr.buf.String()
	require.Contains(t, logs, `"request_id":"req_`, "logs are JSON with request ids")

	// A second start reuses the data directory and prints no new key.
	p2 := start(t, dir, env, "serve")
	waitReady(t, base)
	status, _ = apiGet(t, base+"/v1/jobs", boot["api_key"])
	require.Equal(t, 200, status)
	require.NotContains(t, p2.stdout.String(), "live API key")
	_ = p2.cmd.Process.Signal(syscall.SIGTERM)
	_ = p2.cmd.Wait()
}

// consolePost posts a GraphQL operation as the console's page does, without a
// session, and returns the answer and the names of the cookies it set.
func consolePost(t *testing.T, base, query string, vars map[string]any) (map[string]any, []string) {
	t.Helper()
	raw, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	require.NoError(t, err)
	req, err := http.NewRequest("POST", base+"/graphql", bytes.NewReader(raw))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", base)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var body map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	var names []string
	for _, c := range resp.Cookies() {
		names = append(names, c.Name)
	}
	return body, names
}

func TestBadSettingsNameTheSetting(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"FILEMILL_REDIS_URL":                 "memcached://x",
		"FILEMILL_DATABASE_URL":              "mysql://x",
		"FILEMILL_STORAGE_URL":               "ftp://x",
		"FILEMILL_ADDR":                      "nowhere",
		"FILEMILL_METRICS_ADDR":              "nowhere",
		"FILEMILL_RATE_LIMIT_PER_MINUTE":     "lots",
		"FILEMILL_PROJECT_CONCURRENCY_LIMIT": "0",
		"FILEMILL_OUTBOUND_ALLOW_CIDRS":      "10.0.0.0/99",
		"FILEMILL_PUBLIC_URL":                "ftp://x",
		"FILEMILL_STORAGE_SECRET":            "abc",
		"FILEMILL_LOG_LEVEL":                 "loud",
		"FILEMILL_JOB_LEASE":                 "forever",
		"FILEMILL_SWEEP_INTERVAL":            "0s",
		"FILEMILL_BODY_READ_TIMEOUT":         "a while",
		"FILEMILL_BODY_MIN_RATE":             "-1",
		"FILEMILL_MAX_CONNS_PER_ADDRESS":     "many",
		"FILEMILL_CLAMD_START":               "sometimes",
	}
	for name, value := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, stderr, err := runCLI(t, t.TempDir(), cleanEnv(name+"="+value), "serve")
			require.Error(t, err)
			require.Contains(t, stderr, name)
		})
	}
	t.Run("UnknownCommand", func(t *testing.T) {
		_, stderr, err := runCLI(t, t.TempDir(), cleanEnv(), "frobnicate")
		require.Error(t, err)
		require.Contains(t, stderr, "unknown command")
	})
	t.Run("APIWithoutRedis", func(t *testing.T) {
		_, stderr, err := runCLI(t, t.TempDir(), cleanEnv(), "api")
		require.Error(t, err)
		require.Contains(t, stderr, "FILEMILL_REDIS_URL")
	})
}

// awaitStatus polls url until it answers status (and code, for an error) or the
// propagation bound of the auth cache, with a margin, has passed.
func awaitStatus(t *testing.T, url, key string, status int, code string) {
	t.Helper()
	var got int
	var gotCode string
	if _, err := eventually.Wait(3*time.Second, func() (struct{}, bool) {
		var m map[string]any
		got, m = apiGet(t, url, key)
		gotCode = ""
		if e, ok := m["error"].(map[string]any); ok {
			gotCode, _ = e["code"].(string)
		}
		return struct{}{}, got == status && gotCode == code
	}); err != nil {
		t.Fatalf("GET %s: %d %q, want %d %q", url, got, gotCode, status, code)
	}
}

// waitAvailable waits until a live worker runs the named operation's engines: a job is
// admitted only then.
func waitAvailable(t *testing.T, base, key, operation string) {
	t.Helper()
	eventually.True(t, "a worker to advertise "+operation, func() bool { return operationAvailable(t, base, key, operation) })
}

// operationAvailable reads the availability GET /v1/operations shows for an operation.
func operationAvailable(t *testing.T, base, key, operation string) bool {
	t.Helper()
	status, ops := apiGet(t, base+"/v1/operations", key)
	require.Equal(t, 200, status, "%v", ops)
	for _, op := range ops["data"].([]any) {
		if o := op.(map[string]any); o["name"] == operation && o["kind"] == "operation" {
			return o["available"].(bool)
		}
	}
	t.Fatalf("%s is not listed", operation)
	return false
}

// bootstrapKey creates an organization and project through `filemill admin bootstrap`
// with the given flags and returns its live key.
func bootstrapKey(t *testing.T, dir string, env []string, flags ...string) string {
	t.Helper()
	out, stderr, err := runCLI(t, dir, env, append(append([]string{"admin", "bootstrap"}, flags...), "--json")...)
	require.NoError(t, err, stderr)
	var boot map[string]string
	require.NoError(t, json.Unmarshal([]byte(out), &boot))
	return boot["api_key"]
}

// The admin commands exit as the client commands do: 4 when what they name does not
// exist, 1 for any other refusal, 2 for a command line that cannot run.
func TestAdminExitCodes(t *testing.T) {
	t.Parallel()
	dir, env := t.TempDir(), cleanEnv()
	bootstrapKey(t, dir, env, "--org", "acme", "--project", "web")
	exitCode := func(args ...string) (int, string) {
		t.Helper()
		_, stderr, err := runCLI(t, dir, env, append([]string{"admin"}, args...)...)
		var ee *exec.ExitError
		if err == nil {
			return 0, stderr
		}
		require.ErrorAs(t, err, &ee, stderr)
		return ee.ExitCode(), stderr
	}
	for _, args := range [][]string{
		{"keys", "revoke", "key_nope"},
		{"keys", "list", "--org", "nope"},
		{"keys", "create", "--org", "acme", "--project", "nope"},
		{"credits", "grant", "--org", "nope", "--amount", "5"},
		{"org", "suspend", "nope"},
		{"projects", "create", "--org", "nope", "--name", "p"},
		{"projects", "update", "--org", "acme", "--project", "nope", "--concurrency-limit", "2"},
		{"users", "create", "--org", "nope", "--email", "a@example.com", "--role", "viewer"},
	} {
		code, stderr := exitCode(args...)
		require.Equal(t, 4, code, "%v: %s", args, stderr)
		require.Regexp(t, `not.found|no such`, stderr, "%v says what is missing", args)
	}
	code, stderr := exitCode("users", "create", "--org", "acme", "--email", "a@example.com", "--role", "root")
	require.Equal(t, 1, code, "an invalid role: %s", stderr)
	code, stderr = exitCode("credits", "grant", "--org", "acme")
	require.Equal(t, 2, code, "no amount: %s", stderr)
	code, stderr = exitCode("org", "resume", "acme")
	require.Equal(t, 0, code, stderr)
}
