package domain

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/url"
	"slices"
	"time"
)

// Multipart limits of the contract: parts of 16 MiB or more, at most 64 of them.
const (
	MinPartSize  = 16 << 20
	MaxPartCount = 64
)

// Fetcher brings the bytes of a public HTTPS URL, refusing private destinations and
// redirects. Its errors carry invalid_request (param from_url) or timeout codes.
type Fetcher interface {
	Fetch(ctx context.Context, rawURL string, maxBytes int64) (*Fetched, error)
}

// Fetched is an open response body with what the server said about it.
type Fetched struct {
	Body        io.ReadCloser
	Filename    string
	ContentType string
	Size        int64 // -1 when the server did not say
}

// UploadsPorts is what Uploads uses of the Store: upload sessions and their files, the
// events they write, and the project a session is opened in.
type UploadsPorts interface {
	Transactor
	FileStore
	EventStore
	TenantStore
}

// Uploads opens upload sessions and completes them into files.
type Uploads struct {
	Store   UploadsPorts
	Blobs   Blobs
	Fetcher Fetcher
	Clock   Clock
	Config  Config
	Files   *Files
}

// inTx runs fn in one transaction, on the ports Uploads declares.
func (s *Uploads) inTx(ctx context.Context, fn func(tx UploadsPorts) error) error {
	return s.Store.InTx(ctx, func(tx Store) error { return fn(tx) })
}

// NewUpload is the body of POST /v1/uploads.
type NewUpload struct {
	Filename   string
	ByteSize   int64
	FromURL    string
	MIMEType   string
	Multipart  bool
	ProjectID  string
	Validation *Validation
}

// UploadTicket is an upload session with the URLs minted for this answer.
type UploadTicket struct {
	Upload   *Upload
	File     *File
	URL      string
	Headers  map[string]string
	Parts    []PartURL
	Expires  time.Time
	Filename string
}

// PartURL is the pre-signed URL of one part of a multipart session.
type PartURL struct {
	PartNumber int
	URL        string
	ByteOffset int64
	ByteSize   int64
}

// blobKey is where a file's original bytes live: tenant first, so a key names its owner.
func blobKey(f *File) string {
	return f.OrganizationID + "/" + f.ProjectID + "/" + f.ID + "/original"
}

// ArtifactKey is where an artifact's bytes live: beside its file's, under the job that
// made it, so what a job's attempts stored can be found by the job (sweepLostArtifacts).
func ArtifactKey(f *File, jobID, artifactID string) string {
	return artifactPrefix(f.OrganizationID, f.ProjectID, f.ID, jobID) + artifactID
}

func artifactPrefix(org, project, file, job string) string {
	return org + "/" + project + "/" + file + "/artifacts/" + job + "/"
}

func validateNewUpload(req *NewUpload, cfg Config) error {
	hasFile := req.Filename != "" || req.ByteSize != 0
	switch {
	case hasFile && req.FromURL != "":
		return InvalidParam("from_url", "give either filename and byte_size, or from_url, not both")
	case !hasFile && req.FromURL == "":
		return InvalidParam("filename", "give filename and byte_size, or from_url")
	}
	if req.FromURL != "" {
		if req.Multipart {
			return InvalidParam("multipart", "multipart does not apply to from_url")
		}
		u, err := url.Parse(req.FromURL)
		if err != nil || u.Host == "" || u.Scheme != "https" {
			return InvalidParam("from_url", "from_url must be an absolute https URL")
		}
	} else {
		if req.Filename == "" {
			return InvalidParam("filename", "filename is required with byte_size")
		}
		if req.ByteSize < 1 {
			return InvalidParam("byte_size", "byte_size must be at least 1")
		}
		if req.ByteSize > cfg.MaxFileSize {
			return &Error{Code: CodePayloadTooLarge, Param: "byte_size",
				Message: fmt.Sprintf("files are limited to %d bytes", cfg.MaxFileSize)}
		}
	}
	if req.FromURL == "" {
		if err := CheckFilename(req.Filename); err != nil {
			return err
		}
	} else if err := CheckText("from_url", req.FromURL, 2048); err != nil {
		return err
	}
	if req.MIMEType != "" {
		if err := CheckMediaType("mime_type", req.MIMEType); err != nil {
			return err
		}
	}
	if v := req.Validation; v != nil {
		if len(v.Formats) > 32 || (v.Formats != nil && len(v.Formats) == 0) {
			return InvalidParam("validation.formats", "validation.formats takes 1 to 32 items")
		}
		if err := checkFormats(v.Formats); err != nil {
			return err
		}
		if v.MaxBytes < 0 || (v.MaxBytes == 0 && v.MinBytes < 0) {
			return InvalidParam("validation.max_bytes", "max_bytes must be at least 1")
		}
		if v.MinBytes < 0 {
			return InvalidParam("validation.min_bytes", "min_bytes must be at least 1")
		}
		if v.MaxBytes > 0 && v.MinBytes > v.MaxBytes {
			return InvalidParam("validation.min_bytes", "min_bytes must not exceed max_bytes")
		}
	}
	return nil
}

// PartLayout chooses the part size for a multipart upload: at least 16 MiB, whole MiB,
// and few enough parts to stay within 64.
func PartLayout(size int64) (partSize int64, count int) {
	partSize = MinPartSize
	if need := (size + MaxPartCount - 1) / MaxPartCount; need > partSize {
		partSize = (need + (1<<20 - 1)) &^ (1<<20 - 1)
	}
	count = int((size + partSize - 1) / partSize)
	return partSize, count
}

// CreateUpload opens a session for bytes the client will PUT, or fetches from_url and
// completes the file at once (then the ticket's File is the completed file).
// Codes: invalid_request, payload_too_large, not_found/key_restricted (project),
// validation_failed (from_url rejected by policy), file_too_large, timeout.
func (s *Uploads) CreateUpload(ctx context.Context, p *Principal, req NewUpload) (*UploadTicket, error) {
	if err := p.RequireScope(ScopeFilesWrite); err != nil {
		return nil, err
	}
	if err := validateNewUpload(&req, s.Config); err != nil {
		return nil, err
	}
	if req.Validation != nil && req.Validation.Scan {
		if err := s.Files.checkScanner(ctx); err != nil {
			return nil, err
		}
	}
	prj, err := p.ResolveProject(ctx, s.Store, req.ProjectID)
	if err != nil {
		return nil, err
	}
	now := s.Clock.Now()
	f := &File{ID: NewID(PrefixFile), OrganizationID: p.Organization.ID, ProjectID: prj.ID, Environment: p.Environment(),
		Filename: req.Filename, Status: FileAwaitingUpload, ByteSize: req.ByteSize,
		DeclaredMIMEType: req.MIMEType, CreatedAt: now}
	f.StorageKey = blobKey(f)
	u := &Upload{ID: NewID(PrefixUpload), OrganizationID: f.OrganizationID, ProjectID: f.ProjectID, Environment: f.Environment,
		FileID: f.ID, State: UploadOpen, ByteSize: req.ByteSize, StorageKey: f.StorageKey, Validation: req.Validation,
		SourceURL: req.FromURL, ExpiresAt: now.Add(s.Config.UploadSessionTTL), CreatedAt: now}
	f.UploadID = u.ID
	if req.FromURL != "" {
		return s.fetchUpload(ctx, p, f, u)
	}
	if req.Multipart {
		if _, ok := s.Blobs.(MultipartBlobs); !ok {
			return nil, InvalidParam("multipart", "this deployment's storage does not support multipart uploads")
		}
		u.Multipart = true
		u.PartSize, u.PartCount = PartLayout(req.ByteSize)
	}
	// The client's bytes are staged in the store, out of sight of the file's key, until
	// completion: an upload URL can never write once its session has ended.
	if u.StorageUploadID, err = s.Blobs.CreateUpload(ctx, u.StorageKey); err != nil {
		return nil, fmt.Errorf("open upload: %w", err)
	}
	if err := s.openSession(ctx, f, u); err != nil {
		_ = s.Blobs.AbortUpload(context.WithoutCancel(ctx), u.StorageKey, u.StorageUploadID)
		return nil, err
	}
	return s.ticket(ctx, u, f)
}

func (s *Uploads) openSession(ctx context.Context, f *File, u *Upload) error {
	e, err := NewEvent(ctx, EventUploadOpened, u.OrganizationID, u.ProjectID, u.Environment, f.ID, u.objectView(f), u.CreatedAt)
	if err != nil {
		return err
	}
	return s.Store.OpenUpload(ctx, f, u, e)
}

// ticket mints the URLs of an open session. Every call mints URLs of its own.
func (s *Uploads) ticket(ctx context.Context, u *Upload, f *File) (*UploadTicket, error) {
	t := &UploadTicket{Upload: u, File: f}
	// A session opened before uploads were staged has no staged upload to mint for.
	if u.State != UploadOpen || u.StorageUploadID == "" {
		return t, nil
	}
	now := s.Clock.Now()
	// Whole seconds from a whole second: what the stores sign, so the expiry shown is
	// never later than the URLs' own.
	ttl := min(s.Config.UploadURLTTL, u.ExpiresAt.Sub(now)).Truncate(time.Second)
	if ttl < time.Second {
		return t, nil
	}
	t.Expires = now.Truncate(time.Second).Add(ttl)
	if !u.Multipart {
		url, headers, err := s.Blobs.PresignPut(ctx, u.StorageKey, u.StorageUploadID, u.ByteSize, ttl)
		if err != nil {
			return nil, fmt.Errorf("presign upload: %w", err)
		}
		t.URL, t.Headers = url, headers
		return t, nil
	}
	mp := s.Blobs.(MultipartBlobs)
	for i := 0; i < u.PartCount; i++ {
		off := int64(i) * u.PartSize
		size := min(u.PartSize, u.ByteSize-off)
		url, err := mp.PresignPart(ctx, u.StorageKey, u.StorageUploadID, i+1, off, size, ttl)
		if err != nil {
			return nil, fmt.Errorf("presign part %d: %w", i+1, err)
		}
		t.Parts = append(t.Parts, PartURL{PartNumber: i + 1, URL: url, ByteOffset: off, ByteSize: size})
	}
	return t, nil
}

// findUpload returns a session the key may see. Codes: not_found, environment_mismatch, key_restricted.
func (s *Uploads) findUpload(ctx context.Context, p *Principal, id string) (*Upload, *File, error) {
	if !ValidID(PrefixUpload, id) {
		return nil, nil, NotFound("upload")
	}
	u, err := s.Store.FindUploadByID(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return nil, nil, NotFound("upload")
	}
	if err != nil {
		return nil, nil, err
	}
	if err := p.CheckResource("upload", u.OrganizationID, u.ProjectID, u.Environment); err != nil {
		return nil, nil, err
	}
	f, err := s.Store.FindFileByID(ctx, u.FileID)
	if err != nil {
		return nil, nil, fmt.Errorf("file of upload %s: %w", u.ID, err)
	}
	return u, f, nil
}

// GetUpload returns a session with fresh URLs while it is open. Codes: not_found, environment_mismatch.
func (s *Uploads) GetUpload(ctx context.Context, p *Principal, id string) (*UploadTicket, error) {
	if err := p.RequireScope(ScopeFilesRead); err != nil {
		return nil, err
	}
	u, f, err := s.findUpload(ctx, p, id)
	if err != nil {
		return nil, err
	}
	return s.ticket(ctx, u, f)
}

// consumed is the refusal for a session that can no longer take bytes.
func consumed(u *Upload) error {
	return &Error{Code: CodeUploadSessionConsumed, Message: "the upload session is " + u.State,
		Details: map[string]any{"state": u.State}}
}

// RemintParts mints fresh URLs for every part of an open multipart session (the
// resume path). Codes: not_found, upload_session_consumed, conflict (not multipart).
func (s *Uploads) RemintParts(ctx context.Context, p *Principal, id string) (*UploadTicket, error) {
	if err := p.RequireScope(ScopeFilesWrite); err != nil {
		return nil, err
	}
	u, f, err := s.findUpload(ctx, p, id)
	if err != nil {
		return nil, err
	}
	if u.State != UploadOpen {
		return nil, consumed(u)
	}
	if !u.Multipart {
		return nil, &Error{Code: CodeConflict, Message: "this is a single-PUT session; GET it for a fresh upload_url"}
	}
	return s.ticket(ctx, u, f)
}

// CompleteParts assembles a multipart upload from the given parts, verifying each ETag
// against what the store holds, then completes the file as CompleteFile does.
// Codes: invalid_request (parts), not_found, upload_session_consumed, conflict,
// validation_failed (with the findings; the file is rejected).
func (s *Uploads) CompleteParts(ctx context.Context, p *Principal, id string, parts []PartETag) (*File, error) {
	if err := p.RequireScope(ScopeFilesWrite); err != nil {
		return nil, err
	}
	u, f, err := s.findUpload(ctx, p, id)
	if err != nil {
		return nil, err
	}
	if u.State != UploadOpen {
		return nil, consumed(u)
	}
	if !u.Multipart {
		return nil, &Error{Code: CodeConflict, Message: "this is a single-PUT session: complete it with POST /v1/files/{file_id}/complete"}
	}
	if len(parts) != u.PartCount {
		return nil, InvalidParam("parts", "this session has %s; the request lists %s",
			plural(u.PartCount, "part", "parts"), plural(len(parts), "part", "parts"))
	}
	sorted := slices.Clone(parts)
	slices.SortFunc(sorted, func(a, b PartETag) int { return a.PartNumber - b.PartNumber })
	for i, pt := range sorted {
		if pt.PartNumber != i+1 {
			return nil, InvalidParam("parts", "part numbers must be 1 to %d, each once", u.PartCount)
		}
	}
	mp := s.Blobs.(MultipartBlobs)
	stored, err := mp.ListParts(ctx, u.StorageKey, u.StorageUploadID)
	if errors.Is(err, ErrNotFound) {
		// Assembled by an earlier call whose completion did not finish: finish it.
		if _, serr := s.Blobs.Stat(ctx, u.StorageKey); serr == nil {
			return s.Files.complete(ctx, u, f)
		}
		return nil, consumed(&Upload{State: UploadCompleted})
	}
	if err != nil {
		return nil, fmt.Errorf("list parts: %w", err)
	}
	held := map[int]string{}
	for _, sp := range stored {
		held[sp.PartNumber] = normalizeETag(sp.ETag)
	}
	for _, pt := range sorted {
		got, ok := held[pt.PartNumber]
		if !ok {
			return nil, &Error{Code: CodeConflict, Param: "parts", Message: fmt.Sprintf("part %d has not been uploaded", pt.PartNumber),
				Details: map[string]any{"part_number": pt.PartNumber}}
		}
		if got != normalizeETag(pt.ETag) {
			return nil, &Error{Code: CodeInvalidRequest, Param: "parts", Message: fmt.Sprintf("the etag of part %d does not match the stored part", pt.PartNumber),
				Details: map[string]any{"part_number": pt.PartNumber}}
		}
	}
	if err := mp.CompleteMultipart(ctx, u.StorageKey, u.StorageUploadID, sorted); err != nil {
		return nil, fmt.Errorf("assemble parts: %w", err)
	}
	return s.Files.complete(ctx, u, f)
}

func normalizeETag(e string) string {
	if len(e) >= 2 && e[0] == '"' && e[len(e)-1] == '"' {
		return e[1 : len(e)-1]
	}
	return e
}

// AbortUpload discards what was uploaded; the file becomes deleted and the session's
// URLs write nothing more. Aborting an aborted session changes nothing.
// Codes: not_found, upload_session_consumed (completed).
func (s *Uploads) AbortUpload(ctx context.Context, p *Principal, id string) error {
	if err := p.RequireScope(ScopeFilesWrite); err != nil {
		return err
	}
	u, f, err := s.findUpload(ctx, p, id)
	if err != nil {
		return err
	}
	switch u.State {
	case UploadAborted:
		return nil
	case UploadOpen:
	default:
		return consumed(u)
	}
	now := s.Clock.Now()
	err = s.inTx(ctx, func(tx UploadsPorts) error {
		ok, err := tx.TransitionUpload(ctx, u.ID, UploadOpen, UploadAborted, now)
		if err != nil || !ok {
			if err == nil {
				err = &Error{Code: CodeConflict, Message: "the upload session changed meanwhile; retry"}
			}
			return err
		}
		f.Status, f.DeletedAt = FileDeleted, &now
		if _, err := tx.UpdateFile(ctx, f, FileAwaitingUpload); err != nil {
			return err
		}
		u.State = UploadAborted
		return writeEvent(ctx, tx, EventUploadAborted, u.OrganizationID, u.ProjectID, u.Environment, f.ID, u.objectView(f), now)
	})
	if err != nil {
		return err
	}
	discardBytes(ctx, s.Blobs, u)
	return nil
}

// discardBytes ends a session's staged upload, so its URLs write nothing more, and
// removes what it stored; failures are left for the sweeper.
func discardBytes(ctx context.Context, b Blobs, u *Upload) {
	ctx = context.WithoutCancel(ctx)
	if u.StorageUploadID != "" {
		_ = b.AbortUpload(ctx, u.StorageKey, u.StorageUploadID)
	}
	_ = b.Delete(ctx, u.StorageKey)
}

// SweepExpired expires sessions left open past their lifetime: their bytes are
// discarded and their files become expired with a file.expired event.
func (s *Uploads) SweepExpired(ctx context.Context, limit int) (int, error) {
	now := s.Clock.Now()
	ups, err := s.Store.FindExpiredUploads(ctx, now, limit)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, u := range ups {
		f, err := s.Store.FindFileByID(ctx, u.FileID)
		if err != nil {
			return n, err
		}
		err = s.inTx(ctx, func(tx UploadsPorts) error {
			ok, err := tx.TransitionUpload(ctx, u.ID, UploadOpen, UploadExpired, now)
			if err != nil || !ok {
				return err
			}
			f.Status, f.ExpiresAt = FileExpired, &now
			if ok, err := tx.UpdateFile(ctx, f, FileAwaitingUpload); err != nil || !ok {
				return err // deleted meanwhile: its own event says so
			}
			n++
			return writeEvent(ctx, tx, EventFileExpired, f.OrganizationID, f.ProjectID, f.Environment, f.ID, f.View(), now)
		})
		if err != nil {
			return n, err
		}
		discardBytes(ctx, s.Blobs, u)
	}
	return n, nil
}

// fetchUpload streams from_url into storage and completes the file.
func (s *Uploads) fetchUpload(ctx context.Context, p *Principal, f *File, u *Upload) (*UploadTicket, error) {
	if s.Fetcher == nil {
		return nil, Errorf(CodeProcessingUnavailable, "from_url is not available on this deployment")
	}
	res, err := s.Fetcher.Fetch(ctx, u.SourceURL, s.Config.MaxFileSize)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	if f.Filename == "" {
		// The fetcher gives the server's name as a base name, never a path.
		f.Filename = res.Filename
		if CheckFilename(f.Filename) != nil {
			f.Filename = "download"
		}
	}
	if f.DeclaredMIMEType == "" && res.ContentType != "" {
		if mt, _, err := mime.ParseMediaType(res.ContentType); err == nil && CheckMediaType("mime_type", mt) == nil {
			f.DeclaredMIMEType = mt
		}
	}
	if err := s.openSession(ctx, f, u); err != nil {
		return nil, err
	}
	lr := &limitedReader{r: res.Body, n: s.Config.MaxFileSize}
	if err := s.Blobs.Put(ctx, u.StorageKey, lr, res.Size); err != nil {
		discardBytes(ctx, s.Blobs, u)
		if lr.exceeded {
			return nil, &Error{Code: CodeFileTooLarge, Param: "from_url", Message: fmt.Sprintf("the remote file exceeds %d bytes", s.Config.MaxFileSize)}
		}
		if de := AsError(err); de != nil {
			return nil, de
		}
		return nil, &Error{Code: CodeInvalidRequest, Param: "from_url", Message: "fetching from_url failed: " + err.Error()}
	}
	done, err := s.Files.complete(ctx, u, f)
	if err != nil {
		return nil, err
	}
	return &UploadTicket{Upload: u, File: done}, nil
}

// limitedReader fails once more than n bytes have been read, so a remote body larger
// than announced cannot fill the disk.
type limitedReader struct {
	r        io.Reader
	n        int64
	exceeded bool
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.n < 0 {
		l.exceeded = true
		return 0, errors.New("size limit exceeded")
	}
	if int64(len(p)) > l.n+1 {
		p = p[:l.n+1]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	if l.n < 0 {
		l.exceeded = true
		return n, errors.New("size limit exceeded")
	}
	return n, err
}
