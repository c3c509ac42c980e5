package graph_test

import (
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/require"
)

const artifactFields = `id createdAt fileId jobId step name mimeType byteSize sha256`

const jobFields = `id createdAt projectId fileId batchId operation preset options state progress attempts
	creditsReserved creditsCharged pricing { rule pages estimated lines { step operation price { credits per } units credits } credits }
	artifacts { ` + artifactFields + ` } artifactCount error { code message } startedAt finishedAt traceId`

const fileFields = `id createdAt projectId filename status byteSize declaredMimeType detectedFormat { extension mimeType }
	pages sha256 duplicateOf findings { code message } artifacts { ` + artifactFields + ` } expiresAt`

// jsonFields are GraphQL JSON values: compared whole, their keys as REST has them.
var jsonFields = map[string]bool{"options": true, "data": true, "upload_headers": true}

// restLinks are REST's links to other REST resources; GraphQL reaches them as fields
// (a job's artifacts_url is its artifactsConnection).
var restLinks = map[string]bool{"artifacts_url": true}

func camel(s string) string {
	var b strings.Builder
	up := false
	for _, r := range s {
		switch {
		case r == '_':
			up = true
		case up:
			b.WriteRune(unicode.ToUpper(r))
			up = false
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// sameObject checks that every field of a REST object reads the same through GraphQL.
func sameObject(t *testing.T, path string, rest, gql map[string]any) {
	t.Helper()
	for k, rv := range rest {
		if k == "object" || restLinks[k] {
			continue
		}
		gv, ok := gql[camel(k)]
		require.True(t, ok, "%s.%s: not read through GraphQL", path, k)
		sameValue(t, path+"."+k, jsonFields[k], rv, gv)
	}
}

func sameValue(t *testing.T, path string, whole bool, rv, gv any) {
	t.Helper()
	switch r := rv.(type) {
	case map[string]any:
		if whole {
			require.Equal(t, r, gv, path)
			return
		}
		g, ok := gv.(map[string]any)
		require.True(t, ok, "%s: %v is not an object", path, gv)
		sameObject(t, path, r, g)
	case []any:
		g, ok := gv.([]any)
		require.True(t, ok, "%s: %v is not a list", path, gv)
		require.Len(t, g, len(r), path)
		for i := range r {
			sameValue(t, path, whole, r[i], g[i])
		}
	default:
		require.Equal(t, rv, gv, path)
	}
}

func TestRESTObjectsReadTheSameThroughGraphQL(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{worker: true})
	f := b.uploadREST(b.liveA, "pic.png", pngBytes(t, 40, 30))
	st, j := b.rest("POST", "/v1/jobs", b.liveA, map[string]any{"file_id": f["id"], "operation": "inspect"})
	require.Equal(t, 202, st, j)
	done := b.waitJob(b.liveA, j["id"].(string))
	require.Equal(t, "succeeded", done["state"], done)
	require.NotEmpty(t, done["artifacts"], "an inspect job stores its report")

	_, restJob := b.rest("GET", "/v1/jobs/"+j["id"].(string), b.liveA, nil)
	_, restFile := b.rest("GET", "/v1/files/"+f["id"].(string), b.liveA, nil)
	r := b.gql(b.liveA, `query($j: ID!, $f: ID!) { job(id: $j) { `+jobFields+` file { `+fileFields+` } } file(id: $f) { `+fileFields+` } }`,
		map[string]any{"j": j["id"], "f": f["id"]}).ok(t)
	gj := r.Data["job"].(map[string]any)
	sameObject(t, "job", restJob, gj)
	sameObject(t, "file", restFile, r.Data["file"].(map[string]any))
	sameObject(t, "job.file", restFile, gj["file"].(map[string]any))

	// The lists read the same as REST's lists.
	_, restJobs := b.rest("GET", "/v1/jobs?limit=5", b.liveA, nil)
	_, restFiles := b.rest("GET", "/v1/files?limit=5", b.liveA, nil)
	r = b.gql(b.liveA, `{ jobs(first: 5) { nodes { `+jobFields+` } pageInfo { hasNextPage endCursor } }
		files(first: 5) { nodes { `+fileFields+` } pageInfo { hasNextPage } } }`, nil).ok(t)
	sameValue(t, "jobs", false, restJobs["data"], r.Data["jobs"].(map[string]any)["nodes"])
	sameValue(t, "files", false, restFiles["data"], r.Data["files"].(map[string]any)["nodes"])

	// History, the upload session, usage and operations.
	_, hist := b.rest("GET", "/v1/files/"+f["id"].(string)+"/history", b.liveA, nil)
	r = b.gql(b.liveA, `query($f: ID!) { file(id: $f) { history { id createdAt type jobId summary data } } }`, map[string]any{"f": f["id"]}).ok(t)
	sameValue(t, "history", false, hist["data"], r.Data["file"].(map[string]any)["history"])

	_, usage := b.rest("GET", "/v1/usage", b.liveA, nil)
	r = b.gql(b.liveA, `{ usage { projectId period { start end } credits { balance reserved used } storage { bytes files } egress { bytes } } }`, nil).ok(t)
	sameObject(t, "usage", usage, r.Data["usage"].(map[string]any))

	_, ops := b.rest("GET", "/v1/operations", b.liveA, nil)
	r = b.gql(b.liveA, `{ operations { name kind description available engine price { credits per } priceRule inputFormats optionsSchema
		steps { name operation options when price { credits per } } } }`, nil).ok(t)
	gops := r.Data["operations"].([]any)
	require.Len(t, gops, len(ops["data"].([]any)))
	for i, o := range ops["data"].([]any) {
		rop, gop := o.(map[string]any), gops[i].(map[string]any)
		require.Equal(t, rop["options_schema"], gop["optionsSchema"], rop["name"])
		delete(rop, "options_schema")
		if rop["steps"] == nil {
			rop["steps"] = []any{}
		}
		sameObject(t, "operation", rop, gop)
	}

	// The viewer is the key, masked, with its organization and project.
	r = b.gql(b.liveA, `{ viewer { apiKey { id masked environment projectId scopes } organization { id name } project { id name } } }`, nil).ok(t)
	v := r.Data["viewer"].(map[string]any)
	key := v["apiKey"].(map[string]any)
	require.Equal(t, b.orgA.LiveKey.ID, key["id"])
	require.True(t, strings.HasPrefix(b.liveA, strings.TrimSuffix(key["masked"].(string), "…")))
	require.Less(t, len(key["masked"].(string)), len(b.liveA)/2, "the secret is never shown")
	require.Equal(t, "live", key["environment"])
	require.Equal(t, b.orgA.Organization.ID, v["organization"].(map[string]any)["id"])
	require.Equal(t, b.orgA.Project.ID, v["project"].(map[string]any)["id"])
}
