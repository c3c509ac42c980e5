package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/filemill/filemill/domain"
)

// S3Config configures the S3-compatible backend.
type S3Config struct {
	Endpoint  string // host:port the server talks to
	AccessKey string // empty: credentials from the environment (AWS_*, MINIO_*, ~/.aws, IAM)
	SecretKey string
	Bucket    string
	Region    string // default us-east-1
	Secure    bool   // https to Endpoint
	// PathStyle forces path-style bucket addressing; otherwise minio-go picks (path style
	// for IPs and localhost, virtual hosts for AWS).
	PathStyle bool
	// PublicURL, when set (scheme://host:port), is the address written into the URLs
	// handed to clients, for a store the server reaches under another name.
	PublicURL string
}

// ParseS3URL reads s3://ACCESS:SECRET@host:port/bucket?secure=false&region=us-east-1&
// path_style=true&public_url=http://… (access and secret percent-encoded when needed).
// secure defaults to true.
func ParseS3URL(raw string) (S3Config, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return S3Config{}, fmt.Errorf("storage URL: %w", err)
	}
	if u.Scheme != "s3" {
		return S3Config{}, fmt.Errorf("storage URL: scheme must be s3://, got %q", u.Scheme)
	}
	cfg := S3Config{Endpoint: u.Host, Bucket: strings.Trim(u.Path, "/"), Region: "us-east-1", Secure: true}
	if u.User != nil {
		cfg.AccessKey = u.User.Username()
		cfg.SecretKey, _ = u.User.Password()
	}
	q := u.Query()
	for k, v := range q {
		val := v[len(v)-1]
		switch k {
		case "secure", "path_style":
			b, err := strconv.ParseBool(val)
			if err != nil {
				return S3Config{}, fmt.Errorf("storage URL: %s=%q is not a boolean", k, val)
			}
			if k == "secure" {
				cfg.Secure = b
			} else {
				cfg.PathStyle = b
			}
		case "region":
			cfg.Region = val
		case "public_url":
			cfg.PublicURL = val
		default:
			return S3Config{}, fmt.Errorf("storage URL: unknown parameter %q (known: secure, region, path_style, public_url)", k)
		}
	}
	return cfg, cfg.Validate()
}

// Validate names the setting to change.
func (c S3Config) Validate() error {
	if c.Endpoint == "" {
		return errors.New("storage URL: the host:port of the S3 endpoint is missing")
	}
	if c.Bucket == "" || strings.Contains(c.Bucket, "/") {
		return fmt.Errorf("storage URL: the path must be exactly one bucket name, got %q", c.Bucket)
	}
	if (c.AccessKey == "") != (c.SecretKey == "") {
		return errors.New("storage URL: give both access key and secret key, or neither")
	}
	if c.PublicURL != "" {
		if _, _, err := parsePublicURL(c.PublicURL); err != nil {
			return err
		}
	}
	return nil
}

func parsePublicURL(raw string) (host string, secure bool, err error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || strings.Trim(u.Path, "/") != "" || u.RawQuery != "" {
		return "", false, fmt.Errorf("storage URL: public_url %q must be scheme://host[:port] without a path", raw)
	}
	return u.Host, u.Scheme == "https", nil
}

// S3 stores blobs in one bucket of an S3-compatible store.
type S3 struct {
	core   s3API    // server-side calls
	signer s3Signer // mints client URLs; the public endpoint when one is set
	bucket string
}

// s3API is every call the store makes to S3, and no more: a test wraps it to fail any one
// of them and see what the store does then.
type s3API interface {
	BucketExists(ctx context.Context, bucket string) (bool, error)
	StatObject(ctx context.Context, bucket, key string, opts minio.StatObjectOptions) (minio.ObjectInfo, error)
	GetObject(ctx context.Context, bucket, key string, opts minio.GetObjectOptions) (io.ReadCloser, minio.ObjectInfo, http.Header, error)
	// PutObject is minio-go's high-level put: parts for a body of unknown size.
	PutObject(ctx context.Context, bucket, key string, r io.Reader, size int64, opts minio.PutObjectOptions) (minio.UploadInfo, error)
	RemoveObject(ctx context.Context, bucket, key string, opts minio.RemoveObjectOptions) error
	// ListAll is minio-go's high-level listing: every page, as a channel.
	ListAll(ctx context.Context, bucket string, opts minio.ListObjectsOptions) <-chan minio.ObjectInfo
	NewMultipartUpload(ctx context.Context, bucket, key string, opts minio.PutObjectOptions) (string, error)
	ListObjectParts(ctx context.Context, bucket, key, uploadID string, partNumberMarker, maxParts int) (minio.ListObjectPartsResult, error)
	CompleteMultipartUpload(ctx context.Context, bucket, key, uploadID string, parts []minio.CompletePart, opts minio.PutObjectOptions) (minio.UploadInfo, error)
	AbortMultipartUpload(ctx context.Context, bucket, key, uploadID string) error
	ListMultipartUploads(ctx context.Context, bucket, prefix, keyMarker, uploadIDMarker, delimiter string, maxUploads int) (minio.ListMultipartUploadsResult, error)
}

// s3Signer mints the URLs clients use; it makes no request.
type s3Signer interface {
	PresignHeader(ctx context.Context, method, bucket, key string, expires time.Duration, params url.Values, header http.Header) (*url.URL, error)
	PresignedGetObject(ctx context.Context, bucket, key string, expires time.Duration, params url.Values) (*url.URL, error)
}

// minioAPI is s3API on minio-go: Core's calls, with the Client's PutObject and ListObjects.
type minioAPI struct{ *minio.Core }

func (m minioAPI) ListAll(ctx context.Context, bucket string, opts minio.ListObjectsOptions) <-chan minio.ObjectInfo {
	return m.Core.Client.ListObjects(ctx, bucket, opts)
}

func (m minioAPI) PutObject(ctx context.Context, bucket, key string, r io.Reader, size int64, opts minio.PutObjectOptions) (minio.UploadInfo, error) {
	return m.Core.Client.PutObject(ctx, bucket, key, r, size, opts)
}

var (
	_ domain.Blobs          = (*S3)(nil)
	_ domain.MultipartBlobs = (*S3)(nil)
)

// unknownSizePartSize bounds the memory of a Put of unknown size (minio-go buffers one
// part) and still allows objects of 160 GiB.
const unknownSizePartSize = 16 << 20

// NewS3 connects to the store and creates the bucket when it is missing.
func NewS3(ctx context.Context, cfg S3Config) (*S3, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	creds := credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, "")
	if cfg.AccessKey == "" {
		creds = credentials.NewChainCredentials([]credentials.Provider{
			&credentials.EnvAWS{}, &credentials.EnvMinio{}, &credentials.FileAWSCredentials{}, &credentials.IAM{}})
	}
	// A fixed region also spares minio-go a bucket-location request before every presign.
	opts := func(secure bool) *minio.Options {
		o := &minio.Options{Creds: creds, Secure: secure, Region: cfg.Region}
		if cfg.PathStyle {
			o.BucketLookup = minio.BucketLookupPath
		}
		return o
	}
	core, err := minio.NewCore(cfg.Endpoint, opts(cfg.Secure))
	if err != nil {
		return nil, fmt.Errorf("s3 endpoint %s: %w", cfg.Endpoint, err)
	}
	s := &S3{core: minioAPI{core}, signer: core.Client, bucket: cfg.Bucket}
	if cfg.PublicURL != "" {
		host, secure, _ := parsePublicURL(cfg.PublicURL)
		if s.signer, err = minio.New(host, opts(secure)); err != nil {
			return nil, fmt.Errorf("s3 public_url %s: %w", cfg.PublicURL, err)
		}
	}
	exists, err := core.BucketExists(ctx, cfg.Bucket)
	if err != nil {
		return nil, fmt.Errorf("s3 bucket %s: %w", cfg.Bucket, err)
	}
	if !exists {
		err := core.MakeBucket(ctx, cfg.Bucket, minio.MakeBucketOptions{Region: cfg.Region})
		if code := minio.ToErrorResponse(err).Code; err != nil && code != "BucketAlreadyOwnedByYou" && code != "BucketAlreadyExists" {
			return nil, fmt.Errorf("s3 create bucket %s: %w", cfg.Bucket, err)
		}
	}
	return s, nil
}

// s3Err wraps a store error, turning the "no such thing" codes into domain.ErrNotFound,
// and a store that cannot be reached (the network, or a server answering 503 or 502)
// into domain.ErrUnavailable.
func s3Err(op, key string, err error) error {
	resp := minio.ToErrorResponse(err)
	switch resp.Code {
	case "NoSuchKey", "NoSuchUpload", "NotFound":
		return fmt.Errorf("%s %s: %w (%v)", op, key, domain.ErrNotFound, err)
	}
	if domain.IsUnreachable(err) || resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusBadGateway {
		err = domain.MarkUnavailable("storage", err)
	}
	return fmt.Errorf("%s %s: %w", op, key, err)
}

func checkExpiry(expires time.Duration) error {
	if expires < time.Second || expires > 7*24*time.Hour {
		return fmt.Errorf("presign: expiry %s outside 1s..7 days", expires)
	}
	return nil
}

// nonceParam is a query parameter the store ignores; its random value makes every URL
// minted distinct, even within the one second of X-Amz-Date.
const nonceParam = "x-filemill-nonce"

// PresignPut signs an UploadPart of part 1 of the upload with its Content-Length, so the
// store refuses a body of any other size (the client must send that header, the returned
// map). Once the upload is completed or aborted the store answers 404 NoSuchUpload: the
// URL writes nothing more. Until then a new PUT replaces the bytes.
func (s *S3) PresignPut(ctx context.Context, key, uploadID string, size int64, expires time.Duration) (string, map[string]string, error) {
	u, err := s.PresignPart(ctx, key, uploadID, 1, 0, size, expires)
	if err != nil {
		return "", nil, err
	}
	return u, map[string]string{"Content-Length": strconv.FormatInt(size, 10)}, nil
}

// CompleteUpload assembles part 1, the single PUT, into the object.
func (s *S3) CompleteUpload(ctx context.Context, key, uploadID string) error {
	// A PUT may replace the part between the listing and the completion: list again.
	for attempt := 0; ; attempt++ {
		parts, err := s.ListParts(ctx, key, uploadID)
		if err != nil {
			return err
		}
		if len(parts) == 0 || parts[0].PartNumber != 1 {
			return fmt.Errorf("complete %s: %w", key, domain.ErrNoBytes)
		}
		err = s.CompleteMultipart(ctx, key, uploadID, parts[:1])
		if !errors.Is(err, ErrPartMismatch) || attempt == 2 {
			return err
		}
	}
}

// AbortUpload discards the staged bytes; aborting a finished or unknown upload is not
// an error.
func (s *S3) AbortUpload(ctx context.Context, key, uploadID string) error {
	if err := s.core.AbortMultipartUpload(ctx, s.bucket, key, uploadID); err != nil {
		if minio.ToErrorResponse(err).Code == "NoSuchUpload" {
			return nil
		}
		return s3Err("abort upload", uploadID, err)
	}
	return nil
}

// PresignGet returns the store's URL, with d's Content-Type and the download name as
// the response's Content-Disposition (the store's response-* overrides).
func (s *S3) PresignGet(ctx context.Context, key string, expires time.Duration, d domain.Download) (string, error) {
	if err := checkKey(key); err != nil {
		return "", err
	}
	if err := checkExpiry(expires); err != nil {
		return "", err
	}
	ct := "application/octet-stream"
	if d.ContentType != "" {
		var ok bool
		if ct, ok = cleanMediaType(d.ContentType); !ok {
			return "", fmt.Errorf("presign get %s: %q is not a media type", key, d.ContentType)
		}
	}
	params := url.Values{"response-content-type": {ct}}
	if d.Name != "" {
		params.Set("response-content-disposition", contentDisposition(d.Name))
	}
	u, err := s.signer.PresignedGetObject(ctx, s.bucket, key, expires, params)
	if err != nil {
		return "", fmt.Errorf("presign get %s: %w", key, err)
	}
	return u.String(), nil
}

// Stat returns the stored size; domain.ErrNotFound when nothing is stored under key.
func (s *S3) Stat(ctx context.Context, key string) (int64, error) {
	if err := checkKey(key); err != nil {
		return 0, err
	}
	info, err := s.core.StatObject(ctx, s.bucket, key, minio.StatObjectOptions{})
	if err != nil {
		return 0, s3Err("stat", key, err)
	}
	return info.Size, nil
}

// Get opens the object; domain.ErrNotFound when nothing is stored under key.
func (s *S3) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	// Core.GetObject sends the request now, so a missing object fails here rather than
	// on the first Read.
	body, _, _, err := s.core.GetObject(ctx, s.bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, s3Err("get", key, err)
	}
	return body, nil
}

// Put stores r under key; size -1 when unknown. A known size that does not match the
// bytes the reader holds stores nothing.
func (s *S3) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	if err := checkKey(key); err != nil {
		return err
	}
	opts := minio.PutObjectOptions{ContentType: "application/octet-stream"}
	if size < 0 {
		opts.PartSize = unknownSizePartSize
	}
	var exact *exactReader
	if size >= 0 {
		exact = &exactReader{r: r, left: size}
		r = exact
	}
	if _, err := s.core.PutObject(ctx, s.bucket, key, r, size, opts); err != nil {
		return s3Err("put", key, err)
	}
	if exact != nil && exact.longer() {
		_ = s.Delete(ctx, key)
		return fmt.Errorf("put %s: %w (%d)", key, errLongerThanSize, size)
	}
	return nil
}

var errLongerThanSize = errors.New("the reader holds more bytes than the size given")

// exactReader tells when r holds more than the declared size: minio-go reads exactly
// size bytes and would silently store a truncated object. It fails the read where it
// can, and longer reports it where minio-go swallowed that error.
type exactReader struct {
	r       io.Reader
	left    int64
	probed  bool
	tooLong bool
}

func (e *exactReader) Read(p []byte) (int, error) {
	if e.left <= 0 {
		if e.longer() {
			return 0, errLongerThanSize
		}
		return 0, io.EOF
	}
	if int64(len(p)) > e.left {
		p = p[:e.left]
	}
	n, err := e.r.Read(p)
	e.left -= int64(n)
	if e.left == 0 && err == nil {
		err = io.EOF
		if e.longer() {
			err = errLongerThanSize
		}
	}
	return n, err
}

// longer reads one byte past the declared size, once.
func (e *exactReader) longer() bool {
	if !e.probed && e.left <= 0 {
		e.probed = true
		var one [1]byte
		n, _ := io.ReadFull(e.r, one[:])
		e.tooLong = n > 0
	}
	return e.tooLong
}

// Delete removes the object; a missing object is not an error.
func (s *S3) Delete(ctx context.Context, key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if err := s.core.RemoveObject(ctx, s.bucket, key, minio.RemoveObjectOptions{}); err != nil {
		if minio.ToErrorResponse(err).Code == "NoSuchKey" {
			return nil
		}
		return s3Err("delete", key, err)
	}
	return nil
}

// List returns up to limit of the objects stored under prefix after `after`: S3 lists
// in byte order of the keys (UTF-8 binary order), from StartAfter.
func (s *S3) List(ctx context.Context, prefix, after string, limit int) ([]domain.StoredObject, error) {
	none, err := checkListing(prefix, limit)
	if err != nil {
		return nil, err
	}
	objs := []domain.StoredObject{}
	if none {
		return objs, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops the listing's goroutine when limit cuts it short
	opts := minio.ListObjectsOptions{Prefix: prefix, StartAfter: after, Recursive: true, MaxKeys: min(limit, 1000)}
	for o := range s.core.ListAll(ctx, s.bucket, opts) {
		if o.Err != nil {
			return nil, s3Err("list", prefix, o.Err)
		}
		if len(objs) == limit {
			break
		}
		objs = append(objs, domain.StoredObject{Key: o.Key, ModifiedAt: o.LastModified.UTC()})
	}
	return objs, nil
}

// uploadsPage is how many open uploads one listing asks for: a listing runs from the
// prefix on, so past the prefix's few it holds other keys' uploads, read for nothing.
const uploadsPage = 100

// AbortUploadsUnder aborts the multipart uploads open for keys under prefix. It lists
// the bucket's uploads from prefix on and keeps those under it, rather than asking for
// the prefix: MinIO takes a listing's prefix for one exact key (so finds none under a
// prefix), and with none lists every upload this node opened and has not yet expired
// itself (stale_uploads_expiry). S3 lists in key order from the marker, so the listing
// ends at the first page that runs past prefix.
func (s *S3) AbortUploadsUnder(ctx context.Context, prefix string, limit int) (int, error) {
	if err := checkPrefix(prefix); err != nil {
		return 0, err
	}
	aborted := 0
	keyMarker, idMarker := prefix, ""
	for {
		res, err := s.core.ListMultipartUploads(ctx, s.bucket, "", keyMarker, idMarker, "", uploadsPage)
		if err != nil {
			return aborted, s3Err("list uploads under", prefix, err)
		}
		for _, u := range res.Uploads {
			if !strings.HasPrefix(u.Key, prefix) {
				continue
			}
			if aborted == limit {
				return aborted, nil
			}
			if err := s.AbortUpload(ctx, u.Key, u.UploadID); err != nil {
				return aborted, err
			}
			aborted++
		}
		n := len(res.Uploads)
		if !res.IsTruncated || n == 0 || !strings.HasPrefix(res.Uploads[n-1].Key, prefix) || res.NextKeyMarker == "" {
			return aborted, nil
		}
		keyMarker, idMarker = res.NextKeyMarker, res.NextUploadIDMarker
	}
}

// Ping checks that the bucket answers.
func (s *S3) Ping(ctx context.Context) error {
	ok, err := s.core.BucketExists(ctx, s.bucket)
	if err != nil {
		return s3Err("s3 bucket", s.bucket, err)
	}
	if !ok {
		return fmt.Errorf("s3 bucket %s does not exist", s.bucket)
	}
	return nil
}

// CreateUpload opens a multipart upload in the store: single PUTs are its part 1, so
// that its end, completion or abort, kills every URL minted for it.
func (s *S3) CreateUpload(ctx context.Context, key string) (string, error) {
	if err := checkKey(key); err != nil {
		return "", err
	}
	id, err := s.core.NewMultipartUpload(ctx, s.bucket, key, minio.PutObjectOptions{ContentType: "application/octet-stream"})
	if err != nil {
		return "", s3Err("create upload", key, err)
	}
	return id, nil
}

// PresignPart signs an UploadPart request with its Content-Length; the store answers
// the part's ETag. Parts other than the last must be 5 MiB or more (the store's rule).
// An upload that has ended answers 404 NoSuchUpload. The offset is the store's concern
// (it assembles parts by number).
func (s *S3) PresignPart(ctx context.Context, key, uploadID string, partNumber int, _, size int64, expires time.Duration) (string, error) {
	if err := checkKey(key); err != nil {
		return "", err
	}
	if err := checkExpiry(expires); err != nil {
		return "", err
	}
	if partNumber < 1 || partNumber > maxPartNumber {
		return "", fmt.Errorf("presign part: part number %d outside 1..%d", partNumber, maxPartNumber)
	}
	if size < 0 {
		return "", fmt.Errorf("presign part %d: negative size %d", partNumber, size)
	}
	params := url.Values{"partNumber": {strconv.Itoa(partNumber)}, "uploadId": {uploadID}, nonceParam: {newNonce()}}
	u, err := s.signer.PresignHeader(ctx, http.MethodPut, s.bucket, key, expires, params,
		http.Header{"Content-Length": {strconv.FormatInt(size, 10)}})
	if err != nil {
		return "", fmt.Errorf("presign part %d of %s: %w", partNumber, key, err)
	}
	return u.String(), nil
}

// ListParts returns the parts the store holds, by part number.
func (s *S3) ListParts(ctx context.Context, key, uploadID string) ([]domain.PartETag, error) {
	var parts []domain.PartETag
	marker := 0
	for {
		res, err := s.core.ListObjectParts(ctx, s.bucket, key, uploadID, marker, 1000)
		if err != nil {
			return nil, s3Err("list parts of", key, err)
		}
		for _, p := range res.ObjectParts {
			parts = append(parts, domain.PartETag{PartNumber: p.PartNumber, ETag: `"` + normalizeETag(p.ETag) + `"`})
		}
		if !res.IsTruncated {
			return parts, nil
		}
		marker = res.NextPartNumberMarker
	}
}

// CompleteMultipart checks every given ETag against the stored parts, then has the
// store assemble them.
func (s *S3) CompleteMultipart(ctx context.Context, key, uploadID string, parts []domain.PartETag) error {
	if err := checkPartOrder(parts); err != nil {
		return err
	}
	stored, err := s.ListParts(ctx, key, uploadID)
	if err != nil {
		return err
	}
	held := make(map[int]string, len(stored))
	for _, p := range stored {
		held[p.PartNumber] = normalizeETag(p.ETag)
	}
	complete := make([]minio.CompletePart, len(parts))
	for i, p := range parts {
		got, ok := held[p.PartNumber]
		if !ok {
			return fmt.Errorf("%w: part %d has not been uploaded", ErrPartMismatch, p.PartNumber)
		}
		if got != normalizeETag(p.ETag) {
			return fmt.Errorf("%w: part %d: etag %q does not match the stored part", ErrPartMismatch, p.PartNumber, p.ETag)
		}
		complete[i] = minio.CompletePart{PartNumber: p.PartNumber, ETag: got}
	}
	if _, err := s.core.CompleteMultipartUpload(ctx, s.bucket, key, uploadID, complete, minio.PutObjectOptions{}); err != nil {
		// A part replaced between our check and the store's.
		if code := minio.ToErrorResponse(err).Code; code == "InvalidPart" || code == "InvalidPartOrder" {
			return fmt.Errorf("%w: %v", ErrPartMismatch, err)
		}
		return s3Err("complete multipart", key, err)
	}
	return nil
}
