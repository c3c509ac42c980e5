package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/client/webhook"
	"github.com/filemill/filemill/jobs/ops/office/officetest"
	"github.com/filemill/filemill/rest/openapitest"
)

// The client commands are tested as a person uses them: the filemill binary against a
// `filemill serve` started here, reached over HTTP only. What they print is checked
// against what the API answers, and every API answer the tests read themselves is
// checked against the OpenAPI document.

// cliServer is a `filemill serve` with the engines the runs need.
type cliServer struct {
	dir  string
	env  []string
	base string
	api  *http.Client // answers checked against the OpenAPI document
	// users counts the organizations made, one per user.
	users int
}

func startCLIServer(t *testing.T) *cliServer {
	t.Helper()
	dir := t.TempDir()
	addr, storageAddr := freeAddr(t), freeAddr(t)
	env := cleanEnv("FILEMILL_ADDR="+addr, "FILEMILL_STORAGE_ADDR="+storageAddr, "FILEMILL_ENGINES=inspect,office,pdf,image",
		"FILEMILL_OFFICE_INSTANCES=1", "FILEMILL_RATE_LIMIT_PER_MINUTE=1000000", "FILEMILL_PROJECT_CONCURRENCY_LIMIT=1000",
		"FILEMILL_LOG_LEVEL=warn", "FILEMILL_CLAMD_START=never")
	start(t, dir, env, "serve")
	s := &cliServer{dir: dir, env: env, base: "http://" + addr, api: openapitest.New(t).Client(http.DefaultTransport)}
	waitReady(t, s.base)
	return s
}

// user is a person with the CLI: an organization of their own (so lists are theirs),
// empty configuration and state directories, and the key in FILEMILL_API_KEY (login
// is tested on its own).
type user struct {
	srv  *cliServer
	key  string
	home string
	env  []string
}

func (s *cliServer) newUser(t *testing.T) *user {
	t.Helper()
	s.users++
	org := fmt.Sprintf("cli-%d-%s", s.users, strings.ToLower(t.Name()[strings.LastIndex(t.Name(), "/")+1:]))
	key := bootstrapKey(t, s.dir, s.env, "--org", org, "--project", "p", "--credits", "1000000")
	home := t.TempDir()
	env := cleanEnv("HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, "config"), "XDG_STATE_HOME="+filepath.Join(home, "state"),
		"FILEMILL_API_URL="+s.base, "FILEMILL_API_KEY="+key)
	return &user{srv: s, key: key, home: home, env: env}
}

// without is the user's environment less the named variables.
func (u *user) without(names ...string) []string {
	var env []string
	for _, kv := range u.env {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(names, name) {
			env = append(env, kv)
		}
	}
	return env
}

// result is what a command printed and its exit code.
type result struct {
	stdout, stderr string
	code           int
}

// runFM runs filemill in dir with env and stdin; the exit code is the result's.
func runFM(t *testing.T, dir string, env []string, stdin string, args ...string) result {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir, cmd.Env, cmd.Stdin = dir, env, strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return r
}

// run runs filemill as the user in dir and wants exit code 0.
func (u *user) run(t *testing.T, dir string, args ...string) result {
	t.Helper()
	r := runFM(t, dir, u.env, "", args...)
	require.Equal(t, 0, r.code, "filemill %s:\n%s%s", strings.Join(args, " "), r.stderr, r.stdout)
	return r
}

// get reads the API as the user, the answer checked against the OpenAPI document.
func (u *user) get(t *testing.T, path string) []byte {
	t.Helper()
	req, err := http.NewRequest("GET", u.srv.base+path, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+u.key)
	resp, err := u.srv.api.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, 200, resp.StatusCode, "GET %s: %s", path, raw)
	return raw
}

// requireSameJSON compares two JSON documents by value.
func requireSameJSON(t *testing.T, want []byte, got string, what string) {
	t.Helper()
	var w, g any
	require.NoError(t, json.Unmarshal(want, &w))
	require.NoError(t, json.Unmarshal([]byte(got), &g), "%s is one JSON document: %q", what, got)
	require.Equal(t, w, g, what)
}

// lines are the non-empty lines of s.
func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

func writeDocx(t *testing.T, dir string, names ...string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for _, n := range names {
		doc := officetest.DOCX(t, [][]string{{"The letter " + n, "Written for the command-line test"}})
		require.NoError(t, os.WriteFile(filepath.Join(dir, n+".docx"), doc, 0o644))
	}
}

// writePNG writes a small image, its colour from n so no two are alike.
func writePNG(t *testing.T, path string, n int) {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 64, 48))
	for y := range 48 {
		for x := range 64 {
			img.Set(x, y, color.RGBA{uint8(n * 11), uint8(x * 4), uint8(y * 5), 255})
		}
	}
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, img))
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
}

func TestClientCLI(t *testing.T) {
	srv := startCLIServer(t)
	probe := srv.newUser(t)
	for _, op := range []string{"convert", "pdf.compress", "image.convert"} {
		waitAvailable(t, srv.base, probe.key, op)
	}

	t.Run("LoginProfilesAndPrecedence", func(t *testing.T) { testLogin(t, srv) })
	t.Run("RunDocumentPresetOnADirectory", func(t *testing.T) { testRunDocuments(t, srv) })
	t.Run("JSONIsWhatTheAPIAnswers", func(t *testing.T) { testJSON(t, srv) })
	t.Run("ExitCodes", func(t *testing.T) { testExitCodes(t, srv) })
	t.Run("ProgressBarsOnATerminalOnly", func(t *testing.T) { testProgress(t, srv) })
	t.Run("WatchEachFileOnceAcrossRestarts", func(t *testing.T) { testWatch(t, srv) })
	t.Run("WebhooksListenForwardsSigned", func(t *testing.T) { testListen(t, srv) })
	t.Run("ReadmeCommands", func(t *testing.T) { testReadmeCommands(t, srv) })
}

func testLogin(t *testing.T, srv *cliServer) {
	u := srv.newUser(t)
	env := u.without("FILEMILL_API_URL", "FILEMILL_API_KEY")
	work := t.TempDir()

	r := runFM(t, work, env, "", "files")
	require.Equal(t, 3, r.code, "no key anywhere: not authenticated\n%s", r.stderr)
	require.Contains(t, r.stderr, "filemill login")

	// A key that does not work is not stored.
	r = runFM(t, work, env, "fm_live_notakey\n", "login", "--api-url", srv.base)
	require.Equal(t, 3, r.code, r.stderr)
	require.Contains(t, r.stderr, "invalid_api_key")
	_, err := os.Stat(filepath.Join(u.home, "config", "filemill", "config.toml"))
	require.ErrorIs(t, err, os.ErrNotExist)

	// The key from standard input (not a terminal here), checked, then stored for its
	// owner's eyes only.
	r = runFM(t, work, env, u.key+"\n", "login", "--api-url", srv.base)
	require.Equal(t, 0, r.code, r.stderr)
	path := filepath.Join(u.home, "config", "filemill", "config.toml")
	info, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Contains(t, string(raw), u.key)
	require.Contains(t, string(raw), srv.base)

	r = runFM(t, work, env, "", "profiles")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `\*\s+default\s+`+srv.base+`\s+`+u.key[:12]+"…", r.stdout)
	require.NotContains(t, r.stdout, u.key, "profiles never show a whole key")

	r = runFM(t, work, env, "", "files", "--json")
	require.Equal(t, 0, r.code, "the profile's key and URL are used:\n%s", r.stderr)

	// A second profile, and the order of precedence: flags, then the environment, then
	// the profile.
	other := srv.newUser(t)
	r = runFM(t, work, env, other.key, "login", "--profile", "other", "--api-url", srv.base)
	require.Equal(t, 0, r.code, r.stderr)
	r = runFM(t, work, env, "", "profiles", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var profiles []map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &profiles))
	require.Len(t, profiles, 2)
	require.Equal(t, "default", profiles[0]["name"])
	require.Equal(t, true, profiles[0]["default"], "the first profile stored stays the default")

	// A file of the other organization is found with its profile only.
	f := strings.Fields(other.run(t, work, "upload", writeText(t, work, "mine.txt", "other's file")).stdout)[0]
	require.Equal(t, 4, runFM(t, work, env, "", "files", "show", f).code, "the default profile's key sees no such file")
	require.Equal(t, 0, runFM(t, work, env, "", "files", "show", f, "--profile", "other").code)
	require.Equal(t, 0, runFM(t, work, append(env, "FILEMILL_PROFILE=other"), "", "files", "show", f).code)
	require.Equal(t, 0, runFM(t, work, append(env, "FILEMILL_API_KEY="+other.key), "", "files", "show", f).code,
		"FILEMILL_API_KEY overrides the profile's key")
	r = runFM(t, work, append(env, "FILEMILL_API_KEY=fm_live_notakey"), "", "files")
	require.Equal(t, 3, r.code, "a bad key in the environment wins over a good profile")
	unreachable := "http://" + freeAddr(t)
	r = runFM(t, work, append(env, "FILEMILL_API_URL="+unreachable), "", "files", "--api-url", srv.base)
	require.Equal(t, 0, r.code, "--api-url wins over FILEMILL_API_URL:\n%s", r.stderr)
	r = runFM(t, work, append(env, "FILEMILL_API_URL="+unreachable), "", "files")
	require.Equal(t, 1, r.code, "FILEMILL_API_URL wins over the profile's URL")
	r = runFM(t, work, env, "", "files", "--profile", "nobody")
	require.Equal(t, 3, r.code)
	require.Contains(t, r.stderr, `no profile "nobody"`)
}

func writeText(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	return p
}

func testRunDocuments(t *testing.T, srv *cliServer) {
	u := srv.newUser(t)
	work := t.TempDir()
	letters := []string{"alpha", "bravo", "charlie"}
	writeDocx(t, filepath.Join(work, "letters"), letters...)
	r := u.run(t, work, "run", "--preset", "document", "letters", "--wait", "-o", "out")

	// Piped: plain lines of progress on standard error, results on standard output.
	require.Contains(t, r.stderr, "succeeded")
	require.NotContains(t, r.stderr, "\r", "no bars drawn when standard error is not a terminal")
	rows := lines(r.stdout)
	require.Len(t, rows, len(letters), r.stdout)
	var pdfs, written []string
	for _, row := range rows {
		f := strings.Split(row, "\t")
		require.GreaterOrEqual(t, len(f), 4, "JOB_ID, STATE, INPUT and the artifacts written: %q", row)
		require.True(t, strings.HasPrefix(f[0], "job_"), row)
		require.Equal(t, "succeeded", f[1], row)
		require.True(t, strings.HasPrefix(f[2], filepath.Join("letters", "")), row)
		// The compressed PDF and the compression's report.
		require.Len(t, f[3:], 2, row)
		for _, p := range f[3:] {
			raw, err := os.ReadFile(filepath.Join(work, p))
			require.NoError(t, err, "the artifact %s is on disk", p)
			written = append(written, filepath.Base(p))
			if strings.HasSuffix(p, ".pdf") {
				require.True(t, bytes.HasPrefix(raw, []byte("%PDF-")), "%s is a PDF", p)
				pdfs = append(pdfs, filepath.Base(p))
			} else {
				require.True(t, json.Valid(raw), "%s is the JSON report", p)
			}
		}
	}
	slices.Sort(pdfs)
	require.Equal(t, []string{"alpha.pdf", "bravo.pdf", "charlie.pdf"}, pdfs, "the outputs carry their artifacts' names")
	entries, err := os.ReadDir(filepath.Join(work, "out"))
	require.NoError(t, err)
	var onDisk []string
	for _, e := range entries {
		onDisk = append(onDisk, e.Name())
	}
	slices.Sort(written)
	require.Equal(t, written, onDisk, "every artifact under a name of its own, and nothing else (no partial download)")

	// Three files made one batch: its members are the jobs printed.
	var jobs struct {
		Data []struct {
			ID      string  `json:"id"`
			BatchID *string `json:"batch_id"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(u.get(t, "/v1/jobs"), &jobs))
	require.Len(t, jobs.Data, 3)
	require.NotNil(t, jobs.Data[0].BatchID)
	for _, j := range jobs.Data {
		require.Equal(t, *jobs.Data[0].BatchID, *j.BatchID)
		require.Contains(t, r.stdout, j.ID)
	}

	t.Run("AFailedJobExitsOne", func(t *testing.T) {
		bad := writeText(t, work, "bad.pdf", "%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\ngarbage\n%%EOF\n")
		r := runFM(t, work, u.env, "", "run", "pdf.compress", bad, "--wait")
		require.Equal(t, 1, r.code, r.stderr)
		require.Regexp(t, `job_\S+\tfailed\t`, r.stdout)
		require.Contains(t, r.stderr, "corrupted_file", "the failure is reported with its code")
	})
	t.Run("WithoutWaitPrintsTheJob", func(t *testing.T) {
		r := u.run(t, work, "run", "inspect", filepath.Join("letters", "alpha.docx"), "--json")
		var job map[string]any
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &job))
		require.Equal(t, "inspect", job["operation"])
		require.Contains(t, []any{"queued", "running", "succeeded"}, job["state"])
	})
}

func testJSON(t *testing.T, srv *cliServer) {
	u := srv.newUser(t)
	work := t.TempDir()
	for i := range 5 {
		writeText(t, work, fmt.Sprintf("n%d.txt", i), fmt.Sprintf("note %d", i))
	}
	r := u.run(t, work, "upload", ".", "--json")
	uploaded := lines(r.stdout)
	require.Len(t, uploaded, 5, "one JSON object per file")
	for _, l := range uploaded {
		var f map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &f))
		requireSameJSON(t, u.get(t, "/v1/files/"+f["id"].(string)), l, "upload --json is the file as the API shows it")
	}
	file := lines(u.run(t, work, "upload", "n0.txt").stdout)
	require.Len(t, file, 1)
	id, path, _ := strings.Cut(file[0], "\t")
	require.Equal(t, "n0.txt", path)
	job := strings.Fields(u.run(t, work, "run", "inspect", id, "--wait").stdout)[0]

	// One JSON document, as the API answers it.
	requireSameJSON(t, u.get(t, "/v1/files"), u.run(t, work, "files", "--json").stdout, "files --json")
	requireSameJSON(t, u.get(t, "/v1/files?limit=2"), u.run(t, work, "files", "--json", "--limit", "2").stdout, "files --json --limit 2")
	requireSameJSON(t, u.get(t, "/v1/files/"+id), u.run(t, work, "files", "show", id, "--json").stdout, "files show --json")
	requireSameJSON(t, u.get(t, "/v1/jobs"), u.run(t, work, "jobs", "--json").stdout, "jobs --json")
	requireSameJSON(t, u.get(t, "/v1/jobs/"+job), u.run(t, work, "jobs", "show", job, "--json").stdout, "jobs show --json")
	requireSameJSON(t, u.get(t, "/v1/events?limit=3"), u.run(t, work, "events", "list", "--json", "--limit", "3").stdout, "events list --json")
	requireSameJSON(t, u.get(t, "/v1/operations"), u.run(t, work, "operations", "--json").stdout, "operations --json")

	// NDJSON across pages with --all: every item once, in the API's order.
	var walked []any
	path = "/v1/files?limit=2"
	for {
		var page struct {
			Data       []any   `json:"data"`
			HasMore    bool    `json:"has_more"`
			NextCursor *string `json:"next_cursor"`
		}
		require.NoError(t, json.Unmarshal(u.get(t, path), &page))
		walked = append(walked, page.Data...)
		if !page.HasMore {
			break
		}
		path = "/v1/files?limit=2&starting_after=" + *page.NextCursor
	}
	require.Len(t, walked, 6)
	all := lines(u.run(t, work, "files", "--all", "--json", "--limit", "2").stdout)
	require.Len(t, all, len(walked))
	for i, l := range all {
		var item any
		require.NoError(t, json.Unmarshal([]byte(l), &item), "line %d is a JSON object", i)
		require.Equal(t, walked[i], item, "line %d", i)
	}

	// The table says the same.
	table := u.run(t, work, "files").stdout
	require.Regexp(t, `(?m)^ID\s+FILENAME\s+STATUS\s+SIZE\s+FORMAT\s+CREATED$`, table)
	for _, w := range walked {
		require.Contains(t, table, w.(map[string]any)["id"])
	}
	require.Contains(t, u.run(t, work, "jobs", "show", job).stdout, "succeeded")
}

func testExitCodes(t *testing.T, srv *cliServer) {
	u := srv.newUser(t)
	work := t.TempDir()
	for _, args := range [][]string{
		{"jobs", "show", "job_00000000000000000000000000"},
		{"files", "show", "file_00000000000000000000000000"},
		{"download", "job_00000000000000000000000000"},
	} {
		r := runFM(t, work, u.env, "", args...)
		require.Equal(t, 4, r.code, "%v: not found\n%s", args, r.stderr)
		require.Contains(t, r.stderr, "not_found", "the error code is printed")
		require.Regexp(t, `request req_\w+`, r.stderr, "the request id is printed")
	}
	r := runFM(t, work, append(u.without("FILEMILL_API_KEY"), "FILEMILL_API_KEY=fm_live_notakey"), "", "jobs")
	require.Equal(t, 3, r.code, r.stderr)
	require.Contains(t, r.stderr, "invalid_api_key")
	require.Regexp(t, `request req_\w+`, r.stderr)
	r = runFM(t, work, u.without("FILEMILL_API_KEY"), "", "upload", writeText(t, work, "a.txt", "a"))
	require.Equal(t, 3, r.code, "no key: %s", r.stderr)
	for _, args := range [][]string{{"files", "--bogus"}, {"jobs", "frobnicate"}, {"run"}, {"run", "--preset", "document"},
		{"jobs", "show"}, {"files", "--limit", "1000"}, {"watch", work}, {"download", "x_1"}, {"run", "inspect", "x", "--option", "novalue"}} {
		r := runFM(t, work, u.env, "", args...)
		require.Equal(t, 2, r.code, "%v is a usage error\n%s", args, r.stderr)
	}
}

func testProgress(t *testing.T, srv *cliServer) {
	u := srv.newUser(t)
	work := t.TempDir()
	writeText(t, work, "a.txt", "progress")
	writePNG(t, filepath.Join(work, "b.png"), 1)

	// On a terminal (script gives the command one, sized as a window is): a bar per
	// file, and the ids after them.
	tty := func(args string) string {
		t.Helper()
		cmd := exec.Command("script", "-qec", "stty cols 120 rows 40; "+binary+" "+args, "/dev/null")
		cmd.Dir, cmd.Env = work, u.env
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		return string(out)
	}
	out := tty("upload a.txt b.png")
	require.Regexp(t, `a\.txt\s+\[=+\]\s+[\d.]+ b / [\d.]+ b\s+done`, out, "a bar for a.txt")
	require.Regexp(t, `b\.png\s+\[=+\]`, out, "a bar for b.png")
	require.Regexp(t, `(?m)^file_\w+\ta\.txt\r?$`, out, "the results on lines of their own")
	require.Regexp(t, `(?m)^file_\w+\tb\.png\r?$`, out)
	out = tty("upload a.txt --quiet")
	require.NotContains(t, out, "[=", "--quiet draws nothing")
	require.Regexp(t, `(?m)^file_\w+\ta\.txt\r?$`, out)

	// Piped: a plain line per file, or nothing with --quiet.
	r := u.run(t, work, "upload", "a.txt")
	require.NotContains(t, r.stderr, "\x1b[")
	require.Contains(t, r.stderr, "uploaded a.txt")
	r = u.run(t, work, "upload", "a.txt", "-q")
	require.Empty(t, r.stderr)
	require.Len(t, lines(r.stdout), 1)
}

// lineProc is a filemill process whose output is read line by line as it comes.
type lineProc struct {
	cmd    *exec.Cmd
	stdout chan string
	stderr chan string
	mu     sync.Mutex
	all    []string // every line, both streams, for a failure's log
}

func startLines(t *testing.T, dir string, env []string, args ...string) *lineProc {
	t.Helper()
	p := &lineProc{cmd: exec.Command(binary, args...), stdout: make(chan string, 1000), stderr: make(chan string, 1000)}
	p.cmd.Dir, p.cmd.Env = dir, env
	outPipe, err := p.cmd.StdoutPipe()
	require.NoError(t, err)
	errPipe, err := p.cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, p.cmd.Start())
	read := func(r io.Reader, ch chan string) {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			p.mu.Lock()
			p.all = append(p.all, sc.Text())
			p.mu.Unlock()
			ch <- sc.Text()
		}
		close(ch)
	}
	go read(outPipe, p.stdout)
	go read(errPipe, p.stderr)
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
			_ = p.cmd.Wait()
		}
		if t.Failed() {
			p.mu.Lock()
			t.Logf("filemill %s:\n%s", strings.Join(args, " "), strings.Join(p.all, "\n"))
			p.mu.Unlock()
		}
	})
	return p
}

// next waits for the next line of ch that contains want, within a bound.
func next(t *testing.T, ch chan string, want string) string {
	t.Helper()
	deadline := time.After(3 * time.Minute)
	for {
		select {
		case l, ok := <-ch:
			require.True(t, ok, "the output ended before a line with %q", want)
			if strings.Contains(l, want) {
				return l
			}
		case <-deadline:
			t.Fatalf("no line with %q", want)
		}
	}
}

// stop interrupts the process as Ctrl-C does and wants a clean exit.
func (p *lineProc) stop(t *testing.T) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGINT))
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		require.NoError(t, err, "an interrupted filemill exits 0")
	case <-time.After(time.Minute):
		t.Fatal("filemill did not stop after SIGINT")
	}
}

// drain reads what is left of ch once the process ended.
func drain(ch chan string) []string {
	var out []string
	for l := range ch {
		out = append(out, l)
	}
	return out
}

func testWatch(t *testing.T, srv *cliServer) {
	u := srv.newUser(t)
	work := t.TempDir()
	in, out := filepath.Join(work, "in"), filepath.Join(work, "out")
	require.NoError(t, os.Mkdir(in, 0o755))
	args := []string{"watch", in, "--preset", "image", "-o", out, "--settle", "200ms", "--state", filepath.Join(work, "state.json")}

	w := startLines(t, work, u.env, args...)
	next(t, w.stderr, "watching")
	// 20 files dropped while it runs: half written in place, half renamed in whole (as
	// a finished download or a copy tool does).
	for i := range 20 {
		name := fmt.Sprintf("p%02d.png", i)
		if i%2 == 0 {
			writePNG(t, filepath.Join(in, name), i)
		} else {
			tmp := filepath.Join(in, "."+name+".part")
			writePNG(t, tmp, i)
			require.NoError(t, os.Rename(tmp, filepath.Join(in, name)))
		}
	}
	done := map[string]bool{}
	for len(done) < 20 {
		f := strings.Split(next(t, w.stdout, "\t"), "\t")
		require.Equal(t, "succeeded", f[1], f)
		require.False(t, done[f[2]], "%s processed twice", f[2])
		done[f[2]] = true
		require.Len(t, f, 5, "the image preset makes two outputs: %v", f)
		for _, p := range f[3:] {
			_, err := os.Stat(p)
			require.NoError(t, err)
		}
	}
	w.stop(t)
	require.Empty(t, drain(w.stdout), "nothing more was processed")
	entries, err := os.ReadDir(out)
	require.NoError(t, err)
	require.Len(t, entries, 40)

	// A file dropped while it was stopped is processed when it starts again; the
	// twenty before are not.
	writePNG(t, filepath.Join(in, "p20.png"), 20)
	w = startLines(t, work, u.env, args...)
	require.Contains(t, next(t, w.stderr, "watching"), "20 files done before")
	f := strings.Split(next(t, w.stdout, "\t"), "\t")
	require.Equal(t, "p20.png", f[2])
	w.stop(t)
	require.Empty(t, drain(w.stdout), "only the new file was processed")

	var jobs []json.RawMessage
	r := u.run(t, work, "jobs", "--all", "--json")
	for _, l := range lines(r.stdout) {
		jobs = append(jobs, json.RawMessage(l))
	}
	require.Len(t, jobs, 21, "one job per file")

	t.Run("DeleteAfter", func(t *testing.T) {
		in2, out2 := filepath.Join(work, "in2"), filepath.Join(work, "out2")
		require.NoError(t, os.Mkdir(in2, 0o755))
		writePNG(t, filepath.Join(in2, "x.png"), 30)
		w := startLines(t, work, u.env, "watch", in2, "--preset", "image", "-o", out2, "--settle", "100ms", "--delete-after")
		f := strings.Split(next(t, w.stdout, "\t"), "\t")
		require.Equal(t, "x.png", f[2])
		w.stop(t)
		_, err := os.Stat(filepath.Join(in2, "x.png"))
		require.ErrorIs(t, err, os.ErrNotExist, "the file is deleted once its outputs are written")
		_, err = os.Stat(f[3])
		require.NoError(t, err)
	})
}

func testListen(t *testing.T, srv *cliServer) {
	u := srv.newUser(t)
	secret := webhook.NewSecret()
	type delivery struct {
		ev   *webhook.Event
		body []byte
		err  error
	}
	got := make(chan delivery, 100)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		ev, err := webhook.Verify([]string{secret}, r.Header, body)
		got <- delivery{ev, body, err}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer receiver.Close()

	l := startLines(t, t.TempDir(), u.env, "webhooks", "listen", "--forward-to", receiver.URL+"/hook", "--secret", secret, "--events", "file.ready")
	next(t, l.stderr, "listening for events")
	// The subscription opens some time after the line: files are made until an event
	// comes (each makes one), within a bound.
	var d delivery
	made := map[string]bool{}
wait:
	for i := 0; ; i++ {
		require.Less(t, i, 200, "no event was forwarded")
		made[uploadText(t, srv.base, u.key, fmt.Sprintf("event %d", i))] = true
		select {
		case d = <-got:
			break wait
		default:
		}
	}
	require.NoError(t, d.err, "the forwarded delivery verifies with the secret")
	require.Equal(t, "file.ready", d.ev.Type)
	f, err := d.ev.File()
	require.NoError(t, err)
	require.True(t, made[f.Id])
	line := next(t, l.stdout, d.ev.ID)
	require.Contains(t, line, "file.ready")
	next(t, l.stderr, "204")

	// The body forwarded is the event as GET /v1/events/{id} shows it, as a delivery
	// of the deployment carries it.
	requireSameJSON(t, u.get(t, "/v1/events/"+d.ev.ID), string(d.body), "the forwarded body")
	l.stop(t)
}

// TestCompletionScripts: the scripts cobra writes load in the shells, and complete the
// commands.
func TestCompletionScripts(t *testing.T) {
	t.Parallel()
	dir := filepath.Dir(binary)
	env := append(cleanEnv(), "PATH="+dir+":"+os.Getenv("PATH"))
	cmd := exec.Command("bash", "-c", "set -e; source <(filemill completion bash); complete -p filemill")
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "-F __start_filemill filemill")
	require.Empty(t, strings.TrimSpace(strings.Replace(string(out), "complete -o default -F __start_filemill filemill", "", 1)),
		"the script loads without a word")

	// What bash asks for when a person types `filemill jo<TAB>`.
	r := runFM(t, t.TempDir(), env, "", "__complete", "jo")
	require.Equal(t, 0, r.code)
	require.Contains(t, r.stdout, "jobs\t")
	r = runFM(t, t.TempDir(), env, "", "__complete", "jobs", "")
	require.Contains(t, r.stdout, "cancel\t")
	for _, shell := range []string{"zsh", "fish"} {
		r := runFM(t, t.TempDir(), env, "", "completion", shell)
		require.Equal(t, 0, r.code)
		require.Contains(t, r.stdout, "filemill")
	}
}

// testReadmeCommands runs the README's command-line block as written, with filemill on
// the PATH and the README's URL pointed at the test's server.
func testReadmeCommands(t *testing.T, srv *cliServer) {
	u := srv.newUser(t)
	const readmeURL = "http://127.0.0.1:8080"
	code := readmeExample(t, "sh", "filemill login")
	require.Contains(t, code, readmeURL, "the block's URL, which the test points at its server")
	code = strings.ReplaceAll(code, readmeURL, srv.base)

	work := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(work, "report.pdf"), []byte(minimalPDF), 0o644))
	writeDocx(t, filepath.Join(work, "letters"), "to-anna", "to-ben")
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", code)
	cmd.Dir = work
	cmd.Env = append(u.without("FILEMILL_API_URL"), "PATH="+filepath.Dir(binary)+":"+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "the README's commands:\n%s", out)

	raw, err := os.ReadFile(filepath.Join(u.home, "config", "filemill", "config.toml"))
	require.NoError(t, err, "login stored the profile")
	require.Contains(t, string(raw), srv.base)
	for _, name := range []string{"to-anna.pdf", "to-ben.pdf"} {
		pdf, err := os.ReadFile(filepath.Join(work, "pdfs", name))
		require.NoError(t, err)
		require.True(t, bytes.HasPrefix(pdf, []byte("%PDF-")), name)
	}
	ndjson, err := os.ReadFile(filepath.Join(work, "files.ndjson"))
	require.NoError(t, err)
	var names []string
	for _, l := range lines(string(ndjson)) {
		var f struct {
			Filename string `json:"filename"`
		}
		require.NoError(t, json.Unmarshal([]byte(l), &f))
		names = append(names, f.Filename)
	}
	slices.Sort(names)
	require.Equal(t, []string{"report.pdf", "to-anna.docx", "to-ben.docx"}, names, "every file uploaded, one per line")
}

// minimalPDF is a one-page PDF small enough to write inline.
const minimalPDF = "%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj\n" +
	"3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 200 200]>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n"
