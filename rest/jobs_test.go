package rest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/domain/eventually"
)

// readyFile uploads content and returns the ready file's id.
func (b *bundle) readyFile(key, name string, content []byte) string {
	b.t.Helper()
	r := b.uploadFile(key, name, content, nil)
	require.Equal(b.t, 200, r.status, string(r.body))
	return r.json(b.t)["id"].(string)
}

func (b *bundle) createJob(key string, body map[string]any) response {
	b.t.Helper()
	return b.do(req{method: "POST", path: "/v1/jobs", key: key, idem: idem(), body: body})
}

// waitJob polls a job until it is terminal. The bound is generous: real engines share
// the machine's cores with every other test.
func (b *bundle) waitJob(key, id string) map[string]any {
	b.t.Helper()
	return eventually.Value(b.t, "job "+id+" to finish", func() (map[string]any, bool) {
		j := b.do(req{method: "GET", path: "/v1/jobs/" + id, key: key}).json(b.t)
		switch j["state"] {
		case "succeeded", "failed", "cancelled":
			return j, true
		}
		return nil, false
	})
}

func (b *bundle) account(orgID string) *domain.CreditAccount {
	b.t.Helper()
	a, err := b.store.FindCreditAccount(context.Background(), orgID, domain.EnvLive)
	require.NoError(b.t, err)
	return a
}

func TestInspectJobEndToEnd(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{worker: true})
	fileID := b.readyFile(b.liveA, "doc.pdf", []byte(minimalPDF))
	before := b.account(b.orgA.Organization.ID)

	r := b.createJob(b.liveA, map[string]any{"file_id": fileID, "operation": "inspect"})
	require.Equal(t, 202, r.status, string(r.body))
	j := r.json(t)
	require.Equal(t, "queued", j["state"])
	require.EqualValues(t, 1, j["credits_reserved"])
	require.Equal(t, "inspect", j["operation"])
	require.Nil(t, j["preset"])

	done := b.waitJob(b.liveA, j["id"].(string))
	require.Equal(t, "succeeded", done["state"], "%v", done["error"])
	require.EqualValues(t, 1, done["credits_charged"])
	require.EqualValues(t, 100, done["progress"])
	require.EqualValues(t, 1, done["attempts"])
	arts := done["artifacts"].([]any)
	require.Len(t, arts, 1)
	art := arts[0].(map[string]any)
	require.Equal(t, "inspect.json", art["name"])

	d := b.do(req{method: "POST", path: "/v1/files/" + fileID + "/download-url", key: b.liveA, idem: idem(), body: map[string]any{"artifact_id": art["id"]}})
	require.Equal(t, 201, d.status, string(d.body))
	status, body := get(t, d.json(t)["url"].(string), nil)
	require.Equal(t, 200, status)
	var report map[string]any
	require.NoError(t, json.Unmarshal(body, &report))
	require.EqualValues(t, 1, report["pdf"].(map[string]any)["page_count"])

	after := b.account(b.orgA.Organization.ID)
	require.Equal(t, before.Balance-1, after.Balance)
	require.Equal(t, before.Used+1, after.Used)
	require.Equal(t, before.Reserved, after.Reserved)

	f := b.do(req{method: "GET", path: "/v1/files/" + fileID, key: b.liveA}).json(t)
	require.Len(t, f["artifacts"].([]any), 1)
	var types []string
	for _, e := range b.do(req{method: "GET", path: "/v1/files/" + fileID + "/history", key: b.liveA}).json(t)["data"].([]any) {
		types = append(types, e.(map[string]any)["type"].(string))
	}
	require.Equal(t, []string{"upload.opened", "file.ready", "job.queued", "job.running", "job.succeeded"}, types)

	// The inspect preset also scans, and no worker here runs the scan engine.
	p := b.createJob(b.liveA, map[string]any{"file_id": fileID, "preset": "inspect"})
	require.Equal(t, 503, p.status, string(p.body))
	require.Equal(t, domain.CodeProcessingUnavailable, p.errorCode(t))

	ops := b.do(req{method: "GET", path: "/v1/operations", key: b.liveA}).json(t)["data"].([]any)
	avail := map[string]bool{}
	for _, o := range ops {
		m := o.(map[string]any)
		avail[m["kind"].(string)+":"+m["name"].(string)] = m["available"].(bool)
	}
	require.True(t, avail["operation:inspect"])
	require.False(t, avail["preset:inspect"], "it needs the scan engine too")
	require.False(t, avail["operation:scan"], "no scan engine is wired in this test")
	require.Len(t, ops, 15)
}

func TestJobCreationRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	pdf := b.readyFile(b.liveA, "a.pdf", []byte(minimalPDF))
	png := b.readyFile(b.liveA, "a.png", pngBytes(t, 4, 4))
	pending := b.openUpload(b.liveA, "p.bin", 3, nil)["file_id"].(string)
	fileB := b.readyFile(b.keyB, "b.pdf", []byte(minimalPDF))
	onlyScan := b.newKey(func(k *domain.NewKey) { k.AllowedOperations = []string{"scan"} })

	cases := []struct {
		name   string
		key    string
		body   map[string]any
		status int
		code   string
		param  string
	}{
		{"UnknownOperation", b.liveA, map[string]any{"file_id": pdf, "operation": "paint"}, 400, domain.CodeUnsupportedOperation, "operation"},
		{"UnknownPreset", b.liveA, map[string]any{"file_id": pdf, "preset": "fancy"}, 400, domain.CodeUnsupportedOperation, "preset"},
		{"Both", b.liveA, map[string]any{"file_id": pdf, "operation": "inspect", "preset": "inspect"}, 400, domain.CodeInvalidRequest, "preset"},
		{"Neither", b.liveA, map[string]any{"file_id": pdf}, 400, domain.CodeInvalidRequest, "operation"},
		{"NoFile", b.liveA, map[string]any{"operation": "inspect"}, 400, domain.CodeInvalidRequest, "file_id"},
		{"BadFileID", b.liveA, map[string]any{"file_id": "f1", "operation": "inspect"}, 400, domain.CodeInvalidRequest, "file_id"},
		{"UnknownOption", b.liveA, map[string]any{"file_id": pdf, "operation": "inspect", "options": map[string]any{"deep": true}}, 400, domain.CodeInvalidRequest, "options.deep"},
		{"OptionOutOfRange", b.liveA, map[string]any{"file_id": pdf, "operation": "pdf.render", "options": map[string]any{"dpi": 9999}}, 400, domain.CodeInvalidRequest, "options.dpi"},
		{"OptionBadEnum", b.liveA, map[string]any{"file_id": png, "operation": "image.convert", "options": map[string]any{"format": "bmp"}}, 400, domain.CodeInvalidRequest, "options.format"},
		{"OptionsNotObject", b.liveA, map[string]any{"file_id": pdf, "operation": "inspect", "options": []int{1}}, 400, domain.CodeInvalidRequest, "options"},
		{"UnsupportedInput", b.liveA, map[string]any{"file_id": png, "operation": "pdf.split", "options": map[string]any{"every": 1}}, 422, domain.CodeUnsupportedInput, "file_id"},
		{"EngineMissing", b.liveA, map[string]any{"file_id": pdf, "operation": "scan"}, 503, domain.CodeProcessingUnavailable, ""},
		{"NotAllowedForKey", onlyScan, map[string]any{"file_id": pdf, "operation": "inspect"}, 403, domain.CodeOperationNotAllowed, ""},
		{"FileNotReady", b.liveA, map[string]any{"file_id": pending, "operation": "inspect"}, 409, domain.CodeConflict, "file_id"},
		{"OtherOrganizationsFile", b.liveA, map[string]any{"file_id": fileB, "operation": "inspect"}, 404, domain.CodeNotFound, "file_id"},
		{"OtherEnvironmentsFile", b.testA, map[string]any{"file_id": pdf, "operation": "inspect"}, 403, domain.CodeEnvironmentMismatch, "file_id"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := b.createJob(c.key, c.body)
			require.Equal(t, c.status, r.status, string(r.body))
			e := r.json(t)["error"].(map[string]any)
			require.Equal(t, c.code, e["code"])
			if c.param != "" {
				require.Equal(t, c.param, e["param"])
			}
		})
	}
	list := b.do(req{method: "GET", path: "/v1/jobs", key: b.liveA}).json(t)
	require.Empty(t, list["data"], "no refusal created a job")

	t.Run("PaymentRequired", func(t *testing.T) {
		poor, err := b.svc.Organizations.Bootstrap(ctx, "poor", "p", 0)
		require.NoError(t, err)
		_, err = b.svc.Credits.Grant(ctx, poor.Organization.ID, domain.EnvLive, 1, "test")
		require.NoError(t, err)
		f := b.readyFile(poor.LiveSecret, "x.pdf", []byte(minimalPDF))
		require.Equal(t, 202, b.createJob(poor.LiveSecret, map[string]any{"file_id": f, "operation": "inspect"}).status)
		// The balance is now 0: no credits at all.
		r := b.createJob(poor.LiveSecret, map[string]any{"file_id": f, "operation": "inspect"})
		require.Equal(t, 429, r.status)
		require.Equal(t, domain.CodeCreditsExhausted, r.errorCode(t))
		require.NotEmpty(t, r.header.Get("Retry-After"))
		// A batch larger than what is left: payment required.
		_, err = b.svc.Credits.Grant(ctx, poor.Organization.ID, domain.EnvLive, 1, "test")
		require.NoError(t, err)
		f2 := b.readyFile(poor.LiveSecret, "y.pdf", []byte(minimalPDF+" "))
		r = b.do(req{method: "POST", path: "/v1/batches", key: poor.LiveSecret, idem: idem(), body: map[string]any{"file_ids": []string{f, f2}, "operation": "inspect"}})
		require.Equal(t, 402, r.status, string(r.body))
		require.Equal(t, domain.CodePaymentRequired, r.errorCode(t))
	})
	t.Run("KeySpendLimit", func(t *testing.T) {
		limited := b.newKey(func(k *domain.NewKey) { k.SpendLimit = 1 })
		require.Equal(t, 202, b.createJob(limited, map[string]any{"file_id": pdf, "operation": "inspect"}).status)
		r := b.createJob(limited, map[string]any{"file_id": pdf, "operation": "inspect"})
		require.Equal(t, 429, r.status)
		require.Equal(t, domain.CodeKeySpendLimit, r.errorCode(t))
	})
	t.Run("ConcurrencyLimit", func(t *testing.T) {
		prj, err := b.svc.Organizations.CreateProject(ctx, b.orgA.Organization.ID, "narrow")
		require.NoError(t, err)
		require.NoError(t, b.svc.Organizations.SetConcurrencyLimit(ctx, prj.ID, 1))
		key := b.newKey(func(k *domain.NewKey) { k.ProjectID = prj.ID })
		f := b.readyFile(key, "n.pdf", []byte(minimalPDF))
		require.Equal(t, 202, b.createJob(key, map[string]any{"file_id": f, "operation": "inspect"}).status)
		r := b.createJob(key, map[string]any{"file_id": f, "operation": "inspect"})
		require.Equal(t, 429, r.status)
		require.Equal(t, domain.CodeConcurrencyLimit, r.errorCode(t))
	})
}

func TestJobStateTable(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	pdf := b.readyFile(b.liveA, "s.pdf", []byte(minimalPDF))

	t.Run("CancelQueuedReleasesCredits", func(t *testing.T) {
		before := b.account(b.orgA.Organization.ID)
		j := b.createJob(b.liveA, map[string]any{"file_id": pdf, "operation": "inspect"}).json(t)
		require.Equal(t, before.Balance-1, b.account(b.orgA.Organization.ID).Balance)
		c := b.do(req{method: "POST", path: "/v1/jobs/" + j["id"].(string) + "/cancel", key: b.liveA, idem: idem()})
		require.Equal(t, 200, c.status, string(c.body))
		require.Equal(t, "cancelled", c.json(t)["state"])
		require.EqualValues(t, 0, c.json(t)["credits_charged"])
		after := b.account(b.orgA.Organization.ID)
		require.Equal(t, before.Balance, after.Balance)
		require.Equal(t, before.Reserved, after.Reserved)
		events, err := b.store.FindEventsByFile(ctx, b.orgA.Organization.ID, pdf, 0)
		require.NoError(t, err)
		require.Equal(t, domain.EventJobCancelled, events[len(events)-1].Type)
	})
	t.Run("CancelClaimedIsConflictAndKeepsRunning", func(t *testing.T) {
		j := b.createJob(b.liveA, map[string]any{"file_id": pdf, "operation": "inspect"}).json(t)
		_, err := b.svc.Jobs.ClaimJob(ctx, j["id"].(string))
		require.NoError(t, err)
		c := b.do(req{method: "POST", path: "/v1/jobs/" + j["id"].(string) + "/cancel", key: b.liveA, idem: idem()})
		require.Equal(t, 409, c.status)
		require.Equal(t, domain.CodeConflict, c.errorCode(t))
		require.Equal(t, "running", c.json(t)["error"].(map[string]any)["details"].(map[string]any)["state"])
		require.Equal(t, "running", b.do(req{method: "GET", path: "/v1/jobs/" + j["id"].(string), key: b.liveA}).json(t)["state"])
	})
	t.Run("ListFiltersByState", func(t *testing.T) {
		for _, st := range []string{"cancelled", "running"} {
			l := b.do(req{method: "GET", path: "/v1/jobs?state=" + st, key: b.liveA}).json(t)["data"].([]any)
			require.Len(t, l, 1, st)
			require.Equal(t, st, l[0].(map[string]any)["state"])
		}
		require.Len(t, b.do(req{method: "GET", path: "/v1/jobs?project_id=" + b.orgA.Project.ID, key: b.liveA}).json(t)["data"].([]any), 2)
	})
}

func TestCancelRacingClaim(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{cfg: func(c *domain.Config) { c.DefaultConcurrencyLimit = 1000; c.DefaultRateLimit = 10000 }})
	ctx := context.Background()
	pdf := b.readyFile(b.liveA, "r.pdf", []byte(minimalPDF))
	for round := 0; round < 100; round++ {
		r := b.createJob(b.liveA, map[string]any{"file_id": pdf, "operation": "inspect"})
		require.Equal(t, 202, r.status, string(r.body))
		id := r.json(t)["id"].(string)
		var wg sync.WaitGroup
		var cancel response
		var claimErr error
		wg.Add(2)
		go func() {
			defer wg.Done()
			cancel = b.do(req{method: "POST", path: "/v1/jobs/" + id + "/cancel", key: b.liveA, idem: idem()})
		}()
		go func() { defer wg.Done(); _, claimErr = b.svc.Jobs.ClaimJob(ctx, id) }()
		wg.Wait()
		cancelled := cancel.status == 200
		claimed := claimErr == nil
		require.True(t, cancelled != claimed, "round %d: cancel %d, claim %v — exactly one must win", round, cancel.status, claimErr)
		final := b.do(req{method: "GET", path: "/v1/jobs/" + id, key: b.liveA}).json(t)["state"]
		if cancelled {
			require.Equal(t, "cancelled", final)
		} else {
			require.Equal(t, 409, cancel.status)
			require.Equal(t, "running", final)
		}
	}
}

func TestConcurrentAdmissionsAgainstBalance(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{cfg: func(c *domain.Config) { c.DefaultConcurrencyLimit = 1000; c.DefaultRateLimit = 10000 }})
	ctx := context.Background()
	org, err := b.svc.Organizations.Bootstrap(ctx, "tight", "p", 0)
	require.NoError(t, err)
	_, err = b.svc.Credits.Grant(ctx, org.Organization.ID, domain.EnvLive, 150, "test")
	require.NoError(t, err)
	f := b.readyFile(org.LiveSecret, "c.pdf", []byte(minimalPDF))
	var wg sync.WaitGroup
	statuses := make([]int, 200)
	for i := range statuses {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			statuses[i] = b.createJob(org.LiveSecret, map[string]any{"file_id": f, "operation": "inspect"}).status
		}(i)
	}
	wg.Wait()
	counts := map[int]int{}
	for _, s := range statuses {
		counts[s]++
	}
	require.Equal(t, 150, counts[http.StatusAccepted], "%v", counts)
	require.Equal(t, 50, counts[http.StatusPaymentRequired]+counts[http.StatusTooManyRequests], "%v", counts)
	acct, err := b.store.FindCreditAccount(ctx, org.Organization.ID, domain.EnvLive)
	require.NoError(t, err)
	require.EqualValues(t, 0, acct.Balance)
	require.EqualValues(t, 150, acct.Reserved)
	jobs, _, err := b.store.FindJobs(ctx, domain.JobFilter{Scope: domain.Scope{OrganizationID: org.Organization.ID}, Environment: domain.EnvLive, Page: domain.Page{Limit: 100}})
	require.NoError(t, err)
	require.Len(t, jobs, 100) // one page of the 150
}

// TestJobLimitsUnderConcurrency fires concurrent creations at a project's concurrency
// limit and at a key's spend limit: exactly what the limit allows is admitted.
func TestJobLimitsUnderConcurrency(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{cfg: func(c *domain.Config) { c.DefaultRateLimit = 10000 }})
	ctx := context.Background()
	org, err := b.svc.Organizations.Bootstrap(ctx, "limits", "p", 1000)
	require.NoError(t, err)
	fire := func(key, file string, n int) map[int]int {
		t.Helper()
		statuses := make([]response, n)
		var wg sync.WaitGroup
		for i := range statuses {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				statuses[i] = b.createJob(key, map[string]any{"file_id": file, "operation": "inspect"})
			}(i)
		}
		wg.Wait()
		counts := map[int]int{}
		for _, r := range statuses {
			counts[r.status]++
			if r.status == http.StatusTooManyRequests {
				require.NotEmpty(t, r.header.Get("Retry-After"))
			}
		}
		return counts
	}

	t.Run("ConcurrencyLimit", func(t *testing.T) {
		require.NoError(t, b.svc.Organizations.SetConcurrencyLimit(ctx, org.Project.ID, 5))
		f := b.readyFile(org.LiveSecret, "c.pdf", []byte(minimalPDF))
		counts := fire(org.LiveSecret, f, 40)
		require.Equal(t, map[int]int{202: 5, 429: 35}, counts)
		// The test environment has its own count.
		tf := b.readyFile(org.TestSecret, "t.pdf", []byte(minimalPDF))
		require.Equal(t, 202, b.createJob(org.TestSecret, map[string]any{"file_id": tf, "operation": "inspect"}).status)
	})
	t.Run("KeySpendLimit", func(t *testing.T) {
		prj, err := b.svc.Organizations.CreateProject(ctx, org.Organization.ID, "spend")
		require.NoError(t, err)
		_, key, err := b.svc.Keys.CreateKey(ctx, domain.NewKey{OrganizationID: org.Organization.ID, ProjectID: prj.ID,
			Environment: domain.EnvLive, SpendLimit: 3})
		require.NoError(t, err)
		f := b.readyFile(key, "s.pdf", []byte(minimalPDF))
		counts := fire(key, f, 30)
		require.Equal(t, map[int]int{202: 3, 429: 27}, counts)
		r := b.createJob(key, map[string]any{"file_id": f, "operation": "inspect"})
		require.Equal(t, domain.CodeKeySpendLimit, r.errorCode(t))
		details := r.json(t)["error"].(map[string]any)["details"].(map[string]any)
		require.EqualValues(t, 3, details["credits_spent_or_held"])
	})
}

// unfinishable is the real store, except that an answer can never be stored on its own:
// as if the process died between a request's effect and storing its answer.
type unfinishable struct{ domain.Store }

func (unfinishable) FinishIdempotencyKey(context.Context, *domain.IdempotencyRecord) error {
	return errors.New("the process died here")
}

// TestJobAnswerIsStoredWithTheJob: the answer to POST /v1/jobs is written with the job
// itself, so a retry replays it even when nothing could be stored after the job.
func TestJobAnswerIsStoredWithTheJob(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{store: func(s domain.Store) domain.Store { return unfinishable{s} }})
	f := b.readyFile(b.liveA, "a.pdf", []byte(minimalPDF))
	body := map[string]any{"file_id": f, "operation": "inspect"}
	first := b.do(req{method: "POST", path: "/v1/jobs", key: b.liveA, idem: "job-1", body: body})
	require.Equal(t, 202, first.status, string(first.body))
	again := b.do(req{method: "POST", path: "/v1/jobs", key: b.liveA, idem: "job-1", body: body})
	require.Equal(t, 202, again.status, string(again.body))
	require.Equal(t, "true", again.header.Get("Idempotent-Replayed"))
	require.Equal(t, string(first.body), string(again.body))
	list := b.do(req{method: "GET", path: "/v1/jobs", key: b.liveA}).json(t)["data"].([]any)
	require.Len(t, list, 1, "one job for the two requests")

	// The same for a batch.
	f2 := b.readyFile(b.liveA, "b.pdf", []byte(minimalPDF+" "))
	batch := map[string]any{"file_ids": []string{f, f2}, "operation": "inspect"}
	first = b.do(req{method: "POST", path: "/v1/batches", key: b.liveA, idem: "batch-1", body: batch})
	require.Equal(t, 202, first.status, string(first.body))
	again = b.do(req{method: "POST", path: "/v1/batches", key: b.liveA, idem: "batch-1", body: batch})
	require.Equal(t, "true", again.header.Get("Idempotent-Replayed"))
	require.Equal(t, string(first.body), string(again.body))

	// An endpoint whose answer is stored on its own shows what the fault does there.
	w := b.do(req{method: "POST", path: "/v1/webhook-endpoints", key: b.liveA, idem: "hook-1", body: webhookBody("https://example.com/h")})
	require.Equal(t, 201, w.status)
	w = b.do(req{method: "POST", path: "/v1/webhook-endpoints", key: b.liveA, idem: "hook-1", body: webhookBody("https://example.com/h")})
	require.Equal(t, http.StatusConflict, w.status, "its answer was never stored: still in progress")
}

func TestBatches(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{worker: true})
	good1 := b.readyFile(b.liveA, "1.pdf", []byte(minimalPDF))
	good2 := b.readyFile(b.liveA, "2.png", pngBytes(t, 5, 5))
	// Starts like a PDF, so it is ready; its body is garbage, so inspect fails on it.
	corrupt := b.readyFile(b.liveA, "3.pdf", append([]byte("%PDF-1.7\n"), randomBytes(2000)...))
	other := b.readyFile(b.keyB, "b.pdf", []byte(minimalPDF))

	t.Run("OneBadMemberCreatesNothing", func(t *testing.T) {
		before := b.account(b.orgA.Organization.ID)
		r := b.do(req{method: "POST", path: "/v1/batches", key: b.liveA, idem: idem(), body: map[string]any{"file_ids": []string{good1, good2, other}, "operation": "inspect"}})
		require.Equal(t, 404, r.status, string(r.body))
		e := r.json(t)["error"].(map[string]any)
		require.Equal(t, "file_ids[2]", e["param"])
		require.Equal(t, other, e["details"].(map[string]any)["file_id"])
		require.Empty(t, b.do(req{method: "GET", path: "/v1/jobs", key: b.liveA}).json(t)["data"])
		require.Equal(t, before, b.account(b.orgA.Organization.ID))
	})
	t.Run("BodyLimits", func(t *testing.T) {
		many := make([]string, 101)
		for i := range many {
			many[i] = good1
		}
		for _, body := range []map[string]any{
			{"file_ids": []string{}, "operation": "inspect"}, {"file_ids": many, "operation": "inspect"},
			{"file_ids": []string{good1, good1}, "operation": "inspect"}, {"file_ids": []string{good1}, "operation": "inspect", "extra": 1},
		} {
			r := b.do(req{method: "POST", path: "/v1/batches", key: b.liveA, idem: idem(), body: body})
			require.Equal(t, 400, r.status, string(r.body))
		}
	})
	t.Run("FailingMemberIsChargedNothing", func(t *testing.T) {
		before := b.account(b.orgA.Organization.ID)
		r := b.do(req{method: "POST", path: "/v1/batches", key: b.liveA, idem: idem(), body: map[string]any{"file_ids": []string{good1, corrupt, good2}, "operation": "inspect"}})
		require.Equal(t, 202, r.status, string(r.body))
		bt := r.json(t)
		require.EqualValues(t, 3, bt["credits_estimated"])
		require.Equal(t, "processing", bt["state"])
		items := bt["items"].([]any)
		require.Equal(t, good1, items[0].(map[string]any)["file_id"])
		var got map[string]any
		eventually.True(t, "the condition to hold", func() bool {
			got = b.do(req{method: "GET", path: "/v1/batches/" + bt["id"].(string), key: b.liveA}).json(t)
			return got["state"] == "completed"
		})
		counts := got["counts"].(map[string]any)
		require.EqualValues(t, 2, counts["succeeded"], "%v", got)
		require.EqualValues(t, 1, counts["failed"])
		require.EqualValues(t, 2, got["credits_charged"])
		for _, it := range got["items"].([]any) {
			item := it.(map[string]any)
			if item["file_id"] == corrupt {
				require.Equal(t, "failed", item["state"])
				require.Equal(t, domain.CodeCorruptedFile, item["error"].(map[string]any)["code"])
				j := b.do(req{method: "GET", path: "/v1/jobs/" + item["job_id"].(string), key: b.liveA}).json(t)
				require.EqualValues(t, 1, j["attempts"], "a corrupted file is not retried")
				require.EqualValues(t, 0, j["credits_charged"])
			}
		}
		after := b.account(b.orgA.Organization.ID)
		require.Equal(t, before.Balance-2, after.Balance)
		require.Equal(t, before.Used+2, after.Used)
		require.Equal(t, before.Reserved, after.Reserved)
		require.Equal(t, 404, b.do(req{method: "GET", path: "/v1/batches/" + bt["id"].(string), key: b.keyB}).status)
	})
}

func TestUsage(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{worker: true})
	content := []byte(minimalPDF)
	f := b.readyFile(b.liveA, "u.pdf", content)
	r := b.createJob(b.liveA, map[string]any{"file_id": f, "operation": "inspect"})
	require.Equal(t, "succeeded", b.waitJob(b.liveA, r.json(t)["id"].(string))["state"])
	d := b.do(req{method: "POST", path: "/v1/files/" + f + "/download-url", key: b.liveA, idem: idem()}).json(t)
	_, body := get(t, d["url"].(string), nil)
	require.Len(t, body, len(content))
	_, _ = get(t, d["url"].(string), map[string]string{"Range": "bytes=0-9"})

	var u map[string]any
	eventually.True(t, fmt.Sprintf("egress counts the bytes served: %v", u), func() bool {
		u = b.do(req{method: "GET", path: "/v1/usage", key: b.liveA}).json(t)
		return u["egress"].(map[string]any)["bytes"].(float64) == float64(len(content)+10)
	})
	require.Equal(t, "usage", u["object"])
	require.Equal(t, b.orgA.Project.ID, u["project_id"])
	require.EqualValues(t, 99, u["credits"].(map[string]any)["balance"])
	require.EqualValues(t, 1, u["credits"].(map[string]any)["used"])
	require.EqualValues(t, 0, u["credits"].(map[string]any)["reserved"])
	// Stored bytes are the original's and its artifacts'.
	art := b.do(req{method: "GET", path: "/v1/files/" + f, key: b.liveA}).json(t)["artifacts"].([]any)[0].(map[string]any)
	require.EqualValues(t, float64(len(content))+art["byte_size"].(float64), u["storage"].(map[string]any)["bytes"])
	require.EqualValues(t, 1, u["storage"].(map[string]any)["files"])
	readOnly := b.newKey(func(k *domain.NewKey) { k.Scopes = []string{domain.ScopeFilesRead} })
	require.Equal(t, 403, b.do(req{method: "GET", path: "/v1/usage", key: readOnly}).status)
	require.Equal(t, 404, b.do(req{method: "GET", path: "/v1/usage?project_id=" + b.orgB.Project.ID, key: b.liveA}).status)
	other := b.do(req{method: "GET", path: "/v1/usage", key: b.keyB}).json(t)
	require.EqualValues(t, 0, other["storage"].(map[string]any)["files"], fmt.Sprint(other))
}
