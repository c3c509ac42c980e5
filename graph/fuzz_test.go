package graph_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/graph"
)

// FuzzCostBoundsTheAnswer: for any query (random fields, arguments, aliases, inline
// fragments and named fragments spread once or many times, introspection included),
// the answer against a small dataset is at most CostUnitBytes per unit of the cost the
// limits computed. The seeds in testdata/fuzz run with every go test; go test -fuzz
// looks for more.
func FuzzCostBoundsTheAnswer(f *testing.F) {
	c := newCostCheck(f)
	for _, seed := range []string{"", "\x00\x01\x02\x03", "introspection\x02\x07", "fragments\x00\x00\x00\x00\x00"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, in []byte) { c.check(t, in) })
}

// costCheck is the server, dataset and schema the fuzz target asks its queries of.
type costCheck struct {
	b      *bundle
	reg    *domain.Registry
	schema *ast.Schema
	ids    map[string]string

	// Documents recur — most mutations change bytes the generator does not read, or
	// not its choices — and validating and measuring one is a good part of an
	// execution: measures keeps what Analyse said of each, up to measuredBytes of them.
	mu       sync.Mutex
	measures map[string]measured
	size     int
}

type measured struct {
	m   graph.Measure
	err error
}

const measuredBytes = 64 << 20

// fuzzMaxAliases is the fuzz server's alias limit.
const fuzzMaxAliases = 256

func newCostCheck(tb testing.TB) *costCheck {
	b := setup(tb, setupOpts{
		cfg: func(c *domain.Config) { c.DefaultRateLimit = 1 << 30 },
		// Limits out of the way: the point is what every query answers for its cost.
		// Aliases alone stay bounded, though well above the service's default: gqlgen
		// collects a selection's fields with a linear search of those collected so far,
		// and a query of a thousand aliases took seconds to answer, stalling a fuzzing
		// process (the service's default of 100 never lets one run).
		// Loaders read at once: the answer is the same however the keys are batched,
		// and the wait was most of the time of a query that reads through them.
		gcfg: func(c *graph.ServerConfig) {
			c.MaxDepth, c.MaxComplexity, c.MaxAliases, c.MaxResponseBytes = 64, 1<<30, fuzzMaxAliases, 1<<30
			c.LoaderWait = 0
		},
	})
	ids := b.fuzzDataset()
	// The relay would run its rounds beside the queries, and the fuzzer would take what
	// they cover for the query's: relay what the dataset made, once, and stop it.
	b.stopRelay()
	for {
		n, err := b.svc.Webhooks.Relay(context.Background(), 0)
		require.NoError(tb, err)
		if n == 0 {
			break
		}
	}
	// The server allocates much for small answers: collecting less often is a good
	// part of an execution's time, and a test process has the memory.
	gc := debug.SetGCPercent(400)
	tb.Cleanup(func() { debug.SetGCPercent(gc) })
	return &costCheck{b: b, ids: ids, reg: registry(tb), schema: graph.NewExecutableSchema(graph.Config{}).Schema(),
		measures: map[string]measured{}}
}

// check asks the query the input makes and holds its answer to its cost.
func (c *costCheck) check(t testing.TB, in []byte) {
	doc := (&docGen{in: in, schema: c.schema, ids: c.ids}).document()
	m, err := c.analyse(doc)
	if derr := domain.AsError(err); derr != nil {
		// Too long or too large to validate: the server refuses it for the same limit.
		limit, _ := derr.Details["limit"].(string)
		requireRefused(t, postQuery(t, c.b, doc), derr.Code, limit)
		return
	}
	require.NoError(t, err, "the generator makes valid queries: %s", doc)
	raw := postQuery(t, c.b, doc)
	if m.Aliases > fuzzMaxAliases {
		// Refused before it runs, for its aliases and nothing else.
		requireRefused(t, raw, domain.CodeInvalidRequest, "aliases")
		return
	}
	// Only the errors' codes are read: decoding the data as well would cost more than
	// answering many of the queries.
	var r struct {
		Errors []struct {
			Extensions struct{ Code any }
		}
	}
	require.NoError(t, json.Unmarshal(raw, &r), "%.300s", raw)
	for _, e := range r.Errors {
		require.NotContains(t, []string{domain.CodeInvalidRequest, domain.CodeResponseTooLarge, domain.CodeRateLimited, domain.CodeInternal},
			e.Extensions.Code, "%s\n%s", doc, raw)
	}
	require.LessOrEqual(t, len(raw), m.Cost*graph.CostUnitBytes,
		"%d bytes answered for a cost of %d:\n%s\n%.2000s", len(raw), m.Cost, doc, raw)
}

// requireRefused holds raw to be one error of code for limit.
func requireRefused(t testing.TB, raw []byte, code, limit string) {
	t.Helper()
	var r struct {
		Errors []struct {
			Extensions struct {
				Code    string
				Details struct{ Limit string }
			}
		}
	}
	require.NoError(t, json.Unmarshal(raw, &r), "%.300s", raw)
	require.Len(t, r.Errors, 1, "%.300s", raw)
	require.Equal(t, code, r.Errors[0].Extensions.Code, "%.300s", raw)
	require.Equal(t, limit, r.Errors[0].Extensions.Details.Limit, "%.300s", raw)
}

// analyse is graph.Analyse of doc, once per document.
func (c *costCheck) analyse(doc string) (graph.Measure, error) {
	c.mu.Lock()
	r, ok := c.measures[doc]
	c.mu.Unlock()
	if ok {
		return r.m, r.err
	}
	r.m, r.err = graph.Analyse(c.reg, doc, "", nil)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.size += len(doc); c.size > measuredBytes {
		c.measures, c.size = map[string]measured{}, len(doc)
	}
	c.measures[doc] = r
	return r.m, r.err
}

// postQuery posts a query with the bundle's live key and returns the raw answer. The
// server's handler is called in-process: a TCP round trip adds nothing to the answer.
func postQuery(t testing.TB, b *bundle, query string) []byte {
	t.Helper()
	body, err := json.Marshal(map[string]any{"query": query})
	require.NoError(t, err)
	req := httptest.NewRequest("POST", "/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+b.liveA)
	rec := httptest.NewRecorder()
	b.srv.Config.Handler.ServeHTTP(rec, req)
	require.Equal(t, 200, rec.Code, "%.300s", rec.Body.Bytes())
	return rec.Body.Bytes()
}

// fuzzDataset makes a little of everything for organization A — files, jobs with
// artifacts (more than a job carries), a batch, an open multipart upload, a webhook
// endpoint with a delivery — and returns ids by the field that reads them.
func (b *bundle) fuzzDataset() map[string]string {
	b.t.Helper()
	ctx := context.Background()
	f1 := b.uploadREST(b.liveA, "a.png", pngBytes(b.t, 6, 4))["id"].(string)
	f2 := b.uploadREST(b.liveA, "b.png", pngBytes(b.t, 5, 4))["id"].(string)
	var jobID string
	for _, n := range []int{3, 60} {
		st, job := b.rest("POST", "/v1/jobs", b.liveA, map[string]any{"file_id": f1, "operation": "inspect", "options": map[string]any{}})
		require.Equal(b.t, 202, st, job)
		j, err := b.svc.Jobs.ClaimJob(ctx, job["id"].(string))
		require.NoError(b.t, err)
		arts := make([]*domain.Artifact, n)
		for i := range arts {
			arts[i] = &domain.Artifact{ID: domain.NewID(domain.PrefixArtifact), OrganizationID: j.OrganizationID, FileID: f1,
				JobID: j.ID, Step: "pages", Name: fmt.Sprintf("page-%02d.png", i+1), MIMEType: "image/png", ByteSize: 1234,
				SHA256: strings.Repeat("ab", 32), StorageKey: "x/" + j.ID, CreatedAt: j.CreatedAt}
		}
		require.NoError(b.t, b.svc.Jobs.SettleJob(ctx, j, arts, 1))
		jobID = j.ID
	}
	st, batch := b.rest("POST", "/v1/batches", b.liveA, map[string]any{"file_ids": []string{f1, f2}, "operation": "inspect"})
	require.Equal(b.t, 202, st, batch)
	st, upload := b.rest("POST", "/v1/uploads", b.liveA, map[string]any{"filename": "big.bin", "byte_size": 64 << 20, "multipart": true})
	require.Equal(b.t, 201, st, upload)
	st, ep := b.rest("POST", "/v1/webhook-endpoints", b.liveA, map[string]any{"url": "https://hooks.example.com/x",
		"enabled_events": []string{"job.succeeded", "file.ready"}})
	require.Equal(b.t, 201, st, ep)
	st, ev := b.rest("POST", "/v1/webhook-endpoints/"+ep["id"].(string)+"/test", b.liveA, nil)
	require.Less(b.t, st, 300, ev)
	return map[string]string{"file": f1, "job": jobID, "batch": batch["id"].(string), "upload": upload["id"].(string),
		"webhookEndpoint": ep["id"].(string), "event": ev["id"].(string), "fileId": f2, "batchId": batch["id"].(string)}
}

// docGen turns fuzz bytes into a valid query of the schema: each byte picks the next
// choice (how many fields, which field, an alias, arguments, a fragment). Aliases are
// unique, and every field with arguments or a selection is aliased, so no two fields
// of a selection ever conflict.
type docGen struct {
	in     []byte
	schema *ast.Schema
	ids    map[string]string
	frags  []genFragment
	n      int // aliases and fragments named so far
	fields int
}

type genFragment struct{ name, on, body string }

// pick returns the next choice among n (0 once the input is spent).
func (g *docGen) pick(n int) int {
	if n <= 1 || len(g.in) == 0 {
		return 0
	}
	c := int(g.in[0]) % n
	g.in = g.in[1:]
	return c
}

func (g *docGen) document() string {
	var doc strings.Builder
	doc.WriteString("query {\n" + g.selection(g.schema.Query, 0) + "\n}\n")
	for _, f := range g.frags {
		fmt.Fprintf(&doc, "fragment %s on %s { %s }\n", f.name, f.on, f.body)
	}
	return doc.String()
}

const (
	genMaxDepth  = 9
	genMaxFields = 400
)

func (g *docGen) selection(def *ast.Definition, depth int) string {
	if depth >= genMaxDepth || g.fields >= genMaxFields {
		return "__typename"
	}
	n := 1 + g.pick(6)
	parts := make([]string, 0, n)
	for range n {
		parts = append(parts, g.selectOne(def, depth))
	}
	return strings.Join(parts, " ")
}

func (g *docGen) selectOne(def *ast.Definition, depth int) string {
	g.fields++ // fragments too, so that every choice brings the end nearer
	switch g.pick(10) {
	case 8: // a named fragment: one of this type spread again, or a new one
		var same []string
		for _, f := range g.frags {
			if f.on == def.Name {
				same = append(same, f.name)
			}
		}
		if len(same) > 0 && g.pick(2) == 0 {
			return "..." + same[g.pick(len(same))]
		}
		g.n++
		name := fmt.Sprintf("F%d", g.n)
		body := g.selection(def, depth)
		g.frags = append(g.frags, genFragment{name: name, on: def.Name, body: body})
		return "..." + name
	case 9:
		return "... on " + def.Name + " { " + g.selection(def, depth) + " }"
	}
	return g.field(def, depth)
}

func (g *docGen) field(def *ast.Definition, depth int) string {
	cands := slices.DeleteFunc(slices.Clone(def.Fields), func(f *ast.FieldDefinition) bool { return f.Name == "__typename" })
	if len(cands) == 0 || g.pick(12) == 11 {
		return "__typename"
	}
	f := cands[g.pick(len(cands))]
	var args []string
	for _, a := range f.Arguments {
		switch {
		case a.Name == "first":
			if g.pick(3) == 0 {
				args = append(args, fmt.Sprintf("first: %d", []int{1, 2, 5, 100}[g.pick(4)]))
			}
		case a.Name == "name" && f.Name == "__type":
			names := make([]string, 0, len(g.schema.Types))
			for n := range g.schema.Types {
				names = append(names, n)
			}
			slices.Sort(names)
			args = append(args, fmt.Sprintf("name: %q", names[g.pick(len(names))]))
		case a.Name == "includeDeprecated":
			if g.pick(2) == 0 {
				args = append(args, "includeDeprecated: true")
			}
		case a.Name == "id" && g.ids[f.Name] != "":
			args = append(args, fmt.Sprintf("id: %q", g.ids[f.Name]))
		case (a.Name == "fileId" || a.Name == "batchId") && g.pick(4) == 0:
			args = append(args, fmt.Sprintf("%s: %q", a.Name, g.ids[a.Name]))
		case a.Type.NonNull && a.DefaultValue == nil:
			return "__typename" // an argument the dataset has no value for
		}
	}
	out := f.Name
	if len(args) > 0 {
		out += "(" + strings.Join(args, ", ") + ")"
	}
	child := g.schema.Types[f.Type.Name()]
	composite := child != nil && child.Kind == ast.Object
	if len(args) > 0 || composite || g.pick(3) == 0 {
		g.n++
		out = fmt.Sprintf("a%d: %s", g.n, out)
	}
	if composite {
		out += " { " + g.selection(child, depth+1) + " }"
	}
	return out
}
