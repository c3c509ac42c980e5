package storage_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/internal/hostile"
	"github.com/filemill/filemill/storage"
)

// fuzzHost is a Local backend whose storage host is called in process, on a clock that
// never moves, holding one object.
type fuzzHost struct {
	blobs   *storage.Local
	base    string
	key     string
	data    []byte
	egress  int64
	egressN int
}

const fuzzBase = "http://files.example:8081"

func newFuzzHost(f *testing.F, size int) *fuzzHost {
	h := &fuzzHost{base: fuzzBase, key: "org/obj/data.bin", data: make([]byte, size)}
	for i := range h.data {
		h.data[i] = byte(i*7 + i/251)
	}
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	var err error
	h.blobs, err = storage.NewLocal(storage.LocalConfig{Dir: f.TempDir(), PublicURL: h.base, Secret: bytes.Repeat([]byte("k"), 32),
		Now: func() time.Time { return now }, OnEgress: func(_ string, n int64) { h.egress += n; h.egressN++ }})
	if err != nil {
		f.Fatal(err)
	}
	if err := h.blobs.Put(context.Background(), h.key, bytes.NewReader(h.data), int64(size)); err != nil {
		f.Fatal(err)
	}
	return h
}

// serve sends a request for target (path and query) through the storage host as a
// server would have read it from the wire; nil when no server would have read it.
func (h *fuzzHost) serve(method, target string, header http.Header) *httptest.ResponseRecorder {
	raw := method + " " + target + " HTTP/1.1\r\nHost: files.example:8081\r\n\r\n"
	req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(raw)))
	if err != nil {
		return nil
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	h.egress, h.egressN = 0, 0
	rec := httptest.NewRecorder()
	h.blobs.Handler().ServeHTTP(rec, req)
	return rec
}

// errorShape checks an answer is the API's error shape with code.
func errorShape(t *testing.T, rec *httptest.ResponseRecorder, code string) {
	t.Helper()
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("%d answered as %q: %q", rec.Code, ct, rec.Body.Bytes())
	}
	var e struct {
		Error struct {
			Code, Message string
			RequestID     string `json:"request_id"`
		}
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error.Code != code || e.Error.Message == "" ||
		e.Error.RequestID != rec.Header().Get("X-Request-Id") {
		t.Fatalf("%d answered %q, not %s in the error shape (%v)", rec.Code, rec.Body.Bytes(), code, err)
	}
}

// contentRange reads "bytes first-last/size".
func contentRange(t *testing.T, v string, size int) (int, int) {
	t.Helper()
	var first, last, total int
	if n, err := fmt.Sscanf(v, "bytes %d-%d/%d", &first, &last, &total); n != 3 || err != nil ||
		total != size || first < 0 || last < first || last >= size {
		t.Fatalf("Content-Range %q of %d bytes", v, size)
	}
	return first, last
}

// FuzzRangeHeader: whatever Range and If-Range a download sends, the storage host
// answers the whole object, exactly the bytes the ranges name (one part, or each part of
// a multipart answer), or 416 in the API's error shape; a precondition it cannot meet
// is 412 or 304; the bytes it reports through OnEgress are the bytes it sent.
func FuzzRangeHeader(f *testing.F) {
	h := newFuzzHost(f, 10_000)
	u, err := h.blobs.PresignGet(context.Background(), h.key, time.Hour, domain.Download{Name: "data.bin"})
	if err != nil {
		f.Fatal(err)
	}
	target := strings.TrimPrefix(u, h.base)
	for _, s := range []string{"bytes=0-99", "bytes=-10", "bytes=9990-", "bytes=0-0,2-3,-1", "bytes=10000-", "bytes=-0",
		"bytes=5-4", "bytes= 1 - 2 ", "items=0-1", "bytes=0-1,0-1,0-1,0-1", "bytes=18446744073709551616-", "bytes=-99999999999",
		"bytes=0-9223372036854775807", "bytes=,,,", "bytes=1-2,", "bytes=" + strings.Repeat("0-,", 300)} {
		f.Add(s, "", false)
	}
	f.Add("bytes=0-1", `"wrong"`, false)
	f.Add("bytes=0-1", "Mon, 02 Jan 2006 15:04:05 GMT", true)
	f.Fuzz(func(t *testing.T, rng, ifRange string, head bool) {
		hdr := http.Header{}
		for _, v := range []string{rng, ifRange} {
			if strings.ContainsAny(v, "\r\n\x00") {
				return // no server reads such a header line
			}
		}
		hdr.Set("Range", rng)
		if ifRange != "" {
			hdr.Set("If-Range", ifRange)
		}
		method := http.MethodGet
		if head {
			method = http.MethodHead
		}
		var rec *httptest.ResponseRecorder
		alloc := hostile.Allocated(func() { rec = h.serve(method, target, hdr) })
		if limit := uint64(hostile.Slack + 64*(len(rng)+len(ifRange)) + 4*len(h.data)); alloc > limit {
			t.Fatalf("Range %q: %d bytes allocated", rng, alloc)
		}
		body := rec.Body.Bytes()
		if head && rec.Code < 300 && len(body) > 0 {
			t.Fatalf("HEAD answered %d bytes", len(body))
		}
		switch rec.Code {
		case http.StatusOK:
			if !head && !bytes.Equal(body, h.data) {
				t.Fatalf("Range %q: 200 with %d bytes", rng, len(body))
			}
		case http.StatusPartialContent:
			if head {
				break
			}
			mt, params, _ := mime.ParseMediaType(rec.Header().Get("Content-Type"))
			if mt != "multipart/byteranges" {
				first, last := contentRange(t, rec.Header().Get("Content-Range"), len(h.data))
				if !bytes.Equal(body, h.data[first:last+1]) {
					t.Fatalf("Range %q: 206 %s with other bytes", rng, rec.Header().Get("Content-Range"))
				}
				break
			}
			mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
			parts := 0
			for {
				p, err := mr.NextPart()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("Range %q: multipart answer: %v", rng, err)
				}
				first, last := contentRange(t, p.Header.Get("Content-Range"), len(h.data))
				got, _ := io.ReadAll(p)
				if !bytes.Equal(got, h.data[first:last+1]) {
					t.Fatalf("Range %q: part %s with other bytes", rng, p.Header.Get("Content-Range"))
				}
				parts++
			}
			if parts < 2 {
				t.Fatalf("Range %q: a multipart answer of %d parts", rng, parts)
			}
		case http.StatusRequestedRangeNotSatisfiable:
			errorShape(t, rec, domain.CodeInvalidRequest)
		case http.StatusPreconditionFailed, http.StatusNotModified:
		default:
			t.Fatalf("Range %q, If-Range %q: answered %d %q", rng, ifRange, rec.Code, body)
		}
		if rec.Code < 300 && !head && (h.egressN != 1 || h.egress != int64(len(body))) {
			t.Fatalf("Range %q: sent %d bytes, reported %d in %d calls", rng, len(body), h.egress, h.egressN)
		}
		if rec.Code >= 400 && h.egressN != 0 {
			t.Fatalf("Range %q: a refusal reported %d bytes sent", rng, h.egress)
		}
	})
}

// FuzzSignedURL: a download URL minted for any key, name and type the backend accepts
// verifies, and serves that name and type (the name readable back from
// Content-Disposition, exactly as given where it is UTF-8); the same URL with any byte
// changed, added or removed is refused (403 in the error shape, or 404 when it no
// longer names the storage host's paths) and serves nothing.
func FuzzSignedURL(f *testing.F) {
	h := newFuzzHost(f, 100)
	f.Add("org/obj/data.bin", "Grüße, \"Welt\".pdf", "application/pdf", uint16(40), byte(1), uint8(0))
	f.Add("a b/c%2F", "x\r\nSet-Cookie: a=b", "text/plain; charset=utf-8", uint16(3), byte(0x20), uint8(1))
	f.Add("org/obj/data.bin", "\xff\xfe.txt", `text/plain; a="\"";b*=UTF-8''%e2%82%ac`, uint16(100), byte('%'), uint8(2))
	f.Add("日本/語", "", "", uint16(0), byte(0), uint8(0))
	f.Add("../x", "a", "nonsense", uint16(7), byte(9), uint8(0))
	f.Fuzz(func(t *testing.T, key, name, ctype string, at uint16, with byte, how uint8) {
		u, err := h.blobs.PresignGet(context.Background(), key, time.Hour, domain.Download{Name: name, ContentType: ctype})
		if err != nil {
			return // a key or type the backend does not mint for
		}
		if !strings.HasPrefix(u, h.base+"/o/") {
			t.Fatalf("minted %q", u)
		}
		target := strings.TrimPrefix(u, h.base)
		rec := h.serve(http.MethodGet, target, nil)
		if rec == nil {
			t.Fatalf("minted %q, which no server reads", u)
		}
		switch {
		case key == h.key && rec.Code == http.StatusOK:
			wantType := "application/octet-stream"
			if ctype != "" {
				wantType, _, _ = strings.Cut(rec.Header().Get("Content-Type"), ";")
				mt, _, err := mime.ParseMediaType(ctype)
				if err != nil || mt != wantType {
					t.Fatalf("served %q for the type %q", rec.Header().Get("Content-Type"), ctype)
				}
			} else if got := rec.Header().Get("Content-Type"); got != wantType {
				t.Fatalf("served %q without a type", got)
			}
			if name != "" {
				cd := rec.Header().Get("Content-Disposition")
				if strings.ContainsAny(cd, "\r\n") {
					t.Fatalf("Content-Disposition %q", cd)
				}
				disp, params, err := mime.ParseMediaType(cd)
				if err != nil || disp != "attachment" {
					t.Fatalf("Content-Disposition %q: %v", cd, err)
				}
				if want := strings.ToValidUTF8(name, "_"); params["filename"] != want {
					t.Fatalf("named %q, Content-Disposition %q reads %q", name, cd, params["filename"])
				}
			}
			if !bytes.Equal(rec.Body.Bytes(), h.data) {
				t.Fatal("served other bytes")
			}
		case key != h.key && rec.Code == http.StatusNotFound:
			errorShape(t, rec, domain.CodeNotFound)
		default:
			t.Fatalf("%q minted for %q answered %d %q", u, key, rec.Code, rec.Body.Bytes())
		}
		for _, v := range rec.Header() {
			for _, s := range v {
				if strings.ContainsAny(s, "\r\n") || !utf8.ValidString(s) {
					t.Fatalf("header value %q", s)
				}
			}
		}

		i := int(at) % (len(target) + 1)
		var changed string
		switch how % 3 {
		case 0:
			if i == len(target) || with == 0 {
				return
			}
			changed = target[:i] + string(target[i]^with) + target[i+1:]
		case 1:
			changed = target[:i] + string(with) + target[i:]
		case 2:
			if i == len(target) {
				return
			}
			changed = target[:i] + target[i+1:]
		}
		rec = h.serve(http.MethodGet, changed, nil)
		if rec == nil {
			return // not a request line a server reads
		}
		switch rec.Code {
		case http.StatusForbidden:
			errorShape(t, rec, domain.CodeForbidden)
		case http.StatusNotFound:
			if strings.HasPrefix(changed, "/o/") {
				t.Fatalf("%q changed into %q answered 404: it verified", target, changed)
			}
			errorShape(t, rec, domain.CodeNotFound)
		default:
			t.Fatalf("%q changed into %q answered %d", target, changed, rec.Code)
		}
		if h.egressN != 0 {
			t.Fatal("a refused URL sent bytes")
		}
	})
}
