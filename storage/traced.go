package storage

import (
	"context"
	"io"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/filemill/filemill/domain"
)

// TracedBlobs is a blob store whose calls are spans ("storage <call>"), children of the
// caller's span: the request's on the API, the attempt's on a worker. With tracing off a
// call costs one check.
type TracedBlobs struct {
	next interface {
		domain.Blobs
		domain.MultipartBlobs
	}
}

// Traced wraps b, which must also take multipart uploads (both stores do). The wrapper
// takes files whole (domain.FileBlobs) only when b does, so a caller asks the store
// itself, not the wrapper, whether it can.
func Traced(b interface {
	domain.Blobs
	domain.MultipartBlobs
}) domain.Blobs {
	t := &TracedBlobs{next: b}
	if fb, ok := b.(domain.FileBlobs); ok {
		return &tracedFileBlobs{TracedBlobs: t, files: fb}
	}
	return t
}

// tracedFileBlobs is TracedBlobs of a store that takes files.
type tracedFileBlobs struct {
	*TracedBlobs
	files domain.FileBlobs
}

func (t *tracedFileBlobs) PutFile(ctx context.Context, key, path string, size int64) error {
	ctx, end := span(ctx, "put file")
	err := t.files.PutFile(ctx, key, path, size)
	end(err)
	return err
}

var (
	_ domain.Blobs          = (*TracedBlobs)(nil)
	_ domain.MultipartBlobs = (*TracedBlobs)(nil)
	_ domain.EgressMeter    = (*TracedBlobs)(nil)
	_ domain.FileBlobs      = (*tracedFileBlobs)(nil)
)

func span(ctx context.Context, call string) (context.Context, func(error)) {
	ctx, s := domain.StartSpan(ctx, "storage "+call, attribute.String("filemill.storage.call", call))
	return ctx, func(err error) { domain.EndSpan(s, err) }
}

func (t *TracedBlobs) CreateUpload(ctx context.Context, key string) (string, error) {
	ctx, end := span(ctx, "create upload")
	id, err := t.next.CreateUpload(ctx, key)
	end(err)
	return id, err
}

func (t *TracedBlobs) PresignPut(ctx context.Context, key, uploadID string, size int64, expires time.Duration) (string, map[string]string, error) {
	ctx, end := span(ctx, "presign put")
	url, h, err := t.next.PresignPut(ctx, key, uploadID, size, expires)
	end(err)
	return url, h, err
}

func (t *TracedBlobs) CompleteUpload(ctx context.Context, key, uploadID string) error {
	ctx, end := span(ctx, "complete upload")
	err := t.next.CompleteUpload(ctx, key, uploadID)
	end(err)
	return err
}

func (t *TracedBlobs) AbortUpload(ctx context.Context, key, uploadID string) error {
	ctx, end := span(ctx, "abort upload")
	err := t.next.AbortUpload(ctx, key, uploadID)
	end(err)
	return err
}

func (t *TracedBlobs) PresignGet(ctx context.Context, key string, expires time.Duration, d domain.Download) (string, error) {
	ctx, end := span(ctx, "presign get")
	url, err := t.next.PresignGet(ctx, key, expires, d)
	end(err)
	return url, err
}

func (t *TracedBlobs) Stat(ctx context.Context, key string) (int64, error) {
	ctx, end := span(ctx, "stat")
	n, err := t.next.Stat(ctx, key)
	end(err)
	return n, err
}

// Get's span covers opening the object; reading it is the caller's (download input).
func (t *TracedBlobs) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	ctx, end := span(ctx, "get")
	r, err := t.next.Get(ctx, key)
	end(err)
	return r, err
}

func (t *TracedBlobs) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	ctx, end := span(ctx, "put")
	err := t.next.Put(ctx, key, r, size)
	end(err)
	return err
}

func (t *TracedBlobs) Delete(ctx context.Context, key string) error {
	ctx, end := span(ctx, "delete")
	err := t.next.Delete(ctx, key)
	end(err)
	return err
}

func (t *TracedBlobs) Ping(ctx context.Context) error {
	ctx, end := span(ctx, "ping")
	err := t.next.Ping(ctx)
	end(err)
	return err
}

func (t *TracedBlobs) PresignPart(ctx context.Context, key, uploadID string, partNumber int, offset, size int64, expires time.Duration) (string, error) {
	ctx, end := span(ctx, "presign part")
	url, err := t.next.PresignPart(ctx, key, uploadID, partNumber, offset, size, expires)
	end(err)
	return url, err
}

func (t *TracedBlobs) ListParts(ctx context.Context, key, uploadID string) ([]domain.PartETag, error) {
	ctx, end := span(ctx, "list parts")
	parts, err := t.next.ListParts(ctx, key, uploadID)
	end(err)
	return parts, err
}

func (t *TracedBlobs) CompleteMultipart(ctx context.Context, key, uploadID string, parts []domain.PartETag) error {
	ctx, end := span(ctx, "complete multipart")
	err := t.next.CompleteMultipart(ctx, key, uploadID, parts)
	end(err)
	return err
}

// MetersEgress is the wrapped store's answer: the local store meters what it serves.
func (t *TracedBlobs) MetersEgress() bool {
	m, ok := t.next.(domain.EgressMeter)
	return ok && m.MetersEgress()
}

func (t *TracedBlobs) List(ctx context.Context, prefix, after string, limit int) ([]domain.StoredObject, error) {
	ctx, end := span(ctx, "list")
	objs, err := t.next.List(ctx, prefix, after, limit)
	end(err)
	return objs, err
}

func (t *TracedBlobs) AbortUploadsUnder(ctx context.Context, prefix string, limit int) (int, error) {
	ctx, end := span(ctx, "abort uploads under")
	n, err := t.next.AbortUploadsUnder(ctx, prefix, limit)
	end(err)
	return n, err
}
