package web

import (
	"bytes"
	"compress/gzip"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

func serve(t *testing.T, h *Handler, method, path string) *http.Response {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/console", h.ServeConsole)
	mux.HandleFunc("/console/", h.ServeConsole)
	mux.HandleFunc("GET /graphql/play", h.ServePlayground)
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	return rec.Result()
}

func body(t *testing.T, r *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(r.Body)
	require.NoError(t, err)
	return string(b)
}

// anAsset is the path of one built, content-hashed script.
func anAsset(t *testing.T, h *Handler) string {
	t.Helper()
	m, err := fs.Glob(h.files, "assets/index-*.js")
	require.NoError(t, err)
	require.NotEmpty(t, m, "web/dist holds the built console")
	return m[0]
}

func TestEveryConsolePathServesTheApp(t *testing.T) {
	h := New(Config{StorageOrigins: []string{"http://127.0.0.1:8081"}})
	for _, path := range []string{"/console/", "/console/jobs", "/console/jobs/job_01ABC?state=failed", "/console/files/file_1/ai-ready", "/console/index.html"} {
		r := serve(t, h, "GET", path)
		require.Equal(t, 200, r.StatusCode, path)
		require.Equal(t, "text/html; charset=utf-8", r.Header.Get("Content-Type"))
		require.Equal(t, "no-cache", r.Header.Get("Cache-Control"), "a page is revalidated, so a new build shows at once")
		require.Contains(t, body(t, r), `<div id="root">`)
	}
	r := serve(t, h, "GET", "/console")
	require.Equal(t, http.StatusMovedPermanently, r.StatusCode)
	require.Equal(t, "/console/", r.Header.Get("Location"))
	require.Equal(t, http.StatusMethodNotAllowed, serve(t, h, "POST", "/console/jobs").StatusCode)
}

func TestAssetsAreImmutableAndMissingOnesAreNotTheApp(t *testing.T) {
	h := New(Config{})
	r := serve(t, h, "GET", "/console/"+anAsset(t, h))
	require.Equal(t, 200, r.StatusCode)
	require.Equal(t, "public, max-age=31536000, immutable", r.Header.Get("Cache-Control"))
	require.Contains(t, r.Header.Get("Content-Type"), "javascript")

	r = serve(t, h, "GET", "/console/assets/index-gone.js")
	require.Equal(t, 404, r.StatusCode)
	require.NotContains(t, body(t, r), "<div id=\"root\">")

	r = serve(t, h, "GET", "/console/favicon.svg")
	require.Equal(t, 200, r.StatusCode)
	require.Equal(t, "public, max-age=3600", r.Header.Get("Cache-Control"))
}

func TestPagesCarryAStrictContentSecurityPolicy(t *testing.T) {
	h := New(Config{StorageOrigins: []string{"http://127.0.0.1:8081", "https://*.s3.example.com", "bad; script-src *"}})
	for _, path := range []string{"/console/", "/graphql/play"} {
		r := serve(t, h, "GET", path)
		require.Equal(t, 200, r.StatusCode, path)
		csp := r.Header.Get("Content-Security-Policy")
		require.Contains(t, csp, "default-src 'none'")
		require.Contains(t, csp, "script-src 'self';", "no inline or foreign script")
		require.Contains(t, csp, "connect-src 'self' http://127.0.0.1:8081 https://*.s3.example.com;", "uploads reach storage")
		require.Contains(t, csp, "frame-ancestors 'none'")
		require.NotContains(t, csp, "unsafe")
		require.NotContains(t, csp, "bad", "an origin that would break the policy is left out")
		require.Equal(t, "nosniff", r.Header.Get("X-Content-Type-Options"))
		require.Equal(t, "same-origin", r.Header.Get("Referrer-Policy"))
	}
}

// The built pages load only their own files: no inline script (the policy would refuse
// it) and nothing from another host (the playground works offline).
func TestBuiltPagesLoadNothingFromElsewhere(t *testing.T) {
	h := New(Config{})
	script := regexp.MustCompile(`<script[^>]*>`)
	for _, page := range []string{"index.html", "play.html"} {
		b, err := fs.ReadFile(h.files, page)
		require.NoError(t, err)
		for _, tag := range script.FindAllString(string(b), -1) {
			require.Regexp(t, `src="/console/assets/[^"]+\.js"`, tag, "%s: only our own script files", page)
		}
		require.NotRegexp(t, `(src|href)="(https?:)?//`, string(b), "%s loads nothing from another host", page)
	}
	assets, err := fs.Glob(h.files, "assets/*")
	require.NoError(t, err)
	for _, a := range assets {
		b, err := fs.ReadFile(h.files, a)
		require.NoError(t, err)
		require.NotRegexp(t, `(unpkg\.com|jsdelivr|cdnjs|googleapis)`, string(b), "%s names no CDN", a)
	}
	r := serve(t, h, "GET", "/graphql/play")
	require.Contains(t, body(t, r), "/console/assets/play-")
}

func TestWantsHTML(t *testing.T) {
	for accept, want := range map[string]bool{
		"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8": true,
		"TEXT/HTML":        true,
		"application/json": false,
		"*/*":              false,
		"":                 false,
	} {
		r := httptest.NewRequest("GET", "/", nil)
		if accept != "" {
			r.Header.Set("Accept", accept)
		}
		require.Equal(t, want, WantsHTML(r), accept)
	}
}

// TestScriptsGoGzippedToBrowsersThatTakeIt: a browser's request gets the script gzipped
// (far smaller, the same bytes once decoded, typed as a script); a client that does not
// ask for gzip, or refuses it, gets it as it is.
func TestScriptsGoGzippedToBrowsersThatTakeIt(t *testing.T) {
	h := New(Config{})
	name := "/console/" + anAsset(t, h)
	get := func(accept string) *http.Response {
		req := httptest.NewRequest("GET", name, nil)
		if accept != "" {
			req.Header.Set("Accept-Encoding", accept)
		}
		rec := httptest.NewRecorder()
		h.ServeConsole(rec, req)
		return rec.Result()
	}
	plain := get("")
	raw := body(t, plain)
	require.Empty(t, plain.Header.Get("Content-Encoding"))
	require.Contains(t, plain.Header.Values("Vary"), "Accept-Encoding")
	for _, accept := range []string{"gzip, deflate, br, zstd", "br;q=1.0, gzip;q=0.8", "*"} {
		r := get(accept)
		require.Equal(t, 200, r.StatusCode, accept)
		require.Equal(t, "gzip", r.Header.Get("Content-Encoding"), accept)
		require.Equal(t, "text/javascript; charset=utf-8", r.Header.Get("Content-Type"))
		require.Equal(t, "public, max-age=31536000, immutable", r.Header.Get("Cache-Control"))
		require.Contains(t, r.Header.Values("Vary"), "Accept-Encoding")
		zipped, err := io.ReadAll(r.Body)
		require.NoError(t, err)
		require.Less(t, len(zipped), len(raw)/2, accept)
		zr, err := gzip.NewReader(bytes.NewReader(zipped))
		require.NoError(t, err)
		decoded, err := io.ReadAll(zr)
		require.NoError(t, err)
		require.Equal(t, raw, string(decoded), accept)
	}
	for _, accept := range []string{"identity", "gzip;q=0", "*;q=0", "br"} {
		require.Empty(t, get(accept).Header.Get("Content-Encoding"), accept)
	}
}
