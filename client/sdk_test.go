package client_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/filemill/filemill/client"
	"github.com/filemill/filemill/client/api"
	"github.com/filemill/filemill/client/webhook"
)

// TestEmbedded runs the SDK's behaviours against `filemill serve` on its embedded
// defaults; TestSplitDeployment runs them against api + worker on PostgreSQL, Redis
// and MinIO.
func TestEmbedded(t *testing.T) {
	suite(t, embedded)
}

func TestSplitDeployment(t *testing.T) {
	d := startSplit(t)
	key, err := d.bootstrap("split-" + randomHex(4))
	require.NoError(t, err)
	require.NoError(t, waitOperation(d.base, key, "inspect"))
	suite(t, d)
}

func suite(t *testing.T, d *deployment) {
	t.Run("RetriesKeepTheIdempotencyKey", func(t *testing.T) { testRetries(t, d) })
	t.Run("IteratorsFollowCursors", func(t *testing.T) { testIterators(t, d) })
	t.Run("UploadResumesAfterCancel", func(t *testing.T) { testUploadResume(t, d) })
	t.Run("WaitJob", func(t *testing.T) { testWaitJob(t, d) })
	t.Run("Webhooks", func(t *testing.T) { testWebhooks(t, d) })
	t.Run("TypedErrors", func(t *testing.T) { testTypedErrors(t, d) })
	t.Run("SubscribeEvents", func(t *testing.T) { testSubscribeEvents(t, d) })
}

// The events of the key's project come as they happen, with the shape GET
// /v1/events/{id} has; those of another type than asked for do not.
func testSubscribeEvents(t *testing.T, d *deployment) {
	c, _ := d.client(t, "", d.key(t))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	got := make(chan client.StreamedEvent, 100)
	stopped := make(chan error, 1)
	sub, stop := context.WithCancel(ctx)
	go func() {
		stopped <- c.SubscribeEvents(sub, client.EventStreamOptions{Types: []string{"file.ready"}}, func(ev client.StreamedEvent) error {
			got <- ev
			return nil
		})
	}()
	// The subscription is open some time after the call: files are made until the
	// first event comes (each makes one), within a bound.
	var ev client.StreamedEvent
	made := map[string]bool{}
wait:
	for i := 0; ; i++ {
		require.Less(t, i, 200, "no event came")
		f := smallFile(t, c, fmt.Sprintf("event %d", i))
		made[f.Id] = true
		select {
		case ev = <-got:
			break wait
		default:
		}
	}
	require.Equal(t, "file.ready", ev.Type)
	var data struct {
		Object api.File `json:"object"`
	}
	require.NoError(t, json.Unmarshal(ev.Data, &data))
	require.True(t, made[data.Object.Id], "the event is about a file of this test: %s", data.Object.Id)

	// JSON() is the event as the REST API shows it.
	rest, err := c.GetEvent(ctx, ev.ID)
	require.NoError(t, err)
	want, err := json.Marshal(rest)
	require.NoError(t, err)
	var gotEv api.Event
	require.NoError(t, json.Unmarshal(ev.JSON(), &gotEv))
	have, err := json.Marshal(gotEv)
	require.NoError(t, err)
	require.JSONEq(t, string(want), string(have))

	stop()
	require.ErrorIs(t, <-stopped, context.Canceled)
}

// smallFile uploads a few bytes of text and answers the ready file.
func smallFile(t *testing.T, c *client.Client, content string) *api.File {
	t.Helper()
	path := filepath.Join(t.TempDir(), "note.txt")
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	f, err := c.UploadFile(context.Background(), path, client.UploadOptions{})
	require.NoError(t, err)
	require.Equal(t, api.FileStatusReady, f.Status)
	return f
}

// A 503 and then a connection dropped after the server created the job: the client
// retries both with the key of the first attempt, and one job exists.
func testRetries(t *testing.T, d *deployment) {
	key := d.key(t)
	direct, _ := d.client(t, "", key)
	file := smallFile(t, direct, "retry me")

	proxy := newFaultProxy(t, d.base)
	c, retried := d.client(t, proxy.URL(), key)
	proxy.inject(fault{method: "POST", path: "/v1/jobs", kind: unavailable}, fault{method: "POST", path: "/v1/jobs", kind: drop})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	job, err := c.CreateJob(ctx, api.CreateJobRequest{FileId: file.Id, Operation: client.Ptr("inspect")})
	require.NoError(t, err)

	attempts := proxy.requests("POST", "/v1/jobs")
	require.GreaterOrEqual(t, len(attempts), 3, "the 503, the dropped answer, and the replay")
	for _, a := range attempts {
		require.Equal(t, attempts[0].IdempotencyKey, a.IdempotencyKey, "every attempt carries the first one's key")
	}
	require.NotEmpty(t, attempts[0].IdempotencyKey)
	var statuses []int
	for _, r := range retried.all() {
		statuses = append(statuses, r.Status)
	}
	require.Contains(t, statuses, http.StatusServiceUnavailable, "the 503 was retried by the SDK")

	var jobs []api.Job
	for j, err := range direct.Jobs(ctx, nil) {
		require.NoError(t, err)
		jobs = append(jobs, j)
	}
	require.Len(t, jobs, 1, "one job for one logical call")
	require.Equal(t, job.Id, jobs[0].Id)

	// Two logical calls are two jobs: each gets its own key.
	_, err = c.CreateJob(ctx, api.CreateJobRequest{FileId: file.Id, Operation: client.Ptr("inspect")})
	require.NoError(t, err)
	attempts = proxy.requests("POST", "/v1/jobs")
	require.NotEqual(t, attempts[0].IdempotencyKey, attempts[len(attempts)-1].IdempotencyKey)
}

// 1,050 files walked across pages, each once.
func testIterators(t *testing.T, d *deployment) {
	key := d.key(t)
	var pagesFetched atomic.Int32
	hc := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if r.Method == "GET" && r.URL.Path == "/v1/files" {
			pagesFetched.Add(1)
		}
		return http.DefaultTransport.RoundTrip(r)
	})}
	c, _ := d.client(t, "", key, client.WithHTTPClient(hc))
	ctx := context.Background()
	const n = 1050
	created := make(map[string]bool, n)
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i := range n {
		g.Go(func() error {
			up, err := c.CreateUpload(gctx, api.CreateUploadRequest{Filename: client.Ptr("f.txt"), ByteSize: client.Ptr(1 + i)})
			if err != nil {
				return err
			}
			mu.Lock()
			created[up.FileId] = true
			mu.Unlock()
			return nil
		})
	}
	require.NoError(t, g.Wait())
	require.Len(t, created, n)

	seen := map[string]bool{}
	for f, err := range c.Files(ctx, &api.ListFilesParams{Limit: client.Ptr(100)}) {
		require.NoError(t, err)
		require.False(t, seen[f.Id], "file %s came twice", f.Id)
		require.True(t, created[f.Id], "file %s is not one of the test's", f.Id)
		seen[f.Id] = true
	}
	require.Len(t, seen, n)
	require.EqualValues(t, 11, pagesFetched.Load(), "1,050 files in pages of 100")

	// Stopping early fetches no further page.
	pagesFetched.Store(0)
	count := 0
	for _, err := range c.Files(ctx, nil) {
		require.NoError(t, err)
		if count++; count == 25 {
			break
		}
	}
	require.EqualValues(t, 2, pagesFetched.Load(), "25 files of pages of 20")
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// A 200 MB file in parts, cancelled half-way, resumes from its state file: only the
// missing parts are sent, and the file completes with the right SHA-256.
func testUploadResume(t *testing.T, d *deployment) {
	key := d.key(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "big.bin")
	const size = 200 << 20
	want := writeRandomFile(t, path, size)
	statePath := filepath.Join(dir, "big.upload.json")

	var putBytes atomic.Int64
	hc := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		resp, err := http.DefaultTransport.RoundTrip(r)
		if r.Method == "PUT" && err == nil && resp.StatusCode/100 == 2 {
			putBytes.Add(r.ContentLength)
		}
		return resp, err
	})}
	c, _ := d.client(t, "", key, client.WithHTTPClient(hc))

	ctx, cancel := context.WithCancel(context.Background())
	var total atomic.Int64
	_, err := c.UploadFile(ctx, path, client.UploadOptions{StateFile: statePath, Concurrency: 2,
		Progress: func(p client.UploadProgress) {
			total.Store(p.Total)
			if p.Sent >= size/2 {
				cancel() // the process "dies" half-way
			}
		}})
	require.ErrorIs(t, err, context.Canceled)
	require.EqualValues(t, size, total.Load())
	raw, err := os.ReadFile(statePath)
	require.NoError(t, err, "the state file outlives the cancelled upload")
	var state struct {
		UploadID string            `json:"upload_id"`
		Parts    map[string]string `json:"parts"`
	}
	require.NoError(t, json.Unmarshal(raw, &state))
	require.NotEmpty(t, state.Parts, "some parts landed before the cancel")
	landedFirst := putBytes.Load()
	require.Less(t, landedFirst, int64(size), "the first run did not finish")

	putBytes.Store(0)
	var first atomic.Int64
	first.Store(-1)
	file, err := c.UploadFile(context.Background(), path, client.UploadOptions{StateFile: statePath, Concurrency: 2,
		Progress: func(p client.UploadProgress) { first.CompareAndSwap(-1, p.Sent) }})
	require.NoError(t, err)
	require.Equal(t, api.FileStatusReady, file.Status)
	require.NotNil(t, file.Sha256)
	require.Equal(t, want, *file.Sha256, "the assembled file is the local one")
	require.EqualValues(t, size, *file.ByteSize)
	require.Less(t, putBytes.Load(), int64(size), "the resumed run sent only what was missing")
	require.Equal(t, int64(size), landedFirst+putBytes.Load(), "each byte landed once, across the two runs")
	require.GreaterOrEqual(t, first.Load(), int64(len(state.Parts))*16<<20, "progress starts at the parts already landed")
	_, err = os.Stat(statePath)
	require.ErrorIs(t, err, os.ErrNotExist, "a completed upload forgets its state")

	// The original's bytes come back.
	h := sha256.New()
	n, err := c.Download(context.Background(), file.Id, "", h)
	require.NoError(t, err)
	require.EqualValues(t, size, n)
	require.Equal(t, want, hex.EncodeToString(h.Sum(nil)))

	// A small file goes up in one PUT.
	small := smallFile(t, c, "one put")
	require.Equal(t, "note.txt", small.Filename)
}

func writeRandomFile(t *testing.T, path string, size int) string {
	t.Helper()
	f, err := os.Create(path)
	require.NoError(t, err)
	defer f.Close()
	h := sha256.New()
	src := rand.NewChaCha8([32]byte{byte(size), 7})
	_, err = io.Copy(io.MultiWriter(f, h), io.LimitReader(src, int64(size)))
	require.NoError(t, err)
	return hex.EncodeToString(h.Sum(nil))
}

// WaitJob follows a job over the subscription, and by polling when a proxy refuses
// websockets.
func testWaitJob(t *testing.T, d *deployment) {
	key := d.key(t)
	proxy := newFaultProxy(t, d.base)
	c, _ := d.client(t, proxy.URL(), key)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	file := smallFile(t, c, "wait for me")

	for _, refuse := range []bool{true, false} {
		name := "Websocket"
		if refuse {
			name = "WebsocketRefused"
		}
		t.Run(name, func(t *testing.T) {
			proxy.setRefuseUpgrades(refuse)
			upBefore, refBefore := proxy.counts()
			job, err := c.CreateJob(ctx, api.CreateJobRequest{FileId: file.Id, Operation: client.Ptr("inspect")})
			require.NoError(t, err)
			getsBefore := len(proxy.requests("GET", "/v1/jobs/"+job.Id))
			var mu sync.Mutex
			var seen []client.JobProgress
			done, err := c.WaitJob(ctx, job.Id, client.OnProgress(func(p client.JobProgress) {
				mu.Lock()
				seen = append(seen, p)
				mu.Unlock()
			}))
			require.NoError(t, err)
			require.Equal(t, api.JobStateSucceeded, done.State)
			require.Equal(t, 100, done.Progress)
			require.NotEmpty(t, done.Artifacts)
			a := done.Artifacts[0]
			h := sha256.New()
			n, err := c.Download(ctx, file.Id, a.Id, h)
			require.NoError(t, err)
			require.EqualValues(t, a.ByteSize, n)
			if a.Sha256 != nil {
				require.Equal(t, *a.Sha256, hex.EncodeToString(h.Sum(nil)), "the artifact's bytes")
			}
			mu.Lock()
			require.NotEmpty(t, seen)
			require.Equal(t, client.JobProgress{State: api.JobStateSucceeded, Progress: 100}, seen[len(seen)-1])
			mu.Unlock()
			up, ref := proxy.counts()
			gets := len(proxy.requests("GET", "/v1/jobs/"+job.Id)) - getsBefore
			if refuse {
				require.Equal(t, upBefore, up, "no websocket got through")
				require.Equal(t, refBefore+1, ref, "the upgrade was tried once, then polling took over")
				require.GreaterOrEqual(t, gets, 1)
			} else {
				require.Equal(t, upBefore+1, up, "the subscription carried the wait")
				require.Equal(t, 1, gets, "only the final read went over REST")
			}
		})
	}

	t.Run("UnknownJob", func(t *testing.T) {
		_, err := c.WaitJob(ctx, "job_01JD8X6Q2V9W3Z4Y5A6B7C8D9E")
		var apiErr *client.APIError
		require.ErrorAs(t, err, &apiErr)
		require.Equal(t, client.CodeNotFound, apiErr.Code)
	})
}

// A delivery verifies with the endpoint's secret and decodes to its typed event; a
// tampered one, or one checked with another secret, does not.
func testWebhooks(t *testing.T, d *deployment) {
	key := d.key(t)
	c, _ := d.client(t, "", key)
	ctx := context.Background()
	url, deliveries := receiver.listen()
	ep, err := c.CreateWebhookEndpoint(ctx, api.CreateWebhookEndpointRequest{Url: url,
		EnabledEvents: []api.SubscribableEvent{api.SubscribableEventFileReady}})
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(ep.Secret, "whsec_"))
	file := smallFile(t, c, "hook me")

	var got delivery
	select {
	case got = <-deliveries:
	case <-time.After(60 * time.Second):
		t.Fatal("no delivery within a minute")
	}
	ev, err := webhook.Verify([]string{ep.Secret}, got.header, got.body)
	require.NoError(t, err)
	require.Equal(t, "file.ready", ev.Type)
	require.Equal(t, got.header.Get("webhook-id"), ev.ID)
	f, err := ev.File()
	require.NoError(t, err)
	require.Equal(t, file.Id, f.Id)
	require.Equal(t, api.FileStatusReady, f.Status)
	_, err = ev.Job()
	require.Error(t, err, "a file event holds no job")

	tampered := []byte(strings.Replace(string(got.body), file.Id, "file_01JD8X7A0K2M3N4P5Q6R7S8T9V", 1))
	require.NotEqual(t, got.body, tampered)
	_, err = webhook.Verify([]string{ep.Secret}, got.header, tampered)
	require.ErrorIs(t, err, webhook.ErrSignature)
	other, err := c.CreateWebhookEndpoint(ctx, api.CreateWebhookEndpointRequest{Url: url + "x",
		EnabledEvents: []api.SubscribableEvent{api.SubscribableEventFileReady}})
	require.NoError(t, err)
	_, err = webhook.Verify([]string{other.Secret}, got.header, got.body)
	require.ErrorIs(t, err, webhook.ErrSignature)
	_, err = webhook.Verify([]string{other.Secret, ep.Secret}, got.header, got.body)
	require.NoError(t, err, "any of the secrets may match (rotation)")
	late := webhook.Verifier{Secrets: []string{ep.Secret}, Now: func() time.Time { return time.Now().Add(time.Hour) }}
	_, err = late.Verify(got.header, got.body)
	require.ErrorIs(t, err, webhook.ErrTimestamp, "an old delivery is not replayed")

	var endpoints []string
	for e, err := range c.WebhookEndpoints(ctx, nil) {
		require.NoError(t, err)
		endpoints = append(endpoints, e.Id)
	}
	require.ElementsMatch(t, []string{ep.Id, other.Id}, endpoints)
}

// Errors carry the status, code, param and request id, and match with errors.As.
func testTypedErrors(t *testing.T, d *deployment) {
	key := d.key(t)
	c, retried := d.client(t, "", key)
	ctx := context.Background()
	_, err := c.GetFile(ctx, "file_01JD8X7A0K2M3N4P5Q6R7S8T9V")
	var apiErr *client.APIError
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusNotFound, apiErr.Status)
	require.Equal(t, client.CodeNotFound, apiErr.Code)
	require.True(t, strings.HasPrefix(apiErr.RequestID, "req_"), apiErr.RequestID)

	_, err = c.CreateUpload(ctx, api.CreateUploadRequest{Filename: client.Ptr("x.txt"), ByteSize: client.Ptr(10),
		Validation: &api.ValidationPolicy{Formats: &[]string{"nonsense-format"}}})
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusBadRequest, apiErr.Status)
	require.Equal(t, "validation.formats[0]", apiErr.Param)
	require.Contains(t, apiErr.Error(), apiErr.RequestID)

	bad, _ := d.client(t, "", "fm_live_nope")
	_, err = bad.GetUsage(ctx, nil)
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusUnauthorized, apiErr.Status)
	require.True(t, errors.As(err, &apiErr))
	require.Empty(t, retried.all(), "no answer here was worth a retry")
}
