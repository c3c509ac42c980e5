package rest_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/rest/openapitest"
)

func countEndpoints(t *testing.T, b *bundle, key string) int {
	t.Helper()
	r := b.do(req{method: "GET", path: "/v1/webhook-endpoints?limit=100", key: key})
	require.Equal(t, 200, r.status)
	return len(r.json(t)["data"].([]any))
}

func TestIdempotency(t *testing.T) {
	t.Parallel()
	b := setup(t)

	t.Run("ReplayReturnsIdenticalResponseAndCreatesNothing", func(t *testing.T) {
		body := webhookBody("https://example.com/replay")
		first := b.do(req{method: "POST", path: "/v1/webhook-endpoints", key: b.liveA, idem: "replay-1", body: body})
		require.Equal(t, 201, first.status, string(first.body))
		require.Empty(t, first.header.Get("Idempotent-Replayed"))
		// Same body with other key order and spacing is the same request.
		second := b.do(req{method: "POST", path: "/v1/webhook-endpoints", key: b.liveA, idem: "replay-1",
			body: `{ "enabled_events": ["job.succeeded", "file.ready"],   "url": "https://example.com/replay" }`})
		require.Equal(t, first.status, second.status)
		require.Equal(t, string(first.body), string(second.body))
		require.Equal(t, "true", second.header.Get("Idempotent-Replayed"))
		require.NotEqual(t, first.header.Get("X-Request-Id"), second.header.Get("X-Request-Id"))
		require.Equal(t, 1, countEndpoints(t, b, b.liveA))
	})
	t.Run("DifferentBodyIsConflict", func(t *testing.T) {
		r := b.do(req{method: "POST", path: "/v1/webhook-endpoints", key: b.liveA, idem: "replay-1", body: webhookBody("https://example.com/other")})
		require.Equal(t, http.StatusConflict, r.status)
		require.Equal(t, domain.CodeIdempotencyConflict, r.errorCode(t))
		require.Equal(t, 1, countEndpoints(t, b, b.liveA))
	})
	t.Run("ErrorsAreReplayedToo", func(t *testing.T) {
		bad := map[string]any{"url": "http://insecure.example.com", "enabled_events": []string{"job.failed"}}
		r1 := b.do(req{method: "POST", path: "/v1/webhook-endpoints", key: b.liveA, idem: "bad-1", body: bad})
		require.Equal(t, 400, r1.status)
		r2 := b.do(req{method: "POST", path: "/v1/webhook-endpoints", key: b.liveA, idem: "bad-1", body: bad})
		require.Equal(t, string(r1.body), string(r2.body))
		require.Equal(t, "true", r2.header.Get("Idempotent-Replayed"))
	})
	t.Run("ScopedToOrganization", func(t *testing.T) {
		r := b.do(req{method: "POST", path: "/v1/webhook-endpoints", key: b.keyB, idem: "replay-1", body: webhookBody("https://example.com/replay")})
		require.Equal(t, 201, r.status)
		require.Empty(t, r.header.Get("Idempotent-Replayed"))
	})
	t.Run("MissingKeyIs400", func(t *testing.T) {
		r := b.do(req{method: "POST", path: "/v1/webhook-endpoints", key: b.liveA, body: webhookBody("https://example.com/nokey")})
		require.Equal(t, 400, r.status)
		require.Equal(t, domain.CodeInvalidRequest, r.errorCode(t))
		require.Equal(t, "Idempotency-Key", r.json(t)["error"].(map[string]any)["param"])
	})
	t.Run("OverlongKeyIs400", func(t *testing.T) {
		long := make([]byte, 256)
		for i := range long {
			long[i] = 'k'
		}
		r := b.do(req{method: "POST", path: "/v1/webhook-endpoints", key: b.liveA, idem: string(long), body: webhookBody("https://example.com/long")})
		require.Equal(t, 400, r.status)
	})
}

func TestIdempotencyUnderConcurrency(t *testing.T) {
	t.Parallel()
	b := setup(t)
	body := webhookBody("https://example.com/concurrent")
	var wg sync.WaitGroup
	results := make([]response, 50)
	for i := range results {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			results[i] = b.do(req{method: "POST", path: "/v1/webhook-endpoints", key: b.testA, idem: "same-key", body: body})
		}(i)
	}
	wg.Wait()
	created, replayed, inFlight := 0, 0, 0
	var firstBody string
	for _, r := range results {
		switch {
		case r.status == 201 && r.header.Get("Idempotent-Replayed") == "":
			created++
			firstBody = string(r.body)
		case r.status == 201:
			replayed++
		case r.status == 409:
			require.Equal(t, domain.CodeIdempotencyConflict, r.errorCode(t))
			require.Equal(t, true, r.json(t)["error"].(map[string]any)["details"].(map[string]any)["in_progress"])
			inFlight++
		default:
			t.Fatalf("unexpected answer %d: %s", r.status, r.body)
		}
	}
	require.Equal(t, 1, created, "exactly one request has the effect")
	require.Equal(t, 50, created+replayed+inFlight)
	for _, r := range results {
		if r.status == 201 {
			require.Equal(t, firstBody, string(r.body))
		}
	}
	require.Equal(t, 1, countEndpoints(t, b, b.testA))
}

func TestRateLimit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	key := b.newKey(func(k *domain.NewKey) { k.RateLimit = 5 })
	for i := 0; i < 5; i++ {
		r := b.do(req{method: "GET", path: "/v1/jobs", key: key})
		require.Equal(t, 200, r.status)
		require.Equal(t, "5", r.header.Get("X-RateLimit-Limit"))
		require.Equal(t, strconv.Itoa(4-i), r.header.Get("X-RateLimit-Remaining"))
		require.NotEmpty(t, r.header.Get("X-RateLimit-Reset"))
	}
	r := b.do(req{method: "GET", path: "/v1/jobs", key: key})
	require.Equal(t, http.StatusTooManyRequests, r.status)
	require.Equal(t, domain.CodeRateLimited, r.errorCode(t))
	retry, err := strconv.Atoi(r.header.Get("Retry-After"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, retry, 1)
	require.Equal(t, "0", r.header.Get("X-RateLimit-Remaining"))
	// Another key has its own bucket, with the deployment default.
	other := b.do(req{method: "GET", path: "/v1/jobs", key: b.liveA})
	require.Equal(t, 200, other.status)
	require.Equal(t, fmt.Sprint(domain.DefaultConfig().DefaultRateLimit), other.header.Get("X-RateLimit-Limit"))
}

func TestStrictBodies(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cases := []struct {
		name, body, param string
	}{
		{"UnknownField", `{"url":"https://example.com/x","enabled_events":["file.ready"],"colour":"red"}`, "colour"},
		{"WrongType", `{"url":42,"enabled_events":["file.ready"]}`, "url"},
		{"WrongItemType", `{"url":"https://example.com/x","enabled_events":"file.ready"}`, "enabled_events"},
		{"UnknownEvent", `{"url":"https://example.com/x","enabled_events":["file.eaten"]}`, "enabled_events"},
		{"NotHTTPS", `{"url":"http://example.com/x","enabled_events":["file.ready"]}`, "url"},
		{"MissingURL", `{"enabled_events":["file.ready"]}`, "url"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := b.do(req{method: "POST", path: "/v1/webhook-endpoints", key: b.liveA, idem: fmt.Sprint("strict-", i), body: c.body})
			require.Equal(t, 400, r.status, string(r.body))
			e := r.json(t)["error"].(map[string]any)
			require.Equal(t, domain.CodeInvalidRequest, e["code"])
			require.Equal(t, c.param, e["param"])
			require.NotEmpty(t, e["request_id"])
		})
	}
	for _, c := range []struct{ name, body string }{
		{"NotJSON", `url=x`}, {"Array", `[]`}, {"Trailing", `{"url":"https://e.com","enabled_events":["file.ready"]} {}`}, {"Empty", ``},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := b.do(req{method: "POST", path: "/v1/webhook-endpoints", key: b.liveA, idem: "malformed-" + c.name, body: c.body})
			require.Equal(t, 400, r.status, string(r.body))
		})
	}
	t.Run("BadQuery", func(t *testing.T) {
		for _, q := range []string{"limit=0", "limit=101", "limit=x", "state=done", "project_id=nope", "starting_after=job_x"} {
			r := b.do(req{method: "GET", path: "/v1/jobs?" + q, key: b.liveA})
			require.Equal(t, 400, r.status, q)
		}
	})
	require.Equal(t, 0, countEndpoints(t, b, b.liveA))
}

func TestPublicAndOperationalEndpoints(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.do(req{method: "GET", path: "/v1/openapi.json"})
	require.Equal(t, 200, r.status)
	require.Equal(t, "3.1.0", r.json(t)["openapi"])
	require.NotEmpty(t, r.header.Get("X-RateLimit-Limit"))
	require.Equal(t, 200, b.do(req{method: "GET", path: "/healthz"}).status)
	require.Equal(t, 200, b.do(req{method: "GET", path: "/readyz"}).status)

	require.Equal(t, 200, b.do(req{method: "GET", path: "/v1/jobs", key: b.liveA}).status)

	// Every tenant's figures are in the metrics: the API does not serve them, with or
	// without a key; their own handler does.
	scrape := func(base, key string) (int, string) {
		hr, err := http.NewRequest("GET", base+"/metrics", nil)
		require.NoError(t, err)
		if key != "" {
			hr.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(hr)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(body)
	}
	for _, key := range []string{"", b.liveA} {
		status, body := scrape(b.srv.URL, key)
		require.Equal(t, 404, status)
		require.NotContains(t, body, "filemill_")
	}
	metrics := httptest.NewServer(b.api.MetricsHandler())
	t.Cleanup(metrics.Close)
	status, body := scrape(metrics.URL, "")
	require.Equal(t, 200, status)
	require.Contains(t, body, `filemill_http_requests_total{route="GET /v1/jobs",status="200"} 1`)
}

func TestListsPaginate(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for i := 0; i < 5; i++ {
		r := b.do(req{method: "POST", path: "/v1/webhook-endpoints", key: b.liveA, idem: fmt.Sprint("page-", i), body: webhookBody(fmt.Sprint("https://example.com/", i))})
		require.Equal(t, 201, r.status)
		require.NotEmpty(t, r.json(t)["secret"])
	}
	var seen []string
	cursor := ""
	for {
		path := "/v1/webhook-endpoints?limit=2"
		if cursor != "" {
			path += "&starting_after=" + cursor
		}
		r := b.do(req{method: "GET", path: path, key: b.liveA})
		require.Equal(t, 200, r.status)
		m := r.json(t)
		for _, d := range m["data"].([]any) {
			item := d.(map[string]any)
			require.Nil(t, item["secret"], "the secret is shown once, on creation")
			seen = append(seen, item["url"].(string))
		}
		if !m["has_more"].(bool) {
			require.Nil(t, m["next_cursor"])
			break
		}
		cursor = m["next_cursor"].(string)
	}
	require.Equal(t, []string{"https://example.com/4", "https://example.com/3", "https://example.com/2", "https://example.com/1", "https://example.com/0"}, seen)
}

// TestEveryPostTakesAnIdempotencyKey: every POST of the document, whatever its handler,
// refuses a request without an Idempotency-Key (or with a malformed one) and answers
// nothing else.
func TestEveryPostTakesAnIdempotencyKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ids := strings.NewReplacer("{upload_id}", "upl_01ARZ3NDEKTSV4RRFFQ69G5FAV", "{file_id}", "file_01ARZ3NDEKTSV4RRFFQ69G5FAV",
		"{job_id}", "job_01ARZ3NDEKTSV4RRFFQ69G5FAV", "{webhook_endpoint_id}", "we_01ARZ3NDEKTSV4RRFFQ69G5FAV",
		"{delivery_id}", "dlv_01ARZ3NDEKTSV4RRFFQ69G5FAV")
	posts := 0
	for path, item := range openapitest.New(t).Doc().Paths.Map() {
		if item.Post == nil || !strings.HasPrefix(path, "/v1/") {
			continue
		}
		posts++
		for _, key := range []string{"", "tab\tin key"} {
			r := b.do(req{method: "POST", path: ids.Replace(path), key: b.liveA, idem: key, body: map[string]any{}})
			require.Equal(t, 400, r.status, "%s: %s", path, r.body)
			e := r.json(t)["error"].(map[string]any)
			require.Equal(t, "Idempotency-Key", e["param"], path)
		}
	}
	require.GreaterOrEqual(t, posts, 13)
}
