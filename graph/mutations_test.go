package graph_test

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func field(r gqlResponse, name string) map[string]any {
	m, _ := r.Data[name].(map[string]any)
	return m
}

// TestEveryMutation runs every REST action through GraphQL and checks its effect
// through REST.
func TestEveryMutation(t *testing.T) {
	t.Parallel()
	b := setup(t) // no worker: jobs stay queued, so they can be cancelled
	content := pngBytes(t, 24, 16)

	// createUpload → PUT → completeFile.
	r := b.gql(b.liveA, `mutation($in: CreateUploadInput!) { createUpload(input: $in) {
		upload { id fileId state filename byteSize mimeType multipart uploadUrl uploadHeaders expiresAt }
		file { id status filename } } }`,
		map[string]any{"in": map[string]any{"filename": "a.png", "byteSize": len(content), "mimeType": "image/png"}}).ok(t)
	up := field(r, "createUpload")["upload"].(map[string]any)
	require.Equal(t, "open", up["state"])
	require.Equal(t, "awaiting_upload", field(r, "createUpload")["file"].(map[string]any)["status"])
	put(t, up["uploadUrl"].(string), up["uploadHeaders"].(map[string]any), content)
	r = b.gql(b.liveA, `mutation($id: ID!) { completeFile(id: $id) { id status sha256 detectedFormat { extension } } }`,
		map[string]any{"id": up["fileId"]}).ok(t)
	fileID := up["fileId"].(string)
	require.Equal(t, "ready", field(r, "completeFile")["status"])
	st, f := b.rest("GET", "/v1/files/"+fileID, b.liveA, nil)
	require.Equal(t, 200, st)
	require.Equal(t, "ready", f["status"])

	// createDownloadUrl hands out a URL that serves the bytes.
	r = b.gql(b.liveA, `mutation($id: ID!) { createDownloadUrl(fileId: $id, expiresIn: 120) { url expiresAt fileId artifactId } }`,
		map[string]any{"id": fileID}).ok(t)
	require.Equal(t, fileID, field(r, "createDownloadUrl")["fileId"])
	require.Nil(t, field(r, "createDownloadUrl")["artifactId"])

	// createJob, then cancelJob.
	r = b.gql(b.liveA, `mutation($in: CreateJobInput!) { createJob(input: $in) { id state operation options creditsReserved file { id } } }`,
		map[string]any{"in": map[string]any{"fileId": fileID, "operation": "inspect", "options": map[string]any{}}}).ok(t)
	job := field(r, "createJob")
	require.Equal(t, "queued", job["state"])
	require.Equal(t, fileID, job["file"].(map[string]any)["id"])
	r = b.gql(b.liveA, `mutation($id: ID!) { cancelJob(id: $id) { id state finishedAt } }`, map[string]any{"id": job["id"]}).ok(t)
	require.Equal(t, "cancelled", field(r, "cancelJob")["state"])
	_, rj := b.rest("GET", "/v1/jobs/"+job["id"].(string), b.liveA, nil)
	require.Equal(t, "cancelled", rj["state"])

	// createBatch over two files.
	second := b.uploadREST(b.liveA, "b.png", pngBytes(t, 25, 16))
	r = b.gql(b.liveA, `mutation($in: CreateBatchInput!) { createBatch(input: $in) { id state creditsEstimated
		counts { queued running succeeded failed cancelled } items { fileId jobId state job { id fileId state } } } }`,
		map[string]any{"in": map[string]any{"fileIds": []string{fileID, second["id"].(string)}, "operation": "inspect"}}).ok(t)
	batch := field(r, "createBatch")
	require.Equal(t, "processing", batch["state"])
	require.EqualValues(t, 2, batch["counts"].(map[string]any)["queued"])
	items := batch["items"].([]any)
	require.Equal(t, fileID, items[0].(map[string]any)["fileId"], "items in request order")
	require.Equal(t, items[0].(map[string]any)["jobId"], items[0].(map[string]any)["job"].(map[string]any)["id"])
	st, rb := b.rest("GET", "/v1/batches/"+batch["id"].(string), b.liveA, nil)
	require.Equal(t, 200, st)
	require.Len(t, rb["items"], 2)
	r = b.gql(b.liveA, `query($id: ID!) { batch(id: $id) { id items { jobId job { id state } } } }`, map[string]any{"id": batch["id"]}).ok(t)
	require.Len(t, field(r, "batch")["items"], 2)

	// A multipart session: remintParts, PUT the one part, completeParts.
	r = b.gql(b.liveA, `mutation($in: CreateUploadInput!) { createUpload(input: $in) { upload { id fileId multipart partSize parts { partNumber url byteOffset byteSize } } } }`,
		map[string]any{"in": map[string]any{"filename": "m.png", "byteSize": len(content), "multipart": true}}).ok(t)
	mp := field(r, "createUpload")["upload"].(map[string]any)
	require.Equal(t, true, mp["multipart"])
	r = b.gql(b.liveA, `mutation($id: ID!) { remintParts(uploadId: $id) { id parts { partNumber url } } }`, map[string]any{"id": mp["id"]}).ok(t)
	parts := field(r, "remintParts")["parts"].([]any)
	require.Len(t, parts, 1)
	etag := putPart(t, parts[0].(map[string]any)["url"].(string), content)
	r = b.gql(b.liveA, `mutation($id: ID!, $parts: [PartInput!]!) { completeParts(uploadId: $id, parts: $parts) { id status } }`,
		map[string]any{"id": mp["id"], "parts": []any{map[string]any{"partNumber": 1, "etag": etag}}}).ok(t)
	require.Equal(t, "ready", field(r, "completeParts")["status"])

	// abortUpload: the session's file is gone.
	r = b.gql(b.liveA, `mutation($in: CreateUploadInput!) { createUpload(input: $in) { upload { id fileId } } }`,
		map[string]any{"in": map[string]any{"filename": "x.bin", "byteSize": 10}}).ok(t)
	ab := field(r, "createUpload")["upload"].(map[string]any)
	r = b.gql(b.liveA, `mutation($id: ID!) { abortUpload(uploadId: $id) { id } }`, map[string]any{"id": ab["id"]}).ok(t)
	require.Equal(t, ab["id"], field(r, "abortUpload")["id"])
	st, _ = b.rest("GET", "/v1/files/"+ab["fileId"].(string), b.liveA, nil)
	require.Equal(t, 404, st)

	// deleteFile.
	r = b.gql(b.liveA, `mutation($id: ID!) { deleteFile(id: $id) { id } }`, map[string]any{"id": second["id"]}).ok(t)
	st, _ = b.rest("GET", "/v1/files/"+second["id"].(string), b.liveA, nil)
	require.Equal(t, 404, st)

	// Webhook endpoints: create (the secret shown once), list, delete.
	r = b.gql(b.liveA, `mutation($in: CreateWebhookEndpointInput!) { createWebhookEndpoint(input: $in) { secret webhookEndpoint { id url enabledEvents status projectId } } }`,
		map[string]any{"in": map[string]any{"url": "https://hooks.example.com/x", "enabledEvents": []string{"job.succeeded"}}}).ok(t)
	ep := field(r, "createWebhookEndpoint")
	require.Regexp(t, `^whsec_`, ep["secret"])
	epID := ep["webhookEndpoint"].(map[string]any)["id"].(string)
	_, list := b.rest("GET", "/v1/webhook-endpoints", b.liveA, nil)
	require.Len(t, list["data"], 1)
	r = b.gql(b.liveA, `query($id: ID!) { webhookEndpoint(id: $id) { id url } webhookEndpoints { nodes { id } } }`, map[string]any{"id": epID}).ok(t)
	require.Equal(t, epID, field(r, "webhookEndpoint")["id"])

	// testWebhookEndpoint queues a signed webhook.test event; its delivery is listed.
	r = b.gql(b.liveA, `mutation($id: ID!) { testWebhookEndpoint(id: $id) { id type data } }`, map[string]any{"id": epID}).ok(t)
	ev := field(r, "testWebhookEndpoint")
	require.Equal(t, "webhook.test", ev["type"])
	r = b.gql(b.liveA, `query($id: ID!) { webhookEndpoint(id: $id) { deliveries { nodes { id eventId eventType status attemptCount attempts { attempt } } } } }`,
		map[string]any{"id": epID}).ok(t)
	ds := field(r, "webhookEndpoint")["deliveries"].(map[string]any)["nodes"].([]any)
	require.Len(t, ds, 1)
	d := ds[0].(map[string]any)
	require.Equal(t, ev["id"], d["eventId"])
	_, restDs := b.rest("GET", "/v1/webhook-endpoints/"+epID+"/deliveries", b.liveA, nil)
	require.Equal(t, restDs["data"].([]any)[0].(map[string]any)["id"], d["id"])
	r = b.gql(b.liveA, `mutation($e: ID!, $d: ID!) { retryDelivery(webhookEndpointId: $e, deliveryId: $d) { id status } }`,
		map[string]any{"e": epID, "d": d["id"]}).ok(t)
	require.Equal(t, d["id"], field(r, "retryDelivery")["id"])
	require.Equal(t, "pending", field(r, "retryDelivery")["status"])

	// rotateWebhookSecret: a new secret, the old one still signing for a while.
	r = b.gql(b.liveA, `mutation($id: ID!) { rotateWebhookSecret(id: $id) { secret webhookEndpoint { id previousSecretExpiresAt } } }`,
		map[string]any{"id": epID}).ok(t)
	rot := field(r, "rotateWebhookSecret")
	require.Regexp(t, `^whsec_`, rot["secret"])
	require.NotEqual(t, ep["secret"], rot["secret"])
	require.NotNil(t, rot["webhookEndpoint"].(map[string]any)["previousSecretExpiresAt"])

	// The events webhooks carry, as GET /v1/events lists them.
	_, restEvents := b.rest("GET", "/v1/events?limit=5", b.liveA, nil)
	r = b.gql(b.liveA, `{ events(first: 5) { nodes { id type createdAt data } pageInfo { hasNextPage } } }`, nil).ok(t)
	sameValue(t, "events", false, restEvents["data"], field(r, "events")["nodes"])
	require.NotEmpty(t, restEvents["data"])
	evID := restEvents["data"].([]any)[0].(map[string]any)["id"]
	r = b.gql(b.liveA, `query($id: ID!) { event(id: $id) { id type } }`, map[string]any{"id": evID}).ok(t)
	require.Equal(t, evID, field(r, "event")["id"])

	r = b.gql(b.liveA, `mutation($id: ID!) { deleteWebhookEndpoint(id: $id) { id } }`, map[string]any{"id": epID}).ok(t)
	_, list = b.rest("GET", "/v1/webhook-endpoints", b.liveA, nil)
	require.Len(t, list["data"], 0)
}
