package storage_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/storage"
	"github.com/filemill/filemill/storage/miniotest"
	"github.com/filemill/filemill/storage/storagetest"
)

// newS3 returns a backend on a bucket of its own on the shared MinIO server.
func newS3(t *testing.T, query string) *storage.S3 {
	t.Helper()
	endpoint, access, secret := miniotest.Start(t)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	cfg, err := storage.ParseS3URL(fmt.Sprintf("s3://%s:%s@%s/test-%s?secure=false%s", access, secret, endpoint, hex.EncodeToString(b), query))
	require.NoError(t, err)
	s, err := storage.NewS3(context.Background(), cfg)
	require.NoError(t, err)
	return s
}

func TestS3(t *testing.T) {
	t.Parallel()
	storagetest.Run(t, func(t *testing.T) storagetest.Backend { return storagetest.Backend{Blobs: newS3(t, "")} })
}

func TestS3PublicURL(t *testing.T) {
	t.Parallel()
	endpoint, _, _ := miniotest.Start(t)
	_, port, _ := cutHostPort(endpoint)
	public := "http://localhost:" + port
	s := newS3(t, "&public_url="+url.QueryEscape(public))
	ctx := context.Background()

	k, data := storagetest.Key(), storagetest.Bytes(1000)
	id, u, headers := storagetest.Open(t, s, k, int64(len(data)))
	pu, err := url.Parse(u)
	require.NoError(t, err)
	require.Equal(t, "localhost:"+port, pu.Host, "client URLs use the public host")
	resp, body := storagetest.Put(t, u, headers, data, int64(len(data)))
	require.Equal(t, 200, resp.StatusCode, "%s", body)
	require.NoError(t, s.CompleteUpload(ctx, k, id))

	gu, err := s.PresignGet(ctx, k, time.Minute, domain.Download{Name: "a.bin"})
	require.NoError(t, err)
	require.Contains(t, gu, public+"/")
	resp, body = storagetest.Get(t, gu, "")
	require.Equal(t, 200, resp.StatusCode, "%s", body)
	require.Equal(t, data, body)
}

func TestNewS3CreatesBucketOnce(t *testing.T) {
	t.Parallel()
	endpoint, access, secret := miniotest.Start(t)
	raw := fmt.Sprintf("s3://%s:%s@%s/created-once?secure=false", access, secret, endpoint)
	cfg, err := storage.ParseS3URL(raw)
	require.NoError(t, err)
	for range 2 {
		s, err := storage.NewS3(context.Background(), cfg)
		require.NoError(t, err)
		require.NoError(t, s.Ping(context.Background()))
	}
	cfg.SecretKey = "wrong-secret"
	_, err = storage.NewS3(context.Background(), cfg)
	require.Error(t, err, "bad credentials fail at start-up")
}

func TestParseS3URL(t *testing.T) {
	t.Parallel()
	cfg, err := storage.ParseS3URL("s3://AK:S%2Fec%40ret@minio:9000/bucket?secure=false&region=eu-west-1&path_style=true&public_url=https://files.example.com")
	require.NoError(t, err)
	require.Equal(t, storage.S3Config{Endpoint: "minio:9000", AccessKey: "AK", SecretKey: "S/ec@ret", Bucket: "bucket",
		Region: "eu-west-1", Secure: false, PathStyle: true, PublicURL: "https://files.example.com"}, cfg)

	cfg, err = storage.ParseS3URL("s3://s3.amazonaws.com/my-bucket")
	require.NoError(t, err)
	require.Equal(t, storage.S3Config{Endpoint: "s3.amazonaws.com", Bucket: "my-bucket", Region: "us-east-1", Secure: true}, cfg)

	for _, bad := range []string{
		"http://h/b",                  // scheme
		"s3:///bucket",                // no host
		"s3://h:9000",                 // no bucket
		"s3://h:9000/a/b",             // not one bucket
		"s3://AK@h/b",                 // access without secret
		"s3://h/b?secure=maybe",       // not a boolean
		"s3://h/b?colour=blue",        // unknown parameter
		"s3://h/b?public_url=ftp://x", // not http(s)
		"s3://h/b?public_url=https://x/path",
	} {
		_, err := storage.ParseS3URL(bad)
		require.Error(t, err, bad)
	}
}

func cutHostPort(hp string) (string, string, bool) {
	for i := len(hp) - 1; i >= 0; i-- {
		if hp[i] == ':' {
			return hp[:i], hp[i+1:], true
		}
	}
	return hp, "", false
}
