package storage

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/domain/logging"
)

// LocalConfig configures the local disk backend and its storage host.
type LocalConfig struct {
	// Dir holds the objects, each at Dir/<key>, plus .tmp and .uploads.
	Dir string
	// PublicURL is the base URL clients reach the storage host at, e.g.
	// http://127.0.0.1:8081; signed URLs are {PublicURL}/o/{key}?….
	PublicURL string
	// Secret is the HMAC-SHA256 key of the signed URLs, at least 32 bytes.
	Secret []byte
	// OnEgress, when set, is called after each GET response with the object key and the
	// bytes written to the client. It runs on the request's goroutine: keep it quick.
	OnEgress func(key string, n int64)
	// Logger receives the failures to write to Dir (a full disk), once per
	// LogRepeatInterval with a count; nil is slog.Default().
	Logger            *slog.Logger
	LogRepeatInterval time.Duration // default 10s
	// Now tells the time URLs are signed and checked by; nil is the system clock. Tests
	// move it to expire URLs without waiting.
	Now func() time.Time
}

// Validate names the setting to change.
func (c LocalConfig) Validate() error {
	if c.Dir == "" {
		return errors.New("storage Dir is required")
	}
	u, err := url.Parse(c.PublicURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("storage PublicURL %q must be an absolute http(s) URL without query", c.PublicURL)
	}
	if len(c.Secret) < 32 {
		return fmt.Errorf("storage Secret must be at least 32 bytes, got %d", len(c.Secret))
	}
	return nil
}

// Local stores blobs as files on one disk and serves them through signed URLs.
type Local struct {
	dir      string
	tmp      string // writes in progress, same file system as dir so rename and link are atomic
	uploads  string // multipart uploads: one directory per upload id
	base     string // PublicURL without a trailing slash
	basePath string // the path part of PublicURL, which a proxy may or may not strip
	secret   []byte
	onEgress func(key string, n int64)
	log      *logging.Repeated
	now      func() time.Time
}

var (
	_ domain.Blobs          = (*Local)(nil)
	_ domain.MultipartBlobs = (*Local)(nil)
	_ domain.EgressMeter    = (*Local)(nil)
)

// staleTemp is how old a file in .tmp must be before NewLocal removes it as a leftover
// of a crash; no single write takes that long.
const staleTemp = 24 * time.Hour

// NewLocal prepares Dir and returns the backend. cmd serves Handler on its own listener.
func NewLocal(cfg LocalConfig) (*Local, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("storage dir: %w", err)
	}
	u, _ := url.Parse(cfg.PublicURL)
	l := &Local{dir: dir, tmp: filepath.Join(dir, ".tmp"), uploads: filepath.Join(dir, ".uploads"),
		base: strings.TrimRight(cfg.PublicURL, "/"), basePath: strings.TrimRight(u.EscapedPath(), "/"),
		secret: slices.Clone(cfg.Secret), onEgress: cfg.OnEgress, now: cfg.Now}
	if l.now == nil {
		l.now = time.Now
	}
	every := cfg.LogRepeatInterval
	if every <= 0 {
		every = 10 * time.Second
	}
	l.log = logging.NewRepeated(cfg.Logger, every)
	for _, d := range []string{l.dir, l.tmp, l.uploads} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("storage dir: %w", err)
		}
	}
	l.removeStaleTemps()
	return l, nil
}

func (l *Local) removeStaleTemps() {
	entries, _ := os.ReadDir(l.tmp)
	for _, e := range entries {
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > staleTemp {
			_ = os.RemoveAll(filepath.Join(l.tmp, e.Name())) // ended uploads are directories
		}
	}
}

// MetersEgress tells the services that the storage host reports the bytes it serves.
func (l *Local) MetersEgress() bool { return l.onEgress != nil }

func (l *Local) objectPath(key string) string { return filepath.Join(l.dir, filepath.FromSlash(key)) }

// PresignPut returns a single-use URL for a PUT of exactly size bytes into an open
// upload: the first whole body wins, later PUTs answer 409 upload_session_consumed.
func (l *Local) PresignPut(_ context.Context, key, uploadID string, size int64, expires time.Duration) (string, map[string]string, error) {
	if err := checkKey(key); err != nil {
		return "", nil, err
	}
	if err := checkUploadID(uploadID); err != nil {
		return "", nil, err
	}
	if size < 0 {
		return "", nil, fmt.Errorf("presign put %s: negative size %d", key, size)
	}
	u, err := l.sign(grant{op: opPut, key: key, upload: uploadID, size: size}, expires)
	if err != nil {
		return "", nil, err
	}
	return u, map[string]string{"Content-Length": strconv.FormatInt(size, 10)}, nil
}

// PresignGet returns a URL serving the object with d's Content-Type (plain bytes when
// none), as an attachment named d.Name when one is given.
func (l *Local) PresignGet(_ context.Context, key string, expires time.Duration, d domain.Download) (string, error) {
	if err := checkKey(key); err != nil {
		return "", err
	}
	ct := ""
	if d.ContentType != "" {
		var ok bool
		if ct, ok = cleanMediaType(d.ContentType); !ok {
			return "", fmt.Errorf("presign get %s: %q is not a media type", key, d.ContentType)
		}
	}
	return l.sign(grant{op: opGet, key: key, name: strings.ToValidUTF8(d.Name, "_"), ctype: ct}, expires)
}

func (l *Local) sign(g grant, expires time.Duration) (string, error) {
	if expires < time.Second {
		return "", fmt.Errorf("presign %s: expiry %s is shorter than a second", g.key, expires)
	}
	// Rounded up, so a URL never lives shorter than asked.
	g.exp = l.now().Add(expires + time.Second - 1).Unix()
	g.nonce = newNonce()
	return l.base + g.path() + "?" + g.query(g.signature(l.secret)), nil
}

// Stat returns the stored size; domain.ErrNotFound when nothing is stored under key.
func (l *Local) Stat(_ context.Context, key string) (int64, error) {
	if err := checkKey(key); err != nil {
		return 0, err
	}
	info, err := os.Stat(l.objectPath(key))
	if errors.Is(err, fs.ErrNotExist) || (err == nil && !info.Mode().IsRegular()) {
		return 0, fmt.Errorf("stat %s: %w", key, domain.ErrNotFound)
	}
	if err != nil {
		return 0, fmt.Errorf("stat %s: %w", key, err)
	}
	return info.Size(), nil
}

// Get opens the object for reading; domain.ErrNotFound when nothing is stored under key.
func (l *Local) Get(_ context.Context, key string) (io.ReadCloser, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	f, _, err := openObject(l.objectPath(key))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("get %s: %w", key, domain.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", key, err)
	}
	return f, nil
}

// openObject opens a regular file; a directory (a key that is only a prefix of others)
// counts as missing.
func openObject(path string) (*os.File, fs.FileInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	info, err := f.Stat()
	if err == nil && !info.Mode().IsRegular() {
		err = fs.ErrNotExist
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, info, nil
}

// Put stores r under key, replacing what is there; size -1 when unknown. A size that
// does not match the bytes read stores nothing.
func (l *Local) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	if err := checkKey(key); err != nil {
		return err
	}
	limit := int64(-1)
	if size >= 0 {
		limit = size + 1 // one more byte tells an overrun
	}
	// Not synced here: place syncs it once it is in place, so that one journal commit
	// makes both the bytes and the name durable (syncing first, then the directory
	// after the rename, costs two: some 4 ms each on a virtual disk).
	w, err := l.writeTemp(ctxReader{ctx, r}, limit, false)
	if err != nil {
		return l.writeFailed(fmt.Errorf("put %s: %w", key, err))
	}
	if w.readErr != nil || (size >= 0 && w.n != size) {
		os.Remove(w.path)
		if w.readErr != nil {
			return fmt.Errorf("put %s: read: %w", key, w.readErr)
		}
		return fmt.Errorf("put %s: got %d bytes, want %d", key, w.n, size)
	}
	return l.placeDurably(w.path, key)
}

// placeDurably moves the unsynced file at tmpPath to key, then syncs it and its
// directory: durable before answered, a stored object survives a crash once its Put
// returned. Seen before that, it may not: nothing refers to a key before its Put has
// answered.
func (l *Local) placeDurably(tmpPath, key string) error {
	if err := l.place(tmpPath, key, true); err != nil {
		os.Remove(tmpPath)
		return l.writeFailed(fmt.Errorf("put %s: %w", key, err))
	}
	final := l.objectPath(key)
	if err := syncFile(final); err != nil {
		os.Remove(final)
		return l.writeFailed(fmt.Errorf("put %s: %w", key, err))
	}
	syncDir(filepath.Dir(final))
	return nil
}

// PutFile stores the file at path under key by linking it in: no byte is copied and no
// file made (on this machine's ext4 a new file costs some 0.7 ms of CPU, a new name 20
// µs). A file on another file system, or one that cannot be linked, is copied as Put
// does. Only a regular file of size bytes is taken, never a symbolic link.
func (l *Local) PutFile(ctx context.Context, key, path string, size int64) error {
	if err := checkKey(key); err != nil {
		return err
	}
	st, err := os.Lstat(path)
	if err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	if !st.Mode().IsRegular() || st.Size() != size {
		return fmt.Errorf("put %s: %s is not a regular file of %d bytes", key, path, size)
	}
	tmp := filepath.Join(l.tmp, "l-"+randomHex(8))
	if err := os.Link(path, tmp); err != nil {
		// Another file system, or one without links: copied.
		f, oerr := os.Open(path)
		if oerr != nil {
			return fmt.Errorf("put %s: %w", key, oerr)
		}
		defer f.Close()
		return l.Put(ctx, key, f, size)
	}
	return l.placeDurably(tmp, key)
}

// randomHex is n random bytes in hex: a name no other file of the store takes.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// syncFile flushes a file's bytes and metadata to disk.
func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// storageFullMessage is what a client is told when the bytes cannot be written: the
// cause names paths, and is for the log only.
const storageFullMessage = "the storage cannot take the bytes now (it may be full); try again later"

// writeFailed logs a failure to write to the storage directory, once per interval
// with a count, and returns it as dependency_unavailable with a plain sentence.
func (l *Local) writeFailed(err error) error {
	l.log.Log(context.Background(), slog.LevelError, "storage_write", "storage write failed", "error", err.Error())
	de := domain.Unavailable(storageFullMessage, err)
	de.RetryAfter = 30
	return de
}

// Delete removes the object; a missing object is not an error.
func (l *Local) Delete(_ context.Context, key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	path := l.objectPath(key)
	if info, err := os.Lstat(path); err != nil || info.IsDir() {
		return nil // nothing stored under key
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	l.pruneDirs(filepath.Dir(path))
	return nil
}

// List returns up to limit of the objects stored under prefix after `after`, in byte
// order of their keys, walking the directories in that order (see listDir).
func (l *Local) List(ctx context.Context, prefix, after string, limit int) ([]domain.StoredObject, error) {
	none, err := checkListing(prefix, limit)
	if err != nil {
		return nil, err
	}
	objs := []domain.StoredObject{}
	if none {
		return objs, nil
	}
	if err := l.listDir(ctx, prefix, after, limit, &objs); err != nil {
		return nil, fmt.Errorf("list %s: %w", prefix, err)
	}
	return objs, nil
}

// listDir appends to objs the objects under the directory of key prefix dir ("" or
// ending with "/") whose keys sort after `after`, until objs holds limit. A directory's
// entries are visited sorted as their keys begin: a subdirectory's name followed by "/"
// ("a-b" before "a/b", as bytes sort), so the walk meets keys in byte order, and a
// subdirectory whose keys all sort before after is not read at all.
func (l *Local) listDir(ctx context.Context, dir, after string, limit int, objs *[]domain.StoredObject) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	entries, err := os.ReadDir(l.objectPath(dir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil // nothing stored under dir, or removed meanwhile
	}
	if err != nil {
		return err
	}
	keyOf := func(e fs.DirEntry) string {
		if e.IsDir() {
			return dir + e.Name() + "/"
		}
		return dir + e.Name()
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(keyOf(a), keyOf(b)) })
	for _, e := range entries {
		if len(*objs) == limit {
			return nil
		}
		if strings.HasPrefix(e.Name(), ".") {
			continue // .tmp and .uploads: no key has such a segment
		}
		k := keyOf(e)
		if e.IsDir() {
			// Every key under k begins with k: all sort before after when after is past
			// k and not within it.
			if after > k && !strings.HasPrefix(after, k) {
				continue
			}
			if err := l.listDir(ctx, k, after, limit, objs); err != nil {
				return err
			}
			continue
		}
		if !e.Type().IsRegular() || k <= after {
			continue
		}
		info, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted meanwhile
		}
		if err != nil {
			return err
		}
		*objs = append(*objs, domain.StoredObject{Key: k, ModifiedAt: info.ModTime().UTC()})
	}
	return nil
}

// AbortUploadsUnder ends the staged uploads opened for keys under prefix. A Put leaves
// nothing under prefix to end: it writes into .tmp, under a name that tells no key, and
// renames the whole file into place, so one killed midway leaves only a file in .tmp,
// which NewLocal removes once it is staleTemp old.
func (l *Local) AbortUploadsUnder(ctx context.Context, prefix string, limit int) (int, error) {
	if err := checkPrefix(prefix); err != nil {
		return 0, err
	}
	entries, err := os.ReadDir(l.uploads)
	if err != nil {
		return 0, fmt.Errorf("abort uploads under %s: %w", prefix, err)
	}
	aborted := 0
	for _, e := range entries {
		if aborted == limit {
			break
		}
		if err := ctx.Err(); err != nil {
			return aborted, err
		}
		key, err := os.ReadFile(filepath.Join(l.uploads, e.Name(), "key"))
		if errors.Is(err, fs.ErrNotExist) {
			continue // ended meanwhile
		}
		if err != nil {
			return aborted, fmt.Errorf("abort uploads under %s: %w", prefix, err)
		}
		if !strings.HasPrefix(string(key), prefix) {
			continue
		}
		ended, err := l.claimUpload(string(key), e.Name())
		if errors.Is(err, domain.ErrNotFound) {
			continue
		}
		if err != nil {
			return aborted, err
		}
		if err := os.RemoveAll(ended); err != nil {
			return aborted, fmt.Errorf("abort upload %s: %w", e.Name(), err)
		}
		aborted++
	}
	return aborted, nil
}

// pruneDirs removes the empty directories a deleted object leaves behind, so deleted
// files do not accumulate empty directories; it stops at the first non-empty one.
func (l *Local) pruneDirs(dir string) {
	for dir != l.dir && strings.HasPrefix(dir, l.dir+string(filepath.Separator)) {
		if os.Remove(dir) != nil {
			return
		}
		dir = filepath.Dir(dir)
	}
}

// Ping checks that the directory takes writes: it writes and syncs a small file, since
// a full disk still lets a file be created, and some file systems report a full disk
// only at the sync. The error names the reason, not the path.
func (l *Local) Ping(context.Context) error {
	if err := WritableDir(l.tmp); err != nil {
		return fmt.Errorf("storage cannot be written: %w", err)
	}
	return nil
}

// WritableDir checks that dir takes a write of a few bytes, made durable. The error is
// the system's reason (no space left on device, read-only file system, …), without
// the path.
func WritableDir(dir string) error {
	f, err := os.CreateTemp(dir, "ping-*")
	if err != nil {
		return withoutPath(err)
	}
	defer os.Remove(f.Name())
	_, err = f.Write([]byte("filemill readiness check\n"))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return withoutPath(err)
}

// withoutPath drops the path an *fs.PathError carries.
func withoutPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

var _ domain.FileBlobs = (*Local)(nil)

var errExists = errors.New("an object is already stored under this key")

// place makes a finished temp file visible at key, and makes the name durable unless
// replace (Put syncs the file and its directory after). Without replace it links
// instead of renaming: link never overwrites, so of two racing single-use PUTs exactly
// one wins and the other gets errExists, with no check-then-write window.
func (l *Local) place(tmpPath, key string, replace bool) error {
	final := l.objectPath(key)
	for attempt := 0; ; attempt++ {
		err := os.MkdirAll(filepath.Dir(final), 0o755)
		if err == nil {
			if replace {
				err = os.Rename(tmpPath, final)
			} else if err = os.Link(tmpPath, final); err == nil {
				os.Remove(tmpPath)
			}
		}
		if err == nil {
			if !replace {
				syncDir(filepath.Dir(final))
			}
			return nil
		}
		if !replace && errors.Is(err, fs.ErrExist) {
			return errExists
		}
		// A concurrent Delete may prune a parent directory between MkdirAll and the
		// rename: make it again.
		if !errors.Is(err, fs.ErrNotExist) || attempt == 5 {
			return err
		}
	}
}

// syncDir makes a rename durable; best effort, as not every file system allows it.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}

// writebackChunk is how much a write gathers before its disk write is started.
const writebackChunk = 8 << 20

// copyBufSize is the chunk the storage host reads and writes: large, so a 1 GiB PUT
// costs a thousand write calls rather than tens of thousands.
const copyBufSize = 1 << 20

var copyBufs = sync.Pool{New: func() any { b := make([]byte, copyBufSize); return &b }}

// written is a finished temp file.
type written struct {
	path    string
	n       int64       // bytes written
	info    fs.FileInfo // after the last write
	readErr error       // the source failed (client went away); the file holds what came
}

// writeTemp streams r into a new file in .tmp, fsynced when sync, reading at most limit
// bytes (-1: all). A write error removes the file and is returned; a read error is
// reported in readErr, with the file kept for the caller.
func (l *Local) writeTemp(r io.Reader, limit int64, sync bool) (*written, error) {
	if limit >= 0 {
		r = io.LimitReader(r, limit)
	}
	f, err := os.CreateTemp(l.tmp, "w-*")
	if err != nil {
		return nil, err
	}
	w := &written{path: f.Name()}
	fail := func(err error) (*written, error) {
		f.Close()
		os.Remove(w.path)
		return nil, err
	}
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	buf := *bp
	var flushed int64 // bytes handed to startWriteback
	for {
		// Fill the whole buffer before writing: reads from a socket come in small
		// pieces, and one large write is cheaper than many small ones.
		nr, rerr := io.ReadFull(r, buf)
		if nr > 0 {
			nw, werr := f.Write(buf[:nr])
			w.n += int64(nw)
			if werr != nil {
				return fail(werr)
			}
			if w.n-flushed >= writebackChunk {
				startWriteback(f, flushed, w.n-flushed)
				flushed = w.n
			}
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			break
		}
		if rerr != nil {
			w.readErr = rerr
			break
		}
	}
	// Durable before visible: a stored object survives a crash once its PUT answered.
	if sync {
		if err := f.Sync(); err != nil {
			return fail(err)
		}
	}
	if w.info, err = f.Stat(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(w.path)
		return nil, err
	}
	return w, nil
}

// objectETag is a validator from the file's metadata (see doc.go, ETags).
func objectETag(info fs.FileInfo) string {
	return `"` + strconv.FormatInt(info.Size(), 16) + "-" + strconv.FormatInt(info.ModTime().UnixNano(), 16) + `"`
}

// ctxReader stops a copy when the context ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// Staged uploads: Dir/.uploads/<id>/key names the object. A single PUT lands as the
// file "object" (linked, so only the first whole body can land). Multipart parts are
// written in place, each at its offset, into the file "data", which completion then
// links as the object: assembling a large upload costs no copy. A landed part is
// recorded beside it as an empty file "<part number, 5 digits>.<etag>.<offset>.<size>".
// The ETag is 128 random bits drawn for each write of a part, so the one a client hands
// back names the exact bytes it sent (hashing every byte, as S3's MD5 ETags do, would
// cost more CPU than writing it); the record of a part is removed before its bytes are
// written again. Each part's bytes are written under a lock
// on their range of "data", and completion verifies the parts and ends the upload under
// a lock on the whole of it, so no part is half-written in an object and none lands
// after completion. Completing or aborting an upload first renames its directory out of
// .uploads (claimUpload): from that instant no PUT can find it, so nothing lands in an
// upload that has ended, and an aborted upload leaves nothing behind.

const maxPartNumber = 10000

// singleObject is the file a single PUT lands as, in its upload's directory.
const singleObject = "object"

// CreateUpload opens a staged upload for key.
func (l *Local) CreateUpload(_ context.Context, key string) (string, error) {
	if err := checkKey(key); err != nil {
		return "", err
	}
	id := randomHex(16)
	dir := filepath.Join(l.uploads, id)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", l.writeFailed(fmt.Errorf("create upload %s: %w", key, err))
	}
	if err := os.WriteFile(filepath.Join(dir, "key"), []byte(key), 0o644); err != nil {
		os.RemoveAll(dir)
		return "", l.writeFailed(fmt.Errorf("create upload %s: %w", key, err))
	}
	return id, nil
}

func checkUploadID(id string) error {
	if len(id) != 32 || strings.Trim(id, "0123456789abcdef") != "" {
		return fmt.Errorf("invalid multipart upload id %q", id)
	}
	return nil
}

// uploadDir returns the directory of an upload opened for key; domain.ErrNotFound when
// there is none (never opened, completed or aborted) or it belongs to another key.
func (l *Local) uploadDir(key, uploadID string) (string, error) {
	if err := checkKey(key); err != nil {
		return "", err
	}
	if err := checkUploadID(uploadID); err != nil {
		return "", err
	}
	dir := filepath.Join(l.uploads, uploadID)
	owner, err := os.ReadFile(filepath.Join(dir, "key"))
	if errors.Is(err, fs.ErrNotExist) || (err == nil && string(owner) != key) {
		return "", fmt.Errorf("upload %s of %s: %w", uploadID, key, domain.ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("upload %s: %w", uploadID, err)
	}
	return dir, nil
}

// claimUpload ends an open upload by renaming its directory out of .uploads, so no PUT
// can land in it any more, and returns where it now is; the caller removes it.
// domain.ErrNotFound when the upload has already ended.
func (l *Local) claimUpload(key, uploadID string) (string, error) {
	dir, err := l.uploadDir(key, uploadID)
	if err != nil {
		return "", err
	}
	ended := filepath.Join(l.tmp, "ended-"+uploadID+"-"+randomHex(8))
	if err := os.Rename(dir, ended); err != nil {
		if errors.Is(err, fs.ErrNotExist) { // ended meanwhile
			return "", fmt.Errorf("upload %s of %s: %w", uploadID, key, domain.ErrNotFound)
		}
		return "", fmt.Errorf("end upload %s: %w", uploadID, err)
	}
	return ended, nil
}

// CompleteUpload makes the body of the upload's single PUT the object at key.
func (l *Local) CompleteUpload(_ context.Context, key, uploadID string) error {
	dir, err := l.uploadDir(key, uploadID)
	if err != nil {
		return err
	}
	if _, err := os.Lstat(filepath.Join(dir, singleObject)); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("complete %s: %w", key, domain.ErrNoBytes)
	} else if err != nil {
		return fmt.Errorf("complete %s: %w", key, err)
	}
	ended, err := l.claimUpload(key, uploadID)
	if err != nil {
		return err
	}
	defer os.RemoveAll(ended)
	// Linked, never renamed over: a key is written once.
	if err := l.place(filepath.Join(ended, singleObject), key, false); err != nil {
		if errors.Is(err, errExists) {
			return fmt.Errorf("complete %s: %w", key, err)
		}
		return l.writeFailed(fmt.Errorf("complete %s: %w", key, err))
	}
	return nil
}

// AbortUpload ends the upload and deletes what it staged; aborting an ended or unknown
// upload is not an error.
func (l *Local) AbortUpload(_ context.Context, key, uploadID string) error {
	ended, err := l.claimUpload(key, uploadID)
	if errors.Is(err, domain.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := os.RemoveAll(ended); err != nil {
		return fmt.Errorf("abort upload %s: %w", uploadID, err)
	}
	return nil
}

// PresignPart returns a URL for a PUT of exactly size bytes as part partNumber, written
// at offset in the object; a new PUT of the same part replaces it, which is how an
// interrupted upload resumes.
func (l *Local) PresignPart(_ context.Context, key, uploadID string, partNumber int, offset, size int64, expires time.Duration) (string, error) {
	if err := checkKey(key); err != nil {
		return "", err
	}
	if err := checkUploadID(uploadID); err != nil {
		return "", err
	}
	if partNumber < 1 || partNumber > maxPartNumber {
		return "", fmt.Errorf("presign part: part number %d outside 1..%d", partNumber, maxPartNumber)
	}
	if size < 0 || offset < 0 {
		return "", fmt.Errorf("presign part %d: negative size %d or offset %d", partNumber, size, offset)
	}
	return l.sign(grant{op: opPart, key: key, upload: uploadID, part: partNumber, off: offset, size: size}, expires)
}

// multipartData is the file of an upload that its parts are written into.
const multipartData = "data"

type storedPart struct {
	domain.PartETag
	etag      string // 32 hex digits, unquoted
	off, size int64
	modTime   time.Time
}

// partRecord names the record of a landed part.
func partRecord(part int, etag string, off, size int64) string {
	return fmt.Sprintf("%05d.%s.%d.%d", part, etag, off, size)
}

// parsePartRecord reads a part's record from its name; ok is false for any other file.
func parsePartRecord(name string) (storedPart, bool) {
	f := strings.Split(name, ".")
	if len(f) != 4 || len(f[0]) != 5 || len(f[1]) != 32 || strings.Trim(f[1], "0123456789abcdef") != "" {
		return storedPart{}, false
	}
	n, err1 := strconv.Atoi(f[0])
	off, err2 := strconv.ParseInt(f[2], 10, 64)
	size, err3 := strconv.ParseInt(f[3], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || n < 1 || off < 0 || size < 0 {
		return storedPart{}, false
	}
	return storedPart{PartETag: domain.PartETag{PartNumber: n, ETag: `"` + f[1] + `"`}, etag: f[1], off: off, size: size}, true
}

// storedParts reads the records of an upload's landed parts, the newest per part number.
func storedParts(dir string) ([]storedPart, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	byNumber := map[int]storedPart{}
	for _, e := range entries {
		p, ok := parsePartRecord(e.Name())
		if !ok {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue // replaced meanwhile
		}
		p.modTime = info.ModTime()
		if old, ok := byNumber[p.PartNumber]; !ok || p.modTime.After(old.modTime) {
			byNumber[p.PartNumber] = p
		}
	}
	parts := make([]storedPart, 0, len(byNumber))
	for _, p := range byNumber {
		parts = append(parts, p)
	}
	slices.SortFunc(parts, func(a, b storedPart) int { return a.PartNumber - b.PartNumber })
	return parts, nil
}

// ListParts returns the stored parts with their ETags, by part number.
func (l *Local) ListParts(_ context.Context, key, uploadID string) ([]domain.PartETag, error) {
	dir, err := l.uploadDir(key, uploadID)
	if err != nil {
		return nil, err
	}
	parts, err := storedParts(dir)
	if err != nil {
		return nil, fmt.Errorf("list parts of %s: %w", uploadID, err)
	}
	out := make([]domain.PartETag, len(parts))
	for i, p := range parts {
		out[i] = p.PartETag
	}
	return out, nil
}

// normalizeETag drops the quotes and case an ETag may have gained in transit.
func normalizeETag(e string) string {
	e = strings.TrimPrefix(strings.TrimSpace(e), "W/")
	return strings.ToLower(strings.Trim(e, `"`))
}

// checkPartOrder requires parts numbered 1..n, ascending, without gaps.
func checkPartOrder(parts []domain.PartETag) error {
	if len(parts) == 0 {
		return fmt.Errorf("%w: no parts given", ErrPartMismatch)
	}
	for i, p := range parts {
		if p.PartNumber != i+1 {
			return fmt.Errorf("%w: part %d given where part %d belongs (parts must be 1..n in order)", ErrPartMismatch, p.PartNumber, i+1)
		}
	}
	return nil
}

// CompleteMultipart makes the upload's data file the object after checking each given
// ETag against the stored part and that the parts follow one another from byte 0.
func (l *Local) CompleteMultipart(_ context.Context, key, uploadID string, parts []domain.PartETag) error {
	dir, err := l.uploadDir(key, uploadID)
	if err != nil {
		return err
	}
	if err := checkPartOrder(parts); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(dir, multipartData), os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		if _, err := l.uploadDir(key, uploadID); err != nil {
			return err // ended meanwhile
		}
		return fmt.Errorf("%w: part 1: no part has been stored", ErrPartMismatch)
	}
	if err != nil {
		return fmt.Errorf("complete %s: %w", key, err)
	}
	defer f.Close()
	// Wait for the parts being written to land, and keep others out until the upload
	// has ended: a part that takes the lock later finds it ended and writes nothing.
	unlock, err := lockRange(f, 0, 0)
	if err != nil {
		return fmt.Errorf("complete %s: %w", key, err)
	}
	defer unlock()
	stored, err := storedParts(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("upload %s of %s: %w", uploadID, key, domain.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("complete %s: %w", key, err)
	}
	byNumber := make(map[int]storedPart, len(stored))
	for _, p := range stored {
		byNumber[p.PartNumber] = p
	}
	var size int64
	for _, p := range parts {
		sum := normalizeETag(p.ETag)
		if len(sum) != 32 || strings.Trim(sum, "0123456789abcdef") != "" {
			return fmt.Errorf("%w: part %d: etag %q is not one this store answers", ErrPartMismatch, p.PartNumber, p.ETag)
		}
		sp, ok := byNumber[p.PartNumber]
		if !ok || sp.etag != sum {
			return fmt.Errorf("%w: part %d: no stored part has etag %q", ErrPartMismatch, p.PartNumber, p.ETag)
		}
		if sp.off != size {
			return fmt.Errorf("%w: part %d starts at byte %d, not where part %d ends (%d)", ErrPartMismatch, p.PartNumber, sp.off, p.PartNumber-1, size)
		}
		size += sp.size
	}
	ended, err := l.claimUpload(key, uploadID)
	if err != nil {
		return err
	}
	defer os.RemoveAll(ended)
	// The parts end at size; nothing else was written past it, but the object is
	// exactly the verified bytes whatever happened.
	err = f.Truncate(size)
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		// Linked, never renamed over: a key is written once.
		err = l.place(filepath.Join(ended, multipartData), key, false)
	}
	if err != nil {
		if errors.Is(err, errExists) {
			return fmt.Errorf("complete %s: %w", key, err)
		}
		return l.writeFailed(fmt.Errorf("complete %s: %w", key, err))
	}
	return nil
}

// writePart writes a part's body in place into its upload's data file at off, records
// it and answers its ETag (unquoted). It reads at most size+1 bytes, writes at most size, and answers how many
// it read: a part whose body is not exactly size bytes is not recorded (its range of
// the data file holds what came). domain.ErrNotFound when the upload has ended; any
// other error is a failure to write.
func (l *Local) writePart(key, uploadID string, part int, off, size int64, body io.Reader) (etag string, n int64, err error) {
	dir, err := l.uploadDir(key, uploadID)
	if err != nil {
		return "", 0, err
	}
	gone := fmt.Errorf("upload %s: %w", uploadID, domain.ErrNotFound)
	f, err := os.OpenFile(filepath.Join(dir, multipartData), os.O_RDWR|os.O_CREATE, 0o644)
	if errors.Is(err, fs.ErrNotExist) { // ended meanwhile
		return "", 0, gone
	}
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	unlock, err := lockRange(f, off, max(size, 1))
	if err != nil {
		return "", 0, err
	}
	defer unlock()
	// Under the lock the upload is open or has ended for good: completion ends it while
	// holding the whole file.
	if _, err := l.uploadDir(key, uploadID); err != nil {
		return "", 0, err
	}
	// Forget the part's earlier bytes before overwriting them, so a write that fails
	// midway leaves the part missing, never a record of bytes that are gone.
	prefix := fmt.Sprintf("%05d.", part)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", 0, gone
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return "", 0, err
			}
		}
	}
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	buf := *bp
	r := io.LimitReader(body, size+1) // one more byte tells an overrun
	var written, flushed int64
	for {
		// Whole buffers: one large write is cheaper than the small pieces a socket gives.
		nr, rerr := io.ReadFull(r, buf)
		n += int64(nr)
		if k := min(int64(nr), size-written); k > 0 {
			if _, err := f.WriteAt(buf[:k], off+written); err != nil {
				return "", n, err
			}
			written += k
			if written-flushed >= writebackChunk {
				startWriteback(f, off+flushed, written-flushed)
				flushed = written
			}
		}
		if rerr != nil {
			break // the end, or the client went away: n tells
		}
	}
	if n != size {
		return "", n, nil
	}
	// Durable before recorded: a part survives a crash once its PUT answered.
	if err := f.Sync(); err != nil {
		return "", n, err
	}
	etag = randomHex(16)
	if err := os.WriteFile(filepath.Join(dir, partRecord(part, etag, off, size)), nil, 0o644); err != nil {
		if errors.Is(err, fs.ErrNotExist) { // aborted meanwhile
			return "", n, gone
		}
		return "", n, err
	}
	syncDir(dir)
	return etag, n, nil
}
