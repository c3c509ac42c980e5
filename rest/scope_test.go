package rest_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/rest/openapitest"
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

// TestEveryRouteRefusesAKeyLackingItsScope: every authenticated operation of the
// document refuses a key holding every scope but its own, naming the scope — decided by
// the domain call behind the route, not by a table of this door's (the GraphQL door gets
// the same refusals: graph's TestEveryFieldRefusesAKeyLackingItsScope).
func TestEveryRouteRefusesAKeyLackingItsScope(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.do(req{method: "POST", path: "/v1/webhook-endpoints", key: b.liveA, idem: "scope-hook", body: webhookBody("https://example.com/scope")})
	require.Equal(t, 201, r.status, string(r.body))
	ids := strings.NewReplacer("{upload_id}", "upl_01ARZ3NDEKTSV4RRFFQ69G5FAV", "{file_id}", "file_01ARZ3NDEKTSV4RRFFQ69G5FAV",
		"{job_id}", "job_01ARZ3NDEKTSV4RRFFQ69G5FAV", "{batch_id}", "bat_01ARZ3NDEKTSV4RRFFQ69G5FAV",
		"{webhook_endpoint_id}", r.json(t)["id"].(string), "{delivery_id}", "dlv_01ARZ3NDEKTSV4RRFFQ69G5FAV",
		"{event_id}", "evt_01ARZ3NDEKTSV4RRFFQ69G5FAV")
	scopes := map[string]string{
		"POST /v1/uploads":                                               domain.ScopeFilesWrite,
		"GET /v1/uploads/{upload_id}":                                    domain.ScopeFilesRead,
		"POST /v1/uploads/{upload_id}/parts":                             domain.ScopeFilesWrite,
		"POST /v1/uploads/{upload_id}/complete-parts":                    domain.ScopeFilesWrite,
		"POST /v1/uploads/{upload_id}/abort":                             domain.ScopeFilesWrite,
		"POST /v1/files/{file_id}/complete":                              domain.ScopeFilesWrite,
		"GET /v1/files":                                                  domain.ScopeFilesRead,
		"GET /v1/files/{file_id}":                                        domain.ScopeFilesRead,
		"DELETE /v1/files/{file_id}":                                     domain.ScopeFilesWrite,
		"GET /v1/files/{file_id}/history":                                domain.ScopeFilesRead,
		"POST /v1/files/{file_id}/download-url":                          domain.ScopeFilesRead,
		"POST /v1/jobs":                                                  domain.ScopeJobsWrite,
		"GET /v1/jobs":                                                   domain.ScopeJobsRead,
		"GET /v1/jobs/{job_id}":                                          domain.ScopeJobsRead,
		"GET /v1/jobs/{job_id}/artifacts":                                domain.ScopeJobsRead,
		"POST /v1/jobs/{job_id}/cancel":                                  domain.ScopeJobsWrite,
		"POST /v1/batches":                                               domain.ScopeJobsWrite,
		"GET /v1/batches/{batch_id}":                                     domain.ScopeJobsRead,
		"GET /v1/usage":                                                  domain.ScopeUsageRead,
		"GET /v1/webhook-endpoints":                                      domain.ScopeWebhooksRead,
		"POST /v1/webhook-endpoints":                                     domain.ScopeWebhooksWrite,
		"GET /v1/webhook-endpoints/{webhook_endpoint_id}":                domain.ScopeWebhooksRead,
		"DELETE /v1/webhook-endpoints/{webhook_endpoint_id}":             domain.ScopeWebhooksWrite,
		"POST /v1/webhook-endpoints/{webhook_endpoint_id}/test":          domain.ScopeWebhooksWrite,
		"POST /v1/webhook-endpoints/{webhook_endpoint_id}/rotate-secret": domain.ScopeWebhooksWrite,
		"GET /v1/webhook-endpoints/{webhook_endpoint_id}/deliveries":     domain.ScopeWebhooksRead,
		"POST /v1/webhook-endpoints/{webhook_endpoint_id}/deliveries/{delivery_id}/retry": domain.ScopeWebhooksWrite,
		"GET /v1/events":            domain.ScopeWebhooksRead,
		"GET /v1/events/{event_id}": domain.ScopeWebhooksRead,
	}
	// Open to every key, or to none.
	unscoped := []string{"GET /v1/operations", "GET /v1", "GET /v1/", "GET /v1/openapi.json"}
	lacking := map[string]string{}
	for _, scope := range domain.AllScopes {
		lacking[scope] = b.newKey(func(k *domain.NewKey) {
			k.Scopes = slices.DeleteFunc(slices.Clone(domain.AllScopes), func(s string) bool { return s == scope })
		})
	}
	seen := 0
	for path, item := range openapitest.New(t).Doc().Paths.Map() {
		for method := range item.Operations() {
			route := method + " " + path
			if !strings.HasPrefix(path, "/v1") || slices.Contains(unscoped, route) {
				continue
			}
			scope, ok := scopes[route]
			require.True(t, ok, "%s: which scope does it need?", route)
			seen++
			t.Run(route, func(t *testing.T) {
				r := req{method: method, path: ids.Replace(path), key: lacking[scope]}
				if method == "POST" {
					r.idem, r.body = "scope-"+route, map[string]any{}
				}
				got := b.do(r)
				require.Equal(t, 403, got.status, string(got.body))
				e := got.json(t)["error"].(map[string]any)
				require.Equal(t, domain.CodeInsufficientScope, e["code"])
				require.Equal(t, map[string]any{"required_scope": scope}, e["details"])
			})
		}
	}
	require.Equal(t, len(scopes), seen, "every route the table names is in the document")
}
