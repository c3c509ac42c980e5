package web

import (
	"bytes"
	"compress/gzip"
	"embed"
	"io/fs"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"
)

//go:embed all:dist
var dist embed.FS

// Prefix is where the console is served.
const Prefix = "/console/"

// Config holds what the pages' Content-Security-Policy must allow besides their own
// origin.
type Config struct {
	// StorageOrigins are the origins of the storage host the browser uploads to and
	// downloads from through pre-signed URLs (scheme://host[:port]; a leading *. on the
	// host for virtual-hosted buckets).
	StorageOrigins []string
}

// Handler serves the console's files and the playground page.
type Handler struct {
	files fs.FS
	index []byte
	play  []byte
	csp   string
	// gz holds each compressible file gzipped, made on first request: the files never
	// change in a running binary. A nil entry: compressing did not make it smaller.
	gz sync.Map // name → []byte
}

// New returns the handler over the embedded build.
func New(cfg Config) *Handler {
	files, err := fs.Sub(dist, "dist")
	if err != nil {
		panic(err) // the embed pattern guarantees dist/
	}
	index, _ := fs.ReadFile(files, "index.html")
	play, _ := fs.ReadFile(files, "play.html")
	return &Handler{files: files, index: index, play: play, csp: contentSecurityPolicy(cfg.StorageOrigins)}
}

// contentSecurityPolicy allows only the console's own scripts and styles (no inline
// script), connections to its own origin and the storage host, and images from both.
func contentSecurityPolicy(storage []string) string {
	extra := ""
	for _, o := range storage {
		if o = strings.TrimSpace(o); o != "" && !strings.ContainsAny(o, " ;,'\"") {
			extra += " " + o
		}
	}
	return "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:" + extra +
		"; connect-src 'self'" + extra + "; font-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
}

func (h *Handler) secure(w http.ResponseWriter) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", h.csp)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("X-Frame-Options", "DENY")
	// Pre-signed URLs carry their signature in the query: never leak a page's URL.
	hd.Set("Referrer-Policy", "same-origin")
}

// ServeConsole answers GET and HEAD under /console/: an asset by its path (hashed
// assets cached for good), and index.html for every other path, so each screen's URL
// loads the app (which reads the path). /console redirects to /console/.
func (h *Handler) ServeConsole(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if r.URL.Path == strings.TrimSuffix(Prefix, "/") {
		http.Redirect(w, r, Prefix, http.StatusMovedPermanently)
		return
	}
	name := strings.TrimPrefix(path.Clean(r.URL.Path), strings.TrimSuffix(Prefix, "/"))
	name = strings.TrimPrefix(name, "/")
	h.secure(w)
	if name != "" && name != "index.html" && name != "play.html" {
		if st, err := fs.Stat(h.files, name); err == nil && !st.IsDir() {
			if strings.HasPrefix(name, "assets/") {
				// Content-hashed names: a new build has new names.
				w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
			} else {
				w.Header().Set("Cache-Control", "public, max-age=3600")
			}
			w.Header().Add("Vary", "Accept-Encoding")
			if gz := h.gzipped(name); gz != nil && acceptsGzip(r) {
				// The scripts are most of a first load: sent gzipped they are a quarter.
				w.Header().Set("Content-Encoding", "gzip")
				if ct := contentTypes[path.Ext(name)]; ct != "" {
					w.Header().Set("Content-Type", ct)
				}
				w.Header().Set("Content-Length", strconv.Itoa(len(gz)))
				http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(gz))
				return
			}
			http.ServeFileFS(w, r, h.files, name)
			return
		}
		if strings.HasPrefix(name, "assets/") {
			// A missing asset is a 404, never the app: a stale page must not run HTML as script.
			w.Header().Set("Cache-Control", "no-store")
			http.NotFound(w, r)
			return
		}
	}
	h.page(w, r, h.index)
}

// contentTypes are the compressible files' types (ServeContent would otherwise sniff the
// gzipped bytes).
var contentTypes = map[string]string{
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".svg":  "image/svg+xml",
	".json": "application/json",
	".map":  "application/json",
	".txt":  "text/plain; charset=utf-8",
}

// gzipped returns name's bytes gzipped, or nil when it is not a compressible type or
// compressing does not make it smaller.
func (h *Handler) gzipped(name string) []byte {
	if contentTypes[path.Ext(name)] == "" {
		return nil
	}
	if v, ok := h.gz.Load(name); ok {
		return v.([]byte)
	}
	raw, err := fs.ReadFile(h.files, name)
	if err != nil {
		return nil
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	_, _ = zw.Write(raw)
	_ = zw.Close()
	var gz []byte
	if buf.Len() < len(raw) {
		gz = buf.Bytes()
	}
	h.gz.Store(name, gz)
	return gz
}

// acceptsGzip reports whether the request's Accept-Encoding allows gzip (named without
// q=0, or * without q=0 when gzip is not named).
func acceptsGzip(r *http.Request) bool {
	star := false
	for _, v := range r.Header.Values("Accept-Encoding") {
		for _, part := range strings.Split(v, ",") {
			coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
			q := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
			refused := q == "q=0" || q == "q=0.0" || q == "q=0.00" || q == "q=0.000"
			switch strings.ToLower(strings.TrimSpace(coding)) {
			case "gzip", "x-gzip":
				return !refused
			case "*":
				star = !refused
			}
		}
	}
	return star
}

// ServePlayground answers GET /graphql/play with the playground page.
func (h *Handler) ServePlayground(w http.ResponseWriter, r *http.Request) {
	h.secure(w)
	h.page(w, r, h.play)
}

func (h *Handler) page(w http.ResponseWriter, r *http.Request, body []byte) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	// Always revalidated, so a new binary's assets are picked up at once.
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

// WantsHTML reports whether a request comes from a browser navigating (Accept names
// text/html), as opposed to an API client.
func WantsHTML(r *http.Request) bool {
	for _, a := range r.Header.Values("Accept") {
		for _, part := range strings.Split(a, ",") {
			mt, _, _ := strings.Cut(strings.TrimSpace(part), ";")
			if strings.EqualFold(strings.TrimSpace(mt), "text/html") {
				return true
			}
		}
	}
	return false
}
