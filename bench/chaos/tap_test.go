//go:build chaos

package chaos

import (
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// largeArtifact is the least request body a tap reports as an artifact upload: a body
// that takes tens of milliseconds to stream, so that a kill sent when its first bytes
// pass lands while the rest is still in the worker.
const largeArtifact = 4 << 20

// storageTap is a reverse proxy between one worker and MinIO. Through it the campaign
// sees an artifact upload under way, its body streaming from the worker, which is the
// moment a mid-upload kill is aimed at; and afterwards whether the body reached MinIO
// whole, so that a kill is counted as mid-upload by the bytes sent, not by timing.
type storageTap struct {
	worker int
	addr   string
	hub    *tapHub
}

// tapHub is what the workers' taps share: the campaign arms it to be told of the next
// large artifact upload, whichever worker makes it.
type tapHub struct {
	mu    sync.Mutex
	armed chan *upload
}

// upload is one large artifact PUT a tap passed on.
type upload struct {
	worker int
	job    string
	size   int64 // the request body's length
	sent   atomic.Int64
	once   sync.Once
	whole  bool          // the body ended complete; set before done is closed
	done   chan struct{} // closed once the body ended, complete or cut
}

// arm answers a channel that gets the next large artifact upload once its first bytes
// have passed.
func (h *tapHub) arm() <-chan *upload {
	ch := make(chan *upload, 1)
	h.mu.Lock()
	h.armed = ch
	h.mu.Unlock()
	return ch
}

func (h *tapHub) disarm() {
	h.mu.Lock()
	h.armed = nil
	h.mu.Unlock()
}

func (h *tapHub) streaming(u *upload) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.armed != nil {
		h.armed <- u
		h.armed = nil
	}
}

// startTap starts a tap for worker i in front of the MinIO at upstream.
func startTap(t testing.TB, hub *tapHub, i int, upstream string) *storageTap {
	t.Helper()
	target := &url.URL{Scheme: "http", Host: upstream}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy, tr.DisableCompression, tr.MaxIdleConnsPerHost = nil, true, 64
	tp := &storageTap{worker: i, addr: freeAddr(t), hub: hub}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			// The worker signed its request for the tap's address.
			r.Out.Host = r.In.Host
			if u := tp.artifactUpload(r.In); u != nil {
				r.Out.Body = &tapBody{ReadCloser: r.Out.Body, u: u, hub: hub}
			}
		},
		Transport: tr,
		// MinIO down: the worker's connection ends without an answer, as it would were
		// the worker talking to MinIO itself, rather than getting the tap's 502.
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, _ error) {
			if c, _, err := http.NewResponseController(w).Hijack(); err == nil {
				c.Close()
				return
			}
			w.WriteHeader(http.StatusBadGateway)
		},
		ErrorLog: log.New(io.Discard, "", 0),
	}
	ln, err := net.Listen("tcp", tp.addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: rp, ErrorLog: log.New(io.Discard, "", 0)}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	return tp
}

// artifactUpload answers the upload r is when it stores a large artifact (a whole
// object or one part of it), nil otherwise. Artifact keys are
// <bucket>/…/<file>/artifacts/<job>/<artifact>.
func (tp *storageTap) artifactUpload(r *http.Request) *upload {
	if r.Method != http.MethodPut || r.ContentLength < largeArtifact {
		return nil
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if len(parts) < 3 || parts[len(parts)-3] != "artifacts" {
		return nil
	}
	return &upload{worker: tp.worker, job: parts[len(parts)-2], size: r.ContentLength, done: make(chan struct{})}
}

// tapBody counts what passes of an upload's body and tells the hub when it starts.
type tapBody struct {
	io.ReadCloser
	u   *upload
	hub *tapHub
}

func (b *tapBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 && b.u.sent.Add(int64(n)) == int64(n) {
		b.hub.streaming(b.u)
	}
	if b.u.sent.Load() >= b.u.size {
		b.end()
	} else if err != nil {
		b.end() // the worker went away with the body unfinished
	}
	return n, err
}

func (b *tapBody) Close() error {
	b.end()
	return b.ReadCloser.Close()
}

func (b *tapBody) end() {
	b.u.once.Do(func() {
		b.u.whole = b.u.sent.Load() >= b.u.size
		close(b.u.done)
	})
}
