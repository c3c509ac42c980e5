package graph_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/graph"
	"github.com/filemill/filemill/jobs/ops/catalog"
)

// memoryOf runs f and returns what the process allocated meanwhile and how much its
// live heap grew, each measured after a collection. The server runs in this process,
// so this is the server's memory (and the client's reading of the answer).
func memoryOf(f func()) (allocated, retained int64) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	allocated = int64(after.TotalAlloc - before.TotalAlloc)
	runtime.GC()
	runtime.ReadMemStats(&after)
	return allocated, int64(after.HeapAlloc) - int64(before.HeapAlloc)
}

const mb = 1 << 20

// fullSchema is the introspection of the whole schema as a fragment on __Schema.
const fullSchema = `fragment F on __Schema { queryType { name } mutationType { name } subscriptionType { name }
	types { ...FullType } directives { name description locations args { ...InputValue } } }
fragment FullType on __Type { kind name description fields(includeDeprecated: true) { name description args { ...InputValue }
	type { ...TypeRef } isDeprecated deprecationReason } inputFields { ...InputValue } interfaces { ...TypeRef }
	enumValues(includeDeprecated: true) { name description isDeprecated deprecationReason } possibleTypes { ...TypeRef } }
fragment InputValue on __InputValue { name description type { ...TypeRef } defaultValue }
fragment TypeRef on __Type { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name } } } } }`

// aliases repeats one selection n times under aliases a0, a1, …
func aliases(n int, selection string) string {
	var q strings.Builder
	for i := range n {
		fmt.Fprintf(&q, "a%d: %s\n", i, selection)
	}
	return q.String()
}

// refusedCheaply sends a bomb and requires it refused with code, within a second, the
// process allocating and keeping less than 50 MB for it.
func refusedCheaply(t *testing.T, b *bundle, key, query string, vars map[string]any, code string) gqlResponse {
	t.Helper()
	var r gqlResponse
	var took time.Duration
	allocated, retained := memoryOf(func() {
		start := time.Now()
		r = b.gql(key, query, vars)
		took = time.Since(start)
	})
	t.Logf("%d bytes of query: answered %d bytes in %v; %.1f MB allocated, %.1f MB kept", len(query), len(r.raw), took,
		float64(allocated)/mb, float64(retained)/mb)
	require.NotEmpty(t, r.Errors, "not refused: %d bytes answered", len(r.raw))
	require.Equal(t, code, r.code(t), "%.500s", r.raw)
	require.Nil(t, r.Data, "nothing is answered beside the refusal")
	require.Less(t, took, time.Second, "refused at once")
	require.Less(t, allocated, int64(50*mb), "the server's memory does not move for it")
	require.Less(t, retained, int64(50*mb))
	return r
}

// TestIntrospectionAliasBombIsRefused: 1,000 aliases of the whole schema's
// introspection (24 KB of query) used to answer 25 MB after seconds and hundreds of
// megabytes; introspection now counts against the limits like any field.
func TestIntrospectionAliasBombIsRefused(t *testing.T) {
	b := setup(t)
	// A test key that may only read files can still introspect: it is as good as any.
	key := b.key(func(k *domain.NewKey) { k.Environment = domain.EnvTest; k.Scopes = []string{domain.ScopeFilesRead} })
	query := "{\n" + aliases(1000, "__schema { ...F }") + "}\n" + fullSchema
	refusedCheaply(t, b, key, query, nil, domain.CodeInvalidRequest)
}

// TestFileArtifactsAmplificationIsRefused: 40 aliases of a file's artifacts used to
// cost 1,880 of 15,000 whatever the file held, and answered every artifact 40 times.
func TestFileArtifactsAmplificationIsRefused(t *testing.T) {
	b := setup(t)
	fileID := b.fileWithArtifacts(3, 1000)
	query := "query($f: ID!) {\n" + aliases(40, "file(id: $f) { artifacts { id createdAt fileId jobId step name mimeType byteSize sha256 } }") + "}"
	refusedCheaply(t, b, b.liveA, query, map[string]any{"f": fileID}, domain.CodeInvalidRequest)
}

// fileWithArtifacts makes a file and jobs on it that made perJob artifacts each, as a
// split of a long PDF does, and returns the file's id.
func (b *bundle) fileWithArtifacts(jobs, perJob int) string {
	b.t.Helper()
	ctx := context.Background()
	f := b.uploadREST(b.liveA, "a.png", pngBytes(b.t, 4, 4))["id"].(string)
	for range jobs {
		st, job := b.rest("POST", "/v1/jobs", b.liveA, map[string]any{"file_id": f, "operation": "inspect"})
		require.Equal(b.t, 202, st, job)
		j, err := b.svc.Jobs.ClaimJob(ctx, job["id"].(string))
		require.NoError(b.t, err)
		arts := make([]*domain.Artifact, perJob)
		for i := range arts {
			arts[i] = &domain.Artifact{ID: domain.NewID(domain.PrefixArtifact), OrganizationID: j.OrganizationID, FileID: f,
				JobID: j.ID, Step: "split", Name: fmt.Sprintf("page-%04d.pdf", i+1), MIMEType: "application/pdf", ByteSize: 1234,
				SHA256: strings.Repeat("0", 64), StorageKey: "x/" + j.ID, CreatedAt: j.CreatedAt}
		}
		require.NoError(b.t, b.svc.Jobs.SettleJob(ctx, j, arts, 1))
	}
	return f
}

func registry(t testing.TB) *domain.Registry {
	t.Helper()
	reg, err := catalog.Registry()
	require.NoError(t, err)
	return reg
}

// TestListsCostTheirBound: a list costs the most items it can hold (or the page asked
// for) times its selection, not one item.
func TestListsCostTheirBound(t *testing.T) {
	t.Parallel()
	reg := registry(t)
	for _, tc := range []struct {
		query string
		vars  map[string]any
		cost  int
	}{
		{query: `{ __typename }`, cost: 1},
		{query: `{ files(first: 50) { nodes { id } } }`, cost: 1 + 50*(1+1)},
		{query: `query($n: Int) { files(first: $n) { nodes { id } } }`, vars: map[string]any{"n": 7}, cost: 1 + 7*(1+1)},
		{query: `{ files { nodes { id } pageInfo { hasNextPage } } }`, cost: 1 + domain.DefaultPageSize*(1+1+1+1)},
		{query: `{ file(id: "x") { artifacts { id } } }`, cost: 1 + 1 + domain.FileArtifactPreview},
		{query: `{ file(id: "x") { history { id data } } }`, cost: 1 + 1 + domain.FileHistoryPreview*(1+1+(8<<10)/graph.CostUnitBytes)},
		{query: `{ job(id: "x") { artifacts { id } artifactsConnection(first: 7) { nodes { id } } } }`,
			cost: 1 + (1 + domain.ArtifactPreview) + (1 + 7*(1+1))},
		{query: `{ batch(id: "x") { items { jobId } } }`, cost: 1 + 1 + domain.MaxBatchSize},
		{query: `{ events(first: 3) { nodes { id } } }`, cost: 1 + 3*(1+1)},
		{query: `{ webhookEndpoint(id: "x") { deliveries(first: 5) { nodes { attempts { attempt } } } } }`,
			cost: 1 + (1 + 5*(1+(1+domain.DeliveryAttemptsShown))) + 0},
		{query: `{ upload(id: "x") { parts { url } } }`, cost: 1 + 1 + domain.MaxPartCount*(1+(1<<10)/graph.CostUnitBytes)},
		{query: `{ operations { name } }`, cost: 1 + len(reg.List())},
		// Fragments count where they are spread, every time.
		{query: `{ a: file(id: "x") { ...A } b: file(id: "y") { ...A } } fragment A on File { artifacts { id } }`,
			cost: 2 * (1 + 1 + domain.FileArtifactPreview)},
		// Introspection counts what it describes.
		{query: `{ __type(name: "PageInfo") { name fields { name } } }`, cost: 1 + 1 + (1 + 2)},
		{query: `{ __type(name: "Nope") { name } }`, cost: 1},
		{query: `{ __type(name: "PageInfo") { fields { type { kind ofType { name } } } } }`,
			// hasNextPage: Boolean! (NON_NULL of Boolean), endCursor: String (no ofType).
			cost: 1 + (1 + (1 + 1 + (1 + 1)) + (1 + 1 + 1))},
	} {
		m, err := graph.Analyse(reg, tc.query, "", tc.vars)
		require.NoError(t, err, tc.query)
		require.Equal(t, tc.cost, m.Cost, tc.query)
	}
}

// TestEveryListHasItsBound: no list field of the schema counts as one item.
func TestEveryListHasItsBound(t *testing.T) {
	t.Parallel()
	require.Empty(t, graph.UnboundedLists(registry(t)))
}

// limit returns the limit an answer was refused for ("" when it was not).
func limit(r gqlResponse) string {
	if len(r.Errors) == 0 {
		return ""
	}
	d, _ := r.Errors[0].Extensions["details"].(map[string]any)
	l, _ := d["limit"].(string)
	return l
}

// TestIntrospectionCountsAgainstTheLimits: introspection is held to the depth and
// complexity limits like any field; the standard introspection query of graphql-js
// (GraphiQL, codegen tools) still fits them, and its answer fits its cost.
func TestIntrospectionCountsAgainstTheLimits(t *testing.T) {
	t.Parallel()
	b := setup(t)
	def := graph.DefaultServerConfig()

	standard, err := os.ReadFile("testdata/introspection.graphql")
	require.NoError(t, err)
	m, err := graph.Analyse(registry(t), string(standard), "", nil)
	require.NoError(t, err)
	r := b.gql(b.liveA, string(standard), nil).ok(t)
	t.Logf("graphql-js's introspection: cost %d, depth %d, %d bytes answered", m.Cost, m.Depth, len(r.raw))
	require.LessOrEqual(t, m.Depth, def.MaxDepth)
	require.LessOrEqual(t, m.Cost, def.MaxComplexity)
	require.LessOrEqual(t, len(r.raw), m.Cost*graph.CostUnitBytes, "the cost bounds the answer")

	// Ten copies of the whole schema: ten aliases, far over the complexity limit.
	r = b.gql(b.liveA, "{\n"+aliases(10, "__schema { ...F }")+"}\n"+fullSchema, nil)
	require.Equal(t, "complexity", limit(r), "%.300s", r.raw)
	require.Nil(t, r.Data)

	// Deeper than the limit, inside introspection.
	deep := `{ __type(name: "Job") { fields { type ` + strings.Repeat("{ ofType ", def.MaxDepth) + "{ name }" + strings.Repeat(" }", def.MaxDepth) + ` } } }`
	r = b.gql(b.liveA, deep, nil)
	require.Equal(t, "depth", limit(r), "%.300s", r.raw)
	require.Contains(t, r.Errors[0].Message, fmt.Sprintf("the depth limit is %d", def.MaxDepth))

	// The console's playground reads the schema with its own, smaller query.
	play, err := os.ReadFile("../web/src/play/main.tsx")
	require.NoError(t, err)
	q := regexp.MustCompile("(?s)const introspection = `(.*?)`;").FindSubmatch(play)
	require.NotNil(t, q, "the playground's introspection query")
	r = b.gql(b.liveA, string(q[1]), nil).ok(t)
	require.NotEmpty(t, r.Data["__schema"])
}

// TestAliasesAreCountedAcrossFragments: a fragment's aliases count in each selection it
// is spread into, so a small document cannot multiply them.
func TestAliasesAreCountedAcrossFragments(t *testing.T) {
	t.Parallel()
	b := setup(t)
	max := graph.DefaultServerConfig().MaxAliases
	fragment := "fragment K on Viewer {\n" + aliases(10, "project { id }") + "}"
	spread := func(n int) string {
		return "{\n" + strings.ReplaceAll(aliases(n, "viewer { ...K }"), "a", "v") + "}\n" + fragment
	}
	// 9 + 9 × 10 = 99 aliases.
	b.gql(b.liveA, spread(9), nil).ok(t)
	// 10 + 10 × 10 = 110, from 20 written.
	r := b.gql(b.liveA, spread(10), nil)
	require.Equal(t, "aliases", limit(r), "%.300s", r.raw)
	require.Equal(t, domain.CodeInvalidRequest, r.code(t))
	require.EqualValues(t, 110, r.Errors[0].Extensions["details"].(map[string]any)["aliases"])
	require.Contains(t, r.Errors[0].Message, fmt.Sprintf("the alias limit is %d", max))

	// A fragment spread again where it is collected already adds nothing: its fields
	// are answered once. Forty fragments each spreading the one before twice are
	// measured once each, and answer four fields.
	var doc strings.Builder
	doc.WriteString("{ viewer { ...L0 } }\nfragment L0 on Viewer { a: project { id } b: project { id } }\n")
	for i := 1; i < 40; i++ {
		fmt.Fprintf(&doc, "fragment L%d on Viewer { x: organization { id } ...L%d y: organization { name } ...L%d }\n", i, i-1, i-1)
	}
	// Spreads only L0 from the query: valid, as unused fragments are not.
	r = b.gql(b.liveA, strings.Replace(doc.String(), "{ viewer { ...L0 } }", "{ viewer { ...L39 } }", 1), nil).ok(t)
	require.Len(t, r.Data["viewer"], 4, "%.300s", r.raw)
}

// TestDeferIsRefused: an HTTP answer is one response, so a deferred part would never
// arrive; @defer is refused with a clear error rather than half answered.
func TestDeferIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.gql(b.liveA, `{ viewer { ... @defer { project { id } } } }`, nil)
	require.Equal(t, domain.CodeInvalidRequest, r.code(t))
	require.Contains(t, r.Errors[0].Message, "@defer")
}

// TestAnswersAreBoundedInBytes: an answer over MaxResponseBytes is replaced by one
// response_too_large error, over HTTP and over a websocket (queries and each message of
// a subscription), never cut short.
func TestAnswersAreBoundedInBytes(t *testing.T) {
	t.Parallel()
	const bound = 4096
	b := setup(t, setupOpts{gcfg: func(c *graph.ServerConfig) { c.MaxResponseBytes = bound }})
	small := `{ operations { name } }`
	big := `{ operations { name description optionsSchema } }`
	require.Less(t, len(b.gql(b.liveA, small, nil).ok(t).raw), bound)

	r := b.gql(b.liveA, big, nil)
	require.Equal(t, 200, r.status)
	require.Nil(t, r.Data)
	require.Len(t, r.Errors, 1, "one error, whatever failed on the way: %s", r.raw)
	require.Equal(t, domain.CodeResponseTooLarge, r.code(t))
	require.EqualValues(t, bound, r.Errors[0].Extensions["details"].(map[string]any)["max_response_bytes"])
	require.NotEmpty(t, r.Errors[0].Extensions["requestId"])

	// A mutation runs whatever the size of its answer, and says so.
	f := b.uploadREST(b.liveA, "a.png", pngBytes(t, 4, 4))["id"].(string)
	mut := `mutation($f: ID!) { createJob(input: {fileId: $f, operation: "inspect"}) { id ` + aliases(100, "file { filename createdAt }") + ` } }`
	r = b.gql(b.liveA, mut, map[string]any{"f": f})
	require.Equal(t, domain.CodeResponseTooLarge, r.code(t), "%.300s", r.raw)
	require.Contains(t, r.Errors[0].Message, "the mutations ran")
	_, jobs := b.rest("GET", "/v1/jobs?file_id="+f, b.liveA, nil)
	require.Len(t, jobs["data"], 1)
	jobID := jobs["data"].([]any)[0].(map[string]any)["id"].(string)

	for _, proto := range protocols {
		t.Run(proto, func(t *testing.T) {
			c, err := b.dial(proto, nil, map[string]any{"authorization": "Bearer " + b.liveA})
			require.NoError(t, err)
			_, ch, err := c.Subscribe(big, nil)
			require.NoError(t, err)
			res, ok := next(t, ch)
			require.True(t, ok)
			require.Nil(t, res.Data)
			require.Len(t, res.Errors, 1)
			require.Equal(t, domain.CodeResponseTooLarge, res.Errors[0]["extensions"].(map[string]any)["code"])

			// Each message of a subscription is held to the bound.
			sub := `subscription($id: ID!) { jobUpdated(id: $id) { id ` + aliases(100, "file { filename createdAt }") + ` } }`
			_, ch, err = c.Subscribe(sub, map[string]any{"id": jobID})
			require.NoError(t, err)
			res, ok = next(t, ch)
			require.True(t, ok)
			require.Nil(t, res.Data["jobUpdated"])
			require.Len(t, res.Errors, 1)
			require.Equal(t, domain.CodeResponseTooLarge, res.Errors[0]["extensions"].(map[string]any)["code"])
			_, ch, err = c.Subscribe(`subscription($id: ID!) { jobUpdated(id: $id) { id state } }`, map[string]any{"id": jobID})
			require.NoError(t, err)
			res, ok = next(t, ch)
			require.True(t, ok)
			require.Empty(t, res.Errors)
			require.Equal(t, jobID, res.Data["jobUpdated"].(map[string]any)["id"])
		})
	}
}

// TestResponseBoundStopsTheWork: with the cost limits out of the way, the byte bound
// alone stops an answer as it outgrows it, before it has been built.
func TestResponseBoundStopsTheWork(t *testing.T) {
	b := setup(t, setupOpts{gcfg: func(c *graph.ServerConfig) {
		c.MaxComplexity, c.MaxAliases, c.MaxResponseBytes = 1<<30, 1000, 256<<10
	}})
	// 100 copies of the schema: about 10 MB, and hundreds of MB to build.
	query := "{\n" + aliases(100, "__schema { ...F }") + "}\n" + fullSchema
	refusedCheaply(t, b, b.liveA, query, nil, domain.CodeResponseTooLarge)
}

// consolePages are the page sizes screens ask for where it is not up to the user
// (web/src/screens); the others are counted at the largest page, 100.
var consolePages = map[string]int{"WebhookEndpoint": 20, "WebhookEndpoints": 20, "Jobs": 25, "ApiKeys": 20}

// TestConsoleAndSDKOperationsFitTheLimits: every operation of the console (at the
// largest page it asks for) and of the SDKs fits the default limits.
func TestConsoleAndSDKOperationsFitTheLimits(t *testing.T) {
	t.Parallel()
	def := graph.DefaultServerConfig()
	reg := registry(t)
	src, err := os.ReadFile("../web/src/gql/gql.ts")
	require.NoError(t, err)
	// The documents map of the generated module: one quoted document per line.
	var docs []string
	for _, m := range regexp.MustCompile(`(?m)^    ("(?:[^"\\]|\\.)*"): typeof types\.`).FindAllSubmatch(src, -1) {
		var d string
		require.NoError(t, json.Unmarshal(m[1], &d))
		docs = append(docs, d)
	}
	require.NotEmpty(t, docs)
	fragments := map[string]string{}
	var ops []string
	for _, d := range docs {
		if n := regexp.MustCompile(`^\s*fragment (\w+)`).FindStringSubmatch(d); n != nil {
			fragments[n[1]] = d
		} else {
			ops = append(ops, d)
		}
	}
	// The SDKs' operations: strings that start an operation in their sources.
	sdk, err := filepath.Glob("../client/*.go")
	require.NoError(t, err)
	ts, err := filepath.Glob("../client/ts/src/*.ts")
	require.NoError(t, err)
	before := len(ops)
	for _, f := range append(sdk, ts...) {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, q := range regexp.MustCompile("[`\"]((?:query|mutation|subscription) [A-Z]\\w*[^`\"]*)").FindAllSubmatch(raw, -1) {
			ops = append(ops, string(q[1]))
		}
	}
	require.GreaterOrEqual(t, len(ops)-before, 3, "the SDKs follow jobs (Go, TypeScript) and events over GraphQL")
	spread := regexp.MustCompile(`\.\.\.(\w+)`)
	for _, op := range ops {
		doc := op
		for seen := map[string]bool{}; ; {
			added := false
			for _, s := range spread.FindAllStringSubmatch(doc, -1) {
				if f, ok := fragments[s[1]]; ok && !seen[s[1]] {
					seen[s[1]], added = true, true
					doc += "\n" + f
				}
			}
			if !added {
				break
			}
		}
		name := regexp.MustCompile(`^\s*\w+\s+(\w+)`).FindStringSubmatch(op)[1]
		first, ok := consolePages[name]
		if !ok {
			first = domain.MaxPageSize
		}
		m, err := graph.Analyse(reg, doc, "", map[string]any{"first": first})
		require.NoError(t, err, doc)
		t.Logf("%-24s cost %5d depth %2d aliases %d", name, m.Cost, m.Depth, m.Aliases)
		require.LessOrEqual(t, m.Cost, def.MaxComplexity, name)
		require.LessOrEqual(t, m.Depth, def.MaxDepth, name)
		require.LessOrEqual(t, m.Aliases, def.MaxAliases, name)
	}
}

// TestValidationBombsAreCheap: documents whose validation used to run for seconds to
// minutes — before any limit could refuse them — are answered or refused at once: a
// chain of fragments under introspection (22 KB ran for minutes), fragments spreading
// the next ones three times, nested inline fragments (1,000 took 43 s), thousands of
// same-named fields (5,000 took 3 s), and a query longer than the token limit.
func TestValidationBombsAreCheap(t *testing.T) {
	b := setup(t)
	chain := func(on, root string, n int) string {
		var q strings.Builder
		fmt.Fprintf(&q, "query { %s }\n", root)
		for i := range n {
			fmt.Fprintf(&q, "fragment T%d on %s { __typename ...T%d ...T%d ...T%d }\n", i, on, i+1, i+1, i+1)
		}
		fmt.Fprintf(&q, "fragment T%d on %s { __typename }\n", n, on)
		return q.String()
	}
	for _, c := range []struct {
		name, query, refused string // refused: the limit named, "" when answered
	}{
		{"introspection fragment chain", chain("__Type", "__schema { types { ...T0 } }", 400), "selections"},
		{"fragment chain on Query", chain("Query", "...T0", 400), "selections"},
		{"a short fragment chain, answered once", chain("Query", "...T0", 12), ""},
		{"nested inline fragments", "query { " + strings.Repeat("... on Query { __typename ", 2000) + strings.Repeat("}", 2000) + " }", ""},
		{"same-named fields", "query { " + strings.Repeat("__typename ", 5000) + "}", ""},
		{"aliases of one name", "query { " + strings.Repeat("a: __typename ", 3000) + "}", "aliases"},
		{"past the token limit", "query { " + strings.Repeat("__typename ", 20000) + "}", "tokens"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.refused == "" {
				var r gqlResponse
				start := time.Now()
				allocated, _ := memoryOf(func() { r = b.gql(b.liveA, c.query, nil) })
				took := time.Since(start)
				r.ok(t)
				require.Equal(t, "Query", r.Data["__typename"], "%.300s", r.raw)
				require.Less(t, took, time.Second)
				require.Less(t, allocated, int64(50*mb))
				return
			}
			r := refusedCheaply(t, b, b.liveA, c.query, nil, domain.CodeInvalidRequest)
			require.Equal(t, c.refused, r.Errors[0].Extensions["details"].(map[string]any)["limit"], "%.500s", r.raw)
		})
	}
}
