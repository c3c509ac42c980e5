package domain

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"log/slog"
	"time"
)

// FilesPorts is what Files uses of the Store: files and their artifacts, the events of
// their history, the egress their downloads count, the projects a list is scoped to, and
// the progress of the sweep of artifacts stored under the old layout.
type FilesPorts interface {
	Transactor
	FileStore
	EventStore
	CreditStore
	TenantStore
	MaintenanceStore
}

// Files completes, lists, deletes and hands out downloads of files.
type Files struct {
	Store  FilesPorts
	Blobs  Blobs
	Clock  Clock
	Config Config
	Usage  *Usage
	Pages  PageCounter // nil: pages are not counted
	// Scanner scans uploads whose policy asks for it; nil: such uploads are refused.
	Scanner UploadScanner
	// Scratch holds the local copy those two read; nil: neither runs.
	Scratch Scratch
	// Log receives what a sweep's count does not tell (a pass of SweepLegacyArtifacts
	// that ended); nil logs nothing.
	Log *slog.Logger
}

// inTx runs fn in one transaction, on the ports Files declares.
func (s *Files) inTx(ctx context.Context, fn func(tx FilesPorts) error) error {
	return s.Store.InTx(ctx, func(tx Store) error { return fn(tx) })
}

// writeEvent writes one outbox row in tx about a file (subjectID), which puts it in the
// file's history.
func writeEvent(ctx context.Context, tx EventStore, typ, orgID, projectID string, env Environment, subjectID string, obj any, at time.Time) error {
	e, err := NewEvent(ctx, typ, orgID, projectID, env, subjectID, obj, at)
	if err != nil {
		return err
	}
	return tx.CreateEvent(ctx, e)
}

// findFile returns a file the key may see; deleted files do not exist.
// Codes: not_found, environment_mismatch, key_restricted.
func (s *Files) findFile(ctx context.Context, p *Principal, id string) (*File, error) {
	if !ValidID(PrefixFile, id) {
		return nil, NotFound("file")
	}
	f, err := s.Store.FindFileByID(ctx, id)
	if errors.Is(err, ErrNotFound) || (err == nil && f.Status == FileDeleted) {
		return nil, NotFound("file")
	}
	if err != nil {
		return nil, err
	}
	if err := p.CheckResource("file", f.OrganizationID, f.ProjectID, f.Environment); err != nil {
		return nil, err
	}
	return f, nil
}

// GetFile returns a file with its artifacts. Codes: not_found, environment_mismatch.
func (s *Files) GetFile(ctx context.Context, p *Principal, id string) (*File, error) {
	f, err := s.GetFileWithoutArtifacts(ctx, p, id)
	if err != nil {
		return nil, err
	}
	if f.Artifacts, err = s.Store.FindArtifactsByFile(ctx, f.ID); err != nil {
		return nil, err
	}
	return f, nil
}

// GetFileWithoutArtifacts is GetFile for a caller that reads a bounded number of the
// artifacts itself (ArtifactsOfFiles): a file's artifacts grow with every job run on it.
func (s *Files) GetFileWithoutArtifacts(ctx context.Context, p *Principal, id string) (*File, error) {
	if err := p.RequireScope(ScopeFilesRead); err != nil {
		return nil, err
	}
	return s.findFile(ctx, p, id)
}

// ListFiles lists files newest first, each with its artifacts. Codes: invalid_request.
func (s *Files) ListFiles(ctx context.Context, p *Principal, projectID string, page Page) (List[*File], error) {
	list, err := s.ListFilesWithoutArtifacts(ctx, p, projectID, page)
	if err != nil {
		return list, err
	}
	if err := s.loadFileArtifacts(ctx, p, list.Data); err != nil {
		return List[*File]{}, err
	}
	return list, nil
}

// ListFilesWithoutArtifacts is ListFiles for a caller that reads a bounded number of
// the artifacts itself. Codes: invalid_request.
func (s *Files) ListFilesWithoutArtifacts(ctx context.Context, p *Principal, projectID string, page Page) (List[*File], error) {
	if err := p.RequireScope(ScopeFilesRead); err != nil {
		return List[*File]{}, err
	}
	if err := ValidatePage(&page, PrefixFile); err != nil {
		return List[*File]{}, err
	}
	scope, err := listScope(ctx, s.Store, p, projectID)
	if err != nil {
		return List[*File]{}, err
	}
	if page.StartingAfter != "" {
		err := checkCursor(ctx, func(ctx context.Context) (string, string, Environment, error) {
			f, err := s.Store.FindFileByID(ctx, page.StartingAfter)
			if err != nil {
				return "", "", "", err
			}
			return f.OrganizationID, f.ProjectID, f.Environment, nil
		}, scope, p.Environment())
		if err != nil {
			return List[*File]{}, err
		}
	}
	data, more, err := s.Store.FindFiles(ctx, FileFilter{Scope: scope, Environment: p.Environment(), Page: page})
	if err != nil {
		return List[*File]{}, err
	}
	return List[*File]{Data: data, HasMore: more}, nil
}

// CompleteFile declares that the bytes of a single-PUT session have landed, and runs
// detection, the validation policy, SHA-256 and duplicate detection on the stored bytes.
// Codes: not_found, upload_session_consumed (already completed), conflict (bytes not
// there yet; a multipart session), validation_failed (the file is rejected).
func (s *Files) CompleteFile(ctx context.Context, p *Principal, id string) (*File, error) {
	if err := p.RequireScope(ScopeFilesWrite); err != nil {
		return nil, err
	}
	f, err := s.findFile(ctx, p, id)
	if err != nil {
		return nil, err
	}
	u, err := s.Store.FindUploadByID(ctx, f.UploadID)
	if err != nil {
		return nil, fmt.Errorf("upload of file %s: %w", f.ID, err)
	}
	if u.State != UploadOpen || f.Status != FileAwaitingUpload {
		return nil, consumed(u)
	}
	if u.Multipart {
		return nil, &Error{Code: CodeConflict, Message: "this file is uploaded in parts: finish with POST /v1/uploads/" + u.ID + "/complete-parts"}
	}
	if err := s.commitStaged(ctx, u); err != nil {
		return nil, err
	}
	return s.complete(ctx, u, f)
}

// commitStaged makes the bytes PUT into a single-PUT session's staged upload the file's
// object, ending the upload: from then on its URL writes nothing.
// Codes: conflict (no bytes yet), upload_session_consumed (ended meanwhile).
func (s *Files) commitStaged(ctx context.Context, u *Upload) error {
	if u.StorageUploadID == "" {
		return nil // opened before uploads were staged: the bytes are at the key
	}
	err := s.Blobs.CompleteUpload(ctx, u.StorageKey, u.StorageUploadID)
	switch {
	case errors.Is(err, ErrNoBytes):
		return noBytesYet()
	case errors.Is(err, ErrNotFound):
		// Committed by an earlier call whose completion did not finish: finish it.
		if _, serr := s.Blobs.Stat(ctx, u.StorageKey); serr == nil {
			return nil
		}
		return consumed(&Upload{State: UploadCompleted})
	case err != nil:
		return fmt.Errorf("commit upload %s: %w", u.ID, err)
	}
	return nil
}

func noBytesYet() error {
	return &Error{Code: CodeConflict, Message: "no bytes have landed for this file yet: PUT them to the upload URL first"}
}

// measurement is what completion learns from the stored bytes.
type measurement struct {
	size   int64
	format Format
	sha256 string
}

// measure reads the stored object once: the head for detection and, within the hash
// window, every byte for SHA-256.
func (s *Files) measure(ctx context.Context, key string) (*measurement, error) {
	size, err := s.Blobs.Stat(ctx, key)
	if errors.Is(err, ErrNotFound) {
		return nil, noBytesYet()
	}
	if err != nil {
		return nil, fmt.Errorf("stat %s: %w", key, err)
	}
	rc, err := s.Blobs.Get(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", key, err)
	}
	defer rc.Close()
	m := &measurement{size: size}
	head := &headBuffer{max: DetectSniffBytes}
	var h hash.Hash
	var w io.Writer = head
	hashed := size <= s.Config.HashWindow
	if hashed {
		h = sha256.New()
		w = io.MultiWriter(head, h)
	}
	buf := make([]byte, 1<<20)
	if hashed {
		if _, err := io.CopyBuffer(w, rc, buf); err != nil {
			return nil, fmt.Errorf("hash %s: %w", key, err)
		}
		m.sha256 = hex.EncodeToString(h.Sum(nil))
	} else if _, err := io.CopyBuffer(w, io.LimitReader(rc, DetectSniffBytes), buf); err != nil {
		return nil, fmt.Errorf("read head of %s: %w", key, err)
	}
	m.format = Detect(head.Bytes())
	return m, nil
}

// headBuffer keeps the first max bytes written to it and discards the rest.
type headBuffer struct {
	bytes.Buffer
	max int
}

func (b *headBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

// judge applies the validation policy and the deployment's limits to a measurement.
func judge(u *Upload, f *File, m *measurement, maxFileSize int64) []Finding {
	var out []Finding
	if m.size > maxFileSize {
		out = append(out, Finding{Code: CodeFileTooLarge, Message: fmt.Sprintf("the file has %d bytes; the limit is %d", m.size, maxFileSize)})
	}
	if u.ByteSize > 0 && m.size != u.ByteSize {
		out = append(out, Finding{Code: "size_mismatch", Message: fmt.Sprintf("the upload declared %s; %s arrived",
			plural(u.ByteSize, "byte", "bytes"), plural(m.size, "byte", "bytes"))})
	}
	if f.DeclaredMIMEType != "" && !declaredMatches(f.DeclaredMIMEType, m.format) {
		out = append(out, Finding{Code: "mime_type_mismatch", Message: fmt.Sprintf("declared %s but the bytes are %s", f.DeclaredMIMEType, m.format.MIMEType)})
	}
	if v := u.Validation; v != nil {
		if len(v.Formats) > 0 {
			ok := false
			for _, e := range v.Formats {
				ok = ok || FormatMatches(m.format, e)
			}
			if !ok {
				out = append(out, Finding{Code: "format_not_allowed", Message: fmt.Sprintf("detected %s (%s), which is not among the allowed formats", m.format.Extension, m.format.MIMEType)})
			}
		}
		if v.MaxBytes > 0 && m.size > v.MaxBytes {
			out = append(out, Finding{Code: "too_large", Message: fmt.Sprintf("the file has %d bytes; the policy allows at most %d", m.size, v.MaxBytes)})
		}
		if v.MinBytes > 0 && m.size < v.MinBytes {
			out = append(out, Finding{Code: "too_small", Message: fmt.Sprintf("the file has %d bytes; the policy requires at least %d", m.size, v.MinBytes)})
		}
	}
	return out
}

// complete is the standard completion of a session whose bytes are in storage.
func (s *Files) complete(ctx context.Context, u *Upload, f *File) (*File, error) {
	m, err := s.measure(ctx, u.StorageKey)
	if err != nil {
		return nil, err
	}
	now := s.Clock.Now()
	f.ByteSize, f.DetectedExt, f.DetectedMIMEType, f.SHA256 = m.size, m.format.Extension, m.format.MIMEType, m.sha256
	f.Findings = judge(u, f, m, s.Config.MaxFileSize)
	malware := false
	if len(f.Findings) == 0 {
		found, err := s.inspectLocally(ctx, u, f, m)
		if err != nil {
			return nil, err
		}
		f.Findings, malware = found, len(found) > 0
	}
	f.Status, f.ReadyAt = FileReady, &now
	event := EventFileReady
	if len(f.Findings) > 0 {
		f.Status, f.ReadyAt, event = FileRejected, nil, EventFileRejected
	}
	err = s.inTx(ctx, func(tx FilesPorts) error {
		if f.Status == FileReady && f.SHA256 != "" {
			dup, err := tx.FindOldestReadyFileByHash(ctx, f.ProjectID, f.SHA256, f.ID)
			switch {
			case err == nil && dup.Environment == f.Environment:
				f.DuplicateOf = dup.ID
			case err != nil && !errors.Is(err, ErrNotFound):
				return err
			}
		}
		ok, err := tx.TransitionUpload(ctx, u.ID, UploadOpen, UploadCompleted, now)
		if err != nil {
			return err
		}
		if !ok {
			return consumed(&Upload{State: UploadCompleted})
		}
		if ok, err := tx.UpdateFile(ctx, f, FileAwaitingUpload); err != nil || !ok {
			if err == nil {
				err = consumed(&Upload{State: UploadCompleted})
			}
			return err
		}
		return writeEvent(ctx, tx, event, f.OrganizationID, f.ProjectID, f.Environment, f.ID, f.View(), now)
	})
	if err != nil {
		if AsError(err) != nil && ErrorCode(err) == CodeUploadSessionConsumed {
			// Aborted, deleted or expired while completing: the bytes just committed are
			// nobody's. (Had another completion won, the object would be its.)
			if cur, ferr := s.Store.FindUploadByID(ctx, u.ID); ferr == nil && cur.State != UploadCompleted {
				_ = s.Blobs.Delete(context.WithoutCancel(ctx), u.StorageKey)
			}
		}
		return nil, err
	}
	u.State = UploadCompleted
	f.Artifacts = []*Artifact{}
	if malware {
		return f, &Error{Code: CodeMalwareDetected, Message: "the malware scan found the file dangerous; it is rejected",
			Details: map[string]any{"findings": f.Findings, "file_id": f.ID}}
	}
	if f.Status == FileRejected {
		return f, &Error{Code: CodeValidationFailed, Message: "the file failed its validation policy",
			Details: map[string]any{"findings": f.Findings, "file_id": f.ID}}
	}
	return f, nil
}

// maxCountedBytes bounds the files whose pages are counted at completion; a larger
// file's jobs reserve an estimate and are charged what they processed.
const maxCountedBytes = 1 << 30

// inspectLocally runs what completion learns from a local copy of the bytes: the page
// count, and the malware scan the policy may ask for. The copy is made only when one of
// them needs it, and removed afterwards. A page count that fails is 0 (its jobs reserve
// an estimate); a scan that cannot run fails completion with dependency_unavailable, and
// the session stays open for the completion to be tried again.
func (s *Files) inspectLocally(ctx context.Context, u *Upload, f *File, m *measurement) ([]Finding, error) {
	count := s.Pages != nil && s.Scratch != nil && s.Pages.Counts(m.format) && m.size <= maxCountedBytes
	scan := u.Validation != nil && u.Validation.Scan
	if !count && !scan {
		return nil, nil
	}
	if scan && (s.Scanner == nil || s.Scratch == nil) {
		return nil, &Error{Code: CodeProcessingUnavailable, RetryAfter: 30, Message: "malware scanning is not available on this deployment"}
	}
	path, remove, err := s.copyLocal(ctx, u.StorageKey)
	if err != nil {
		return nil, err
	}
	defer remove()
	if count {
		if n, err := s.Pages.CountPages(ctx, path, m.format); err == nil {
			f.Pages = n
		}
	}
	if !scan {
		return nil, nil
	}
	malicious, findings, err := s.Scanner.ScanUpload(ctx, path, f.Filename, f.DeclaredMIMEType)
	if err != nil {
		if AsError(err) != nil {
			return nil, err
		}
		return nil, Unavailable("the malware scanner cannot be reached now; complete the file again shortly", err)
	}
	if !malicious {
		return nil, nil
	}
	return findings, nil
}

// scannerCheckTimeout bounds the question put to the scanner when a session asking for
// a scan is created: a scanner that does not answer in it is not there.
const scannerCheckTimeout = 3 * time.Second

// checkScanner refuses a policy asking for a scan while no scanner answers: on a
// deployment without one, or while it is down. Codes: processing_unavailable.
func (s *Files) checkScanner(ctx context.Context) error {
	if s.Scanner == nil {
		return &Error{Code: CodeProcessingUnavailable, Param: "validation.scan", RetryAfter: 30,
			Message: "malware scanning is not available on this deployment"}
	}
	ctx, cancel := context.WithTimeout(ctx, scannerCheckTimeout)
	defer cancel()
	if err := s.Scanner.Check(ctx); err != nil {
		return &Error{Code: CodeProcessingUnavailable, Param: "validation.scan", RetryAfter: 30, Cause: err,
			Message: "the malware scanner does not answer now, so a file cannot be scanned; try again shortly, or upload without validation.scan"}
	}
	return nil
}

// copyLocal copies a stored object into the scratch space.
func (s *Files) copyLocal(ctx context.Context, key string) (string, func(), error) {
	rc, err := s.Blobs.Get(ctx, key)
	if err != nil {
		return "", nil, Unavailable("the file could not be read from storage; complete it again shortly", err)
	}
	defer rc.Close()
	path, remove, err := s.Scratch.Copy(ctx, rc)
	if err != nil {
		return "", nil, Unavailable("the server has no room to check the file now; complete it again shortly", err)
	}
	return path, remove, nil
}

// DeleteFile deletes a file and its artifacts, bytes included; later calls answer 404.
// Codes: not_found, environment_mismatch.
func (s *Files) DeleteFile(ctx context.Context, p *Principal, id string) error {
	if err := p.RequireScope(ScopeFilesWrite); err != nil {
		return err
	}
	f, err := s.findFile(ctx, p, id)
	if err != nil {
		return err
	}
	arts, err := s.Store.FindArtifactsByFile(ctx, f.ID)
	if err != nil {
		return err
	}
	from, now := f.Status, s.Clock.Now()
	var open *Upload // the session of a file still awaiting its bytes
	if from == FileAwaitingUpload {
		if open, err = s.Store.FindUploadByID(ctx, f.UploadID); err != nil {
			return fmt.Errorf("upload of file %s: %w", f.ID, err)
		}
	}
	err = s.inTx(ctx, func(tx FilesPorts) error {
		f.Status, f.DeletedAt = FileDeleted, &now
		ok, err := tx.UpdateFile(ctx, f, from)
		if err != nil {
			return err
		}
		if !ok {
			return NotFound("file")
		}
		if open != nil {
			// The session ends with its file; a completion racing with this loses.
			if _, err := tx.TransitionUpload(ctx, open.ID, UploadOpen, UploadAborted, now); err != nil {
				return err
			}
		}
		return writeEvent(ctx, tx, EventFileDeleted, f.OrganizationID, f.ProjectID, f.Environment, f.ID, f.View(), now)
	})
	if err != nil {
		return err
	}
	if open != nil && open.StorageUploadID != "" {
		// Its URLs write nothing from here on.
		_ = s.Blobs.AbortUpload(context.WithoutCancel(ctx), open.StorageKey, open.StorageUploadID)
	}
	// The row says deleted before the bytes go, so nothing can hand out a URL to bytes
	// being removed; a failure here leaves orphans, never a file without bytes.
	for _, a := range arts {
		if err := s.Blobs.Delete(ctx, a.StorageKey); err != nil {
			return fmt.Errorf("delete artifact %s: %w", a.ID, err)
		}
	}
	if err := s.Blobs.Delete(ctx, f.StorageKey); err != nil {
		return fmt.Errorf("delete file %s: %w", f.ID, err)
	}
	return nil
}

// History returns what happened to a file, oldest first, from the outbox.
// Codes: not_found, environment_mismatch.
func (s *Files) History(ctx context.Context, p *Principal, id string) ([]*Event, error) {
	return s.RecentHistory(ctx, p, id, 0)
}

// RecentHistory is the latest entries of a file's history (all of them when latest is
// 0), oldest first. Codes: those of History.
func (s *Files) RecentHistory(ctx context.Context, p *Principal, id string, latest int) ([]*Event, error) {
	if err := p.RequireScope(ScopeFilesRead); err != nil {
		return nil, err
	}
	f, err := s.findFile(ctx, p, id)
	if err != nil {
		return nil, err
	}
	return s.Store.FindEventsByFile(ctx, f.OrganizationID, f.ID, latest)
}

// DownloadURL is a minted download link.
type DownloadURL struct {
	URL        string
	ExpiresAt  time.Time
	FileID     string
	ArtifactID string
	CreatedAt  time.Time
}

// Download URL lifetimes (seconds).
const (
	MinDownloadTTL     = 60
	MaxDownloadTTL     = 86400
	DefaultDownloadTTL = 3600
)

// MintDownloadURL decides whether the key may read the file (or one of its artifacts)
// and only then signs a short-lived URL. It serves the detected format's media type
// (never one guessed from the name) as an attachment named after the file.
// Codes: invalid_request (artifact_id, expires_in), not_found (also a deleted file),
// environment_mismatch, conflict (a rejected file, quarantined; no bytes yet; expired),
// with details.status.
func (s *Files) MintDownloadURL(ctx context.Context, p *Principal, fileID, artifactID string, expiresIn int) (*DownloadURL, error) {
	if err := p.RequireScope(ScopeFilesRead); err != nil {
		return nil, err
	}
	if expiresIn == 0 {
		expiresIn = DefaultDownloadTTL
	}
	if expiresIn < MinDownloadTTL || expiresIn > MaxDownloadTTL {
		return nil, InvalidParam("expires_in", "expires_in must be between %d and %d seconds", MinDownloadTTL, MaxDownloadTTL)
	}
	if artifactID != "" && !ValidID(PrefixArtifact, artifactID) {
		return nil, InvalidParam("artifact_id", "artifact_id must be an artifact id (art_ followed by 26 characters)")
	}
	f, err := s.findFile(ctx, p, fileID)
	if err != nil {
		return nil, err
	}
	switch f.Status {
	case FileReady:
	case FileRejected:
		return nil, &Error{Code: CodeConflict, Message: "the file was rejected by its validation policy and is quarantined: it cannot be downloaded",
			Details: map[string]any{"status": f.Status, "findings": f.Findings}}
	default:
		return nil, &Error{Code: CodeConflict, Message: "the file has nothing to download: " + fileStatusWords[f.Status],
			Details: map[string]any{"status": f.Status}}
	}
	key, size := f.StorageKey, f.ByteSize
	d := Download{Name: SafeName(f.Filename), ContentType: f.DetectedMIMEType}
	if artifactID != "" {
		a, err := s.Store.FindArtifactByID(ctx, artifactID)
		if err != nil || a.FileID != f.ID {
			return nil, &Error{Code: CodeNotFound, Message: "no such artifact of this file", Param: "artifact_id"}
		}
		key, size = a.StorageKey, a.ByteSize
		d = Download{Name: SafeName(a.Name), ContentType: a.MIMEType}
	}
	ttl := time.Duration(expiresIn) * time.Second
	url, err := s.Blobs.PresignGet(ctx, key, ttl, d)
	if err != nil {
		return nil, fmt.Errorf("presign download: %w", err)
	}
	now := s.Clock.Now()
	if s.Usage != nil && !s.Usage.EgressAtServe {
		// The store serves the bytes unseen: count the object once per URL minted.
		if err := s.Store.AddEgress(ctx, f.OrganizationID, f.ProjectID, f.Environment, now, size); err != nil {
			return nil, err
		}
	}
	return &DownloadURL{URL: url, ExpiresAt: now.Add(ttl), FileID: f.ID, ArtifactID: artifactID, CreatedAt: now}, nil
}

// hashingReader computes the SHA-256 of what passes through it.
type hashingReader struct {
	r io.Reader
	h hash.Hash
}

func newHashingReader(r io.Reader) *hashingReader { return &hashingReader{r: r, h: sha256.New()} }

func (h *hashingReader) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	h.h.Write(p[:n])
	return n, err
}

// Sum returns the hex digest of what was read.
func (h *hashingReader) Sum() string { return hex.EncodeToString(h.h.Sum(nil)) }
