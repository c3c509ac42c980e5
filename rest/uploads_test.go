package rest_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/domain/eventually"
)

var idemCounter atomic.Int64

func idem() string { return fmt.Sprint("k-", idemCounter.Add(1)) }

// put sends bytes to a pre-signed URL with the headers the session asked for.
func put(t *testing.T, url string, headers map[string]any, body []byte) *http.Response {
	t.Helper()
	resp, _ := putBody(t, url, headers, body)
	return resp
}

// putBody is put that also returns the answer's body.
func putBody(t *testing.T, url string, headers map[string]any, body []byte) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest("PUT", url, bytes.NewReader(body))
	require.NoError(t, err)
	for k, v := range headers {
		if k == "Content-Length" {
			continue // net/http sets it from the body
		}
		req.Header.Set(k, v.(string))
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, raw
}

// refusedPut requires a PUT to an old upload URL to be refused: 409
// upload_session_consumed from the built-in storage host, a 4xx of its own from S3.
func refusedPut(t *testing.T, backend, url string, headers map[string]any, size int) {
	t.Helper()
	resp, body := putBody(t, url, headers, randomBytes(size))
	if backend == "s3" {
		require.True(t, resp.StatusCode >= 400 && resp.StatusCode < 500, "PUT answered %d: %s", resp.StatusCode, body)
		return
	}
	require.Equal(t, http.StatusConflict, resp.StatusCode, "%s", body)
	var e struct {
		Error struct{ Code, RequestID string }
	}
	require.NoError(t, json.Unmarshal(body, &e), "%s", body)
	require.Equal(t, domain.CodeUploadSessionConsumed, e.Error.Code)
}

func get(t *testing.T, url string, hdr map[string]string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	require.NoError(t, err)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, body
}

// openUpload creates a single-PUT session.
func (b *bundle) openUpload(key, filename string, size int, extra map[string]any) map[string]any {
	b.t.Helper()
	body := map[string]any{"filename": filename, "byte_size": size}
	for k, v := range extra {
		body[k] = v
	}
	r := b.do(req{method: "POST", path: "/v1/uploads", key: key, idem: idem(), body: body})
	require.Equal(b.t, 201, r.status, string(r.body))
	return r.json(b.t)
}

// uploadFile runs the whole single-PUT flow and returns the completion answer.
func (b *bundle) uploadFile(key, filename string, content []byte, extra map[string]any) response {
	b.t.Helper()
	u := b.openUpload(key, filename, len(content), extra)
	resp := put(b.t, u["upload_url"].(string), u["upload_headers"].(map[string]any), content)
	require.Less(b.t, resp.StatusCode, 300, "PUT answered %d", resp.StatusCode)
	return b.do(req{method: "POST", path: "/v1/files/" + u["file_id"].(string) + "/complete", key: key, idem: idem()})
}

func pngBytes(t *testing.T, w, h int) []byte {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for x := 0; x < w; x++ {
		img.Set(x, x%h, color.RGBA{R: uint8(x), G: 100, B: 200, A: 255})
	}
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, img))
	return buf.Bytes()
}

const minimalPDF = "%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj\n3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 612 792]>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n"

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

func TestUploadsOnEachBackend(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"local", "s3"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			b := setup(t, setupOpts{backend: backend})

			t.Run("SinglePutCompletesReady", func(t *testing.T) {
				content := pngBytes(t, 40, 30)
				r := b.uploadFile(b.liveA, "pic.png", content, map[string]any{"mime_type": "image/png", "validation": map[string]any{"formats": []string{"png", "image/jpeg"}, "max_bytes": 1 << 20}})
				require.Equal(t, 200, r.status, string(r.body))
				f := r.json(t)
				sum := sha256.Sum256(content)
				require.Equal(t, "ready", f["status"])
				require.Equal(t, hex.EncodeToString(sum[:]), f["sha256"])
				require.EqualValues(t, len(content), f["byte_size"])
				require.Equal(t, map[string]any{"extension": "png", "mime_type": "image/png"}, f["detected_format"])
				require.Nil(t, f["duplicate_of"])

				// The same bytes again are a duplicate of the oldest ready file.
				r2 := b.uploadFile(b.liveA, "again.png", content, nil)
				require.Equal(t, 200, r2.status)
				require.Equal(t, f["id"], r2.json(t)["duplicate_of"])

				// Completing twice: the session is consumed.
				r3 := b.do(req{method: "POST", path: "/v1/files/" + f["id"].(string) + "/complete", key: b.liveA, idem: idem()})
				require.Equal(t, 409, r3.status)
				require.Equal(t, domain.CodeUploadSessionConsumed, r3.errorCode(t))
			})

			t.Run("LyingDeclaredTypeIsRejectedByDetectedFormat", func(t *testing.T) {
				u := b.openUpload(b.liveA, "report.pdf", len(pngBytes(t, 8, 8)), map[string]any{"mime_type": "application/pdf", "validation": map[string]any{"formats": []string{"pdf"}}})
				put(t, u["upload_url"].(string), u["upload_headers"].(map[string]any), pngBytes(t, 8, 8))
				r := b.do(req{method: "POST", path: "/v1/files/" + u["file_id"].(string) + "/complete", key: b.liveA, idem: idem()})
				require.Equal(t, 422, r.status, string(r.body))
				require.Equal(t, domain.CodeValidationFailed, r.errorCode(t))
				findings := r.json(t)["error"].(map[string]any)["details"].(map[string]any)["findings"].([]any)
				codes := []string{}
				for _, f := range findings {
					codes = append(codes, f.(map[string]any)["code"].(string))
				}
				require.ElementsMatch(t, []string{"format_not_allowed", "mime_type_mismatch"}, codes)
				g := b.do(req{method: "GET", path: "/v1/files/" + u["file_id"].(string), key: b.liveA})
				require.Equal(t, "rejected", g.json(t)["status"])
				require.Equal(t, "png", g.json(t)["detected_format"].(map[string]any)["extension"])
				// A rejected file is quarantined: nothing to download.
				d := b.do(req{method: "POST", path: "/v1/files/" + u["file_id"].(string) + "/download-url", key: b.liveA, idem: idem()})
				require.Equal(t, 409, d.status, string(d.body))
				require.Equal(t, domain.CodeConflict, d.errorCode(t))
				details := d.json(t)["error"].(map[string]any)["details"].(map[string]any)
				require.Equal(t, "rejected", details["status"])
				require.NotEmpty(t, details["findings"])
			})

			t.Run("OversizePutIsRefusedByTheStore", func(t *testing.T) {
				u := b.openUpload(b.liveA, "small.bin", 10, nil)
				resp := put(t, u["upload_url"].(string), nil, randomBytes(11))
				require.GreaterOrEqual(t, resp.StatusCode, 400)
				r := b.do(req{method: "POST", path: "/v1/files/" + u["file_id"].(string) + "/complete", key: b.liveA, idem: idem()})
				require.Equal(t, 409, r.status, "nothing landed: %s", r.body)
				require.Equal(t, domain.CodeConflict, r.errorCode(t))
				// The session is still usable with the right size.
				require.Less(t, put(t, u["upload_url"].(string), nil, randomBytes(10)).StatusCode, 300)
				r = b.do(req{method: "POST", path: "/v1/files/" + u["file_id"].(string) + "/complete", key: b.liveA, idem: idem()})
				require.Equal(t, 200, r.status)
			})

			t.Run("TamperedURLIsRefused", func(t *testing.T) {
				u := b.openUpload(b.liveA, "t.bin", 5, nil)
				url := u["upload_url"].(string)
				require.GreaterOrEqual(t, put(t, tamper(url), nil, randomBytes(5)).StatusCode, 400)
				other := b.openUpload(b.liveA, "o.bin", 5, nil)
				swapped := strings.Replace(url, u["file_id"].(string), other["file_id"].(string), 1)
				require.GreaterOrEqual(t, put(t, swapped, nil, randomBytes(5)).StatusCode, 400)
				r := b.do(req{method: "POST", path: "/v1/files/" + other["file_id"].(string) + "/complete", key: b.liveA, idem: idem()})
				require.Equal(t, 409, r.status, "nothing may land through an altered URL")
			})

			t.Run("MultipartWithResume", func(t *testing.T) {
				content := randomBytes(20_000_000)
				r := b.do(req{method: "POST", path: "/v1/uploads", key: b.liveA, idem: idem(), body: map[string]any{"filename": "big.bin", "byte_size": len(content), "multipart": true}})
				require.Equal(t, 201, r.status, string(r.body))
				u := r.json(t)
				require.Nil(t, u["upload_url"])
				require.EqualValues(t, domain.MinPartSize, u["part_size"])
				parts := u["parts"].([]any)
				require.Len(t, parts, 2)
				etags := make([]map[string]any, len(parts))
				send := func(i int, p map[string]any) {
					off, size := int(p["byte_offset"].(float64)), int(p["byte_size"].(float64))
					resp := put(t, p["url"].(string), nil, content[off:off+size])
					require.Less(t, resp.StatusCode, 300)
					require.NotEmpty(t, resp.Header.Get("ETag"))
					etags[i] = map[string]any{"part_number": p["part_number"], "etag": resp.Header.Get("ETag")}
				}
				send(0, parts[0].(map[string]any))
				// The client stops here and resumes later with fresh URLs: new ones every
				// time, however soon, each answer saying until when they work.
				rm := b.do(req{method: "POST", path: "/v1/uploads/" + u["id"].(string) + "/parts", key: b.liveA, idem: idem()})
				require.Equal(t, 200, rm.status, string(rm.body))
				fresh := rm.json(t)["parts"].([]any)
				require.Len(t, fresh, 2)
				rm2 := b.do(req{method: "POST", path: "/v1/uploads/" + u["id"].(string) + "/parts", key: b.liveA, idem: idem()})
				require.Equal(t, 200, rm2.status, string(rm2.body))
				seen := map[string]bool{}
				for _, ps := range [][]any{parts, fresh, rm2.json(t)["parts"].([]any)} {
					for _, p := range ps {
						url := p.(map[string]any)["url"].(string)
						require.False(t, seen[url], "a re-minted URL is new: %s", url)
						seen[url] = true
					}
				}
				exp, err := time.Parse(time.RFC3339, rm.json(t)["upload_url_expires_at"].(string))
				require.NoError(t, err)
				require.WithinDuration(t, time.Now().Add(time.Hour), exp, 5*time.Second)
				send(1, fresh[1].(map[string]any))

				bad := []map[string]any{etags[0], {"part_number": 2, "etag": `"0000"`}}
				r = b.do(req{method: "POST", path: "/v1/uploads/" + u["id"].(string) + "/complete-parts", key: b.liveA, idem: idem(), body: map[string]any{"parts": bad}})
				require.Equal(t, 400, r.status, string(r.body))

				r = b.do(req{method: "POST", path: "/v1/uploads/" + u["id"].(string) + "/complete-parts", key: b.liveA, idem: idem(), body: map[string]any{"parts": etags}})
				require.Equal(t, 200, r.status, string(r.body))
				f := r.json(t)
				sum := sha256.Sum256(content)
				require.Equal(t, hex.EncodeToString(sum[:]), f["sha256"])
				require.EqualValues(t, len(content), f["byte_size"])

				again := b.do(req{method: "POST", path: "/v1/uploads/" + u["id"].(string) + "/parts", key: b.liveA, idem: idem()})
				require.Equal(t, 409, again.status)
				require.Equal(t, domain.CodeUploadSessionConsumed, again.errorCode(t))
				// The part URLs died with the session: the object stays what was validated.
				refusedPut(t, backend, fresh[0].(map[string]any)["url"].(string), nil, int(fresh[0].(map[string]any)["byte_size"].(float64)))

				// The assembled object downloads whole and by range.
				d := b.do(req{method: "POST", path: "/v1/files/" + f["id"].(string) + "/download-url", key: b.liveA, idem: idem(), body: map[string]any{"expires_in": 120}})
				require.Equal(t, 201, d.status, string(d.body))
				status, got := get(t, d.json(t)["url"].(string), map[string]string{"Range": "bytes=16777210-16777229"})
				require.Equal(t, 206, status)
				require.Equal(t, content[16777210:16777230], got)
			})

			t.Run("AbortDiscardsParts", func(t *testing.T) {
				r := b.do(req{method: "POST", path: "/v1/uploads", key: b.liveA, idem: idem(), body: map[string]any{"filename": "a.bin", "byte_size": 17 << 20, "multipart": true}})
				require.Equal(t, 201, r.status)
				u := r.json(t)
				p := u["parts"].([]any)[0].(map[string]any)
				put(t, p["url"].(string), nil, randomBytes(int(p["byte_size"].(float64))))
				a := b.do(req{method: "POST", path: "/v1/uploads/" + u["id"].(string) + "/abort", key: b.liveA, idem: idem()})
				require.Equal(t, 204, a.status, string(a.body))
				g := b.do(req{method: "GET", path: "/v1/uploads/" + u["id"].(string), key: b.liveA})
				require.Equal(t, "aborted", g.json(t)["state"])
				require.Nil(t, g.json(t)["upload_url"])
				require.Nil(t, g.json(t)["upload_url_expires_at"])
				refusedPut(t, backend, p["url"].(string), nil, int(p["byte_size"].(float64)))
				c := b.do(req{method: "POST", path: "/v1/uploads/" + u["id"].(string) + "/complete-parts", key: b.liveA, idem: idem(),
					body: map[string]any{"parts": []map[string]any{{"part_number": 1, "etag": "x"}, {"part_number": 2, "etag": "y"}}}})
				require.Equal(t, 409, c.status)
				require.Equal(t, domain.CodeUploadSessionConsumed, c.errorCode(t))
			})

			t.Run("DeleteRemovesTheBytes", func(t *testing.T) {
				content := []byte("delete me, please, and all of my bytes")
				r := b.uploadFile(b.liveA, "gone.txt", content, nil)
				require.Equal(t, 200, r.status)
				f := r.json(t)
				require.Equal(t, "txt", f["detected_format"].(map[string]any)["extension"])
				key := b.fileKey(f["id"].(string))
				_, err := b.blobs.Stat(context.Background(), key)
				require.NoError(t, err)
				d := b.do(req{method: "DELETE", path: "/v1/files/" + f["id"].(string), key: b.liveA})
				require.Equal(t, 204, d.status)
				_, err = b.blobs.Stat(context.Background(), key)
				require.ErrorIs(t, err, domain.ErrNotFound)
				require.Equal(t, 404, b.do(req{method: "GET", path: "/v1/files/" + f["id"].(string), key: b.liveA}).status)
				require.Equal(t, 404, b.do(req{method: "DELETE", path: "/v1/files/" + f["id"].(string), key: b.liveA}).status)
				dl := b.do(req{method: "POST", path: "/v1/files/" + f["id"].(string) + "/download-url", key: b.liveA, idem: idem()})
				require.Equal(t, 404, dl.status, "a deleted file has nothing to download: %s", dl.body)
			})

			t.Run("UploadURLsDieWithTheirSession", func(t *testing.T) {
				content := []byte("the validated bytes, and only these")
				size := len(content)
				u := b.openUpload(b.liveA, "v.txt", size, nil)
				url, headers := u["upload_url"].(string), u["upload_headers"].(map[string]any)
				require.Equal(t, 200, put(t, url, headers, content).StatusCode)
				if backend == "local" {
					// The built-in host takes one PUT; an S3 store takes the last PUT before
					// completion, and completion validates whatever it took.
					refusedPut(t, backend, url, headers, size)
				}
				c := b.do(req{method: "POST", path: "/v1/files/" + u["file_id"].(string) + "/complete", key: b.liveA, idem: idem()})
				require.Equal(t, 200, c.status, string(c.body))
				refusedPut(t, backend, url, headers, size)

				d := b.do(req{method: "POST", path: "/v1/files/" + u["file_id"].(string) + "/download-url", key: b.liveA, idem: idem()})
				require.Equal(t, 201, d.status, string(d.body))
				dlURL := d.json(t)["url"].(string)
				status, got := get(t, dlURL, nil)
				require.Equal(t, 200, status)
				require.Equal(t, content, got)

				// Deleted: the old upload URL writes nothing, the old download URL serves nothing.
				require.Equal(t, 204, b.do(req{method: "DELETE", path: "/v1/files/" + u["file_id"].(string), key: b.liveA}).status)
				refusedPut(t, backend, url, headers, size)
				status, got = get(t, dlURL, nil)
				require.Equal(t, 404, status, "%s", got)
				_, err := b.blobs.Stat(context.Background(), b.fileKey(u["file_id"].(string)))
				require.ErrorIs(t, err, domain.ErrNotFound)
			})

			t.Run("AbortedOrDeletedBeforeCompletionWritesNothing", func(t *testing.T) {
				for _, end := range []string{"abort", "delete"} {
					u := b.openUpload(b.liveA, end+".bin", 32, nil)
					url, headers := u["upload_url"].(string), u["upload_headers"].(map[string]any)
					fileID := u["file_id"].(string)
					if end == "abort" {
						r := b.do(req{method: "POST", path: "/v1/uploads/" + u["id"].(string) + "/abort", key: b.liveA, idem: idem()})
						require.Equal(t, 204, r.status, string(r.body))
					} else {
						require.Equal(t, 204, b.do(req{method: "DELETE", path: "/v1/files/" + fileID, key: b.liveA}).status)
					}
					refusedPut(t, backend, url, headers, 32)
					_, err := b.blobs.Stat(context.Background(), b.fileKey(fileID))
					require.ErrorIs(t, err, domain.ErrNotFound, "%s: nothing written", end)
					g := b.do(req{method: "GET", path: "/v1/uploads/" + u["id"].(string), key: b.liveA})
					require.Equal(t, "aborted", g.json(t)["state"], end)
					require.Nil(t, g.json(t)["upload_url"])
					c := b.do(req{method: "POST", path: "/v1/files/" + fileID + "/complete", key: b.liveA, idem: idem()})
					require.Equal(t, 404, c.status, "%s: %s", end, c.body)
				}
			})

			t.Run("DownloadServesTheDetectedFormat", func(t *testing.T) {
				content := pngBytes(t, 12, 9)
				r := b.uploadFile(b.liveA, `../../pics\x.pdf`, content, nil)
				require.Equal(t, 200, r.status, string(r.body))
				f := r.json(t)
				require.Equal(t, `../../pics\x.pdf`, f["filename"], "the name is kept as given")
				d := b.do(req{method: "POST", path: "/v1/files/" + f["id"].(string) + "/download-url", key: b.liveA, idem: idem()})
				require.Equal(t, 201, d.status, string(d.body))
				resp, err := http.Get(d.json(t)["url"].(string))
				require.NoError(t, err)
				got, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				require.NoError(t, err)
				require.Equal(t, content, got)
				require.Equal(t, "image/png", resp.Header.Get("Content-Type"), "the detected format, not the name's")
				if backend == "local" {
					require.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))
				}
				disp, params, err := mime.ParseMediaType(resp.Header.Get("Content-Disposition"))
				require.NoError(t, err)
				require.Equal(t, "attachment", disp)
				require.Equal(t, "x.pdf", params["filename"], "the name is made safe where it is used")
			})
		})
	}
}

func (b *bundle) fileKey(id string) string {
	f, err := b.store.FindFileByID(context.Background(), id)
	require.NoError(b.t, err)
	return f.StorageKey
}

func TestUploadRequestErrors(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{cfg: func(c *domain.Config) { c.MaxFileSize = 1 << 30 }})
	cases := []struct {
		name   string
		body   any
		status int
		code   string
		param  string
	}{
		{"NoAlternative", map[string]any{"mime_type": "image/png"}, 400, domain.CodeInvalidRequest, "filename"},
		{"BothAlternatives", map[string]any{"filename": "a", "byte_size": 1, "from_url": "https://example.com/a"}, 400, domain.CodeInvalidRequest, "from_url"},
		{"ZeroSize", map[string]any{"filename": "a", "byte_size": 0}, 400, domain.CodeInvalidRequest, "byte_size"},
		{"LongName", map[string]any{"filename": strings.Repeat("n", 1025), "byte_size": 1}, 400, domain.CodeInvalidRequest, "filename"},
		{"TooLarge", map[string]any{"filename": "a", "byte_size": 1<<30 + 1}, 413, domain.CodePayloadTooLarge, "byte_size"},
		{"UnknownField", map[string]any{"filename": "a", "byte_size": 1, "colour": 1}, 400, domain.CodeInvalidRequest, "colour"},
		{"HTTPFromURL", map[string]any{"from_url": "http://example.com/a"}, 400, domain.CodeInvalidRequest, "from_url"},
		{"TooManyFormats", map[string]any{"filename": "a", "byte_size": 1, "validation": map[string]any{"formats": make([]string, 33)}}, 400, domain.CodeInvalidRequest, "validation.formats"},
		{"EmptyFormats", map[string]any{"filename": "a", "byte_size": 1, "validation": map[string]any{"formats": []string{}}}, 400, domain.CodeInvalidRequest, "validation.formats"},
		{"BadMaxBytes", map[string]any{"filename": "a", "byte_size": 1, "validation": map[string]any{"max_bytes": 0}}, 400, domain.CodeInvalidRequest, "validation.max_bytes"},
		{"UnknownValidationField", map[string]any{"filename": "a", "byte_size": 1, "validation": map[string]any{"colour": 1}}, 400, domain.CodeInvalidRequest, "validation.colour"},
		{"NULInFilename", map[string]any{"filename": "a\x00b", "byte_size": 1}, 400, domain.CodeInvalidRequest, "filename"},
		{"ControlCharacterInFilename", map[string]any{"filename": "a\u001bb", "byte_size": 1}, 400, domain.CodeInvalidRequest, "filename"},
		{"LoneSurrogateInFilename", `{"filename": "a\udc00b", "byte_size": 1}`, 400, domain.CodeInvalidRequest, "filename"},
		{"InvalidUTF8InFilename", "{\"filename\": \"a\xffb\", \"byte_size\": 1}", 400, domain.CodeInvalidRequest, "filename"},
		{"LongNameInCharacters", map[string]any{"filename": strings.Repeat("é", 1025), "byte_size": 1}, 400, domain.CodeInvalidRequest, "filename"},
		{"DotName", map[string]any{"filename": ".", "byte_size": 1}, 400, domain.CodeInvalidRequest, "filename"},
		{"DotDotName", map[string]any{"filename": "..", "byte_size": 1}, 400, domain.CodeInvalidRequest, "filename"},
		{"BlankName", map[string]any{"filename": "  ", "byte_size": 1}, 400, domain.CodeInvalidRequest, "filename"},
		{"NULInMIMEType", map[string]any{"filename": "a", "byte_size": 1, "mime_type": "text/pl\x00ain"}, 400, domain.CodeInvalidRequest, "mime_type"},
		{"NULInMIMEParameter", map[string]any{"filename": "a", "byte_size": 1, "mime_type": "text/plain; name=\"a\x00b\""}, 400, domain.CodeInvalidRequest, "mime_type"},
		{"UnknownFormat", map[string]any{"filename": "a", "byte_size": 1, "validation": map[string]any{"formats": []string{"pdf", "pdff"}}}, 400, domain.CodeInvalidRequest, "validation.formats[1]"},
		{"DuplicateKey", `{"filename": "a", "byte_size": 1, "byte_size": 2}`, 400, domain.CodeInvalidRequest, "byte_size"},
		{"FieldInAnotherCase", `{"filename": "a", "Byte_Size": 1}`, 400, domain.CodeInvalidRequest, "Byte_Size"},
		{"NestedFieldInAnotherCase", `{"filename": "a", "byte_size": 1, "validation": {"Max_Bytes": 3}}`, 400, domain.CodeInvalidRequest, "validation.Max_Bytes"},
		{"TooDeep", `{"filename": "a", "byte_size": 1, "validation": {"formats": [[[[[[[[[["pdf"]]]]]]]]]]}}`, 400, domain.CodeInvalidRequest, "validation.formats[0][0][0][0][0][0][0][0]"},
		{"BadProject", map[string]any{"filename": "a", "byte_size": 1, "project_id": "nope"}, 400, domain.CodeInvalidRequest, "project_id"},
		{"OtherOrgProject", map[string]any{"filename": "a", "byte_size": 1, "project_id": b.orgB.Project.ID}, 404, domain.CodeNotFound, "project_id"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := b.do(req{method: "POST", path: "/v1/uploads", key: b.liveA, idem: idem(), body: c.body})
			require.Equal(t, c.status, r.status, string(r.body))
			e := r.json(t)["error"].(map[string]any)
			require.Equal(t, c.code, e["code"])
			require.Equal(t, c.param, e["param"])
		})
	}
	t.Run("NestingRefusalSaysSo", func(t *testing.T) {
		r := b.do(req{method: "POST", path: "/v1/uploads", key: b.liveA, idem: idem(), body: `{"validation": {"formats": [[[[[[[[[[[[[[[[[[[["x"]]]]]]]]]]]]]]]]]]]]}}`})
		require.Equal(t, 400, r.status, string(r.body))
		require.Contains(t, r.json(t)["error"].(map[string]any)["message"], "more than 10 deep")
	})
	t.Run("BodyThatIsNotJSON", func(t *testing.T) {
		for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", ""} {
			r := b.do(req{method: "POST", path: "/v1/uploads", key: b.liveA, idem: idem(), body: `{"filename": "a", "byte_size": 1}`,
				header: map[string]string{"Content-Type": ct}})
			require.Equal(t, 400, r.status, "%q: %s", ct, r.body)
			require.Equal(t, "Content-Type", r.json(t)["error"].(map[string]any)["param"])
		}
		r := b.do(req{method: "POST", path: "/v1/uploads", key: b.liveA, idem: idem(), body: `{"filename": "a", "byte_size": 1}`,
			header: map[string]string{"Content-Type": "application/json; charset=utf-8"}})
		require.Equal(t, 201, r.status, string(r.body))
	})
	t.Run("NamesAreKeptAsGiven", func(t *testing.T) {
		for _, name := range []string{strings.Repeat("é", 1024), "../../x", `a\b:c*?.txt`} {
			u := b.openUpload(b.liveA, name, 3, map[string]any{"mime_type": "text/plain; charset=utf-8"})
			require.Equal(t, name, u["filename"])
			f := b.do(req{method: "GET", path: "/v1/files/" + u["file_id"].(string), key: b.liveA}).json(t)
			require.Equal(t, name, f["filename"])
		}
	})
	t.Run("OtherOrganizationsUploadIs404", func(t *testing.T) {
		u := b.openUpload(b.keyB, "b.bin", 3, nil)
		for _, r := range []response{
			b.do(req{method: "GET", path: "/v1/uploads/" + u["id"].(string), key: b.liveA}),
			b.do(req{method: "POST", path: "/v1/uploads/" + u["id"].(string) + "/abort", key: b.liveA, idem: idem()}),
			b.do(req{method: "POST", path: "/v1/files/" + u["file_id"].(string) + "/complete", key: b.liveA, idem: idem()}),
			b.do(req{method: "GET", path: "/v1/files/" + u["file_id"].(string), key: b.liveA}),
		} {
			require.Equal(t, 404, r.status, string(r.body))
		}
		r := b.do(req{method: "GET", path: "/v1/uploads/" + u["id"].(string), key: b.orgB.TestSecret})
		require.Equal(t, 403, r.status)
		require.Equal(t, domain.CodeEnvironmentMismatch, r.errorCode(t))
	})
	t.Run("SinglePutSessionHasNoParts", func(t *testing.T) {
		u := b.openUpload(b.liveA, "s.bin", 3, nil)
		r := b.do(req{method: "POST", path: "/v1/uploads/" + u["id"].(string) + "/parts", key: b.liveA, idem: idem()})
		require.Equal(t, 409, r.status)
		require.Equal(t, domain.CodeConflict, r.errorCode(t))
	})
	t.Run("CompletePartsBody", func(t *testing.T) {
		u := b.do(req{method: "POST", path: "/v1/uploads", key: b.liveA, idem: idem(), body: map[string]any{"filename": "m", "byte_size": 20, "multipart": true}}).json(t)
		for _, body := range []any{map[string]any{}, map[string]any{"parts": []any{}}, map[string]any{"parts": []any{map[string]any{"part_number": 0, "etag": "x"}}},
			map[string]any{"parts": []any{map[string]any{"part_number": 1}}}, map[string]any{"parts": []any{map[string]any{"part_number": 1, "etag": "x", "size": 3}}}} {
			r := b.do(req{method: "POST", path: "/v1/uploads/" + u["id"].(string) + "/complete-parts", key: b.liveA, idem: idem(), body: body})
			require.Equal(t, 400, r.status, string(r.body))
		}
		r := b.do(req{method: "POST", path: "/v1/uploads/" + u["id"].(string) + "/complete-parts", key: b.liveA, idem: idem(),
			body: map[string]any{"parts": []any{map[string]any{"part_number": 1, "etag": "x"}}}})
		require.Equal(t, 409, r.status, "part 1 was never uploaded: %s", r.body)
	})
}

func TestExpiredUploadURLIsRefused(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"local", "s3"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			// The local storage host reads the test's clock; an S3 store keeps real time.
			clock := &shiftedClock{}
			const ttl = 2 * time.Second
			b := setup(t, setupOpts{backend: backend, storageClock: clock.Now,
				cfg: func(c *domain.Config) { c.UploadURLTTL = ttl }})
			u := b.openUpload(b.liveA, "late.bin", 4, nil)
			exp, err := time.Parse(time.RFC3339, u["upload_url_expires_at"].(string))
			require.NoError(t, err)
			require.WithinDuration(t, time.Now().Add(ttl), exp, 2*time.Second)
			if backend == "local" {
				clock.advance(3 * time.Second)
			} else {
				// The store keeps real time, signs whole seconds from its own clock, and may
				// honour the URL up to a second past the time the session shows. Wait until
				// it refuses a GET URL minted after the upload URL with the same lifetime:
				// a GET changes nothing, so it can be polled.
				ctx := context.Background()
				probe := fmt.Sprintf("expiry-probe/%x", randomBytes(8))
				require.NoError(t, b.blobs.Put(ctx, probe, bytes.NewReader([]byte("x")), 1))
				gu, err := b.blobs.PresignGet(ctx, probe, ttl, domain.Download{})
				require.NoError(t, err)
				eventually.True(t, "the store to refuse a URL as old as the upload URL", func() bool {
					status, _ := get(t, gu, nil)
					return status == http.StatusForbidden
				})
			}
			resp, body := putBody(t, u["upload_url"].(string), u["upload_headers"].(map[string]any), randomBytes(4))
			require.Equal(t, http.StatusForbidden, resp.StatusCode, "%s", body)
			// A fresh GET mints a fresh URL; the session itself lasts a day.
			g := b.do(req{method: "GET", path: "/v1/uploads/" + u["id"].(string), key: b.liveA}).json(t)
			require.NotEqual(t, u["upload_url"], g["upload_url"])
			require.Less(t, put(t, g["upload_url"].(string), g["upload_headers"].(map[string]any), randomBytes(4)).StatusCode, 300)
		})
	}
}

func TestFilesListHistoryAndDownload(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var ids []string
	for i := 0; i < 3; i++ {
		r := b.uploadFile(b.liveA, fmt.Sprintf("f%d.pdf", i), []byte(minimalPDF+strings.Repeat(" ", i)), nil)
		require.Equal(t, 200, r.status, string(r.body))
		ids = append(ids, r.json(t)["id"].(string))
	}
	l := b.do(req{method: "GET", path: "/v1/files?limit=2", key: b.liveA}).json(t)
	data := l["data"].([]any)
	require.Len(t, data, 2)
	require.Equal(t, ids[2], data[0].(map[string]any)["id"])
	require.Equal(t, true, l["has_more"])
	l2 := b.do(req{method: "GET", path: "/v1/files?limit=2&starting_after=" + l["next_cursor"].(string), key: b.liveA}).json(t)
	require.Equal(t, ids[0], l2["data"].([]any)[0].(map[string]any)["id"])
	require.Equal(t, "pdf", l2["data"].([]any)[0].(map[string]any)["detected_format"].(map[string]any)["extension"])

	h := b.do(req{method: "GET", path: "/v1/files/" + ids[0] + "/history", key: b.liveA})
	require.Equal(t, 200, h.status)
	var types []string
	for _, e := range h.json(t)["data"].([]any) {
		types = append(types, e.(map[string]any)["type"].(string))
	}
	require.Equal(t, []string{"upload.opened", "file.ready"}, types)
	opened := h.json(t)["data"].([]any)[0].(map[string]any)["data"].(map[string]any)["object"].(map[string]any)
	require.Equal(t, "f0.pdf", opened["filename"], "the history names the upload's file")

	d := b.do(req{method: "POST", path: "/v1/files/" + ids[0] + "/download-url", key: b.liveA, idem: idem()})
	require.Equal(t, 201, d.status, string(d.body))
	status, body := get(t, d.json(t)["url"].(string), nil)
	require.Equal(t, 200, status)
	require.Equal(t, minimalPDF, string(body))
	for _, bad := range []any{map[string]any{"expires_in": 59}, map[string]any{"expires_in": 86401}, map[string]any{"artifact_id": "nope"}, map[string]any{"extra": 1}} {
		r := b.do(req{method: "POST", path: "/v1/files/" + ids[0] + "/download-url", key: b.liveA, idem: idem(), body: bad})
		require.Equal(t, 400, r.status, string(r.body))
	}
	r := b.do(req{method: "POST", path: "/v1/files/" + ids[0] + "/download-url", key: b.liveA, idem: idem(), body: map[string]any{"artifact_id": "art_01ARZ3NDEKTSV4RRFFQ69G5FAV"}})
	require.Equal(t, 404, r.status)
	// Another organization cannot mint a URL for it.
	require.Equal(t, 404, b.do(req{method: "POST", path: "/v1/files/" + ids[0] + "/download-url", key: b.keyB, idem: idem()}).status)
}

// tamper changes one character of the URL's last query value: every parameter is signed.
func tamper(url string) string {
	i := strings.LastIndex(url, "=") + 1
	c := byte('0')
	if url[i] == '0' {
		c = '1'
	}
	return url[:i] + string(c) + url[i+1:]
}

// TestStoredStringsAreText sends strings the database cannot hold (a NUL, invalid
// UTF-8) in the other stored fields: each is refused with 400 naming the field, never
// a 500 from the database.
func TestStoredStringsAreText(t *testing.T) {
	t.Parallel()
	b := platformSetup(t) // t.pages takes a list of strings as an option
	f := b.uploadFile(b.liveA, "t.txt", []byte("some text"), nil)
	require.Equal(t, 200, f.status, string(f.body))
	fileID := f.json(t)["id"].(string)
	for _, c := range []struct {
		path, param string
		body        any
	}{
		{"/v1/jobs", "options", `{"file_id": "` + fileID + `", "operation": "t.pages", "options": {"file_ids": ["a\u0000"]}}`},
		{"/v1/jobs", "options.file_ids[0]", "{\"file_id\": \"" + fileID + "\", \"operation\": \"t.pages\", \"options\": {\"file_ids\": [\"a\xff\"]}}"},
		{"/v1/batches", "options", `{"file_ids": ["` + fileID + `"], "operation": "t.pages", "options": {"file_ids": ["\u0000"]}}`},
		{"/v1/webhook-endpoints", "url", map[string]any{"url": "https://example.com/\u0085", "enabled_events": []string{"file.ready"}}},
	} {
		r := b.do(req{method: "POST", path: c.path, key: b.liveA, idem: idem(), body: c.body})
		require.Equal(t, 400, r.status, "%s: %s", c.path, r.body)
		require.Equal(t, c.param, r.json(t)["error"].(map[string]any)["param"], "%s: %s", c.path, r.body)
	}
}
