package listener

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/filemill/filemill/domain"
)

// ErrBodyTooSlow is what a handler reading a body that stopped keeping its pace gets.
var ErrBodyTooSlow = errors.New("the request body arrived too slowly")

// drainLimit is how much of a body a handler left unread is read before its answer,
// net/http's own figure: beyond it the connection is closed after the answer instead.
const drainLimit = 256 << 10

// guardBodies bounds the reading of every request body h gets (see the package doc);
// slow is told of each body cut.
func guardBodies(h http.Handler, c Config, slow func(r *http.Request, read int64)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			h.ServeHTTP(w, r)
			return
		}
		b := &guardedBody{src: r.Body, rc: http.NewResponseController(w), c: &c, start: c.Now()}
		if err := b.rc.SetReadDeadline(b.deadline(b.start)); err != nil {
			// A writer without a connection beneath (a test recorder): nothing to bound.
			h.ServeHTTP(w, r)
			return
		}
		gw := &guardedWriter{ResponseWriter: w, body: b}
		b.w, b.slow, b.req = gw, slow, r
		// A copy: net/http looks at the request it made (its body's type) after the
		// handler, and must find its own.
		r = r.WithContext(r.Context())
		r.Body = b
		h.ServeHTTP(gw, r)
	})
}

// guardedBody is a request body whose every read has a deadline by the rule.
type guardedBody struct {
	src   io.ReadCloser
	rc    *http.ResponseController
	c     *Config
	start time.Time
	read  int64
	asked bool  // the handler read from the body
	ended bool  // the body's end was read
	err   error // ErrBodyTooSlow once cut
	w     *guardedWriter
	req   *http.Request
	slow  func(r *http.Request, read int64)
}

// deadline is when the next read must have brought bytes: BodyReadTimeout from now,
// and never later than the body's start plus the grace plus the time its bytes so far
// buy at MinBodyRate.
func (b *guardedBody) deadline(now time.Time) time.Time {
	d := now.Add(b.c.BodyReadTimeout)
	if b.c.MinBodyRate > 0 {
		// The time the bytes so far buy, capped so a huge body cannot overflow a Duration.
		credit := min(float64(b.read)/float64(b.c.MinBodyRate), 1e9)
		if byRate := b.start.Add(b.c.BodyReadTimeout + time.Duration(credit*float64(time.Second))); byRate.Before(d) {
			d = byRate
		}
	}
	return d
}

func (b *guardedBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	b.asked = true
	n, err := b.src.Read(p)
	b.read += int64(n)
	switch {
	case err == nil:
		// More is to come. Never after the end: net/http then reads the connection in
		// the background, and a deadline would end that read and the request's context.
		_ = b.rc.SetReadDeadline(b.deadline(b.c.Now()))
	case err == io.EOF:
		b.ended = true
	case errors.Is(err, os.ErrDeadlineExceeded):
		b.err = fmt.Errorf("%w (%d bytes in %s)", ErrBodyTooSlow, b.read, b.c.Now().Sub(b.start).Round(time.Millisecond))
		b.answer()
		return n, b.err
	}
	return n, err
}

func (b *guardedBody) Close() error { return b.src.Close() }

// answer sends 408 when no answer has begun; either way the connection is closed
// after the request, as what is left of the body cannot be told from a next request.
func (b *guardedBody) answer() {
	if b.slow != nil {
		b.slow(b.req, b.read)
	}
	w := b.w
	if w.wrote {
		return
	}
	w.wrote, w.answered = true, true
	h := w.ResponseWriter.Header()
	id := h.Get("X-Request-Id")
	if id == "" {
		id = domain.NewID(domain.PrefixRequest)
		h.Set("X-Request-Id", id)
	}
	msg := fmt.Sprintf("the request body stopped arriving: each part must come within %s", b.c.BodyReadTimeout)
	if b.c.MinBodyRate > 0 {
		msg += fmt.Sprintf(", and after the first %s the body must average %d bytes a second", b.c.BodyReadTimeout, b.c.MinBodyRate)
	}
	body, _ := json.Marshal(map[string]any{"error": map[string]string{"code": domain.CodeRequestTimeout,
		"message": msg, "request_id": id}})
	for _, k := range []string{"Content-Length", "Content-Encoding", "ETag", "Last-Modified", "Content-Disposition"} {
		h.Del(k)
	}
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)+1))
	h.Set("Cache-Control", "no-store")
	h.Set("Connection", "close")
	w.ResponseWriter.WriteHeader(http.StatusRequestTimeout)
	_, _ = w.ResponseWriter.Write(append(body, '\n'))
}

// drain reads what the handler left of the body, up to drainLimit, through the rule,
// before its answer begins. A client waiting for 100 Continue before it sends the
// body is not asked for it: net/http answers and closes the connection instead.
func (b *guardedBody) drain() {
	if b.ended || b.err != nil {
		return
	}
	if !b.asked && strings.EqualFold(b.req.Header.Get("Expect"), "100-continue") {
		return
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(b, drainLimit))
}

// guardedWriter lets the 408 take the place of the handler's answer: before the
// handler's first write the body is drained by the rule, and once a 408 went out the
// handler's own answer is dropped.
type guardedWriter struct {
	http.ResponseWriter
	body     *guardedBody
	wrote    bool // an answer has begun
	answered bool // it is the 408
}

// begin is called before every write; false when the 408 took the answer's place.
func (w *guardedWriter) begin() bool {
	if !w.wrote {
		w.body.drain()
		w.wrote = true
	}
	return !w.answered
}

func (w *guardedWriter) WriteHeader(code int) {
	if code >= 100 && code < 200 { // informational: the answer has not begun
		w.ResponseWriter.WriteHeader(code)
		return
	}
	if w.begin() {
		w.ResponseWriter.WriteHeader(code)
	}
}

func (w *guardedWriter) Write(p []byte) (int, error) {
	if !w.begin() {
		return 0, w.body.err
	}
	return w.ResponseWriter.Write(p)
}

func (w *guardedWriter) Flush() {
	if w.begin() {
		_ = http.NewResponseController(w.ResponseWriter).Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *guardedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
