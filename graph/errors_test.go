package graph_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/graph"
)

func TestErrorsCarryTheRESTCodes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	f := b.uploadREST(b.liveA, "pic.png", pngBytes(t, 20, 10))
	fileID := f["id"].(string)
	narrow := b.key(func(nk *domain.NewKey) { nk.Scopes = []string{domain.ScopeJobsRead} })

	for _, tc := range []struct {
		name, key, query string
		vars             map[string]any
		code, param      string
		restMethod       string
		restPath         string
		restBody         any
		renamed          bool // the message names GraphQL's argument, not REST's parameter
	}{
		{name: "NotFound", key: b.liveA, query: `{ job(id: "job_01JAAAAAAAAAAAAAAAAAAAAAAA") { id } }`, code: domain.CodeNotFound,
			restMethod: "GET", restPath: "/v1/jobs/job_01JAAAAAAAAAAAAAAAAAAAAAAA"},
		{name: "InvalidParam", key: b.liveA, query: `mutation { createJob(input: {fileId: "nope", operation: "inspect"}) { id } }`,
			code: domain.CodeInvalidRequest, param: "fileId",
			restMethod: "POST", restPath: "/v1/jobs", restBody: map[string]any{"file_id": "nope", "operation": "inspect"}},
		{name: "UnsupportedOperation", key: b.liveA, query: `mutation($f: ID!) { createJob(input: {fileId: $f, operation: "no.such"}) { id } }`,
			vars: map[string]any{"f": fileID}, code: domain.CodeUnsupportedOperation, param: "operation",
			restMethod: "POST", restPath: "/v1/jobs", restBody: map[string]any{"file_id": fileID, "operation": "no.such"}},
		{name: "InsufficientScope", key: narrow, query: `query($f: ID!) { file(id: $f) { id } }`, vars: map[string]any{"f": fileID},
			code: domain.CodeInsufficientScope, restMethod: "GET", restPath: "/v1/files/" + fileID},
		{name: "EnvironmentMismatch", key: b.testA, query: `query($f: ID!) { file(id: $f) { id } }`, vars: map[string]any{"f": fileID},
			code: domain.CodeEnvironmentMismatch, restMethod: "GET", restPath: "/v1/files/" + fileID},
		{name: "BadPageSize", key: b.liveA, query: `{ jobs(first: 500) { nodes { id } } }`, code: domain.CodeInvalidRequest, param: "first",
			restMethod: "GET", restPath: "/v1/jobs?limit=500", renamed: true},
		{name: "BadState", key: b.liveA, query: `{ jobs(state: nope) { nodes { id } } }`, code: domain.CodeInvalidRequest},
		{name: "BadCursor", key: b.liveA, query: `{ jobs(after: "zzz") { nodes { id } } }`, code: domain.CodeInvalidRequest, param: "after"},
		{name: "Syntax", key: b.liveA, query: `{ jobs { `, code: domain.CodeInvalidRequest},
		{name: "UnknownField", key: b.liveA, query: `{ nothing }`, code: domain.CodeInvalidRequest},
		{name: "OptionsNotValid", key: b.liveA, query: `mutation($f: ID!) { createJob(input: {fileId: $f, operation: "inspect", options: {bogus: 1}}) { id } }`,
			vars: map[string]any{"f": fileID}, code: "", restMethod: "POST", restPath: "/v1/jobs",
			restBody: map[string]any{"file_id": fileID, "operation": "inspect", "options": map[string]any{"bogus": 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := b.gql(tc.key, tc.query, tc.vars)
			require.Nil(t, r.Data[firstField(tc.query)], "nothing is answered with the error: %s", r.raw)
			code := r.code(t)
			require.NotEmpty(t, r.Errors[0].Extensions["requestId"], "every error carries the request id")
			require.Regexp(t, `^req_`, r.Errors[0].Extensions["requestId"])
			if tc.restPath != "" {
				_, body := b.rest(tc.restMethod, tc.restPath, tc.key, tc.restBody)
				restErr := body["error"].(map[string]any)
				require.Equal(t, restErr["code"], code, "the REST code: %s", r.raw)
				if !tc.renamed {
					require.Equal(t, restErr["message"], r.Errors[0].Message)
				}
			}
			if tc.code != "" {
				require.Equal(t, tc.code, code, string(r.raw))
			}
			if tc.param != "" {
				require.Equal(t, tc.param, r.Errors[0].Extensions["param"], string(r.raw))
			}
		})
	}

	t.Run("LimitsSayWhich", func(t *testing.T) {
		deep := `{ jobs { nodes { file { artifacts { id } } } } }`
		small := setup(t, setupOpts{gcfg: func(c *graph.ServerConfig) { c.MaxDepth = 4 }})
		r := small.gql(small.liveA, deep, nil)
		require.Equal(t, domain.CodeInvalidRequest, r.code(t))
		require.Contains(t, r.Errors[0].Message, "depth limit is 4")
		require.Equal(t, "depth", r.Errors[0].Extensions["details"].(map[string]any)["limit"])

		r = b.gql(b.liveA, `{ jobs(first: 100) { nodes { `+jobFields+` file { `+fileFields+` history { id data } } } } }`, nil)
		require.Equal(t, domain.CodeInvalidRequest, r.code(t), string(r.raw))
		require.Contains(t, r.Errors[0].Message, "complexity limit")
		require.Equal(t, "complexity", r.Errors[0].Extensions["details"].(map[string]any)["limit"])

		// Introspection's standard query is deep, and allowed.
		r = b.gql(b.liveA, introspectionQuery, nil).ok(t)
		require.NotEmpty(t, r.Data["__schema"])
	})
}

func firstField(q string) string {
	q = q[strings.Index(q, "{")+1:]
	q = strings.TrimSpace(q)
	end := strings.IndexAny(q, "( {")
	if end < 0 {
		return q
	}
	return q[:end]
}

const introspectionQuery = `query IntrospectionQuery { __schema { queryType { name } mutationType { name }
	types { ...FullType } directives { name locations args { ...InputValue } } } }
fragment FullType on __Type { kind name fields(includeDeprecated: true) { name args { ...InputValue } type { ...TypeRef } }
	inputFields { ...InputValue } interfaces { ...TypeRef } enumValues(includeDeprecated: true) { name } possibleTypes { ...TypeRef } }
fragment InputValue on __InputValue { name type { ...TypeRef } defaultValue }
fragment TypeRef on __Type { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name } } } } } }`

func TestNoOrBadCredentialsGetNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	revoked := b.key(nil)
	require.NoError(t, b.svc.Keys.RevokeKey(context.Background(), keyID(t, b, revoked)))
	for _, tc := range []struct {
		name, key, path, code string
		status                int
	}{
		{"NoKey", "", "/graphql", domain.CodeMissingCredentials, 401},
		{"Malformed", "fm_live_nope", "/graphql", domain.CodeInvalidAPIKey, 401},
		{"UnknownKey", "fm_live_abcdefghijklmnopqrstuvwxyz234567", "/graphql", domain.CodeInvalidAPIKey, 401},
		{"Revoked", revoked, "/graphql", domain.CodeRevokedAPIKey, 401},
		{"KeyInQuery", b.liveA, "/graphql?api_key=" + url.QueryEscape(b.liveA), domain.CodeAPIKeyInQuery, 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Even the schema is not answered.
			body, _ := json.Marshal(map[string]any{"query": `{ __schema { types { name } } viewer { apiKey { id } } }`})
			req, err := http.NewRequest("POST", b.srv.URL+tc.path, strings.NewReader(string(body)))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			if tc.key != "" {
				req.Header.Set("Authorization", "Bearer "+tc.key)
			}
			r := b.send(req)
			require.Equal(t, tc.status, r.status)
			require.Nil(t, r.Data)
			require.Len(t, r.Errors, 1)
			require.Equal(t, tc.code, r.code(t))
			require.NotContains(t, string(r.raw), "__Schema")
		})
	}
}

func TestAnotherOrganizationReadsNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	f := b.uploadREST(b.liveA, "pic.png", pngBytes(t, 20, 10))
	st, j := b.rest("POST", "/v1/jobs", b.liveA, map[string]any{"file_id": f["id"], "operation": "inspect"})
	require.Equal(t, 202, st, j)
	vars := map[string]any{"f": f["id"], "j": j["id"]}

	r := b.gql(b.keyB, `query($f: ID!) { file(id: $f) { id } }`, vars)
	require.Equal(t, domain.CodeNotFound, r.code(t))
	require.Nil(t, r.Data["file"])
	r = b.gql(b.keyB, `query($j: ID!) { job(id: $j) { id } }`, vars)
	require.Equal(t, domain.CodeNotFound, r.code(t))
	r = b.gql(b.keyB, `{ jobs { nodes { id } } files { nodes { id } } }`, nil).ok(t)
	require.Empty(t, field(r, "jobs")["nodes"])
	require.Empty(t, field(r, "files")["nodes"])
	r = b.gql(b.keyB, `query($j: ID!) { cancelJob(id: $j) { id } }`, vars)
	require.Equal(t, domain.CodeInvalidRequest, r.code(t), "a mutation is not a query")
	r = b.gql(b.keyB, `mutation($j: ID!) { cancelJob(id: $j) { id } }`, vars)
	require.Equal(t, domain.CodeNotFound, r.code(t))
	r = b.gql(b.keyB, `mutation($f: ID!) { createDownloadUrl(fileId: $f) { url } }`, vars)
	require.Equal(t, domain.CodeNotFound, r.code(t))
	require.NotContains(t, string(r.raw), "http")
	r = b.gql(b.keyB, `mutation($f: ID!) { createJob(input: {fileId: $f, operation: "inspect"}) { id } }`, vars)
	require.Equal(t, domain.CodeNotFound, r.code(t))
	// A cursor of organization A's list is refused in B's.
	r = b.gql(b.liveA, `{ jobs(first: 1) { pageInfo { endCursor } } }`, nil).ok(t)
	cursor := field(r, "jobs")["pageInfo"].(map[string]any)["endCursor"]
	r = b.gql(b.keyB, `query($c: String) { jobs(after: $c) { nodes { id } } }`, map[string]any{"c": cursor})
	require.Equal(t, domain.CodeInvalidRequest, r.code(t))
	require.Equal(t, "after", r.Errors[0].Extensions["param"])
}

func TestTransportsAndPersistedQueries(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{cfg: func(c *domain.Config) { c.DefaultRateLimit = 1000 }})

	// GET serves queries, never mutations.
	get := func(q string, ext string) gqlResponse {
		u := b.srv.URL + "/graphql?query=" + url.QueryEscape(q)
		if ext != "" {
			u = b.srv.URL + "/graphql?extensions=" + url.QueryEscape(ext)
			if q != "" {
				u += "&query=" + url.QueryEscape(q)
			}
		}
		req, err := http.NewRequest("GET", u, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+b.liveA)
		return b.send(req)
	}
	r := get(`{ viewer { apiKey { id } } }`, "").ok(t)
	require.Equal(t, b.orgA.LiveKey.ID, field(r, "viewer")["apiKey"].(map[string]any)["id"])
	r = get(`mutation { deleteFile(id: "file_01JAAAAAAAAAAAAAAAAAAAAAAA") { id } }`, "")
	require.NotEmpty(t, r.Errors)
	require.Nil(t, r.Data)

	// Automatic persisted queries: the hash alone is unknown at first, then served.
	q := `{ viewer { organization { name } } }`
	sum := sha256.Sum256([]byte(q))
	ext := `{"persistedQuery":{"version":1,"sha256Hash":"` + hex.EncodeToString(sum[:]) + `"}}`
	r = get("", ext)
	require.Equal(t, "PERSISTED_QUERY_NOT_FOUND", r.code(t))
	get(q, ext).ok(t)
	r = get("", ext).ok(t)
	require.Equal(t, "org-a", field(r, "viewer")["organization"].(map[string]any)["name"])

	// A query longer than 64 KiB is answered, not remembered: its client sends it whole
	// each time, and the process's memory of queries stays bounded.
	long := "# " + strings.Repeat("x", 64<<10) + "\n{ viewer { organization { name } } }"
	longSum := sha256.Sum256([]byte(long))
	post := func(q string) gqlResponse {
		body, err := json.Marshal(map[string]any{"query": q, "extensions": map[string]any{
			"persistedQuery": map[string]any{"version": 1, "sha256Hash": hex.EncodeToString(longSum[:])}}})
		require.NoError(t, err)
		return b.post(b.liveA, body, nil)
	}
	post(long).ok(t)
	require.Equal(t, "PERSISTED_QUERY_NOT_FOUND", post("").code(t))

	// Every answer carries the rate-limit headers of the key's bucket.
	require.NotEmpty(t, r.header.Get("X-RateLimit-Limit"))
	require.Regexp(t, `^req_`, r.header.Get("X-Request-Id"))
}

func TestRateLimitedPerKeyAcrossDoors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	key := b.key(func(nk *domain.NewKey) { nk.RateLimit = 3 })
	b.gql(key, `{ viewer { apiKey { id } } }`, nil).ok(t)
	st, _ := b.rest("GET", "/v1/jobs", key, nil)
	require.Equal(t, 200, st)
	b.gql(key, `{ viewer { apiKey { id } } }`, nil).ok(t)
	// The bucket of 3 is shared by both doors: the fourth request is refused.
	r := b.gql(key, `{ viewer { apiKey { id } } }`, nil)
	require.Equal(t, 429, r.status)
	require.Equal(t, domain.CodeRateLimited, r.code(t))
	require.NotEmpty(t, r.header.Get("Retry-After"))
	require.Nil(t, r.Data)
}
