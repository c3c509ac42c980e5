package domain_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/db/dbtest"
	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/jobs/ratelimit"
	"github.com/filemill/filemill/jobs/redistest"
)

func ptr[T any](v T) *T { return &v }

// TestRequestChecks: a number a request gives as 0 is refused, one it does not give is
// not; a project_id of the wrong shape is refused before anything is looked up.
func TestRequestChecks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, dbtest.Open(t, dbtest.SQLite(t)))
	n := 0
	do := func(req domain.Request) (*domain.Answer, error) {
		n++
		return e.svc.Do(ctx, e.p, call("checks-"+string(rune('a'+n)), "req"), req)
	}
	refused := func(req domain.Request, param string) {
		t.Helper()
		a, err := do(req)
		require.NoError(t, err)
		require.NotNil(t, a.Error, "%+v", a)
		require.Equal(t, domain.CodeInvalidRequest, a.Error.Code)
		require.Equal(t, param, a.Error.Param)
	}

	t.Run("Uploads", func(t *testing.T) {
		refused(domain.UploadRequest{Filename: "a.txt", ByteSize: ptr[int64](0)}, "byte_size")
		refused(domain.UploadRequest{Filename: "a.txt", ByteSize: ptr[int64](-1)}, "byte_size")
		refused(domain.UploadRequest{Filename: "a.txt"}, "byte_size")
		// Beside from_url, byte_size absent is fine; given as 0 it is refused as 0.
		refused(domain.UploadRequest{FromURL: "https://example.com/a", ByteSize: ptr[int64](0)}, "byte_size")
		refused(domain.UploadRequest{Filename: "a.txt", ByteSize: ptr[int64](5),
			Validation: &domain.ValidationRequest{MaxBytes: ptr[int64](0)}}, "validation.max_bytes")
		refused(domain.UploadRequest{Filename: "a.txt", ByteSize: ptr[int64](5),
			Validation: &domain.ValidationRequest{MinBytes: ptr[int64](0)}}, "validation.min_bytes")
		refused(domain.UploadRequest{Filename: "a.txt", ByteSize: ptr[int64](5),
			Validation: &domain.ValidationRequest{Formats: []string{}}}, "validation.formats")

		a, err := do(domain.UploadRequest{Filename: "a.txt", ByteSize: ptr[int64](5), Validation: &domain.ValidationRequest{}})
		require.NoError(t, err)
		require.Equal(t, domain.ResultCreated, a.Result, "absent limits are no limits")
		require.Nil(t, object(t, a)["validation"].(map[string]any)["max_bytes"])
		a, err = do(domain.UploadRequest{Filename: "a.txt", ByteSize: ptr[int64](5),
			Validation: &domain.ValidationRequest{MinBytes: ptr[int64](2), MaxBytes: ptr[int64](9)}})
		require.NoError(t, err)
		v := object(t, a)["validation"].(map[string]any)
		require.EqualValues(t, 2, v["min_bytes"])
		require.EqualValues(t, 9, v["max_bytes"])
	})
	t.Run("ProjectID", func(t *testing.T) {
		for _, id := range []string{"nope", "prj_", "file_01ARZ3NDEKTSV4RRFFQ69G5FAV"} {
			_, err := do(domain.UploadRequest{Filename: "a.txt", ByteSize: ptr[int64](5), ProjectID: id})
			require.Equal(t, "project_id", requireCode(t, err, domain.CodeInvalidRequest).Param, id)
		}
		_, err := do(domain.UploadRequest{Filename: "a.txt", ByteSize: ptr[int64](5), ProjectID: "prj_01ARZ3NDEKTSV4RRFFQ69G5FAV"})
		require.Equal(t, "project_id", requireCode(t, err, domain.CodeNotFound).Param, "well formed but unknown")
	})
	t.Run("DownloadURLLifetime", func(t *testing.T) {
		file := e.readyFile(t, e.p)
		refused(domain.DownloadURLRequest{FileID: file, ExpiresIn: ptr(0)}, "expires_in")
		refused(domain.DownloadURLRequest{FileID: file, ExpiresIn: ptr(59)}, "expires_in")
		refused(domain.DownloadURLRequest{FileID: file, ExpiresIn: ptr(86401)}, "expires_in")
		before := e.clock.Now()
		a, err := do(domain.DownloadURLRequest{FileID: file})
		require.NoError(t, err)
		expires, err := time.Parse(time.RFC3339, object(t, a)["expires_at"].(string))
		require.NoError(t, err)
		require.WithinDuration(t, before.Add(time.Duration(domain.DefaultDownloadTTL)*time.Second), expires, 5*time.Second,
			"not given: the default lifetime")
		a, err = do(domain.DownloadURLRequest{FileID: file, ExpiresIn: ptr(60)})
		require.NoError(t, err)
		require.Equal(t, domain.ResultCreated, a.Result)
	})
	t.Run("CompleteParts", func(t *testing.T) {
		up, err := do(domain.UploadRequest{Filename: "a.txt", ByteSize: ptr[int64](5)})
		require.NoError(t, err)
		id := object(t, up)["id"].(string)
		refused(domain.CompletePartsRequest{UploadID: id}, "parts")
		refused(domain.CompletePartsRequest{UploadID: id, Parts: []domain.PartRequest{{ETag: ptr("x")}}}, "parts.part_number")
		refused(domain.CompletePartsRequest{UploadID: id, Parts: []domain.PartRequest{{PartNumber: ptr(0), ETag: ptr("x")}}}, "parts.part_number")
		refused(domain.CompletePartsRequest{UploadID: id, Parts: []domain.PartRequest{{PartNumber: ptr(1)}}}, "parts.etag")
		refused(domain.CompletePartsRequest{UploadID: id, Parts: []domain.PartRequest{{PartNumber: ptr(1), ETag: ptr("")}}}, "parts.etag")
	})
}

// TestWebhookSecretIsShownOnlyAtCreation: the answer to the creation carries the secret;
// the endpoint as listed never does.
func TestWebhookSecretIsShownOnlyAtCreation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, dbtest.Open(t, dbtest.SQLite(t)))
	a, err := e.svc.Do(ctx, e.p, call("hook", "req"), hook("https://example.com/h"))
	require.NoError(t, err)
	secret := object(t, a)["secret"].(string)
	require.True(t, strings.HasPrefix(secret, "whsec_"))
	list, err := e.svc.Webhooks.ListEndpoints(ctx, e.p, "", domain.Page{})
	require.NoError(t, err)
	require.Len(t, list.Data, 1)
	listed, err := json.Marshal(list.Data[0].View())
	require.NoError(t, err)
	var fields map[string]any
	require.NoError(t, json.Unmarshal(listed, &fields))
	require.NotContains(t, fields, "secret")
	require.NotContains(t, string(listed), secret)
}

// TestBatchMembersInRequestOrder: a batch lists its members in the order its request
// named their files, in the answer to its creation and whenever it is read.
func TestBatchMembersInRequestOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, dbtest.Open(t, dbtest.Postgres(t)))
	f1, f2, f3 := e.readyFile(t, e.p), e.readyFile(t, e.p), e.readyFile(t, e.p)
	order := []string{f3, f1, f2} // not the order the files were made in
	a, err := e.svc.Do(ctx, e.p, call("batch", "req"), domain.BatchRequest{FileIDs: order, Operation: "inspect"})
	require.NoError(t, err)
	require.Equal(t, domain.ResultAccepted, a.Result)
	fileIDs := func(items []any) []string {
		var out []string
		for _, it := range items {
			out = append(out, it.(map[string]any)["file_id"].(string))
		}
		return out
	}
	created := object(t, a)
	require.Equal(t, order, fileIDs(created["items"].([]any)))

	b, jobs, err := e.svc.Jobs.FindBatch(ctx, e.p, created["id"].(string))
	require.NoError(t, err)
	raw, err := json.Marshal(b.View(jobs))
	require.NoError(t, err)
	var read map[string]any
	require.NoError(t, json.Unmarshal(raw, &read))
	require.Equal(t, order, fileIDs(read["items"].([]any)))
}

// TestRateLimits: the bucket is the key's, with its own limit when it has one, or the
// client address's when no key was accepted; looking takes nothing. While the limiter
// fails, requests are let through and the outage is logged once, then once per interval
// with how many went unchecked, and its end once.
func TestRateLimits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, dbtest.Open(t, dbtest.SQLite(t)))
	ropts, err := redis.ParseURL(redistest.URL(t))
	require.NoError(t, err)
	rdb := redis.NewClient(ropts)
	t.Cleanup(func() { rdb.Close() })
	ip := netip.MustParseAddr("192.0.2.7")

	t.Run("Buckets", func(t *testing.T) {
		limits := domain.NewRateLimits(ratelimit.New(rdb), 4, e.clock, nil)
		own := e.key(func(k *domain.NewKey) { k.RateLimit = 2 })
		for i := range 2 {
			d := limits.Allow(ctx, own, ip)
			require.True(t, d.Allowed)
			require.Equal(t, 2, d.Limit)
			require.Equal(t, 1-i, d.Remaining)
		}
		require.False(t, limits.Allow(ctx, own, ip).Allowed, "the key's own limit")
		d := limits.Allow(ctx, e.p, ip)
		require.True(t, d.Allowed, "another key, another bucket")
		require.Equal(t, 4, d.Limit, "the deployment's limit")
		require.Equal(t, 4, limits.Peek(ctx, ip).Remaining, "the address's bucket is untouched")
		d = limits.Allow(ctx, nil, ip)
		require.Equal(t, 4, d.Limit)
		require.Equal(t, 3, d.Remaining)
		require.Equal(t, 3, limits.Peek(ctx, ip).Remaining, "looking takes nothing")
	})
	t.Run("RedisUnreachableLetsRequestsThrough", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := ln.Addr().String()
		require.NoError(t, ln.Close())
		down := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second})
		t.Cleanup(func() { down.Close() })
		limits := domain.NewRateLimits(ratelimit.New(down), 1, e.clock, slog.New(slog.DiscardHandler))
		for range 5 {
			d := limits.Allow(ctx, e.p, ip)
			require.True(t, d.Allowed)
			require.Equal(t, 1, d.Limit)
		}
	})
	t.Run("OutageIsLoggedOncePerInterval", func(t *testing.T) {
		var buf bytes.Buffer
		lim := &flaky{RateLimiter: ratelimit.New(rdb)}
		limits := domain.NewRateLimits(lim, 600, e.clock, slog.New(slog.NewJSONHandler(&buf, nil)))
		lines := func() []map[string]any {
			var out []map[string]any
			for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
				if l == "" {
					continue
				}
				var m map[string]any
				require.NoError(t, json.Unmarshal([]byte(l), &m))
				out = append(out, m)
			}
			return out
		}
		require.True(t, limits.Allow(ctx, e.p, ip).Allowed)
		require.Empty(t, lines(), "nothing to say while it works")

		lim.down.Store(true)
		for range 100 {
			require.True(t, limits.Allow(ctx, e.p, ip).Allowed)
		}
		require.Len(t, lines(), 1, "the outage is logged when it starts, not per request")
		require.Equal(t, "WARN", lines()[0]["level"])

		e.clock.advance(domain.RateLimitLogInterval)
		require.True(t, limits.Allow(ctx, e.p, ip).Allowed)
		require.True(t, limits.Allow(ctx, e.p, ip).Allowed)
		got := lines()
		require.Len(t, got, 2, "then once per interval")
		require.EqualValues(t, 100, got[1]["unchecked_requests"], "with the requests let through since")

		lim.down.Store(false)
		require.True(t, limits.Allow(ctx, e.p, ip).Allowed)
		require.True(t, limits.Allow(ctx, e.p, ip).Allowed)
		got = lines()
		require.Len(t, got, 3, "its end, once")
		require.Equal(t, "INFO", got[2]["level"])
		require.EqualValues(t, 1, got[2]["unchecked_requests"])
	})
}
