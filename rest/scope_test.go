package rest_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/domain"
)

// TestReplayStaysInItsScope: an Idempotency-Key is scoped to (organization, environment,
// project, endpoint), and to the API key for an answer that holds a credential. A key of
// the other environment or of another project sending the live key's Idempotency-Key
// and body makes a new request: it never gets the stored answer — the webhook secret,
// the signed PUT URL — nor a conflict.
func TestReplayStaysInItsScope(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	prjB, err := b.svc.Organizations.CreateProject(ctx, b.orgA.Organization.ID, "b")
	require.NoError(t, err)
	keyB := b.newKey(func(k *domain.NewKey) { k.ProjectID, k.AllowedProjects = prjB.ID, []string{prjB.ID} })

	// fresh requires r to be a new request that made a new resource, and returns it.
	fresh := func(t *testing.T, r response, status int, stored response) map[string]any {
		t.Helper()
		require.Equal(t, status, r.status, string(r.body))
		require.Empty(t, r.header.Get("Idempotent-Replayed"))
		got, first := r.json(t), stored.json(t)
		require.NotEqual(t, first["id"], got["id"])
		return got
	}
	replayed := func(t *testing.T, r, stored response) {
		t.Helper()
		require.Equal(t, stored.status, r.status, string(r.body))
		require.Equal(t, "true", r.header.Get("Idempotent-Replayed"))
		require.Equal(t, string(stored.body), string(r.body))
	}

	t.Run("WebhookEndpointSecret", func(t *testing.T) {
		hook := func(key string) req {
			return req{method: "POST", path: "/v1/webhook-endpoints", key: key, idem: "hook-1", body: webhookBody("https://example.com/scope")}
		}
		live := b.do(hook(b.liveA))
		require.Equal(t, 201, live.status, string(live.body))
		secret := live.json(t)["secret"].(string)

		for name, key := range map[string]string{"TestKey": b.testA, "KeyOfProjectB": keyB} {
			t.Run(name, func(t *testing.T) {
				r := b.do(hook(key))
				got := fresh(t, r, 201, live)
				require.NotEqual(t, secret, got["secret"])
				require.NotContains(t, string(r.body), secret)
				replayed(t, b.do(hook(key)), r)
			})
		}
		t.Run("OtherLiveKeyOfTheProject", func(t *testing.T) {
			// A new request: the project has an endpoint at this URL already, which
			// the key may see, but not its secret.
			other := b.newKey(nil)
			r := b.do(hook(other))
			require.Equal(t, 409, r.status, string(r.body))
			require.Empty(t, r.header.Get("Idempotent-Replayed"))
			require.Equal(t, domain.CodeConflict, r.errorCode(t))
			require.NotContains(t, string(r.body), secret)
			replayed(t, b.do(hook(other)), r)
		})
		replayed(t, b.do(hook(b.liveA)), live)
		require.Equal(t, 1, countEndpoints(t, b, b.testA), "the test key's own endpoint, once")
	})

	t.Run("UploadSessionURL", func(t *testing.T) {
		upload := func(key string) req {
			return req{method: "POST", path: "/v1/uploads", key: key, idem: "upload-1", body: map[string]any{"filename": "a.txt", "byte_size": 5}}
		}
		live := b.do(upload(b.liveA))
		require.Equal(t, 201, live.status, string(live.body))
		url := live.json(t)["upload_url"].(string)

		for name, c := range map[string]struct{ key, project string }{
			"TestKey":                  {b.testA, b.orgA.Project.ID},
			"KeyRestrictedToProjectB":  {keyB, prjB.ID},
			"OtherLiveKeyOfTheProject": {b.newKey(nil), b.orgA.Project.ID},
		} {
			t.Run(name, func(t *testing.T) {
				r := b.do(upload(c.key))
				got := fresh(t, r, 201, live)
				require.NotContains(t, string(r.body), url)
				require.Equal(t, c.project, got["project_id"])
				replayed(t, b.do(upload(c.key)), r)
				// Its own session: what it PUTs becomes its own file.
				resp := put(t, got["upload_url"].(string), got["upload_headers"].(map[string]any), []byte("mine!"))
				require.Less(t, resp.StatusCode, 300)
				f := b.do(req{method: "POST", path: "/v1/files/" + got["file_id"].(string) + "/complete", key: c.key, idem: idem()})
				require.Equal(t, 200, f.status, string(f.body))
			})
		}
		replayed(t, b.do(upload(b.liveA)), live)
		file := b.do(req{method: "GET", path: "/v1/files/" + live.json(t)["file_id"].(string), key: b.liveA})
		require.Equal(t, "awaiting_upload", file.json(t)["status"], "no one else's bytes became the live file")
	})

	t.Run("JobOfAnotherProjectIsNotAConflict", func(t *testing.T) {
		job := func(key, file string) req {
			return req{method: "POST", path: "/v1/jobs", key: key, idem: "job-1", body: map[string]any{"file_id": file, "operation": "inspect"}}
		}
		live := b.do(job(b.liveA, b.readyFile(b.liveA, "a.pdf", []byte(minimalPDF))))
		require.Equal(t, 202, live.status, string(live.body))
		for name, key := range map[string]string{"TestKey": b.testA, "KeyOfProjectB": keyB} {
			t.Run(name, func(t *testing.T) {
				r := b.do(job(key, b.readyFile(key, "b.pdf", []byte(minimalPDF))))
				fresh(t, r, 202, live)
			})
		}
	})
}
