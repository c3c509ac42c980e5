package graph_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/domain"
)

// TestJobsOfAFileAndABatch: the same filters as GET /v1/jobs?file_id=&batch_id=.
func TestJobsOfAFileAndABatch(t *testing.T) {
	t.Parallel()
	b := setup(t)
	f1 := b.uploadREST(b.liveA, "a.png", pngBytes(t, 4, 4))["id"].(string)
	f2 := b.uploadREST(b.liveA, "b.png", pngBytes(t, 5, 4))["id"].(string)
	const create = `mutation($f: ID!) { createJob(input: {fileId: $f, operation: "inspect"}) { id } }`
	for _, f := range []string{f1, f1, f2} {
		b.gql(b.liveA, create, map[string]any{"f": f}).ok(t)
	}
	batch := field(b.gql(b.liveA, `mutation($fs: [ID!]!) { createBatch(input: {fileIds: $fs, operation: "inspect"}) { id items { jobId } } }`,
		map[string]any{"fs": []string{f1, f2}}).ok(t), "createBatch")

	ids := func(vars map[string]any) []string {
		t.Helper()
		r := b.gql(b.liveA, `query($f: ID, $b: ID) { jobs(fileId: $f, batchId: $b) { nodes { id fileId batchId } } }`, vars).ok(t)
		var out []string
		for _, n := range field(r, "jobs")["nodes"].([]any) {
			out = append(out, n.(map[string]any)["id"].(string))
		}
		return out
	}
	_, rest := b.rest("GET", "/v1/jobs?file_id="+f1, b.liveA, nil)
	var restIDs []string
	for _, j := range rest["data"].([]any) {
		restIDs = append(restIDs, j.(map[string]any)["id"].(string))
	}
	require.Len(t, restIDs, 3)
	require.Equal(t, restIDs, ids(map[string]any{"f": f1}), "as REST lists them")
	var members []string
	for _, it := range batch["items"].([]any) {
		members = append(members, it.(map[string]any)["jobId"].(string))
	}
	require.ElementsMatch(t, members, ids(map[string]any{"b": batch["id"]}))

	r := b.gql(b.liveA, `{ jobs(fileId: "nope") { nodes { id } } }`, nil)
	require.Equal(t, domain.CodeInvalidRequest, r.code(t))
}

// TestJobArtifactsConnection: a job's artifacts a page at a time, in the order it made
// them, with their count; the job itself carries the first ten.
func TestJobArtifactsConnection(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	f := b.uploadREST(b.liveA, "a.png", pngBytes(t, 4, 4))["id"].(string)
	id := field(b.gql(b.liveA, `mutation($f: ID!) { createJob(input: {fileId: $f, operation: "inspect"}) { id } }`,
		map[string]any{"f": f}).ok(t), "createJob")["id"].(string)
	j, err := b.svc.Jobs.ClaimJob(ctx, id)
	require.NoError(t, err)
	var arts []*domain.Artifact
	for i := range 13 {
		arts = append(arts, &domain.Artifact{ID: domain.NewID(domain.PrefixArtifact), OrganizationID: j.OrganizationID, FileID: f,
			JobID: id, Name: fmt.Sprintf("page-%02d.png", i+1), MIMEType: "image/png", ByteSize: 1, SHA256: strings.Repeat("0", 64),
			StorageKey: "x/" + id, CreatedAt: j.CreatedAt})
	}
	require.NoError(t, b.svc.Jobs.SettleJob(ctx, j, arts, 1))

	const q = `query($id: ID!, $after: String) { job(id: $id) { artifactCount artifacts { name }
		pricing { rule pages estimated credits lines { step operation price { credits per } units credits } }
		artifactsConnection(first: 5, after: $after) { nodes { name } edges { cursor node { id } } pageInfo { hasNextPage endCursor } } } }`
	var names []string
	var after any
	for range 5 {
		job := field(b.gql(b.liveA, q, map[string]any{"id": id, "after": after}).ok(t), "job")
		require.EqualValues(t, 13, job["artifactCount"])
		require.Len(t, job["artifacts"], 10)
		require.Equal(t, map[string]any{"rule": "inspect: 1 credit per file", "pages": 1.0, "estimated": false, "credits": 1.0,
			"lines": []any{map[string]any{"step": "inspect", "operation": "inspect", "price": map[string]any{"credits": 1.0, "per": "file"},
				"units": 1.0, "credits": 1.0}}}, job["pricing"])
		conn := job["artifactsConnection"].(map[string]any)
		for _, n := range conn["nodes"].([]any) {
			names = append(names, n.(map[string]any)["name"].(string))
		}
		pi := conn["pageInfo"].(map[string]any)
		if !pi["hasNextPage"].(bool) {
			break
		}
		after = pi["endCursor"]
	}
	require.Len(t, names, 13)
	for i, n := range names {
		require.Equal(t, fmt.Sprintf("page-%02d.png", i+1), n)
	}
}

// TestPresetNeedsEveryStepAllowedThroughGraphQL: the same rule as REST's.
func TestPresetNeedsEveryStepAllowedThroughGraphQL(t *testing.T) {
	t.Parallel()
	b := setup(t)
	f := b.uploadREST(b.liveA, "a.png", pngBytes(t, 4, 4))["id"].(string)
	onlyInspect := b.key(func(k *domain.NewKey) { k.AllowedOperations = []string{"inspect"} })
	r := b.gql(onlyInspect, `mutation($f: ID!) { createJob(input: {fileId: $f, preset: "inspect"}) { id } }`, map[string]any{"f": f})
	require.Equal(t, domain.CodeOperationNotAllowed, r.code(t))
}
