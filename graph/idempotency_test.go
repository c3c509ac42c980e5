package graph_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/domain"
)

// TestIdempotencyKeysAreSharedWithREST: a key used through one door replays through
// the other — the same answer, no second effect — and a different request under it is
// refused.
func TestIdempotencyKeysAreSharedWithREST(t *testing.T) {
	t.Parallel()
	b := setup(t)
	f := b.uploadREST(b.liveA, "pic.png", pngBytes(t, 20, 10))
	const createJob = `mutation($in: CreateJobInput!, $key: String) { createJob(input: $in, idempotencyKey: $key) { id state fileId operation creditsReserved } }`

	t.Run("RESTThenGraphQL", func(t *testing.T) {
		key := idem()
		st, job, _ := b.restKey("POST", "/v1/jobs", b.liveA, key, map[string]any{"file_id": f["id"], "operation": "inspect"})
		require.Equal(t, 202, st, job)
		r := b.gql(b.liveA, createJob, map[string]any{"key": key, "in": map[string]any{"fileId": f["id"], "operation": "inspect"}}).ok(t)
		require.Equal(t, job["id"], field(r, "createJob")["id"], "the same job, not a second one")
		require.Equal(t, true, r.Extensions["idempotentReplayed"])
		_, list := b.rest("GET", "/v1/jobs?limit=100", b.liveA, nil)
		n := 0
		for _, j := range list["data"].([]any) {
			if j.(map[string]any)["id"] == job["id"] {
				n++
			}
		}
		require.Equal(t, 1, n)

		// The same key with another request is a conflict, through GraphQL as through REST.
		r = b.gql(b.liveA, createJob, map[string]any{"key": key, "in": map[string]any{"fileId": f["id"], "operation": "inspect", "options": map[string]any{}}})
		st, body, _ := b.restKey("POST", "/v1/jobs", b.liveA, key, map[string]any{"file_id": f["id"], "operation": "inspect", "options": map[string]any{}})
		require.Equal(t, 409, st)
		require.Equal(t, body["error"].(map[string]any)["code"], r.code(t))
		require.Equal(t, domain.CodeIdempotencyConflict, r.code(t))
		require.Equal(t, "idempotencyKey", r.Errors[0].Extensions["param"])
	})

	t.Run("GraphQLThenREST", func(t *testing.T) {
		key := idem()
		in := map[string]any{"url": "https://hooks.example.com/idem", "enabledEvents": []string{"job.succeeded"}}
		r := b.gql(b.liveA, `mutation($in: CreateWebhookEndpointInput!, $key: String) { createWebhookEndpoint(input: $in, idempotencyKey: $key) { secret webhookEndpoint { id } } }`,
			map[string]any{"in": in, "key": key}).ok(t)
		ep := field(r, "createWebhookEndpoint")
		st, body, h := b.restKey("POST", "/v1/webhook-endpoints", b.liveA, key, map[string]any{"url": in["url"], "enabled_events": in["enabledEvents"]})
		require.Equal(t, 201, st, body)
		require.Equal(t, "true", h.Get("Idempotent-Replayed"))
		require.Equal(t, ep["webhookEndpoint"].(map[string]any)["id"], body["id"])
		require.Equal(t, ep["secret"], body["secret"], "the answer stored is the one given")
		_, list := b.rest("GET", "/v1/webhook-endpoints", b.liveA, nil)
		require.Len(t, list["data"], 1)
	})

	t.Run("AuthorizedBeforeReplay", func(t *testing.T) {
		key := idem()
		st, job, _ := b.restKey("POST", "/v1/jobs", b.liveA, key, map[string]any{"file_id": f["id"], "operation": "inspect"})
		require.Equal(t, 202, st, job)
		// Another organization using the same key string gets nothing of A's.
		r := b.gql(b.keyB, createJob, map[string]any{"key": key, "in": map[string]any{"fileId": f["id"], "operation": "inspect"}})
		require.Equal(t, domain.CodeNotFound, r.code(t))
		require.NotContains(t, string(r.raw), job["id"].(string))
		// A key of A without jobs:write gets nothing either.
		narrow := b.key(func(nk *domain.NewKey) { nk.Scopes = []string{domain.ScopeJobsRead} })
		r = b.gql(narrow, createJob, map[string]any{"key": key, "in": map[string]any{"fileId": f["id"], "operation": "inspect"}})
		require.Equal(t, domain.CodeInsufficientScope, r.code(t))
	})

	t.Run("BadKey", func(t *testing.T) {
		r := b.gql(b.liveA, createJob, map[string]any{"key": "", "in": map[string]any{"fileId": f["id"], "operation": "inspect"}})
		require.Equal(t, domain.CodeInvalidRequest, r.code(t))
		require.Equal(t, "idempotencyKey", r.Errors[0].Extensions["param"])
	})
}

// TestIdempotencyKeysStayInTheirScope: through GraphQL as through REST, the key is
// scoped to (organization, environment, project, action), and to the API key for an
// answer holding a credential: the test key, or a key of another project, sending the
// live key's idempotencyKey gets a new endpoint and a new session, never the live
// secret or PUT URL.
func TestIdempotencyKeysStayInTheirScope(t *testing.T) {
	t.Parallel()
	b := setup(t)
	prj, err := b.svc.Organizations.CreateProject(context.Background(), b.orgA.Organization.ID, "b")
	require.NoError(t, err)
	keyB := b.key(func(nk *domain.NewKey) { nk.ProjectID, nk.AllowedProjects = prj.ID, []string{prj.ID} })
	const createHook = `mutation($in: CreateWebhookEndpointInput!, $key: String) { createWebhookEndpoint(input: $in, idempotencyKey: $key) { secret webhookEndpoint { id projectId } } }`
	const createUpload = `mutation($in: CreateUploadInput!, $key: String) { createUpload(input: $in, idempotencyKey: $key) { upload { id projectId uploadUrl } } }`
	hookKey, uploadKey := idem(), idem()
	hookIn := map[string]any{"url": "https://hooks.example.com/scope", "enabledEvents": []string{"job.succeeded"}}
	uploadIn := map[string]any{"filename": "a.txt", "byteSize": 5}

	// The live key's answers, made through REST.
	st, hook, _ := b.restKey("POST", "/v1/webhook-endpoints", b.liveA, hookKey, map[string]any{"url": hookIn["url"], "enabled_events": hookIn["enabledEvents"]})
	require.Equal(t, 201, st, hook)
	st, upload, _ := b.restKey("POST", "/v1/uploads", b.liveA, uploadKey, map[string]any{"filename": "a.txt", "byte_size": 5})
	require.Equal(t, 201, st, upload)

	for name, c := range map[string]struct{ key, project string }{
		"TestKey":                 {b.testA, b.orgA.Project.ID},
		"KeyRestrictedToProjectB": {keyB, prj.ID},
	} {
		t.Run(name, func(t *testing.T) {
			r := b.gql(c.key, createHook, map[string]any{"in": hookIn, "key": hookKey}).ok(t)
			require.Nil(t, r.Extensions["idempotentReplayed"])
			ep := field(r, "createWebhookEndpoint")
			require.NotEqual(t, hook["id"], ep["webhookEndpoint"].(map[string]any)["id"])
			require.NotEqual(t, hook["secret"], ep["secret"])
			require.Equal(t, c.project, ep["webhookEndpoint"].(map[string]any)["projectId"])

			r = b.gql(c.key, createUpload, map[string]any{"in": uploadIn, "key": uploadKey}).ok(t)
			require.Nil(t, r.Extensions["idempotentReplayed"])
			u := field(r, "createUpload")["upload"].(map[string]any)
			require.NotEqual(t, upload["id"], u["id"])
			require.NotEqual(t, upload["upload_url"], u["uploadUrl"])
			require.Equal(t, c.project, u["projectId"])

			// Its own answers replay to it, through either door.
			again := b.gql(c.key, createUpload, map[string]any{"in": uploadIn, "key": uploadKey}).ok(t)
			require.Equal(t, true, again.Extensions["idempotentReplayed"])
			require.Equal(t, u["id"], field(again, "createUpload")["upload"].(map[string]any)["id"])
			st, body, h := b.restKey("POST", "/v1/webhook-endpoints", c.key, hookKey, map[string]any{"url": hookIn["url"], "enabled_events": hookIn["enabledEvents"]})
			require.Equal(t, 201, st, body)
			require.Equal(t, "true", h.Get("Idempotent-Replayed"))
			require.Equal(t, ep["secret"], body["secret"])
		})
	}
}
