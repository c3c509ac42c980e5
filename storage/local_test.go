package storage_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/domain/eventually"
	"github.com/filemill/filemill/storage"
	"github.com/filemill/filemill/storage/storagetest"
)

type egressLog struct {
	mu   sync.Mutex
	seen map[string]int64
}

func (e *egressLog) add(key string, n int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.seen[key] += n
}

func (e *egressLog) get(key string) int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.seen[key]
}

type localBundle struct {
	blobs  *storage.Local
	dir    string
	url    string // the storage host's base URL
	egress *egressLog
	clock  *fakeClock
}

// fakeClock is the time the backend signs and checks URLs by; tests move it.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// setupLocal starts a Local backend with its storage host on a loopback listener.
func setupLocal(t *testing.T) *localBundle {
	t.Helper()
	host := httptest.NewUnstartedServer(nil)
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	b := &localBundle{dir: t.TempDir(), url: "http://" + host.Listener.Addr().String(), egress: &egressLog{seen: map[string]int64{}},
		clock: &fakeClock{now: time.Now()}}
	var err error
	b.blobs, err = storage.NewLocal(storage.LocalConfig{Dir: b.dir, PublicURL: b.url, Secret: secret, OnEgress: b.egress.add, Now: b.clock.Now})
	require.NoError(t, err)
	host.Config.Handler = b.blobs.Handler()
	host.Start()
	t.Cleanup(host.Close)
	return b
}

func (b *localBundle) tempFiles(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(b.dir, ".tmp"))
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestLocal(t *testing.T) {
	t.Parallel()
	storagetest.Run(t, func(t *testing.T) storagetest.Backend {
		b := setupLocal(t)
		return storagetest.Backend{Blobs: b.blobs, Advance: b.clock.Advance}
	})
}

func TestLocalObjectsLiveAtTheirKeyPath(t *testing.T) {
	t.Parallel()
	b := setupLocal(t)
	k, data := storagetest.Key(), storagetest.Bytes(10)
	require.NoError(t, b.blobs.Put(context.Background(), k, bytes.NewReader(data), 10))
	got, err := os.ReadFile(filepath.Join(b.dir, filepath.FromSlash(k)))
	require.NoError(t, err)
	require.Equal(t, data, got)

	require.NoError(t, b.blobs.Delete(context.Background(), k))
	_, err = os.Stat(filepath.Join(b.dir, "org_test"))
	require.True(t, os.IsNotExist(err), "empty directories of a deleted object are pruned")
	_, err = os.Stat(b.dir)
	require.NoError(t, err)
}

func TestLocalSecondPutIsConsumed(t *testing.T) {
	t.Parallel()
	b := setupLocal(t)
	ctx := context.Background()
	k, first := storagetest.Key(), storagetest.Bytes(1000)
	id, u, h := storagetest.Open(t, b.blobs, k, 1000)
	resp, body := storagetest.Put(t, u, h, first, 1000)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)

	// The same URL again, and a freshly minted one: both refused, the staged bytes kept.
	u2, h2, err := b.blobs.PresignPut(ctx, k, id, 1000, time.Minute)
	require.NoError(t, err)
	for _, url := range []string{u, u2} {
		resp, body = storagetest.Put(t, url, h2, storagetest.Bytes(1000), 1000)
		require.Equal(t, http.StatusConflict, resp.StatusCode, "%s", body)
		requireErrorBody(t, resp, body, "upload_session_consumed")
	}
	require.NoError(t, b.blobs.CompleteUpload(ctx, k, id))
	got, err := os.ReadFile(filepath.Join(b.dir, filepath.FromSlash(k)))
	require.NoError(t, err)
	require.Equal(t, first, got)

	// Completed, the URL is consumed for good; a part URL of it too.
	resp, body = storagetest.Put(t, u, h, storagetest.Bytes(1000), 1000)
	require.Equal(t, http.StatusConflict, resp.StatusCode, "%s", body)
	requireErrorBody(t, resp, body, "upload_session_consumed")
	pu, err := b.blobs.PresignPart(ctx, k, id, 1, 0, 1000, time.Minute)
	require.NoError(t, err)
	resp, body = storagetest.Put(t, pu, nil, storagetest.Bytes(1000), 1000)
	require.Equal(t, http.StatusConflict, resp.StatusCode, "%s", body)
	requireErrorBody(t, resp, body, "upload_session_consumed")
	got, err = os.ReadFile(filepath.Join(b.dir, filepath.FromSlash(k)))
	require.NoError(t, err)
	require.Equal(t, first, got)
	entries, err := os.ReadDir(filepath.Join(b.dir, ".uploads"))
	require.NoError(t, err)
	require.Empty(t, entries, "completion removes the staged upload")
	require.Empty(t, b.tempFiles(t))
}

func TestLocalConcurrentPutsLeaveOneObject(t *testing.T) {
	t.Parallel()
	b := setupLocal(t)
	ctx := context.Background()
	k := storagetest.Key()
	const n, size = 8, 2 << 20
	id, err := b.blobs.CreateUpload(ctx, k)
	require.NoError(t, err)
	bodies := make([][]byte, n)
	urls := make([]string, n)
	for i := range n {
		bodies[i] = storagetest.Bytes(size)
		urls[i], _, err = b.blobs.PresignPut(ctx, k, id, size, time.Minute)
		require.NoError(t, err)
	}
	statuses := make([]int, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			req, _ := http.NewRequest(http.MethodPut, urls[i], bytes.NewReader(bodies[i]))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			statuses[i] = resp.StatusCode
		}()
	}
	close(start)
	wg.Wait()

	winner := -1
	for i, st := range statuses {
		switch st {
		case http.StatusOK:
			require.Equal(t, -1, winner, "exactly one PUT wins: %v", statuses)
			winner = i
		case http.StatusConflict:
		default:
			t.Fatalf("PUT %d answered %d: %v", i, st, statuses)
		}
	}
	require.NotEqual(t, -1, winner, "one PUT wins: %v", statuses)
	require.NoError(t, b.blobs.CompleteUpload(ctx, k, id))
	got, err := os.ReadFile(filepath.Join(b.dir, filepath.FromSlash(k)))
	require.NoError(t, err)
	require.True(t, bytes.Equal(bodies[winner], got), "the object is the winner's bytes, whole")
	require.Empty(t, b.tempFiles(t), "no temp file is left behind")
}

// TestLocalPutRacingAbort aborts uploads while their PUT is in flight: the PUT either
// landed first (and was discarded with the upload) or is refused; either way nothing is
// left at the key, in the staging area or in the temp directory.
func TestLocalPutRacingAbort(t *testing.T) {
	t.Parallel()
	b := setupLocal(t)
	ctx := context.Background()
	for range 20 {
		k := storagetest.Key()
		data := storagetest.Bytes(256 << 10)
		id, u, h := storagetest.Open(t, b.blobs, k, int64(len(data)))
		done := make(chan int, 1)
		go func() {
			resp, _ := storagetest.Put(t, u, h, data, int64(len(data)))
			done <- resp.StatusCode
		}()
		require.NoError(t, b.blobs.AbortUpload(ctx, k, id))
		st := <-done
		require.Contains(t, []int{http.StatusOK, http.StatusConflict}, st)
		_, err := b.blobs.Stat(ctx, k)
		require.ErrorIs(t, err, domain.ErrNotFound)
		require.ErrorIs(t, b.blobs.CompleteUpload(ctx, k, id), domain.ErrNotFound)
	}
	entries, err := os.ReadDir(filepath.Join(b.dir, ".uploads"))
	require.NoError(t, err)
	require.Empty(t, entries)
	require.Empty(t, b.tempFiles(t))
}

func TestLocalEgressCountsBytesSent(t *testing.T) {
	t.Parallel()
	b := setupLocal(t)
	ctx := context.Background()
	k, data := storagetest.Key(), storagetest.Bytes(10_000)
	require.NoError(t, b.blobs.Put(ctx, k, bytes.NewReader(data), int64(len(data))))
	require.True(t, b.blobs.MetersEgress())
	gu, err := b.blobs.PresignGet(ctx, k, time.Minute, domain.Download{Name: "x.bin"})
	require.NoError(t, err)

	waitEgress := func(want int64) {
		t.Helper()
		eventually.True(t, fmt.Sprintf("egress %d, want %d", b.egress.get(k), want), func() bool { return b.egress.get(k) == want })
	}
	resp, _ := storagetest.Get(t, gu, "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	waitEgress(10_000)
	resp, _ = storagetest.Get(t, gu, "bytes=0-99")
	require.Equal(t, http.StatusPartialContent, resp.StatusCode)
	waitEgress(10_100)

	// Nothing served, nothing counted: HEAD, unsatisfiable range, refused URL.
	req, _ := http.NewRequest(http.MethodHead, gu, nil)
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	resp, _ = storagetest.Get(t, gu, "bytes=20000-")
	require.Equal(t, http.StatusRequestedRangeNotSatisfiable, resp.StatusCode)
	resp, _ = storagetest.Get(t, storagetest.FlipSignature(t, gu), "")
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	// A full GET after them: if any of them had counted, the total would be off.
	resp, _ = storagetest.Get(t, gu, "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	waitEgress(20_100)

	// A client that goes away mid-download is charged only what was sent.
	big := storagetest.Key()
	require.NoError(t, b.blobs.Put(ctx, big, bytes.NewReader(make([]byte, 64<<20)), 64<<20))
	bu, err := b.blobs.PresignGet(ctx, big, time.Minute, domain.Download{})
	require.NoError(t, err)
	resp, err = http.Get(bu)
	require.NoError(t, err)
	_, err = io.ReadFull(resp.Body, make([]byte, 1<<20))
	require.NoError(t, err)
	resp.Body.Close()
	eventually.True(t, "the condition to hold", func() bool { return b.egress.get(big) > 0 })
	require.Less(t, b.egress.get(big), int64(64<<20))
}

func TestLocalHeadAndConditionalGet(t *testing.T) {
	t.Parallel()
	b := setupLocal(t)
	k, data := storagetest.Key(), storagetest.Bytes(1234)
	id, u, h := storagetest.Open(t, b.blobs, k, 1234)
	resp, _ := storagetest.Put(t, u, h, data, 1234)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	putETag := resp.Header.Get("ETag")
	require.NoError(t, b.blobs.CompleteUpload(context.Background(), k, id))

	gu, err := b.blobs.PresignGet(context.Background(), k, time.Minute, domain.Download{})
	require.NoError(t, err)
	req, _ := http.NewRequest(http.MethodHead, gu, nil)
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "1234", resp.Header.Get("Content-Length"))
	require.Equal(t, "bytes", resp.Header.Get("Accept-Ranges"))
	require.Equal(t, putETag, resp.Header.Get("ETag"), "GET answers the ETag the PUT did")
	require.Equal(t, "application/octet-stream", resp.Header.Get("Content-Type"))
	require.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))
	require.Empty(t, resp.Header.Get("Content-Disposition"), "no download name, no attachment")

	req, _ = http.NewRequest(http.MethodGet, gu, nil)
	req.Header.Set("If-None-Match", putETag)
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNotModified, resp.StatusCode)
}

// TestLocalSignatureCoversEveryByte changes each byte of signed URLs' paths and queries
// in turn, and drops, adds and reorders parameters: every variant is refused and
// nothing is stored.
func TestLocalSignatureCoversEveryByte(t *testing.T) {
	t.Parallel()
	b := setupLocal(t)
	ctx := context.Background()
	data := storagetest.Bytes(64)

	stored := storagetest.Key()
	require.NoError(t, b.blobs.Put(ctx, stored, bytes.NewReader(data), 64))
	getURL, err := b.blobs.PresignGet(ctx, stored, time.Minute, domain.Download{Name: "Grüße, \"Welt\".pdf", ContentType: "application/pdf"})
	require.NoError(t, err)

	putKey := storagetest.Key()
	putID, putURL, _ := storagetest.Open(t, b.blobs, putKey, 64)

	partKey := storagetest.Key()
	id, err := b.blobs.CreateUpload(ctx, partKey)
	require.NoError(t, err)
	partURL, err := b.blobs.PresignPart(ctx, partKey, id, 1, 0, 64, time.Minute)
	require.NoError(t, err)

	send := func(method, u string) int {
		req, err := http.NewRequest(method, u, bytes.NewReader(data))
		if err != nil {
			return -1 // not a URL a client could send
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusForbidden {
			requireErrorBody(t, resp, body, "forbidden")
		}
		return resp.StatusCode
	}
	for _, tc := range []struct{ method, url string }{{"GET", getURL}, {"PUT", putURL}, {"PUT", partURL}} {
		signedFrom := len(b.url) + len("/o/")
		for i := len(b.url); i < len(tc.url); i++ {
			c := byte('a')
			if tc.url[i] == 'a' {
				c = 'b'
			}
			changed := tc.url[:i] + string(c) + tc.url[i+1:]
			st := send(tc.method, changed)
			if st == -1 {
				continue
			}
			if i >= signedFrom {
				require.Equal(t, http.StatusForbidden, st, "byte %d changed: %s", i, changed)
			} else {
				require.True(t, st == http.StatusForbidden || st == http.StatusNotFound, "byte %d changed: %d %s", i, st, changed)
			}
		}
		u, err := url.Parse(tc.url)
		require.NoError(t, err)
		params := strings.Split(u.RawQuery, "&")
		for i := range params {
			dropped := append(append([]string{}, params[:i]...), params[i+1:]...)
			require.Equal(t, http.StatusForbidden, send(tc.method, b.url+u.EscapedPath()+"?"+strings.Join(dropped, "&")), "without %s", params[i])
		}
		require.Equal(t, http.StatusForbidden, send(tc.method, tc.url+"&x=1"), "extra parameter")
		require.Equal(t, http.StatusForbidden, send(tc.method, tc.url+"&"+params[0]), "repeated parameter")
		reordered := append([]string{params[len(params)-1]}, params[:len(params)-1]...)
		require.Equal(t, http.StatusForbidden, send(tc.method, b.url+u.EscapedPath()+"?"+strings.Join(reordered, "&")), "reordered")
	}
	// Each URL only with its own method.
	require.Equal(t, http.StatusForbidden, send("PUT", getURL))
	require.Equal(t, http.StatusForbidden, send("GET", putURL))
	require.Equal(t, http.StatusForbidden, send("DELETE", getURL))
	// A part URL is not a single-PUT URL for the same key, nor a part of another upload.
	require.Equal(t, http.StatusForbidden, send("PUT", strings.Replace(partURL, "op=part", "op=put", 1)))

	require.ErrorIs(t, b.blobs.CompleteUpload(ctx, putKey, putID), domain.ErrNoBytes)
	parts, err := b.blobs.ListParts(ctx, partKey, id)
	require.NoError(t, err)
	require.Empty(t, parts)
	got, err := os.ReadFile(filepath.Join(b.dir, filepath.FromSlash(stored)))
	require.NoError(t, err)
	require.Equal(t, data, got)

	// Untouched, they still work.
	require.Equal(t, http.StatusOK, send("GET", getURL))
	require.Equal(t, http.StatusOK, send("PUT", putURL))
	require.Equal(t, http.StatusOK, send("PUT", partURL))
}

func TestLocalRefusesBodiesOtherThanSigned(t *testing.T) {
	t.Parallel()
	b := setupLocal(t)
	k := storagetest.Key()
	id, u, h := storagetest.Open(t, b.blobs, k, 1000)

	resp, body := storagetest.Put(t, u, h, storagetest.Bytes(1001), 1001)
	require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	requireErrorBody(t, resp, body, "payload_too_large")
	resp, body = storagetest.Put(t, u, h, storagetest.Bytes(999), 999)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	requireErrorBody(t, resp, body, "invalid_request")
	resp, _ = storagetest.Put(t, u, h, storagetest.Bytes(1000), -1)
	require.Equal(t, http.StatusLengthRequired, resp.StatusCode)

	// More bytes than Content-Length cannot arrive over HTTP/1.1 framing, so hand the
	// handler a body that lies about its length directly: it stops at the signed size.
	req := httptest.NewRequest(http.MethodPut, u, bytes.NewReader(storagetest.Bytes(5000)))
	req.ContentLength = 1000
	rec := httptest.NewRecorder()
	b.blobs.Handler().ServeHTTP(rec, req)
	require.Equal(t, http.StatusRequestEntityTooLarge, rec.Code, rec.Body.String())

	// A body that ends early (the client went away).
	req = httptest.NewRequest(http.MethodPut, u, bytes.NewReader(storagetest.Bytes(10)))
	req.ContentLength = 1000
	rec = httptest.NewRecorder()
	b.blobs.Handler().ServeHTTP(rec, req)
	require.Equal(t, http.StatusBadRequest, rec.Code, rec.Body.String())

	require.ErrorIs(t, b.blobs.CompleteUpload(context.Background(), k, id), domain.ErrNoBytes)
	require.Empty(t, b.tempFiles(t), "refused bodies leave no temp file")

	// The URL is still good for the right body.
	resp, _ = storagetest.Put(t, u, h, storagetest.Bytes(1000), 1000)
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

func TestLocalRefusesPathsOutsideTheStore(t *testing.T) {
	t.Parallel()
	b := setupLocal(t)
	for _, p := range []string{"/o/..%2Fsecret", "/o/%2E%2E/secret", "/o/.tmp/x", "/o/a//b", "/o/"} {
		req := httptest.NewRequest(http.MethodGet, b.url+p+"?op=get&exp=99999999999&sig=x", nil)
		rec := httptest.NewRecorder()
		b.blobs.Handler().ServeHTTP(rec, req)
		require.Equal(t, http.StatusForbidden, rec.Code, p)
	}
	req := httptest.NewRequest(http.MethodGet, b.url+"/elsewhere", nil)
	rec := httptest.NewRecorder()
	b.blobs.Handler().ServeHTTP(rec, req)
	require.Equal(t, http.StatusNotFound, rec.Code)
}

func TestLocalMultipartBelongsToItsKey(t *testing.T) {
	t.Parallel()
	b := setupLocal(t)
	ctx := context.Background()
	k := storagetest.Key()
	id, err := b.blobs.CreateUpload(ctx, k)
	require.NoError(t, err)
	e1 := storagetest.PutPart(t, b.blobs, k, id, 1, storagetest.Bytes(100))

	other := storagetest.Key()
	_, err = b.blobs.ListParts(ctx, other, id)
	require.ErrorIs(t, err, domain.ErrNotFound)
	err = b.blobs.CompleteMultipart(ctx, other, id, []domain.PartETag{{PartNumber: 1, ETag: e1}})
	require.ErrorIs(t, err, domain.ErrNotFound)
	_, err = b.blobs.ListParts(ctx, k, "../../etc")
	require.Error(t, err)

	require.NoError(t, b.blobs.CompleteMultipart(ctx, k, id, []domain.PartETag{{PartNumber: 1, ETag: e1}}))
	entries, err := os.ReadDir(filepath.Join(b.dir, ".uploads"))
	require.NoError(t, err)
	require.Empty(t, entries, "completion removes the upload's parts")
	require.Empty(t, b.tempFiles(t))
}

func TestLocalCORSPreflight(t *testing.T) {
	t.Parallel()
	b := setupLocal(t)
	req, _ := http.NewRequest(http.MethodOptions, b.url+"/o/a/b", nil)
	req.Header.Set("Origin", "http://console.example")
	req.Header.Set("Access-Control-Request-Method", "PUT")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	require.Equal(t, "*", resp.Header.Get("Access-Control-Allow-Origin"))
	require.Contains(t, resp.Header.Get("Access-Control-Allow-Methods"), "PUT")
	require.Contains(t, resp.Header.Get("Access-Control-Expose-Headers"), "ETag", "browsers must read part ETags")
}

func TestLocalPublicURLWithPath(t *testing.T) {
	t.Parallel()
	host := httptest.NewUnstartedServer(nil)
	base := "http://" + host.Listener.Addr().String() + "/storage"
	l, err := storage.NewLocal(storage.LocalConfig{Dir: t.TempDir(), PublicURL: base + "/", Secret: bytes.Repeat([]byte("k"), 32)})
	require.NoError(t, err)
	require.False(t, l.MetersEgress(), "without OnEgress nothing is metered")
	host.Config.Handler = l.Handler()
	host.Start()
	t.Cleanup(host.Close)

	k := storagetest.Key()
	require.NoError(t, l.Put(context.Background(), k, strings.NewReader("hello"), 5))
	gu, err := l.PresignGet(context.Background(), k, time.Minute, domain.Download{})
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(gu, base+"/o/"), gu)
	resp, body := storagetest.Get(t, gu, "")
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	// Behind a proxy that strips /storage.
	resp, body = storagetest.Get(t, strings.Replace(gu, "/storage/o/", "/o/", 1), "")
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	require.Equal(t, "hello", string(body))
}

func TestNewLocalValidates(t *testing.T) {
	t.Parallel()
	good := storage.LocalConfig{Dir: t.TempDir(), PublicURL: "http://127.0.0.1:8081", Secret: make([]byte, 32)}
	_, err := storage.NewLocal(good)
	require.NoError(t, err)
	for name, mutate := range map[string]func(*storage.LocalConfig){
		"NoDir":         func(c *storage.LocalConfig) { c.Dir = "" },
		"ShortSecret":   func(c *storage.LocalConfig) { c.Secret = make([]byte, 31) },
		"RelativeURL":   func(c *storage.LocalConfig) { c.PublicURL = "/storage" },
		"URLWithQuery":  func(c *storage.LocalConfig) { c.PublicURL = "http://h/?a=b" },
		"NotHTTPScheme": func(c *storage.LocalConfig) { c.PublicURL = "ftp://h" },
	} {
		cfg := good
		mutate(&cfg)
		_, err := storage.NewLocal(cfg)
		require.Error(t, err, name)
	}
}

func TestLocalPresignRefusesShortExpiry(t *testing.T) {
	t.Parallel()
	b := setupLocal(t)
	k := storagetest.Key()
	id, err := b.blobs.CreateUpload(context.Background(), k)
	require.NoError(t, err)
	_, _, err = b.blobs.PresignPut(context.Background(), k, id, 1, 500*time.Millisecond)
	require.Error(t, err)
}

// requireErrorBody checks the one error shape of the API, request id included.
func requireErrorBody(t *testing.T, resp *http.Response, body []byte, code string) {
	t.Helper()
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	var e struct {
		Error struct {
			Code, Message string
			RequestID     string `json:"request_id"`
		}
	}
	require.NoError(t, json.Unmarshal(body, &e), "%s", body)
	require.Equal(t, code, e.Error.Code)
	require.NotEmpty(t, e.Error.Message)
	require.True(t, domain.ValidID(domain.PrefixRequest, e.Error.RequestID), "request_id %q", e.Error.RequestID)
	require.Equal(t, resp.Header.Get("X-Request-Id"), e.Error.RequestID)
}

// TestLocalRefusalsHaveTheErrorShape checks every kind of refusal of the storage host,
// ServeContent's own 416 included: the API's error shape with the answer's request id.
func TestLocalRefusalsHaveTheErrorShape(t *testing.T) {
	t.Parallel()
	b := setupLocal(t)
	ctx := context.Background()
	k, data := storagetest.Key(), storagetest.Bytes(100)
	require.NoError(t, b.blobs.Put(ctx, k, bytes.NewReader(data), 100))
	gu, err := b.blobs.PresignGet(ctx, k, time.Minute, domain.Download{Name: "a.bin"})
	require.NoError(t, err)
	missing, err := b.blobs.PresignGet(ctx, storagetest.Key(), time.Minute, domain.Download{})
	require.NoError(t, err)
	id, pu, h := storagetest.Open(t, b.blobs, storagetest.Key(), 10)

	for name, tc := range map[string]struct {
		do     func() (*http.Response, []byte)
		status int
		code   string
	}{
		"RangeNotSatisfiable": {func() (*http.Response, []byte) { return storagetest.Get(t, gu, "bytes=500-") }, http.StatusRequestedRangeNotSatisfiable, "invalid_request"},
		"NoSuchObject":        {func() (*http.Response, []byte) { return storagetest.Get(t, missing, "") }, http.StatusNotFound, "not_found"},
		"BadSignature":        {func() (*http.Response, []byte) { return storagetest.Get(t, storagetest.FlipSignature(t, gu), "") }, http.StatusForbidden, "forbidden"},
		"TooLarge":            {func() (*http.Response, []byte) { return storagetest.Put(t, pu, h, storagetest.Bytes(11), 11) }, http.StatusRequestEntityTooLarge, "payload_too_large"},
		"NoLength":            {func() (*http.Response, []byte) { return storagetest.Put(t, pu, h, storagetest.Bytes(10), -1) }, http.StatusLengthRequired, "invalid_request"},
		"WrongPath": {func() (*http.Response, []byte) {
			r, err := http.Get(b.url + "/elsewhere")
			require.NoError(t, err)
			defer r.Body.Close()
			body, _ := io.ReadAll(r.Body)
			return r, body
		}, http.StatusNotFound, "not_found"},
	} {
		resp, body := tc.do()
		require.Equal(t, tc.status, resp.StatusCode, "%s: %s", name, body)
		requireErrorBody(t, resp, body, tc.code)
		require.Empty(t, resp.Header.Get("Content-Disposition"), name)
	}
	// Ended: consumed.
	require.NoError(t, b.blobs.AbortUpload(ctx, storagetest.Key(), id)) // another key: not this upload
	resp, body := storagetest.Put(t, pu, h, storagetest.Bytes(10), 10)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	resp, body = storagetest.Put(t, pu, h, storagetest.Bytes(10), 10)
	require.Equal(t, http.StatusConflict, resp.StatusCode, "%s", body)
	requireErrorBody(t, resp, body, "upload_session_consumed")
}

// fileLocks counts the locks the kernel lists on the file at path: held, and waited for.
func fileLocks(t *testing.T, path string) (held, waiting int) {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		return 0, 0
	}
	ino := ":" + strconv.FormatUint(info.Sys().(*syscall.Stat_t).Ino, 10)
	raw, err := os.ReadFile("/proc/locks")
	require.NoError(t, err)
	for _, line := range strings.Split(string(raw), "\n") {
		f := strings.Fields(line)
		for i, w := range f {
			if strings.HasSuffix(w, ino) && strings.Count(w, ":") == 2 && i > 0 {
				if strings.Contains(line, "->") {
					waiting++
				} else {
					held++
				}
			}
		}
	}
	return held, waiting
}

// sendCut sends a PUT to u declaring size bytes, sends only the first half of data, ends
// its side of the connection as a client that goes away does, and answers the status.
func sendCut(t *testing.T, u string, data []byte) int {
	t.Helper()
	pu, err := url.Parse(u)
	require.NoError(t, err)
	conn, err := net.Dial("tcp", pu.Host)
	require.NoError(t, err)
	defer conn.Close()
	_, err = fmt.Fprintf(conn, "PUT %s HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\n", pu.RequestURI(), pu.Host, len(data))
	require.NoError(t, err)
	_, err = conn.Write(data[:len(data)/2])
	require.NoError(t, err)
	require.NoError(t, conn.(*net.TCPConn).CloseWrite())
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	resp.Body.Close()
	return resp.StatusCode
}

// Parts are written in place into one file that completion links as the object: no
// byte is copied, a part cut midway is no longer a part, and nothing is left behind.
func TestLocalMultipartInPlace(t *testing.T) {
	t.Parallel()
	b := setupLocal(t)
	ctx := context.Background()
	k := storagetest.Key()
	id, err := b.blobs.CreateUpload(ctx, k)
	require.NoError(t, err)
	parts := [][]byte{storagetest.Bytes(storagetest.PartSize), storagetest.Bytes(storagetest.PartSize), storagetest.Bytes(1000)}
	// Last part first: parts land in any order.
	e3 := storagetest.PutPart(t, b.blobs, k, id, 3, parts[2])
	e1 := storagetest.PutPart(t, b.blobs, k, id, 1, parts[0])
	e2 := storagetest.PutPart(t, b.blobs, k, id, 2, parts[1])

	// Part 2 again, cut half-way: its earlier bytes are gone, and so is the part.
	u2, err := b.blobs.PresignPart(ctx, k, id, 2, storagetest.PartSize, storagetest.PartSize, time.Minute)
	require.NoError(t, err)
	require.Equal(t, http.StatusBadRequest, sendCut(t, u2, storagetest.Bytes(storagetest.PartSize)))
	listed, err := b.blobs.ListParts(ctx, k, id)
	require.NoError(t, err)
	require.Equal(t, []domain.PartETag{{PartNumber: 1, ETag: e1}, {PartNumber: 3, ETag: e3}}, listed)
	given := []domain.PartETag{{PartNumber: 1, ETag: e1}, {PartNumber: 2, ETag: e2}, {PartNumber: 3, ETag: e3}}
	require.ErrorIs(t, b.blobs.CompleteMultipart(ctx, k, id, given), storage.ErrPartMismatch)

	// Sent again whole, it completes; the object is the very file the parts went into.
	given[1].ETag = storagetest.PutPart(t, b.blobs, k, id, 2, parts[1])
	require.NotEqual(t, e2, given[1].ETag, "each write of a part has an ETag of its own")
	staged, err := os.Stat(filepath.Join(b.dir, ".uploads", id, "data"))
	require.NoError(t, err)
	require.NoError(t, b.blobs.CompleteMultipart(ctx, k, id, given))
	stored, err := os.Stat(filepath.Join(b.dir, filepath.FromSlash(k)))
	require.NoError(t, err)
	require.True(t, os.SameFile(staged, stored), "completion links the parts' file, it does not copy it")
	got, err := os.ReadFile(filepath.Join(b.dir, filepath.FromSlash(k)))
	require.NoError(t, err)
	require.True(t, bytes.Equal(bytes.Join(parts, nil), got), "assembled object differs")
	entries, err := os.ReadDir(filepath.Join(b.dir, ".uploads"))
	require.NoError(t, err)
	require.Empty(t, entries)
	require.Empty(t, b.tempFiles(t))

	// An aborted upload leaves nothing, its cut part included.
	k2 := storagetest.Key()
	id2, err := b.blobs.CreateUpload(ctx, k2)
	require.NoError(t, err)
	storagetest.PutPart(t, b.blobs, k2, id2, 1, parts[0])
	u, err := b.blobs.PresignPart(ctx, k2, id2, 2, storagetest.PartSize, 1000, time.Minute)
	require.NoError(t, err)
	require.Equal(t, http.StatusBadRequest, sendCut(t, u, parts[2]))
	require.NoError(t, b.blobs.AbortUpload(ctx, k2, id2))
	entries, err = os.ReadDir(filepath.Join(b.dir, ".uploads"))
	require.NoError(t, err)
	require.Empty(t, entries)
	require.Empty(t, b.tempFiles(t))
	_, err = b.blobs.Stat(ctx, k2)
	require.ErrorIs(t, err, domain.ErrNotFound)
}

// A completion that arrives while a part is being written waits for it, and a part
// that arrives once the upload has ended writes nothing into the object.
func TestLocalMultipartCompleteWaitsForParts(t *testing.T) {
	t.Parallel()
	b := setupLocal(t)
	ctx := context.Background()
	k := storagetest.Key()
	id, err := b.blobs.CreateUpload(ctx, k)
	require.NoError(t, err)
	p1, p2 := storagetest.Bytes(storagetest.PartSize), storagetest.Bytes(1000)
	e1 := storagetest.PutPart(t, b.blobs, k, id, 1, p1)

	// Part 2 in flight: headers and half its body sent, the rest held back.
	u2, err := b.blobs.PresignPart(ctx, k, id, 2, storagetest.PartSize, int64(len(p2)), time.Minute)
	require.NoError(t, err)
	pr, pw := io.Pipe()
	req, err := http.NewRequest(http.MethodPut, u2, pr)
	require.NoError(t, err)
	req.ContentLength = int64(len(p2))
	put := make(chan *http.Response, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		put <- resp
	}()
	_, err = pw.Write(p2[:500])
	require.NoError(t, err)
	data := filepath.Join(b.dir, ".uploads", id, "data")
	eventually.True(t, "part 2 holds its range of the data file", func() bool {
		held, _ := fileLocks(t, data)
		return held == 1
	})

	// Completion names a part 2 that is not stored yet: it may only answer once the
	// part in flight has landed, and then its ETag is the one to give.
	done := make(chan error, 1)
	go func() {
		done <- b.blobs.CompleteMultipart(ctx, k, id, []domain.PartETag{{PartNumber: 1, ETag: e1}, {PartNumber: 2, ETag: e1}})
	}()
	eventually.True(t, "completion waits for part 2", func() bool {
		_, waiting := fileLocks(t, data)
		return waiting == 1
	})
	_, err = pw.Write(p2[500:])
	require.NoError(t, err)
	require.NoError(t, pw.Close())
	resp := <-put
	require.NotNil(t, resp)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.ErrorIs(t, <-done, storage.ErrPartMismatch)
	e2 := resp.Header.Get("ETag")
	require.NoError(t, b.blobs.CompleteMultipart(ctx, k, id, []domain.PartETag{{PartNumber: 1, ETag: e1}, {PartNumber: 2, ETag: e2}}))
	got, err := os.ReadFile(filepath.Join(b.dir, filepath.FromSlash(k)))
	require.NoError(t, err)
	require.True(t, bytes.Equal(append(p1, p2...), got))

	// Too late now: refused, the object unchanged.
	late, err := b.blobs.PresignPart(ctx, k, id, 2, storagetest.PartSize, int64(len(p2)), time.Minute)
	require.NoError(t, err)
	r2, body := storagetest.Put(t, late, nil, storagetest.Bytes(1000), 1000)
	require.Equal(t, http.StatusConflict, r2.StatusCode, "%s", body)
	got, err = os.ReadFile(filepath.Join(b.dir, filepath.FromSlash(k)))
	require.NoError(t, err)
	require.True(t, bytes.Equal(append(p1, p2...), got))
}

// PutFile links a file on the store's file system in (the object is the same file),
// copies one from another file system, and takes only a regular file of the stated size.
func TestLocalPutFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	l, err := storage.NewLocal(storage.LocalConfig{Dir: filepath.Join(dir, "store"), PublicURL: "http://127.0.0.1:1/",
		Secret: bytes.Repeat([]byte("k"), 32)})
	require.NoError(t, err)
	get := func(key string) string {
		rc, err := l.Get(ctx, key)
		require.NoError(t, err)
		defer rc.Close()
		b, err := io.ReadAll(rc)
		require.NoError(t, err)
		return string(b)
	}

	src := filepath.Join(dir, "out.json")
	require.NoError(t, os.WriteFile(src, []byte(`{"ok":true}`), 0o600))
	k := storagetest.Key()
	require.NoError(t, l.PutFile(ctx, k, src, 11))
	srcInfo, err := os.Stat(src)
	require.NoError(t, err)
	objInfo, err := os.Stat(filepath.Join(dir, "store", filepath.FromSlash(k)))
	require.NoError(t, err)
	require.True(t, os.SameFile(srcInfo, objInfo), "linked, not copied")
	require.NoError(t, os.Remove(src))
	require.Equal(t, `{"ok":true}`, get(k), "the object outlives the file's first name")

	link := filepath.Join(dir, "link")
	require.NoError(t, os.WriteFile(src, []byte("abc"), 0o600))
	require.NoError(t, os.Symlink(src, link))
	require.Error(t, l.PutFile(ctx, storagetest.Key(), link, 3), "a symbolic link is not taken")
	require.Error(t, l.PutFile(ctx, storagetest.Key(), src, 4), "nor a file of another size")

	// /dev/shm is another file system (tmpfs): no link across, the bytes are copied.
	shm, err := os.MkdirTemp("/dev/shm", "putfile-")
	require.NoError(t, err)
	defer os.RemoveAll(shm)
	far := filepath.Join(shm, "far.txt")
	require.NoError(t, os.WriteFile(far, []byte("far away"), 0o600))
	k2 := storagetest.Key()
	require.NoError(t, l.PutFile(ctx, k2, far, 8))
	farInfo, err := os.Stat(far)
	require.NoError(t, err)
	objInfo, err = os.Stat(filepath.Join(dir, "store", filepath.FromSlash(k2)))
	require.NoError(t, err)
	require.False(t, os.SameFile(farInfo, objInfo))
	require.Equal(t, "far away", get(k2))
}

// The traced store takes files only when the store under it does: a caller asking the
// wrapper learns what the store can do.
func TestTracedTakesFilesOnlyWhenItsStoreDoes(t *testing.T) {
	t.Parallel()
	l, err := storage.NewLocal(storage.LocalConfig{Dir: t.TempDir(), PublicURL: "http://127.0.0.1:1/", Secret: bytes.Repeat([]byte("k"), 32)})
	require.NoError(t, err)
	traced := storage.Traced(l)
	require.Implements(t, (*domain.FileBlobs)(nil), traced)
	require.Implements(t, (*domain.MultipartBlobs)(nil), traced)
	src := filepath.Join(t.TempDir(), "a.txt")
	require.NoError(t, os.WriteFile(src, []byte("abc"), 0o600))
	k := storagetest.Key()
	require.NoError(t, traced.(domain.FileBlobs).PutFile(context.Background(), k, src, 3))
	n, err := traced.Stat(context.Background(), k)
	require.NoError(t, err)
	require.EqualValues(t, 3, n)

	bytesOnly := struct {
		domain.Blobs
		domain.MultipartBlobs
	}{l, l}
	_, takesFiles := storage.Traced(bytesOnly).(domain.FileBlobs)
	require.False(t, takesFiles)
}
