package rest_test

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/domain/eventually"
	"github.com/filemill/filemill/domain/netguard"
	"github.com/filemill/filemill/jobs"
)

// hookReceiver is an HTTPS webhook receiver on loopback that records what it gets.
type hookReceiver struct {
	srv    *httptest.Server
	pool   *x509.CertPool
	mu     sync.Mutex
	got    []hookRequest
	status int
}

type hookRequest struct {
	header http.Header
	body   []byte
	event  struct {
		ID        string `json:"id"`
		Object    string `json:"object"`
		Type      string `json:"type"`
		CreatedAt string `json:"created_at"`
		Data      struct {
			Object map[string]any `json:"object"`
		} `json:"data"`
	}
}

func newHookReceiver(t *testing.T) *hookReceiver {
	t.Helper()
	rc := &hookReceiver{status: 200}
	rc.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		hr := hookRequest{header: r.Header.Clone(), body: body}
		_ = json.Unmarshal(body, &hr.event)
		rc.mu.Lock()
		rc.got = append(rc.got, hr)
		status := rc.status
		rc.mu.Unlock()
		w.WriteHeader(status)
	}))
	rc.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	rc.srv.StartTLS()
	t.Cleanup(rc.srv.Close)
	rc.pool = x509.NewCertPool()
	rc.pool.AddCert(rc.srv.Certificate())
	return rc
}

// waitFor waits until a request of type typ about subject id arrived, and returns it.
func (rc *hookReceiver) waitFor(t *testing.T, typ, id string) hookRequest {
	t.Helper()
	var found hookRequest
	eventually.True(t, fmt.Sprintf("no %s for %s arrived", typ, id), func() bool {
		rc.mu.Lock()
		defer rc.mu.Unlock()
		for _, r := range rc.got {
			if r.event.Type == typ && r.event.Data.Object["id"] == id {
				found = r
				return true
			}
		}
		return false
	})
	return found
}

func (rc *hookReceiver) count() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.got)
}

// TestWebhookEventsAtTheirTransitions follows each of the seven event types from the
// request that causes it to the signed delivery, through the real relay and delivery
// workers, and checks data.object is the resource as GET shows it.
func TestWebhookEventsAtTheirTransitions(t *testing.T) {
	t.Parallel()
	rc := newHookReceiver(t)
	clock := &shiftedClock{}
	b := setup(t, setupOpts{clock: clock, webhooks: rc.pool})
	ctx := context.Background()

	r := b.do(req{method: "POST", path: "/v1/webhook-endpoints", key: b.liveA, idem: idem(),
		body: map[string]any{"url": rc.srv.URL + "/in", "enabled_events": []string{"job.succeeded", "job.failed", "job.cancelled",
			"file.ready", "file.rejected", "file.deleted", "file.expired"}}})
	require.Equal(t, 201, r.status, string(r.body))
	ep := r.json(t)
	wh, err := standardwebhooks.NewWebhook(ep["secret"].(string))
	require.NoError(t, err)
	epID := ep["id"].(string)
	verified := func(hr hookRequest) hookRequest {
		t.Helper()
		require.NoError(t, wh.VerifyIgnoringTimestamp(hr.body, hr.header), "signed with the endpoint's secret")
		require.Equal(t, hr.event.ID, hr.header.Get("webhook-id"))
		require.Equal(t, "event", hr.event.Object)
		return hr
	}
	// sameAs checks data.object against the resource as GET answers it now.
	sameAs := func(hr hookRequest, path string) {
		t.Helper()
		got := b.do(req{method: "GET", path: path, key: b.liveA})
		require.Equal(t, 200, got.status, string(got.body))
		var want map[string]any
		require.NoError(t, json.Unmarshal(got.body, &want))
		require.Equal(t, want, hr.event.Data.Object)
	}

	// file.ready, and its job succeeding.
	ready := b.readyFile(b.liveA, "a.pdf", []byte(minimalPDF))
	hr := verified(rc.waitFor(t, "file.ready", ready))
	require.NoError(t, wh.Verify(hr.body, hr.header), "the timestamp is now")
	sameAs(hr, "/v1/files/"+ready)

	j := b.createJob(b.liveA, map[string]any{"file_id": ready, "operation": "inspect"}).json(t)
	require.NoError(t, (&jobs.Attempts{Jobs: b.svc.Jobs}).ProcessJob(ctx, j["id"].(string), t.TempDir(), true))
	hr = verified(rc.waitFor(t, "job.succeeded", j["id"].(string)))
	sameAs(hr, "/v1/jobs/"+j["id"].(string))
	require.NotEmpty(t, hr.event.Data.Object["artifacts"])

	// job.failed: a PDF that is not one.
	corrupt := b.readyFile(b.liveA, "bad.pdf", append([]byte("%PDF-1.7\n"), randomBytes(2000)...))
	jf := b.createJob(b.liveA, map[string]any{"file_id": corrupt, "operation": "inspect"}).json(t)
	require.NoError(t, (&jobs.Attempts{Jobs: b.svc.Jobs}).ProcessJob(ctx, jf["id"].(string), t.TempDir(), true))
	hr = verified(rc.waitFor(t, "job.failed", jf["id"].(string)))
	sameAs(hr, "/v1/jobs/"+jf["id"].(string))
	require.Equal(t, "failed", hr.event.Data.Object["state"])

	// job.cancelled, alone and as a batch member.
	jc := b.createJob(b.liveA, map[string]any{"file_id": ready, "operation": "inspect"}).json(t)
	require.Equal(t, 200, b.do(req{method: "POST", path: "/v1/jobs/" + jc["id"].(string) + "/cancel", key: b.liveA, idem: idem()}).status)
	hr = verified(rc.waitFor(t, "job.cancelled", jc["id"].(string)))
	sameAs(hr, "/v1/jobs/"+jc["id"].(string))
	batch := b.do(req{method: "POST", path: "/v1/batches", key: b.liveA, idem: idem(),
		body: map[string]any{"file_ids": []string{ready, corrupt}, "operation": "inspect"}})
	require.Equal(t, 202, batch.status, string(batch.body))
	member := batch.json(t)["items"].([]any)[1].(map[string]any)["job_id"].(string)
	require.Equal(t, 200, b.do(req{method: "POST", path: "/v1/jobs/" + member + "/cancel", key: b.liveA, idem: idem()}).status)
	hr = verified(rc.waitFor(t, "job.cancelled", member))
	sameAs(hr, "/v1/jobs/"+member)
	require.Equal(t, batch.json(t)["id"], hr.event.Data.Object["batch_id"])

	// file.rejected.
	rej := b.uploadFile(b.liveA, "pic.png", pngBytes(t, 4, 4), map[string]any{"validation": map[string]any{"formats": []string{"pdf"}}})
	require.Equal(t, 422, rej.status)
	rejID := rej.json(t)["error"].(map[string]any)["details"].(map[string]any)["file_id"].(string)
	hr = verified(rc.waitFor(t, "file.rejected", rejID))
	sameAs(hr, "/v1/files/"+rejID)

	// file.deleted: GET answers 404 now; the event carries the file as it was deleted.
	require.Equal(t, 204, b.do(req{method: "DELETE", path: "/v1/files/" + rejID, key: b.liveA}).status)
	hr = verified(rc.waitFor(t, "file.deleted", rejID))
	require.Equal(t, "deleted", hr.event.Data.Object["status"])
	require.Equal(t, "file", hr.event.Data.Object["object"])

	// file.expired: a session abandoned past its lifetime.
	u := b.openUpload(b.liveA, "left.bin", 10, nil)
	clock.advance(25 * time.Hour)
	_, err = b.svc.Uploads.SweepExpired(ctx, 100)
	require.NoError(t, err)
	hr = verified(rc.waitFor(t, "file.expired", u["file_id"].(string)))
	require.Equal(t, "expired", hr.event.Data.Object["status"])

	// The history of a file still shows its jobs, each by job id.
	hist := b.do(req{method: "GET", path: "/v1/files/" + ready + "/history", key: b.liveA}).json(t)["data"].([]any)
	var jobEntries []string
	for _, e := range hist {
		if id, ok := e.(map[string]any)["job_id"].(string); ok {
			jobEntries = append(jobEntries, id)
		}
	}
	require.Contains(t, jobEntries, j["id"].(string))
	require.Contains(t, jobEntries, jc["id"].(string))

	// GET /v1/events: what was delivered, newest first, by type.
	events := b.do(req{method: "GET", path: "/v1/events?type=job.cancelled", key: b.liveA})
	require.Equal(t, 200, events.status, string(events.body))
	list := events.json(t)["data"].([]any)
	require.Len(t, list, 2)
	require.Equal(t, member, list[0].(map[string]any)["data"].(map[string]any)["object"].(map[string]any)["id"])
	evID := list[1].(map[string]any)["id"].(string)
	one := b.do(req{method: "GET", path: "/v1/events/" + evID, key: b.liveA})
	require.Equal(t, 200, one.status)
	require.Equal(t, list[1], one.json(t))
	require.Equal(t, 404, b.do(req{method: "GET", path: "/v1/events/" + evID, key: b.keyB}).status, "another organization's event")
	require.Equal(t, 400, b.do(req{method: "GET", path: "/v1/events?type=job.queued", key: b.liveA}).status, "not a webhook event")

	// Deliveries, each with its attempts; a manual retry; a test event.
	ds := b.do(req{method: "GET", path: "/v1/webhook-endpoints/" + epID + "/deliveries?limit=100", key: b.liveA})
	require.Equal(t, 200, ds.status, string(ds.body))
	dl := ds.json(t)["data"].([]any)
	require.Len(t, dl, 9, "two files ready, three jobs finished, one rejected, deleted, expired")
	first := dl[len(dl)-1].(map[string]any)
	require.Equal(t, "succeeded", first["status"])
	require.Equal(t, "file.ready", first["event_type"])
	require.EqualValues(t, 200, first["attempts"].([]any)[0].(map[string]any)["status_code"])
	before := rc.count()
	retry := b.do(req{method: "POST", path: "/v1/webhook-endpoints/" + epID + "/deliveries/" + first["id"].(string) + "/retry", key: b.liveA, idem: idem()})
	require.Equal(t, 202, retry.status, string(retry.body))
	eventually.True(t, "the condition to hold", func() bool { return rc.count() == before+1 })

	test := b.do(req{method: "POST", path: "/v1/webhook-endpoints/" + epID + "/test", key: b.liveA, idem: idem()})
	require.Equal(t, 202, test.status, string(test.body))
	require.Equal(t, "webhook.test", test.json(t)["type"])
	hr = verified(rc.waitFor(t, "webhook.test", epID))
	require.Equal(t, test.json(t)["id"], hr.event.ID)

	got := b.do(req{method: "GET", path: "/v1/webhook-endpoints/" + epID, key: b.liveA}).json(t)
	require.Equal(t, "enabled", got["status"])
	require.Nil(t, got["secret"])
	rot := b.do(req{method: "POST", path: "/v1/webhook-endpoints/" + epID + "/rotate-secret", key: b.liveA, idem: idem()})
	require.Equal(t, 200, rot.status, string(rot.body))
	require.NotEqual(t, ep["secret"], rot.json(t)["secret"])
	require.NotNil(t, rot.json(t)["previous_secret_expires_at"])
}

type staticResolver map[string][]netip.Addr

func (r staticResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := r[host]; ok {
		return a, nil
	}
	return nil, errors.New("no such host")
}

func TestWebhookEndpointURLsAreVetted(t *testing.T) {
	t.Parallel()
	guard := &netguard.Guard{Resolver: staticResolver{
		"hooks.example":    {netip.MustParseAddr("93.184.215.14")},
		"localhost":        {netip.MustParseAddr("127.0.0.1")},
		"metadata.example": {netip.MustParseAddr("169.254.169.254")},
		"intranet.example": {netip.MustParseAddr("10.20.30.40")},
	}}
	b := setup(t, setupOpts{guard: guard})
	for _, u := range []string{"https://127.0.0.1/h", "https://[::1]:8443/h", "https://localhost/h", "https://2130706433/h",
		"https://10.0.0.8/h", "https://192.168.1.20/h", "https://172.16.0.1/h", "https://intranet.example/h",
		"https://169.254.169.254/latest/meta-data/", "https://metadata.example/h", "https://[fd00::1]/h",
		"http://hooks.example/h", "https://nowhere.example/h"} {
		r := b.do(req{method: "POST", path: "/v1/webhook-endpoints", key: b.liveA, idem: idem(), body: webhookBody(u)})
		require.Equal(t, 400, r.status, "%s: %s", u, r.body)
		e := r.json(t)["error"].(map[string]any)
		require.Equal(t, "invalid_request", e["code"], u)
		require.Equal(t, "url", e["param"], u)
		require.NotContains(t, e["message"], "10.20.30.40", "a resolved address is not echoed")
	}
	r := b.do(req{method: "POST", path: "/v1/webhook-endpoints", key: b.liveA, idem: idem(), body: webhookBody("https://hooks.example/in")})
	require.Equal(t, 201, r.status, string(r.body))
}
