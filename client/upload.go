package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/filemill/filemill/client/api"
)

// UploadOptions adjust UploadFile.
type UploadOptions struct {
	// Filename names the file; default the path's last element.
	Filename string
	// MimeType is the declared type (verified against the bytes by the service).
	MimeType string
	// ProjectID is the project the file belongs to; default the key's.
	ProjectID string
	// Validation is the policy the file is judged by at completion.
	Validation *api.ValidationPolicy
	// MultipartThreshold is the size from which a file goes up in parts; default 64 MiB.
	// The service sizes the parts (16 MiB or more, at most 64 of them).
	MultipartThreshold int64
	// Concurrency is how many parts are sent at once; default 4. Memory stays bounded
	// whatever the file's size: parts are read from the file as they are sent.
	Concurrency int
	// Progress, when set, is called as bytes are sent, one call at a time.
	Progress func(UploadProgress)
	// StateFile, when set, is where a multipart upload records its session and the
	// parts that have landed (a small JSON file). If it exists when UploadFile starts,
	// the upload resumes that session: fresh URLs are minted for its parts and only the
	// missing ones are sent. It is removed once the file is complete. A state file of
	// another file, or of a file that changed since, starts a new session.
	StateFile string
}

// UploadProgress is how far an upload has gone.
type UploadProgress struct {
	// Sent counts the bytes that have landed or are on their way, parts a resumed
	// session had already sent included; a part sent again after a failure counts once.
	Sent int64
	// Total is the file's size.
	Total int64
}

// DefaultMultipartThreshold is UploadOptions.MultipartThreshold's default.
const DefaultMultipartThreshold = 64 << 20

// UploadFile uploads the file at path straight to storage and completes it: one PUT
// for a small file, parts sent in parallel for a large one (resumable with
// opts.StateFile). It answers the ready file; a file that fails its validation policy
// is an *APIError with code validation_failed.
func (c *Client) UploadFile(ctx context.Context, path string, opts UploadOptions) (*api.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, errorf("upload: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, errorf("upload: %w", err)
	}
	if !info.Mode().IsRegular() {
		return nil, errorf("upload: %s is not a regular file", path)
	}
	if info.Size() == 0 {
		return nil, errorf("upload: %s is empty", path)
	}
	if opts.Filename == "" {
		opts.Filename = filepath.Base(path)
	}
	if opts.MultipartThreshold <= 0 {
		opts.MultipartThreshold = DefaultMultipartThreshold
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = 4
	}
	u := &uploader{c: c, f: f, path: path, info: info, opts: opts,
		progress: &progress{total: info.Size(), fn: opts.Progress}}
	if opts.StateFile != "" {
		if file, done, err := u.resume(ctx); done || err != nil {
			return file, err
		}
	}
	if info.Size() < opts.MultipartThreshold {
		return u.single(ctx)
	}
	return u.multipart(ctx, nil)
}

type uploader struct {
	c        *Client
	f        *os.File
	path     string
	info     os.FileInfo
	opts     UploadOptions
	progress *progress
}

func (u *uploader) request(multipart bool) api.CreateUploadRequest {
	req := api.CreateUploadRequest{Filename: &u.opts.Filename, ByteSize: Ptr(int(u.info.Size())),
		Validation: u.opts.Validation}
	if multipart {
		req.Multipart = Ptr(true)
	}
	if u.opts.MimeType != "" {
		req.MimeType = &u.opts.MimeType
	}
	if u.opts.ProjectID != "" {
		req.ProjectId = &u.opts.ProjectID
	}
	return req
}

// single sends the whole file in one PUT and completes it.
func (u *uploader) single(ctx context.Context) (*api.File, error) {
	up, err := u.c.CreateUpload(ctx, u.request(false))
	if err != nil {
		return nil, err
	}
	if up.UploadUrl == nil {
		return nil, errorf("upload %s: the session has no upload_url", up.Id)
	}
	_, err = u.put(ctx, *up.UploadUrl, up.UploadHeaders, 0, u.info.Size())
	// A retried PUT whose first attempt landed is refused as a second PUT: the bytes are
	// there, and completing tells.
	var apiErr *APIError
	if err != nil && !(errors.As(err, &apiErr) && apiErr.Code == api.ErrorCodeUploadSessionConsumed) {
		return nil, err
	}
	return u.c.Complete(ctx, up.FileId)
}

// uploadState is what StateFile holds: enough to find the session again and to know
// which parts have landed.
type uploadState struct {
	Version  int            `json:"version"`
	UploadID string         `json:"upload_id"`
	FileID   string         `json:"file_id"`
	Path     string         `json:"path"`
	Size     int64          `json:"size"`
	ModTime  time.Time      `json:"mod_time"`
	Parts    map[int]string `json:"parts"` // part number → ETag
}

const stateVersion = 1

// resume continues the session of opts.StateFile. done is true when it produced the
// outcome (the file, or an error); false when there is nothing to resume.
func (u *uploader) resume(ctx context.Context) (*api.File, bool, error) {
	raw, err := os.ReadFile(u.opts.StateFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, true, errorf("upload: read the state file: %w", err)
	}
	var st uploadState
	if err := json.Unmarshal(raw, &st); err != nil || st.Version != stateVersion || st.UploadID == "" {
		return nil, true, errorf("upload: %s is not an upload state file", u.opts.StateFile)
	}
	abs, _ := filepath.Abs(u.path)
	if st.Path != abs || st.Size != u.info.Size() || !st.ModTime.Equal(u.info.ModTime()) {
		// Another file, or this one changed: its parts are worth nothing.
		_ = u.c.AbortUpload(ctx, st.UploadID)
		return nil, false, u.forget()
	}
	up, err := u.c.RemintUploadParts(ctx, st.UploadID)
	var apiErr *APIError
	if errors.As(err, &apiErr) && (apiErr.Status == http.StatusConflict || apiErr.Status == http.StatusNotFound) {
		// Not open any more: completed by the run that crashed before forgetting its
		// state, or expired, aborted or swept.
		if sess, gerr := u.c.GetUpload(ctx, st.UploadID); gerr == nil && sess.State == api.UploadStateCompleted {
			file, ferr := u.c.GetFile(ctx, sess.FileId)
			if ferr != nil {
				return nil, true, ferr
			}
			return file, true, u.forget()
		}
		return nil, false, u.forget()
	}
	if err != nil {
		return nil, true, err
	}
	file, err := u.multipart(ctx, &resumed{state: &st, session: up})
	return file, true, err
}

type resumed struct {
	state   *uploadState
	session *api.Upload
}

// multipart sends the parts not yet landed, at most opts.Concurrency at once, records
// each in the state file as it lands, then assembles the file.
func (u *uploader) multipart(ctx context.Context, r *resumed) (*api.File, error) {
	var st *uploadState
	var up *api.Upload
	if r != nil {
		st, up = r.state, r.session
	} else {
		var err error
		if up, err = u.c.CreateUpload(ctx, u.request(true)); err != nil {
			return nil, err
		}
		abs, _ := filepath.Abs(u.path)
		st = &uploadState{Version: stateVersion, UploadID: up.Id, FileID: up.FileId, Path: abs,
			Size: u.info.Size(), ModTime: u.info.ModTime(), Parts: map[int]string{}}
		if err := u.save(st); err != nil {
			return nil, err
		}
	}
	if err := checkLayout(up, u.info.Size()); err != nil {
		return nil, err
	}
	var mu sync.Mutex // guards st.Parts and the state file
	var landed int64
	for _, p := range up.Parts {
		if _, ok := st.Parts[p.PartNumber]; ok {
			landed += int64(p.ByteSize)
		}
	}
	u.progress.add(landed)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(u.opts.Concurrency)
	for _, p := range up.Parts {
		mu.Lock()
		_, done := st.Parts[p.PartNumber]
		mu.Unlock()
		if done {
			continue
		}
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error {
			etag, err := u.put(gctx, p.Url, nil, int64(p.ByteOffset), int64(p.ByteSize))
			if err != nil {
				return fmt.Errorf("part %d: %w", p.PartNumber, err)
			}
			if etag == "" {
				return errorf("upload %s: part %d: the storage host answered no ETag", up.Id, p.PartNumber)
			}
			mu.Lock()
			defer mu.Unlock()
			st.Parts[p.PartNumber] = etag
			return u.save(st)
		})
	}
	if err := g.Wait(); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	parts := make([]PartETag, 0, len(st.Parts))
	for n, etag := range st.Parts {
		parts = append(parts, PartETag{PartNumber: n, ETag: etag})
	}
	slices.SortFunc(parts, func(a, b PartETag) int { return a.PartNumber - b.PartNumber })
	file, err := u.c.CompleteUploadParts(ctx, up.Id, parts)
	if err != nil {
		return nil, err
	}
	return file, u.forget()
}

// checkLayout makes sure the session's parts cover the file end to end.
func checkLayout(up *api.Upload, size int64) error {
	var next int64
	for i, p := range up.Parts {
		if p.PartNumber != i+1 || int64(p.ByteOffset) != next || p.ByteSize <= 0 {
			return errorf("upload %s: part %d does not follow the one before", up.Id, p.PartNumber)
		}
		next += int64(p.ByteSize)
	}
	if next != size || len(up.Parts) == 0 {
		return errorf("upload %s: the parts cover %d bytes of %d", up.Id, next, size)
	}
	return nil
}

// put sends size bytes of the file from off to a pre-signed URL and answers the ETag.
// Each attempt reads the section again from the file; progress counts an attempt's
// bytes only until it is replaced by the next.
func (u *uploader) put(ctx context.Context, url string, headers map[string]string, off, size int64) (string, error) {
	var mu sync.Mutex
	var counted int64
	body := func() io.ReadCloser {
		mu.Lock()
		u.progress.add(-counted)
		counted = 0
		mu.Unlock()
		return io.NopCloser(&countingReader{r: io.NewSectionReader(u.f, off, size), add: func(n int64) {
			mu.Lock()
			counted += n
			mu.Unlock()
			u.progress.add(n)
		}})
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, url, body())
	if err != nil {
		return "", errorf("upload: %w", err)
	}
	req.GetBody = func() (io.ReadCloser, error) { return body(), nil }
	req.ContentLength = size
	for k, v := range headers {
		if http.CanonicalHeaderKey(k) != "Content-Length" {
			req.Header.Set(k, v)
		}
	}
	resp, err := u.c.doer.Do(req)
	if err != nil {
		return "", errorf("upload: %w", err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return "", newAPIError(resp)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, errorBodyLimit))
	resp.Body.Close()
	return resp.Header.Get("ETag"), nil
}

// save writes the state file whole (a new file renamed over the old), so a crash
// leaves the previous state or the new one, never half of one.
func (u *uploader) save(st *uploadState) error {
	if u.opts.StateFile == "" {
		return nil
	}
	raw, err := json.Marshal(st)
	if err != nil {
		return err
	}
	tmp := u.opts.StateFile + ".tmp"
	if err := os.WriteFile(tmp, raw, 0o600); err != nil {
		return errorf("upload: write the state file: %w", err)
	}
	if err := os.Rename(tmp, u.opts.StateFile); err != nil {
		return errorf("upload: write the state file: %w", err)
	}
	return nil
}

func (u *uploader) forget() error {
	if u.opts.StateFile == "" {
		return nil
	}
	if err := os.Remove(u.opts.StateFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		return errorf("upload: remove the state file: %w", err)
	}
	return nil
}

// progress adds up the bytes of an upload's parts and reports the sum.
type progress struct {
	mu    sync.Mutex
	sent  int64
	total int64
	fn    func(UploadProgress)
}

func (p *progress) add(n int64) {
	if n == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sent += n
	if p.fn != nil {
		p.fn(UploadProgress{Sent: p.sent, Total: p.total})
	}
}

type countingReader struct {
	r   io.Reader
	add func(int64)
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if n > 0 {
		c.add(int64(n))
	}
	return n, err
}
