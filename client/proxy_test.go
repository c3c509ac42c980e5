package client_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// faultProxy is a reverse proxy in front of a real deployment that injects the
// failures the SDK must ride out: an answer of its own instead of the server's, a
// connection dropped after the server did the work, websocket upgrades refused.
type faultProxy struct {
	srv *httptest.Server
	rp  *httputil.ReverseProxy

	mu             sync.Mutex
	faults         []fault
	seen           []seenRequest
	refuseUpgrades bool
	upgrades       int // websocket upgrades let through
	refused        int // websocket upgrades refused
}

type faultKind int

const (
	// unavailable answers 503 dependency_unavailable without reaching the server.
	unavailable faultKind = iota
	// drop lets the server do the work, then closes the connection unanswered.
	drop
)

type fault struct {
	method, path string
	kind         faultKind
}

// seenRequest is a request that reached the proxy.
type seenRequest struct {
	Method, Path, IdempotencyKey string
}

func newFaultProxy(t *testing.T, target string) *faultProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{rp: httputil.NewSingleHostReverseProxy(u)}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *faultProxy) URL() string { return p.srv.URL }

// inject queues faults; each applies once, to the next request of its method and path.
func (p *faultProxy) inject(f ...fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults = append(p.faults, f...)
}

func (p *faultProxy) setRefuseUpgrades(v bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refuseUpgrades = v
}

// requests answers the requests seen of a method whose path starts with prefix.
func (p *faultProxy) requests(method, prefix string) []seenRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []seenRequest
	for _, s := range p.seen {
		if s.Method == method && strings.HasPrefix(s.Path, prefix) {
			out = append(out, s)
		}
	}
	return out
}

func (p *faultProxy) counts() (upgrades, refused int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.upgrades, p.refused
}

func (p *faultProxy) serve(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	if strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		refuse := p.refuseUpgrades
		if refuse {
			p.refused++
		} else {
			p.upgrades++
		}
		p.mu.Unlock()
		if refuse {
			http.Error(w, "websockets are not allowed through this proxy", http.StatusForbidden)
			return
		}
		p.rp.ServeHTTP(w, r)
		return
	}
	p.seen = append(p.seen, seenRequest{Method: r.Method, Path: r.URL.Path, IdempotencyKey: r.Header.Get("Idempotency-Key")})
	var f *fault
	for i := range p.faults {
		if p.faults[i].method == r.Method && p.faults[i].path == r.URL.Path {
			x := p.faults[i]
			f = &x
			p.faults = append(p.faults[:i], p.faults[i+1:]...)
			break
		}
	}
	p.mu.Unlock()
	switch {
	case f == nil:
		p.rp.ServeHTTP(w, r)
	case f.kind == unavailable:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `{"error":{"code":"dependency_unavailable","message":"injected by the test proxy","request_id":"req_01JD8X6Q2V9W3Z4Y5A6B7C8D9E"}}`)
	case f.kind == drop:
		// The server answers, the client never hears it.
		p.rp.ServeHTTP(httptest.NewRecorder(), r)
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
	}
}
