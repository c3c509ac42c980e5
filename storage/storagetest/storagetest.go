// Package storagetest is the behaviour every domain.Blobs backend must show, run
// against a real backend: pre-signed URLs are exercised over real HTTP with
// http.DefaultClient, so what a client sees is what is tested.
package storagetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/domain/eventually"
	"github.com/filemill/filemill/storage"
)

// PartSize is the part size the multipart cases use: S3's minimum for parts other than
// the last. Backends must not demand more.
const PartSize = 5 << 20

// Backend is one fresh, empty backend under test.
type Backend struct {
	Blobs domain.Blobs
	// Advance moves the clock the backend signs and checks URLs by; nil when it keeps
	// real time, and then the suite waits until an expiry is seen instead.
	Advance func(d time.Duration)
}

// Run runs the suite. newBackend returns a fresh, empty backend for each case, which
// must implement domain.MultipartBlobs.
func Run(t *testing.T, newBackend func(t *testing.T) Backend) {
	setupBackend := func(t *testing.T) (context.Context, Backend) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		t.Cleanup(cancel)
		return ctx, newBackend(t)
	}
	setup := func(t *testing.T) (context.Context, domain.Blobs) {
		t.Helper()
		ctx, be := setupBackend(t)
		return ctx, be.Blobs
	}
	multipart := func(t *testing.T, b domain.Blobs) domain.MultipartBlobs {
		t.Helper()
		mp, ok := b.(domain.MultipartBlobs)
		if !ok {
			t.Fatal("the backend has no multipart ability, which this suite requires")
		}
		return mp
	}
	// openMultipart starts a multipart upload on a fresh key.
	openMultipart := func(t *testing.T) (context.Context, domain.Blobs, domain.MultipartBlobs, string, string) {
		t.Helper()
		ctx, b := setup(t)
		mp := multipart(t, b)
		k := Key()
		id, err := b.CreateUpload(ctx, k)
		require.NoError(t, err)
		return ctx, b, mp, k, id
	}

	t.Run("PutGetStatDelete", func(t *testing.T) {
		ctx, b := setup(t)
		k, data := Key(), Bytes(4096)
		require.NoError(t, b.Put(ctx, k, bytes.NewReader(data), int64(len(data))))
		size, err := b.Stat(ctx, k)
		require.NoError(t, err)
		require.Equal(t, int64(len(data)), size)
		require.Equal(t, data, read(t, b, k))

		// Put replaces.
		data2 := Bytes(10)
		require.NoError(t, b.Put(ctx, k, bytes.NewReader(data2), int64(len(data2))))
		require.Equal(t, data2, read(t, b, k))

		require.NoError(t, b.Delete(ctx, k))
		_, err = b.Stat(ctx, k)
		require.ErrorIs(t, err, domain.ErrNotFound)
		require.NoError(t, b.Delete(ctx, k), "deleting a missing object is not an error")
	})

	t.Run("ListUnderPrefix", func(t *testing.T) {
		ctx, b := setup(t)
		dir := strings.TrimSuffix(Key(), "original") + "artifacts/"
		want := []string{dir + "job_1/a", dir + "job_1/b", dir + "job_2/c"}
		for _, k := range append([]string{dir + "job_10/d", strings.TrimSuffix(dir, "artifacts/") + "original"}, want...) {
			require.NoError(t, b.Put(ctx, k, bytes.NewReader(Bytes(10)), 10))
		}
		list := func(prefix string, limit int) []string {
			t.Helper()
			objs, err := b.List(ctx, prefix, "", limit)
			require.NoError(t, err)
			return keysOf(objs)
		}
		require.Equal(t, want[:2], list(dir+"job_1/", 100), "only what is under the prefix: not job_10's")
		require.Len(t, list(dir, 100), 4)
		require.Len(t, list(dir, 2), 2, "bounded by limit")
		require.Empty(t, list(dir+"job_3/", 100), "nothing under an unknown prefix")
		require.NoError(t, b.Delete(ctx, dir+"job_2/c"))
		require.Empty(t, list(dir+"job_2/", 100), "a deleted object is not listed")
		_, err := b.List(ctx, dir+"job_1", "", 100)
		require.ErrorIs(t, err, storage.ErrInvalidKey, "a prefix ends with /")
		_, err = b.List(ctx, "../", "", 100)
		require.ErrorIs(t, err, storage.ErrInvalidKey)
	})

	t.Run("ListWholeStoreInKeyOrder", func(t *testing.T) {
		ctx, b := setup(t)
		before := time.Now()
		// Byte order is not a walk of directories sorted by name: "a-b" sorts before
		// "a/…" ('-' is below '/'), "a/b/…" before "a/b0".
		keys := []string{"a-b", "a/b-c", "a/b/c", "a/b/c-d", "a/b/d/e", "a/b0", "a0", "b/x/y/z", "ba"}
		for _, k := range []int{5, 0, 8, 2, 7, 1, 4, 6, 3} { // stored out of order
			require.NoError(t, b.Put(ctx, keys[k], bytes.NewReader(Bytes(3)), 3))
		}
		open, err := b.CreateUpload(ctx, "a/open")
		require.NoError(t, err)
		PutPart(t, multipart(t, b), "a/open", open, 1, Bytes(3))

		all, err := b.List(ctx, "", "", 100)
		require.NoError(t, err)
		require.Equal(t, keys, keysOf(all), "every object, in byte order of the keys; an open upload is none")
		for _, o := range all {
			require.WithinDuration(t, before, o.ModifiedAt, time.Minute, "when %s was written", o.Key)
			require.Equal(t, time.UTC, o.ModifiedAt.Location())
		}
		// Page by page, each from the last key of the one before, the listing is the same.
		var paged []string
		after := ""
		for {
			page, err := b.List(ctx, "", after, 2)
			require.NoError(t, err)
			paged = append(paged, keysOf(page)...)
			if len(page) < 2 {
				break
			}
			after = page[len(page)-1].Key
		}
		require.Equal(t, keys, paged)
		for _, c := range []struct {
			prefix, after string
			want          []string
		}{
			{"", "a/b-c", keys[2:]},
			{"", "a/a", keys[1:]},     // an after no object has
			{"", "a/b/d/e", keys[5:]}, // the last key of a directory
			{"", "a/b/zz", keys[5:]},  // past a directory's keys
			{"a/", "a-b", keys[1:6]},  // an after below the prefix
			{"a/b/", "a/b/c", keys[3:5]},
			{"", "ba", nil},
		} {
			got, err := b.List(ctx, c.prefix, c.after, 100)
			require.NoError(t, err)
			require.Equal(t, c.want, keysOf(got), "prefix %q after %q", c.prefix, c.after)
		}
		got, err := b.List(ctx, "", "", 0)
		require.NoError(t, err)
		require.Empty(t, got)
	})

	t.Run("AbortUploadsUnderPrefix", func(t *testing.T) {
		ctx, b := setup(t)
		mp := multipart(t, b)
		dir := strings.TrimSuffix(Key(), "original") + "artifacts/"
		// Left open as by a process killed while storing: one part stored, never completed.
		open := func(k string) string {
			id, err := b.CreateUpload(ctx, k)
			require.NoError(t, err)
			PutPart(t, mp, k, id, 1, Bytes(100))
			return id
		}
		a, c, other := dir+"job_1/a", dir+"job_1/c", dir+"job_10/b"
		idA, idC, idOther := open(a), open(c), open(other)
		require.NoError(t, b.Put(ctx, dir+"job_1/stored", bytes.NewReader(Bytes(10)), 10))

		n, err := b.AbortUploadsUnder(ctx, dir+"job_1/", 1)
		require.NoError(t, err)
		require.Equal(t, 1, n, "bounded by limit")
		n, err = b.AbortUploadsUnder(ctx, dir+"job_1/", 100)
		require.NoError(t, err)
		require.Equal(t, 1, n, "the one left")
		for k, id := range map[string]string{a: idA, c: idC} {
			_, err = mp.ListParts(ctx, k, id)
			require.ErrorIs(t, err, domain.ErrNotFound, "the upload of %s has ended", k)
		}
		parts, err := mp.ListParts(ctx, other, idOther)
		require.NoError(t, err)
		require.Len(t, parts, 1, "job_10's upload is not under job_1/")
		_, err = b.Stat(ctx, dir+"job_1/stored")
		require.NoError(t, err, "a stored object is no upload")
		n, err = b.AbortUploadsUnder(ctx, dir+"job_1/", 100)
		require.NoError(t, err)
		require.Zero(t, n)

		_, err = b.AbortUploadsUnder(ctx, dir+"job_1", 100)
		require.ErrorIs(t, err, storage.ErrInvalidKey, "a prefix ends with /")
		_, err = b.AbortUploadsUnder(ctx, "../", 100)
		require.ErrorIs(t, err, storage.ErrInvalidKey)
	})

	t.Run("PutUnknownSize", func(t *testing.T) {
		ctx, b := setup(t)
		k, data := Key(), Bytes(100_000)
		require.NoError(t, b.Put(ctx, k, struct{ io.Reader }{bytes.NewReader(data)}, -1))
		require.Equal(t, data, read(t, b, k))
	})

	t.Run("PutRefusesWrongSize", func(t *testing.T) {
		ctx, b := setup(t)
		k := Key()
		require.Error(t, b.Put(ctx, k, bytes.NewReader(Bytes(10)), 11))
		require.Error(t, b.Put(ctx, k, bytes.NewReader(Bytes(12)), 11))
		_, err := b.Stat(ctx, k)
		require.ErrorIs(t, err, domain.ErrNotFound)
	})

	t.Run("MissingObject", func(t *testing.T) {
		ctx, b := setup(t)
		k := Key()
		_, err := b.Stat(ctx, k)
		require.ErrorIs(t, err, domain.ErrNotFound)
		_, err = b.Get(ctx, k)
		require.ErrorIs(t, err, domain.ErrNotFound)
		require.NoError(t, b.Delete(ctx, k))
	})

	t.Run("RefusesInvalidKeys", func(t *testing.T) {
		ctx, b := setup(t)
		for _, k := range []string{"", "../escape", "a/../../b", "/abs/path", "a//b", "a/b/", "a/./b", `a\b`, "a/\x00b"} {
			require.Error(t, b.Put(ctx, k, bytes.NewReader([]byte("x")), 1), "Put %q", k)
			_, err := b.CreateUpload(ctx, k)
			require.Error(t, err, "CreateUpload %q", k)
			_, err = b.PresignGet(ctx, k, time.Minute, domain.Download{})
			require.Error(t, err, "PresignGet %q", k)
		}
	})

	t.Run("Ping", func(t *testing.T) {
		ctx, b := setup(t)
		require.NoError(t, b.Ping(ctx))
	})

	t.Run("PresignedPutRoundTrip", func(t *testing.T) {
		ctx, b := setup(t)
		k, data := Key(), Bytes(300_000)
		id, u, headers := Open(t, b, k, int64(len(data)))
		require.Equal(t, fmt.Sprint(len(data)), headers["Content-Length"], "the client is told to send Content-Length")
		require.ErrorIs(t, b.CompleteUpload(ctx, k, id), domain.ErrNoBytes, "nothing put yet; the upload stays open")
		resp, body := Put(t, u, headers, data, int64(len(data)))
		require.True(t, ok(resp), "PUT answered %d: %s", resp.StatusCode, body)
		require.NotEmpty(t, resp.Header.Get("ETag"))

		_, err := b.Stat(ctx, k)
		require.ErrorIs(t, err, domain.ErrNotFound, "staged bytes are not the object before completion")
		require.NoError(t, b.CompleteUpload(ctx, k, id))
		size, err := b.Stat(ctx, k)
		require.NoError(t, err)
		require.Equal(t, int64(len(data)), size)
		require.Equal(t, data, read(t, b, k))

		gu, err := b.PresignGet(ctx, k, time.Minute, domain.Download{})
		require.NoError(t, err)
		resp, body = Get(t, gu, "")
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
		require.Equal(t, data, body)
		require.Equal(t, fmt.Sprint(len(data)), resp.Header.Get("Content-Length"))
		require.Equal(t, "application/octet-stream", resp.Header.Get("Content-Type"))
	})

	t.Run("UploadURLsDieWithTheirUpload", func(t *testing.T) {
		ctx, b := setup(t)
		data := Bytes(1000)
		size := int64(len(data))

		// Completed: the URL writes nothing more, the object stays what was committed.
		k := Key()
		id, u, headers := Open(t, b, k, size)
		resp, body := Put(t, u, headers, data, size)
		require.True(t, ok(resp), "PUT answered %d: %s", resp.StatusCode, body)
		require.NoError(t, b.CompleteUpload(ctx, k, id))
		fresh, _, err := b.PresignPut(ctx, k, id, size, time.Minute)
		require.NoError(t, err, "minting needs no store round trip; using it is refused")
		for _, url := range []string{u, fresh} {
			resp, body = Put(t, url, headers, Bytes(1000), size)
			require.True(t, resp.StatusCode >= 400 && resp.StatusCode < 500, "PUT after completion answered %d: %s", resp.StatusCode, body)
		}
		require.Equal(t, data, read(t, b, k))
		require.ErrorIs(t, b.CompleteUpload(ctx, k, id), domain.ErrNotFound)

		// Aborted before any bytes, and after some: nothing lands, ever.
		for _, putFirst := range []bool{false, true} {
			k := Key()
			id, u, headers := Open(t, b, k, size)
			if putFirst {
				resp, body := Put(t, u, headers, data, size)
				require.True(t, ok(resp), "PUT answered %d: %s", resp.StatusCode, body)
			}
			require.NoError(t, b.AbortUpload(ctx, k, id))
			require.NoError(t, b.AbortUpload(ctx, k, id), "aborting twice is not an error")
			resp, body := Put(t, u, headers, Bytes(1000), size)
			require.True(t, resp.StatusCode >= 400 && resp.StatusCode < 500, "PUT after abort answered %d: %s", resp.StatusCode, body)
			require.ErrorIs(t, b.CompleteUpload(ctx, k, id), domain.ErrNotFound)
			_, err := b.Stat(ctx, k)
			require.ErrorIs(t, err, domain.ErrNotFound)
		}
	})

	t.Run("DownloadURLServesNothingNewAfterDelete", func(t *testing.T) {
		ctx, b := setup(t)
		k, data := Key(), Bytes(500)
		id, u, headers := Open(t, b, k, 500)
		resp, body := Put(t, u, headers, data, 500)
		require.True(t, ok(resp), "PUT answered %d: %s", resp.StatusCode, body)
		require.NoError(t, b.CompleteUpload(ctx, k, id))
		gu, err := b.PresignGet(ctx, k, time.Minute, domain.Download{})
		require.NoError(t, err)

		require.NoError(t, b.Delete(ctx, k))
		resp, body = Put(t, u, headers, Bytes(500), 500)
		require.True(t, resp.StatusCode >= 400 && resp.StatusCode < 500, "PUT after delete answered %d: %s", resp.StatusCode, body)
		resp, body = Get(t, gu, "")
		require.Equal(t, http.StatusNotFound, resp.StatusCode, "the old download URL serves nothing: %s", body)
		_, err = b.Stat(ctx, k)
		require.ErrorIs(t, err, domain.ErrNotFound)
	})

	t.Run("MintedURLsDiffer", func(t *testing.T) {
		ctx, b, mp, k, id := openMultipart(t)
		p1, err := mp.PresignPart(ctx, k, id, 1, 0, 100, time.Minute)
		require.NoError(t, err)
		p2, err := mp.PresignPart(ctx, k, id, 1, 0, 100, time.Minute)
		require.NoError(t, err)
		require.NotEqual(t, p1, p2, "a re-minted part URL is a new URL")
		u1, _, err := b.PresignPut(ctx, k, id, 100, time.Minute)
		require.NoError(t, err)
		u2, _, err := b.PresignPut(ctx, k, id, 100, time.Minute)
		require.NoError(t, err)
		require.NotEqual(t, u1, u2)
		// Both work: the nonce is signed, not a new rule.
		e1 := PutPart(t, mp, k, id, 1, Bytes(100))
		resp, body := Put(t, p2, nil, Bytes(100), 100)
		require.True(t, ok(resp), "%d: %s", resp.StatusCode, body)
		require.NotEqual(t, normalize(e1), normalize(resp.Header.Get("ETag")))
	})

	t.Run("PresignedURLsForUnusualKeys", func(t *testing.T) {
		ctx, b := setup(t)
		for _, k := range []string{
			Key() + "/name with spaces, commas; and+plus%25.txt",
			Key() + "/ünï/cödé/日本.bin",
			Key() + "/a=b&c=d?e#f",
		} {
			data := Bytes(100)
			id, u, headers := Open(t, b, k, 100)
			resp, body := Put(t, u, headers, data, 100)
			require.True(t, ok(resp), "PUT %q answered %d: %s", k, resp.StatusCode, body)
			require.NoError(t, b.CompleteUpload(ctx, k, id))
			require.Equal(t, data, read(t, b, k))
			gu, err := b.PresignGet(ctx, k, time.Minute, domain.Download{})
			require.NoError(t, err)
			resp, body = Get(t, gu, "")
			require.Equal(t, http.StatusOK, resp.StatusCode, "GET %q: %s", k, body)
			require.Equal(t, data, body)
		}
	})

	t.Run("PresignedPutRefusesWrongLength", func(t *testing.T) {
		ctx, b := setup(t)
		const size = 1000
		for name, tc := range map[string]struct {
			body   []byte
			length int64
		}{
			"Bigger":        {Bytes(size + 1), size + 1},
			"MuchBigger":    {Bytes(3 * size), 3 * size},
			"Smaller":       {Bytes(size - 1), size - 1},
			"MissingLength": {Bytes(size), -1}, // chunked
		} {
			k := Key()
			id, u, headers := Open(t, b, k, size)
			resp, body := Put(t, u, headers, tc.body, tc.length)
			require.False(t, ok(resp), "%s: PUT answered %d: %s", name, resp.StatusCode, body)
			require.ErrorIs(t, b.CompleteUpload(ctx, k, id), domain.ErrNoBytes, "%s: nothing staged", name)
			_, err := b.Stat(ctx, k)
			require.ErrorIs(t, err, domain.ErrNotFound, "%s: nothing stored", name)
		}
	})

	t.Run("ExpiredURLsRefused", func(t *testing.T) {
		t.Parallel() // it may wait for real time to pass
		ctx, be := setupBackend(t)
		b := be.Blobs
		k, stored := Key(), Key()
		data := Bytes(100)
		require.NoError(t, b.Put(ctx, stored, bytes.NewReader(data), int64(len(data))))
		id, err := b.CreateUpload(ctx, k)
		require.NoError(t, err)
		pu, headers, err := b.PresignPut(ctx, k, id, int64(len(data)), time.Second)
		require.NoError(t, err)
		gu, err := b.PresignGet(ctx, stored, time.Second, domain.Download{})
		require.NoError(t, err)
		if be.Advance != nil {
			be.Advance(2 * time.Second)
		} else {
			// The store keeps real time: wait until it refuses the GET URL, minted after the
			// PUT URL with the same lifetime. A GET changes nothing, so it can be polled.
			eventually.True(t, "the GET URL to expire", func() bool {
				resp, _ := Get(t, gu, "")
				return resp.StatusCode == http.StatusForbidden
			})
		}

		resp, body := Put(t, pu, headers, data, int64(len(data)))
		require.Equal(t, http.StatusForbidden, resp.StatusCode, "%s", body)
		require.ErrorIs(t, b.CompleteUpload(ctx, k, id), domain.ErrNoBytes, "nothing staged")
		resp, body = Get(t, gu, "")
		require.Equal(t, http.StatusForbidden, resp.StatusCode, "%s", body)
	})

	t.Run("TamperedURLsRefused", func(t *testing.T) {
		ctx, b := setup(t)
		data := Bytes(100)
		size := int64(len(data))

		k := Key()
		id, u, headers := Open(t, b, k, size)
		resp, body := Put(t, FlipSignature(t, u), headers, data, size)
		require.Equal(t, http.StatusForbidden, resp.StatusCode, "flipped signature: %s", body)
		resp, body = Put(t, FlipKey(t, u), headers, data, size)
		require.Equal(t, http.StatusForbidden, resp.StatusCode, "flipped key: %s", body)
		require.ErrorIs(t, b.CompleteUpload(ctx, k, id), domain.ErrNoBytes)

		// A download URL is good for its object only.
		a, other := Key(), Key()
		require.NoError(t, b.Put(ctx, a, bytes.NewReader(data), size))
		require.NoError(t, b.Put(ctx, other, bytes.NewReader(data), size))
		gu, err := b.PresignGet(ctx, a, time.Minute, domain.Download{})
		require.NoError(t, err)
		resp, body = Get(t, FlipSignature(t, gu), "")
		require.Equal(t, http.StatusForbidden, resp.StatusCode, "flipped signature: %s", body)
		resp, body = Get(t, strings.Replace(gu, fileSegment(a), fileSegment(other), 1), "")
		require.Equal(t, http.StatusForbidden, resp.StatusCode, "URL moved to another object: %s", body)
	})

	t.Run("RangeGet", func(t *testing.T) {
		ctx, b := setup(t)
		k, data := Key(), Bytes(1000)
		require.NoError(t, b.Put(ctx, k, bytes.NewReader(data), int64(len(data))))
		gu, err := b.PresignGet(ctx, k, time.Minute, domain.Download{})
		require.NoError(t, err)

		resp, body := Get(t, gu, "bytes=100-199")
		require.Equal(t, http.StatusPartialContent, resp.StatusCode, "%s", body)
		require.Equal(t, data[100:200], body)
		require.Equal(t, "bytes 100-199/1000", resp.Header.Get("Content-Range"))
		require.Equal(t, "100", resp.Header.Get("Content-Length"))

		resp, body = Get(t, gu, "bytes=990-")
		require.Equal(t, http.StatusPartialContent, resp.StatusCode)
		require.Equal(t, data[990:], body)

		resp, body = Get(t, gu, "bytes=-5")
		require.Equal(t, http.StatusPartialContent, resp.StatusCode)
		require.Equal(t, data[995:], body)

		resp, body = Get(t, gu, "bytes=5000-")
		require.Equal(t, http.StatusRequestedRangeNotSatisfiable, resp.StatusCode, "%s", body)
	})

	t.Run("DownloadName", func(t *testing.T) {
		ctx, b := setup(t)
		k, data := Key(), Bytes(10)
		require.NoError(t, b.Put(ctx, k, bytes.NewReader(data), int64(len(data))))
		for i, name := range []string{"report.pdf", `résumé "final"; 100%.pdf`, "日本語 ファイル.txt", `back\slash,comma.bin`} {
			// The type served is the one given, whatever the name says.
			ct := []string{"image/png", "application/pdf", "text/plain; charset=utf-8", "application/octet-stream"}[i]
			gu, err := b.PresignGet(ctx, k, time.Minute, domain.Download{Name: name, ContentType: ct})
			require.NoError(t, err)
			resp, body := Get(t, gu, "")
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
			require.Equal(t, data, body)
			require.Equal(t, ct, resp.Header.Get("Content-Type"))
			disp, params, err := mime.ParseMediaType(resp.Header.Get("Content-Disposition"))
			require.NoError(t, err, "Content-Disposition %q", resp.Header.Get("Content-Disposition"))
			require.Equal(t, "attachment", disp)
			require.Equal(t, name, params["filename"], "Content-Disposition %q", resp.Header.Get("Content-Disposition"))
		}
	})

	t.Run("Multipart", func(t *testing.T) {
		ctx, b, mp, k, id := openMultipart(t)
		parts := [][]byte{Bytes(PartSize), Bytes(PartSize), Bytes(123_457)}
		etags := make([]string, len(parts))
		for i, p := range parts {
			etags[i] = PutPart(t, mp, k, id, i+1, p)
		}
		lateURL, err := mp.PresignPart(ctx, k, id, 4, 2*PartSize+123_457, 1000, time.Minute)
		require.NoError(t, err)

		// Resume: a fresh URL for part 2 and new bytes replace the stored part.
		oldETag := etags[1]
		parts[1] = Bytes(PartSize)
		etags[1] = PutPart(t, mp, k, id, 2, parts[1])
		require.NotEqual(t, normalize(oldETag), normalize(etags[1]))

		listed, err := mp.ListParts(ctx, k, id)
		require.NoError(t, err)
		require.Len(t, listed, 3)
		for i, p := range listed {
			require.Equal(t, i+1, p.PartNumber)
			require.Equal(t, normalize(etags[i]), normalize(p.ETag), "part %d", i+1)
		}

		given := func(e2 string) []domain.PartETag {
			return []domain.PartETag{{PartNumber: 1, ETag: etags[0]}, {PartNumber: 2, ETag: e2}, {PartNumber: 3, ETag: etags[2]}}
		}
		err = mp.CompleteMultipart(ctx, k, id, given(oldETag))
		require.ErrorIs(t, err, storage.ErrPartMismatch)
		require.Contains(t, err.Error(), "part 2")
		err = mp.CompleteMultipart(ctx, k, id, given(`"0123456789abcdef0123456789abcdef"`))
		require.ErrorIs(t, err, storage.ErrPartMismatch)
		_, err = b.Stat(ctx, k)
		require.ErrorIs(t, err, domain.ErrNotFound, "a refused completion stores nothing")

		require.NoError(t, mp.CompleteMultipart(ctx, k, id, given(etags[1])))
		want := bytes.Join(parts, nil)
		size, err := b.Stat(ctx, k)
		require.NoError(t, err)
		require.Equal(t, int64(len(want)), size)
		require.True(t, bytes.Equal(want, read(t, b, k)), "assembled object differs")

		_, err = mp.ListParts(ctx, k, id)
		require.ErrorIs(t, err, domain.ErrNotFound, "the parts are gone after completion")
		// The part URLs died with the upload: nothing lands, the object stays.
		resp, body := Put(t, lateURL, nil, Bytes(1000), 1000)
		require.True(t, resp.StatusCode >= 400 && resp.StatusCode < 500, "a part after completion answered %d: %s", resp.StatusCode, body)
		require.True(t, bytes.Equal(want, read(t, b, k)), "the object is unchanged")
	})

	t.Run("MultipartCompleteChecksParts", func(t *testing.T) {
		ctx, _, mp, k, id := openMultipart(t)
		e1 := PutPart(t, mp, k, id, 1, Bytes(PartSize))
		e2 := PutPart(t, mp, k, id, 2, Bytes(1000))

		for name, parts := range map[string][]domain.PartETag{
			"MissingPart":  {{PartNumber: 1, ETag: e1}, {PartNumber: 2, ETag: e2}, {PartNumber: 3, ETag: e2}},
			"Gap":          {{PartNumber: 1, ETag: e1}, {PartNumber: 3, ETag: e2}},
			"OutOfOrder":   {{PartNumber: 2, ETag: e2}, {PartNumber: 1, ETag: e1}},
			"NotFromOne":   {{PartNumber: 2, ETag: e2}},
			"Duplicate":    {{PartNumber: 1, ETag: e1}, {PartNumber: 1, ETag: e1}},
			"Empty":        {},
			"SwappedETags": {{PartNumber: 1, ETag: e2}, {PartNumber: 2, ETag: e1}},
		} {
			err := mp.CompleteMultipart(ctx, k, id, parts)
			require.ErrorIs(t, err, storage.ErrPartMismatch, name)
		}
		// Unquoted ETags are the same ETags.
		require.NoError(t, mp.CompleteMultipart(ctx, k, id, []domain.PartETag{{PartNumber: 1, ETag: normalize(e1)}, {PartNumber: 2, ETag: e2}}))
	})

	t.Run("MultipartPartSizeEnforced", func(t *testing.T) {
		ctx, b, mp, k, id := openMultipart(t)
		u, err := mp.PresignPart(ctx, k, id, 1, 0, 1000, time.Minute)
		require.NoError(t, err)
		resp, body := Put(t, u, nil, Bytes(1001), 1001)
		require.False(t, ok(resp), "a bigger part is refused, got %d: %s", resp.StatusCode, body)
		resp, body = Put(t, FlipSignature(t, u), nil, Bytes(1000), 1000)
		require.Equal(t, http.StatusForbidden, resp.StatusCode, "flipped signature: %s", body)
		listed, err := mp.ListParts(ctx, k, id)
		require.NoError(t, err)
		require.Empty(t, listed)
		require.NoError(t, b.AbortUpload(ctx, k, id))
	})

	t.Run("MultipartAbort", func(t *testing.T) {
		ctx, b, mp, k, id := openMultipart(t)
		e1 := PutPart(t, mp, k, id, 1, Bytes(PartSize))
		late, err := mp.PresignPart(ctx, k, id, 2, PartSize, 100, time.Minute)
		require.NoError(t, err)

		require.NoError(t, b.AbortUpload(ctx, k, id))
		_, err = mp.ListParts(ctx, k, id)
		require.ErrorIs(t, err, domain.ErrNotFound)
		resp, body := Put(t, late, nil, Bytes(100), 100)
		require.False(t, ok(resp), "a part after abort is refused, got %d: %s", resp.StatusCode, body)
		err = mp.CompleteMultipart(ctx, k, id, []domain.PartETag{{PartNumber: 1, ETag: e1}})
		require.Error(t, err)
		_, err = b.Stat(ctx, k)
		require.ErrorIs(t, err, domain.ErrNotFound)
		require.NoError(t, b.AbortUpload(ctx, k, id), "aborting twice is not an error")
	})
}

// Open opens a staged upload of key and mints its single-PUT URL.
func Open(t *testing.T, b domain.Blobs, key string, size int64) (uploadID, url string, headers map[string]string) {
	t.Helper()
	id, err := b.CreateUpload(context.Background(), key)
	require.NoError(t, err)
	u, h, err := b.PresignPut(context.Background(), key, id, size, time.Minute)
	require.NoError(t, err)
	return id, u, h
}

// PutPart mints a URL for part n, the object's bytes from (n-1)·PartSize (every part
// but the last is PartSize long), PUTs it and returns the ETag the store answered.
func PutPart(t *testing.T, mp domain.MultipartBlobs, key, uploadID string, n int, data []byte) string {
	t.Helper()
	u, err := mp.PresignPart(context.Background(), key, uploadID, n, int64(n-1)*PartSize, int64(len(data)), time.Minute)
	require.NoError(t, err)
	resp, body := Put(t, u, nil, data, int64(len(data)))
	require.True(t, ok(resp), "part %d PUT answered %d: %s", n, resp.StatusCode, body)
	etag := resp.Header.Get("ETag")
	require.NotEmpty(t, etag, "part %d has an ETag", n)
	return etag
}

// Put sends body to a pre-signed URL with the given headers. length is the
// Content-Length to declare; -1 sends the body chunked, without one.
func Put(t *testing.T, u string, headers map[string]string, body []byte, length int64) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, u, struct{ io.Reader }{bytes.NewReader(body)})
	require.NoError(t, err)
	for k, v := range headers {
		if !strings.EqualFold(k, "Content-Length") { // net/http sends req.ContentLength
			req.Header.Set(k, v)
		}
	}
	req.ContentLength = length
	if length == 0 {
		req.Body = http.NoBody
	}
	return do(t, req)
}

// Get fetches a pre-signed URL, with a Range header when rng is not empty.
func Get(t *testing.T, u, rng string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	require.NoError(t, err)
	if rng != "" {
		req.Header.Set("Range", rng)
	}
	return do(t, req)
}

func do(t *testing.T, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, body
}

func ok(resp *http.Response) bool { return resp.StatusCode >= 200 && resp.StatusCode < 300 }

// FlipSignature changes the first character of the URL's signature (sig, or S3's
// X-Amz-Signature), keeping it a valid hex or base64url character.
func FlipSignature(t *testing.T, u string) string {
	t.Helper()
	for _, name := range []string{"sig=", "X-Amz-Signature="} {
		i := strings.Index(u, "?"+name)
		if i < 0 {
			i = strings.Index(u, "&"+name)
		}
		if i >= 0 {
			at := i + 1 + len(name)
			c := byte('0')
			if u[at] == '0' {
				c = '1'
			}
			return u[:at] + string(c) + u[at+1:]
		}
	}
	t.Fatalf("no signature parameter in %s", u)
	return ""
}

// FlipKey changes the last character of the URL's path, which names the object.
func FlipKey(t *testing.T, u string) string {
	t.Helper()
	p, err := url.Parse(u)
	require.NoError(t, err)
	last := p.Path[len(p.Path)-1]
	c := byte('x')
	if last == 'x' {
		c = 'y'
	}
	p.Path = p.Path[:len(p.Path)-1] + string(c)
	p.RawPath = ""
	return p.String()
}

// Key returns a fresh object key shaped like the services' keys.
func Key() string {
	return "org_test/prj_test/file_" + hex.EncodeToString(Bytes(8)) + "/original"
}

// keysOf returns the keys of a listing, in its order.
func keysOf(objs []domain.StoredObject) []string {
	var keys []string
	for _, o := range objs {
		keys = append(keys, o.Key)
	}
	return keys
}

// fileSegment is the part of a Key that makes it unique.
func fileSegment(k string) string { return strings.Split(k, "/")[2] }

// Bytes returns n random bytes.
func Bytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

func read(t *testing.T, b domain.Blobs, key string) []byte {
	t.Helper()
	rc, err := b.Get(context.Background(), key)
	require.NoError(t, err)
	defer rc.Close()
	data, err := io.ReadAll(rc)
	require.NoError(t, err)
	return data
}

func normalize(etag string) string { return strings.ToLower(strings.Trim(etag, `"`)) }
