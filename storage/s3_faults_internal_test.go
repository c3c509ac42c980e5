package storage

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/storage/miniotest"
)

// faultyAPI passes every call to the real store except those a test makes fail: the
// failure paths of a store that answers, but not the way the happy path expects.
type faultyAPI struct {
	s3API
	mu    sync.Mutex
	fails map[string][]error // per method, the errors its next calls answer
	calls map[string]int
}

func (f *faultyAPI) failNext(method string, errs ...error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fails[method] = append(f.fails[method], errs...)
}

func (f *faultyAPI) fault(method string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[method]++
	if errs := f.fails[method]; len(errs) > 0 {
		f.fails[method] = errs[1:]
		return errs[0]
	}
	return nil
}

func (f *faultyAPI) count(method string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[method]
}

func (f *faultyAPI) BucketExists(ctx context.Context, bucket string) (bool, error) {
	if err := f.fault("BucketExists"); err != nil {
		return false, err
	}
	return f.s3API.BucketExists(ctx, bucket)
}

func (f *faultyAPI) GetObject(ctx context.Context, bucket, key string, opts minio.GetObjectOptions) (io.ReadCloser, minio.ObjectInfo, http.Header, error) {
	if err := f.fault("GetObject"); err != nil {
		return nil, minio.ObjectInfo{}, nil, err
	}
	return f.s3API.GetObject(ctx, bucket, key, opts)
}

func (f *faultyAPI) PutObject(ctx context.Context, bucket, key string, r io.Reader, size int64, opts minio.PutObjectOptions) (minio.UploadInfo, error) {
	if err := f.fault("PutObject"); err != nil {
		return minio.UploadInfo{}, err
	}
	return f.s3API.PutObject(ctx, bucket, key, r, size, opts)
}

func (f *faultyAPI) RemoveObject(ctx context.Context, bucket, key string, opts minio.RemoveObjectOptions) error {
	if err := f.fault("RemoveObject"); err != nil {
		return err
	}
	return f.s3API.RemoveObject(ctx, bucket, key, opts)
}

func (f *faultyAPI) CompleteMultipartUpload(ctx context.Context, bucket, key, uploadID string, parts []minio.CompletePart, opts minio.PutObjectOptions) (minio.UploadInfo, error) {
	if err := f.fault("CompleteMultipartUpload"); err != nil {
		return minio.UploadInfo{}, err
	}
	return f.s3API.CompleteMultipartUpload(ctx, bucket, key, uploadID, parts, opts)
}

func (f *faultyAPI) AbortMultipartUpload(ctx context.Context, bucket, key, uploadID string) error {
	if err := f.fault("AbortMultipartUpload"); err != nil {
		return err
	}
	return f.s3API.AbortMultipartUpload(ctx, bucket, key, uploadID)
}

func newFaultyS3(t *testing.T) (*S3, *faultyAPI) {
	t.Helper()
	endpoint, access, secret := miniotest.Start(t)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	cfg, err := ParseS3URL(fmt.Sprintf("s3://%s:%s@%s/faults-%s?secure=false", access, secret, endpoint, hex.EncodeToString(b)))
	require.NoError(t, err)
	s, err := NewS3(context.Background(), cfg)
	require.NoError(t, err)
	f := &faultyAPI{s3API: s.core, fails: map[string][]error{}, calls: map[string]int{}}
	s.core = f
	return s, f
}

// s3Answer is an error as minio-go makes it from a store's answer.
func s3Answer(status int, code string) error {
	return minio.ErrorResponse{StatusCode: status, Code: code, Message: code}
}

var refused = &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}

func TestS3FailurePaths(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, f := newFaultyS3(t)

	t.Run("AStoreThatCannotBeReachedIsUnavailable", func(t *testing.T) {
		for _, cause := range []error{refused, s3Answer(503, "SlowDown"), s3Answer(502, "BadGateway")} {
			f.failNext("BucketExists", cause)
			err := s.Ping(ctx)
			require.ErrorIs(t, err, domain.ErrUnavailable, "%v", cause)

			f.failNext("PutObject", cause)
			err = s.Put(ctx, "a/unreachable", strings.NewReader("abc"), 3)
			require.ErrorIs(t, err, domain.ErrUnavailable, "%v", cause)
			_, err = s.Stat(ctx, "a/unreachable")
			require.ErrorIs(t, err, domain.ErrNotFound, "a failed put leaves nothing")
		}
	})

	t.Run("AnAnswerThatIsNotAnOutageIsNot", func(t *testing.T) {
		f.failNext("PutObject", s3Answer(403, "AccessDenied"))
		err := s.Put(ctx, "a/denied", strings.NewReader("abc"), 3)
		require.Error(t, err)
		require.NotErrorIs(t, err, domain.ErrUnavailable)
		require.NotErrorIs(t, err, domain.ErrNotFound)
	})

	t.Run("AMissingObjectIsNotFound", func(t *testing.T) {
		f.failNext("GetObject", s3Answer(404, "NoSuchKey"))
		_, err := s.Get(ctx, "a/gone")
		require.ErrorIs(t, err, domain.ErrNotFound)
	})

	t.Run("DeletingWhatIsGoneIsNotAnError", func(t *testing.T) {
		f.failNext("RemoveObject", s3Answer(404, "NoSuchKey"))
		require.NoError(t, s.Delete(ctx, "a/gone"))
		f.failNext("AbortMultipartUpload", s3Answer(404, "NoSuchUpload"))
		require.NoError(t, s.AbortUpload(ctx, "a/gone", "no-such-upload"))
	})

	t.Run("ALongerBodyIsRemovedEvenWhenTheStoreTookIt", func(t *testing.T) {
		err := s.Put(ctx, "a/long", bytes.NewReader([]byte("abcdef")), 3)
		require.ErrorIs(t, err, errLongerThanSize)
		_, err = s.Stat(ctx, "a/long")
		require.ErrorIs(t, err, domain.ErrNotFound, "no truncated object is left")
	})

	t.Run("APartReplacedDuringCompletionIsListedAgain", func(t *testing.T) {
		key := "a/raced"
		id, err := s.CreateUpload(ctx, key)
		require.NoError(t, err)
		u, headers, err := s.PresignPut(ctx, key, id, 5, presignTTL)
		require.NoError(t, err)
		putSigned(t, u, headers, []byte("hello"))
		before := f.count("CompleteMultipartUpload")
		// The store refuses the parts listed once, as when a PUT replaced the part between
		// the listing and the completion; the second listing completes.
		f.failNext("CompleteMultipartUpload", s3Answer(400, "InvalidPart"))
		require.NoError(t, s.CompleteUpload(ctx, key, id))
		require.Equal(t, 2, f.count("CompleteMultipartUpload")-before)
		n, err := s.Stat(ctx, key)
		require.NoError(t, err)
		require.EqualValues(t, 5, n)
	})

	t.Run("APartThatKeepsChangingFailsAsAMismatch", func(t *testing.T) {
		key := "a/changing"
		id, err := s.CreateUpload(ctx, key)
		require.NoError(t, err)
		u, headers, err := s.PresignPut(ctx, key, id, 5, presignTTL)
		require.NoError(t, err)
		putSigned(t, u, headers, []byte("hello"))
		f.failNext("CompleteMultipartUpload", s3Answer(400, "InvalidPart"), s3Answer(400, "InvalidPart"), s3Answer(400, "InvalidPart"))
		err = s.CompleteUpload(ctx, key, id)
		require.ErrorIs(t, err, ErrPartMismatch)
		require.NoError(t, s.AbortUpload(ctx, key, id))
	})

	t.Run("ACompletionCutOffIsUnavailableAndTheUploadStays", func(t *testing.T) {
		key := "a/cut"
		id, err := s.CreateUpload(ctx, key)
		require.NoError(t, err)
		u, headers, err := s.PresignPut(ctx, key, id, 5, presignTTL)
		require.NoError(t, err)
		putSigned(t, u, headers, []byte("hello"))
		f.failNext("CompleteMultipartUpload", refused)
		err = s.CompleteUpload(ctx, key, id)
		require.ErrorIs(t, err, domain.ErrUnavailable)
		// The staged bytes are still there: completing again, once the store answers, works.
		require.NoError(t, s.CompleteUpload(ctx, key, id))
		n, err := s.Stat(ctx, key)
		require.NoError(t, err)
		require.EqualValues(t, 5, n)
	})
}

const presignTTL = time.Minute

func putSigned(t *testing.T, u string, headers map[string]string, body []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, u, bytes.NewReader(body))
	require.NoError(t, err)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	req.ContentLength = int64(len(body))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Less(t, resp.StatusCode, 300, "%s", msg)

}

// keyOrderedUploads answers listings of open uploads as S3 does and MinIO does not: in
// key order from the marker, two a page. It counts the listings asked for.
type keyOrderedUploads struct {
	s3API
	listings int
}

func (k *keyOrderedUploads) ListMultipartUploads(ctx context.Context, bucket, prefix, keyMarker, uploadIDMarker, _ string, _ int) (minio.ListMultipartUploadsResult, error) {
	k.listings++
	all, err := k.s3API.ListMultipartUploads(ctx, bucket, "", "", "", "", 0) // MinIO: all of the bucket's
	if err != nil {
		return all, err
	}
	slices.SortFunc(all.Uploads, func(a, b minio.ObjectMultipartInfo) int {
		return cmp.Or(strings.Compare(a.Key, b.Key), strings.Compare(a.UploadID, b.UploadID))
	})
	var res minio.ListMultipartUploadsResult
	for _, u := range all.Uploads {
		after := u.Key > keyMarker || (u.Key == keyMarker && uploadIDMarker != "" && u.UploadID > uploadIDMarker)
		if !after || !strings.HasPrefix(u.Key, prefix) {
			continue
		}
		if len(res.Uploads) == 2 {
			res.IsTruncated = true
			break
		}
		res.Uploads = append(res.Uploads, u)
		res.NextKeyMarker, res.NextUploadIDMarker = u.Key, u.UploadID
	}
	return res, nil
}

func TestS3AbortUploadsUnderPagesInKeyOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newFaultyS3(t)
	listed := &keyOrderedUploads{s3API: s.core}
	s.core = listed
	dir := "org/prj/file/artifacts/"
	ids := map[string]string{}
	for _, k := range []string{"job_0/x", "job_1/a", "job_1/b", "job_1/c", "job_10/d", "job_2/e"} {
		id, err := s.CreateUpload(ctx, dir+k)
		require.NoError(t, err)
		ids[dir+k] = id
	}
	n, err := s.AbortUploadsUnder(ctx, dir+"job_1/", 100)
	require.NoError(t, err)
	require.Equal(t, 3, n)
	require.Equal(t, 2, listed.listings, "the second page runs past the prefix: no third is asked for")
	for k, id := range ids {
		_, err := s.ListParts(ctx, k, id)
		if strings.HasPrefix(k, dir+"job_1/") {
			require.ErrorIs(t, err, domain.ErrNotFound, k)
		} else {
			require.NoError(t, err, k)
		}
	}
}
