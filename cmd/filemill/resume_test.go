package main

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/domain/eventually"
)

// partGate stands between the CLI and the storage host: it counts the part PUTs it
// passes, by part number, and holds those of one part until the client gives up.
type partGate struct {
	mu     sync.Mutex
	sent   map[int]int // part number → PUTs passed on
	landed map[int]int // part number → PUTs answered 2xx
	hold   int         // the part held; 0 for none
	held   chan struct{}
}

func (g *partGate) ServeHTTP(w http.ResponseWriter, r *http.Request, next http.Handler) {
	part, _ := strconv.Atoi(r.URL.Query().Get("part"))
	if r.Method == http.MethodPut && part > 0 {
		g.mu.Lock()
		hold := g.hold == part
		g.mu.Unlock()
		if hold {
			select {
			case g.held <- struct{}{}:
			default:
			}
			// Read the body (the server notices a client gone only once it has),
			// then answer nothing until the client goes away.
			_, _ = io.Copy(io.Discard, r.Body)
			<-r.Context().Done()
			return
		}
		g.mu.Lock()
		g.sent[part]++
		g.mu.Unlock()
		sw := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		if sw.status/100 == 2 {
			g.mu.Lock()
			g.landed[part]++
			g.mu.Unlock()
		}
		return
	}
	next.ServeHTTP(w, r)
}

func (g *partGate) counts() (sent, landed map[int]int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	sent, landed = map[int]int{}, map[int]int{}
	for k, v := range g.sent {
		sent[k] = v
	}
	for k, v := range g.landed {
		landed[k] = v
	}
	g.sent, g.landed = map[int]int{}, map[int]int{}
	return sent, landed
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

// `filemill upload --resume` after a run killed mid-upload sends only the parts that
// had not landed, and the file completes with the right bytes.
func TestUploadResumeSendsOnlyMissingParts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	addr, storageAddr := freeAddr(t), freeAddr(t)
	gate := &partGate{sent: map[int]int{}, landed: map[int]int{}, held: make(chan struct{}, 1)}
	target, err := url.Parse("http://" + storageAddr)
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(target)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { gate.ServeHTTP(w, r, proxy) }))
	t.Cleanup(front.Close)
	env := cleanEnv("FILEMILL_ADDR="+addr, "FILEMILL_STORAGE_ADDR="+storageAddr, "FILEMILL_STORAGE_PUBLIC_URL="+front.URL,
		"FILEMILL_ENGINES=inspect", "FILEMILL_LOG_LEVEL=warn", "FILEMILL_CLAMD_START=never")
	start(t, dir, env, "serve")
	base := "http://" + addr
	waitReady(t, base)
	key := bootstrapKey(t, dir, env, "--org", "resume", "--project", "p")
	home := t.TempDir()
	uenv := cleanEnv("HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, "config"), "XDG_STATE_HOME="+filepath.Join(home, "state"),
		"FILEMILL_API_URL="+base, "FILEMILL_API_KEY="+key)

	// Five parts of 16 MiB (the last 1 MiB); the threshold makes it multipart.
	size := int64(4*16<<20 + 1<<20)
	path := filepath.Join(t.TempDir(), "big.bin")
	f, err := os.Create(path)
	require.NoError(t, err)
	h := sha256.New()
	_, err = io.CopyN(io.MultiWriter(f, h), randomReader{}, size)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	want := hex.EncodeToString(h.Sum(nil))
	args := []string{"upload", path, "--multipart-threshold", "1048576", "--quiet"}

	// First run: part 2 never lands; once the state file records the four others, the
	// process is killed as a crash would end it.
	gate.mu.Lock()
	gate.hold = 2
	gate.mu.Unlock()
	first := startCommand(t, commandOf(args), dir, uenv, args)
	<-gate.held
	stateFiles := filepath.Join(home, "state", "filemill", "uploads", "*.json")
	eventually.True(t, "the state file records four parts", func() bool {
		matches, _ := filepath.Glob(stateFiles)
		if len(matches) != 1 {
			return false
		}
		raw, err := os.ReadFile(matches[0])
		var st struct {
			Parts map[string]string `json:"parts"`
		}
		return err == nil && json.Unmarshal(raw, &st) == nil && len(st.Parts) == 4
	})
	require.NoError(t, first.cmd.Process.Kill())
	_ = first.cmd.Wait()
	sent, landed := gate.counts()
	require.Equal(t, map[int]int{1: 1, 3: 1, 4: 1, 5: 1}, landed, "sent: %v", sent)

	// Without --resume a run starts afresh; with it, only part 2 goes.
	gate.mu.Lock()
	gate.hold = 0
	gate.mu.Unlock()
	r := runFM(t, dir, uenv, "", append(args, "--resume")...)
	require.Equal(t, 0, r.code, "%s%s", r.stderr, r.stdout)
	sent, landed = gate.counts()
	require.Equal(t, map[int]int{2: 1}, sent, "only the missing part is sent")
	require.Equal(t, map[int]int{2: 1}, landed)
	id, _, ok := strings.Cut(strings.TrimSpace(r.stdout), "\t")
	require.True(t, ok, r.stdout)
	status, file := apiGet(t, base+"/v1/files/"+id, key)
	require.Equal(t, 200, status, "%v", file)
	require.Equal(t, "ready", file["status"])
	require.Equal(t, want, file["sha256"], "the resumed file has the bytes of the local one")
	require.EqualValues(t, size, file["byte_size"])
	matches, err := filepath.Glob(stateFiles)
	require.NoError(t, err)
	require.Empty(t, matches, "the state file is gone once the file is complete")
}

// commandOf is the filemill command line args, to start with startCommand.
func commandOf(args []string) *exec.Cmd { return exec.Command(binary, args...) }

// randomReader yields pseudo-random bytes, fast, none of them compressible.
type randomReader struct{}

func (randomReader) Read(p []byte) (int, error) {
	_, _ = rand.Read(p)
	return len(p), nil
}
