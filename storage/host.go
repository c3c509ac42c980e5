package storage

import (
	"crypto/hmac"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/filemill/filemill/domain"
)

// Handler is the storage host: it serves the URLs PresignPut, PresignPart and PresignGet
// mint, under {PublicURL}/o/. cmd runs it on its own listener.
func (l *Local) Handler() http.Handler { return http.HandlerFunc(l.serveHTTP) }

func (l *Local) serveHTTP(w http.ResponseWriter, r *http.Request) {
	// Browsers upload and download straight from the console; the URL itself is the
	// credential, so any origin may use it.
	h := w.Header()
	// Every answer, refusals included, names itself: quote it when asking for support.
	h.Set("X-Request-Id", domain.NewID(domain.PrefixRequest))
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Access-Control-Expose-Headers", "ETag, Content-Length, Content-Range, Content-Disposition, Accept-Ranges, X-Request-Id")
	if r.Method == http.MethodOptions {
		h.Set("Access-Control-Allow-Methods", "GET, HEAD, PUT")
		h.Set("Access-Control-Allow-Headers", "Content-Type, Range, If-Range, If-None-Match, If-Modified-Since")
		h.Set("Access-Control-Max-Age", "86400")
		w.WriteHeader(http.StatusNoContent)
		return
	}
	p := r.URL.EscapedPath()
	if l.basePath != "" && strings.HasPrefix(p, l.basePath+"/o/") {
		p = strings.TrimPrefix(p, l.basePath) // no proxy stripped the base path
	}
	escapedKey, ok := strings.CutPrefix(p, "/o/")
	if !ok {
		writeError(w, http.StatusNotFound, domain.CodeNotFound, "no such path on the storage host")
		return
	}
	g, err := l.verify(r, escapedKey)
	if err != nil {
		writeError(w, http.StatusForbidden, domain.CodeForbidden, err.Error())
		return
	}
	switch g.op {
	case opPut:
		l.servePut(w, r, g)
	case opPart:
		l.servePart(w, r, g)
	case opGet:
		l.serveGet(w, r, g)
	}
}

// verify returns the grant of a request whose URL is exactly one this host minted,
// unexpired, used with a method its operation allows.
func (l *Local) verify(r *http.Request, escapedKey string) (grant, error) {
	key, err := url.PathUnescape(escapedKey)
	if err != nil || checkKey(key) != nil {
		return grant{}, errBadURL
	}
	g, sig, err := parseGrant(key, r.URL.RawQuery)
	if err != nil {
		return grant{}, err
	}
	if "/o/"+escapedKey != g.path() || r.URL.RawQuery != g.query(sig) {
		return grant{}, errBadURL
	}
	if !hmac.Equal([]byte(sig), []byte(g.signature(l.secret))) {
		return grant{}, errors.New("the URL signature does not match")
	}
	if g.op == opGet && g.ctype != "" {
		if ct, ok := cleanMediaType(g.ctype); !ok || ct != g.ctype {
			return grant{}, errBadURL
		}
	}
	if l.now().After(time.Unix(g.exp, 0)) {
		return grant{}, errors.New("the URL has expired")
	}
	allowed := r.Method == http.MethodPut
	if g.op == opGet {
		allowed = r.Method == http.MethodGet || r.Method == http.MethodHead
	}
	if !allowed {
		return grant{}, fmt.Errorf("this URL does not allow %s", r.Method)
	}
	return g, nil
}

// checkLength refuses a body whose declared length is not the signed size, before
// reading any of it.
func checkLength(w http.ResponseWriter, r *http.Request, size int64) bool {
	switch {
	case r.ContentLength < 0:
		writeError(w, http.StatusLengthRequired, domain.CodeInvalidRequest, "Content-Length is required")
	case r.ContentLength > size:
		writeError(w, http.StatusRequestEntityTooLarge, domain.CodePayloadTooLarge,
			fmt.Sprintf("Content-Length %d exceeds the signed size %d", r.ContentLength, size))
	case r.ContentLength < size:
		writeError(w, http.StatusBadRequest, domain.CodeInvalidRequest,
			fmt.Sprintf("Content-Length %d is less than the signed size %d", r.ContentLength, size))
	default:
		return true
	}
	return false
}

// receive streams the body of a checked PUT into a temp file; on a short or long body
// it answers, removes the file and returns nil.
func (l *Local) receive(w http.ResponseWriter, r *http.Request, size int64) *written {
	wr, err := l.writeTemp(r.Body, size+1, true)
	if err != nil {
		l.answerWriteFailed(w, fmt.Errorf("receive %s: %w", r.URL.Path, err))
		return nil
	}
	if !bodySized(w, wr.n, size) {
		os.Remove(wr.path)
		return nil
	}
	return wr
}

// bodySized answers a body of n bytes that is not the signed size, and tells whether
// it is.
func bodySized(w http.ResponseWriter, n, size int64) bool {
	switch {
	case n > size:
		writeError(w, http.StatusRequestEntityTooLarge, domain.CodePayloadTooLarge, fmt.Sprintf("the body exceeds the signed size %d", size))
	case n < size:
		writeError(w, http.StatusBadRequest, domain.CodeInvalidRequest, fmt.Sprintf("the body ended after %d of %d bytes", n, size))
	default:
		return true
	}
	return false
}

// consumedMessage is the refusal of a PUT into an upload that has ended.
const consumedMessage = "this upload session has ended (completed, aborted or expired): it takes no more bytes"

// singleUseMessage is the refusal of a second PUT into a single-PUT upload.
const singleUseMessage = "the bytes of this upload have already been put: its URL is single-use"

// servePut stores the single PUT of an upload: the first whole body lands, and every
// later PUT, like any PUT once the upload has ended, answers 409 upload_session_consumed
// and writes nothing.
func (l *Local) servePut(w http.ResponseWriter, r *http.Request, g grant) {
	if !checkLength(w, r, g.size) {
		return
	}
	// Early answers for the common cases, so a late retry does not upload in vain; the
	// link into the upload's directory is what actually guarantees them.
	dir, err := l.uploadDir(g.key, g.upload)
	if err != nil {
		writeError(w, http.StatusConflict, domain.CodeUploadSessionConsumed, consumedMessage)
		return
	}
	if _, err := os.Lstat(filepath.Join(dir, singleObject)); err == nil {
		writeError(w, http.StatusConflict, domain.CodeUploadSessionConsumed, singleUseMessage)
		return
	}
	wr := l.receive(w, r, g.size)
	if wr == nil {
		return
	}
	// Link never overwrites, and fails once the directory was claimed by completion or
	// abort: of racing PUTs exactly one lands, and none after the upload ended.
	err = os.Link(wr.path, filepath.Join(dir, singleObject))
	os.Remove(wr.path)
	switch {
	case errors.Is(err, fs.ErrExist):
		writeError(w, http.StatusConflict, domain.CodeUploadSessionConsumed, singleUseMessage)
		return
	case errors.Is(err, fs.ErrNotExist):
		writeError(w, http.StatusConflict, domain.CodeUploadSessionConsumed, consumedMessage)
		return
	case err != nil:
		l.answerWriteFailed(w, fmt.Errorf("place %s: %w", g.key, err))
		return
	}
	syncDir(dir)
	w.Header().Set("ETag", objectETag(wr.info))
	w.WriteHeader(http.StatusOK)
}

// servePart writes one part of a multipart upload in place and answers its ETag.
func (l *Local) servePart(w http.ResponseWriter, r *http.Request, g grant) {
	if !checkLength(w, r, g.size) {
		return
	}
	if _, err := l.uploadDir(g.key, g.upload); err != nil {
		writeError(w, http.StatusConflict, domain.CodeUploadSessionConsumed, consumedMessage)
		return
	}
	etag, n, err := l.writePart(g.key, g.upload, g.part, g.off, g.size, r.Body)
	switch {
	case errors.Is(err, domain.ErrNotFound):
		writeError(w, http.StatusConflict, domain.CodeUploadSessionConsumed, consumedMessage)
		return
	case err != nil:
		l.answerWriteFailed(w, fmt.Errorf("write part %d of %s: %w", g.part, g.key, err))
		return
	case !bodySized(w, n, g.size):
		return
	}
	w.Header().Set("ETag", `"`+etag+`"`)
	w.WriteHeader(http.StatusOK)
}

// answerWriteFailed answers a PUT whose bytes could not be written (a full disk) with
// 503 dependency_unavailable and a plain sentence, and logs the cause.
func (l *Local) answerWriteFailed(w http.ResponseWriter, err error) {
	de := domain.AsError(l.writeFailed(err))
	w.Header().Set("Retry-After", strconv.Itoa(de.RetryAfter))
	writeError(w, http.StatusServiceUnavailable, de.Code, de.Message)
}

// serveGet serves the object with Range, conditional requests and HEAD (all from
// http.ServeContent), and reports the bytes sent through OnEgress.
func (l *Local) serveGet(w http.ResponseWriter, r *http.Request, g grant) {
	f, info, err := openObject(l.objectPath(g.key))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			writeError(w, http.StatusNotFound, domain.CodeNotFound, "no such object")
			return
		}
		writeError(w, http.StatusInternalServerError, domain.CodeInternal, "could not read the object")
		return
	}
	defer f.Close()
	h := w.Header()
	h.Set("ETag", objectETag(info))
	h.Set("Cache-Control", "private")
	// Uploaded bytes are not ours to vouch for: never let a browser sniff them into HTML.
	h.Set("X-Content-Type-Options", "nosniff")
	ct := g.ctype
	if ct == "" {
		ct = "application/octet-stream"
	}
	h.Set("Content-Type", ct)
	if g.name != "" {
		h.Set("Content-Disposition", contentDisposition(g.name))
	}
	if rng, ok := dropEmptyRanges(r.Header.Get("Range"), info.Size()); !ok {
		writeError(w, http.StatusRequestedRangeNotSatisfiable, domain.CodeInvalidRequest,
			fmt.Sprintf("the requested range is not satisfiable: the object has %d bytes", info.Size()))
		return
	} else if rng != r.Header.Get("Range") {
		r = r.Clone(r.Context())
		r.Header.Set("Range", rng)
	}
	cw := &countingWriter{ResponseWriter: w}
	http.ServeContent(cw, r, "", info.ModTime(), f)
	if cw.refused != 0 {
		// ServeContent's own refusals (416, 412) are plain text: answer them in the one
		// error shape instead.
		msg := "a precondition of the request failed"
		if cw.refused == http.StatusRequestedRangeNotSatisfiable {
			msg = fmt.Sprintf("the requested range is not satisfiable: the object has %d bytes", info.Size())
		}
		writeError(w, cw.refused, domain.CodeInvalidRequest, msg)
		return
	}
	if l.onEgress != nil && cw.n > 0 && (cw.status == http.StatusOK || cw.status == http.StatusPartialContent) {
		// Send the tail of the body before the callback, which may touch a database.
		_ = http.NewResponseController(cw).Flush()
		l.onEgress(g.key, cw.n)
	}
}

// dropEmptyRanges removes from a Range header the suffix ranges that select no byte
// ("-0", or any suffix of an empty object), which RFC 9110 calls unsatisfiable but
// http.ServeContent answers as 206 with a range that ends before it starts. ok is
// false when nothing else was asked: the whole request is unsatisfiable.
func dropEmptyRanges(rng string, size int64) (string, bool) {
	spec, isBytes := strings.CutPrefix(rng, "bytes=")
	if !isBytes {
		return rng, true
	}
	var kept []string
	dropped := false
	for _, item := range strings.Split(spec, ",") {
		suffix, isSuffix := strings.CutPrefix(strings.Trim(item, " \t"), "-")
		if n, err := strconv.ParseInt(strings.Trim(suffix, " \t"), 10, 64); isSuffix && err == nil && (n == 0 || size == 0) {
			dropped = true
			continue
		}
		kept = append(kept, item)
	}
	if !dropped {
		return rng, true
	}
	if strings.TrimSpace(strings.Join(kept, "")) == "" {
		return "", false
	}
	return "bytes=" + strings.Join(kept, ","), true
}

// contentDisposition names the download for every browser: filename carries an ASCII
// fallback, filename* the exact UTF-8 name (RFC 6266, RFC 8187).
func contentDisposition(name string) string {
	name = strings.ToValidUTF8(name, "_")
	var fallback, exact strings.Builder
	for _, c := range name {
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '%' {
			fallback.WriteByte('_')
		} else {
			fallback.WriteRune(c)
		}
	}
	const hexDigits = "0123456789ABCDEF"
	for _, b := range []byte(name) {
		if isAttrChar(b) {
			exact.WriteByte(b)
		} else {
			exact.WriteByte('%')
			exact.WriteByte(hexDigits[b>>4])
			exact.WriteByte(hexDigits[b&15])
		}
	}
	return `attachment; filename="` + fallback.String() + `"; filename*=UTF-8''` + exact.String()
}

// isAttrChar reports the characters RFC 8187 allows unescaped in an ext-value.
func isAttrChar(b byte) bool {
	switch {
	case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9':
		return true
	}
	return strings.IndexByte("!#$&+-.^_`|~", b) >= 0
}

// countingWriter counts the body bytes written to a response. An error status is held
// back, with its body, for the caller to answer in the error shape (refused).
type countingWriter struct {
	http.ResponseWriter
	n       int64
	status  int
	refused int
}

func (c *countingWriter) WriteHeader(status int) {
	if c.status == 0 {
		c.status = status
	}
	if status >= 400 {
		c.refused = status
		return
	}
	c.ResponseWriter.WriteHeader(status)
}

func (c *countingWriter) Write(p []byte) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	if c.refused != 0 {
		return len(p), nil
	}
	n, err := c.ResponseWriter.Write(p)
	c.n += int64(n)
	return n, err
}

// ReadFrom keeps the response's sendfile path for file bodies while counting.
func (c *countingWriter) ReadFrom(r io.Reader) (int64, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	if c.refused != 0 {
		return io.Copy(io.Discard, r)
	}
	n, err := io.Copy(c.ResponseWriter, r)
	c.n += n
	return n, err
}

// Unwrap lets http.ResponseController reach the real writer.
func (c *countingWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// writeError answers the error shape of the API, with the request id serveHTTP gave
// the answer.
func writeError(w http.ResponseWriter, status int, code, message string) {
	h := w.Header()
	h.Del("ETag")
	h.Del("Content-Disposition")
	h.Del("Content-Length")
	h.Del("Last-Modified")
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": code, "message": message,
		"request_id": h.Get("X-Request-Id")}})
}
