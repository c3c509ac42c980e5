package graph_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/domain/eventually"
	"github.com/filemill/filemill/graph"
)

// queryCounter counts the statements the store sends for requests: the relay's rounds
// over the outbox, running beside them, are left out.
type queryCounter struct{ n atomic.Int64 }

func (c *queryCounter) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context {
	return ctx
}
func (c *queryCounter) AfterQuery(_ context.Context, e *bun.QueryEvent) {
	q := strings.ToLower(strings.TrimSpace(e.Query))
	if q == "begin" || q == "commit" || q == "rollback" || strings.Contains(q, "event_outbox") {
		return
	}
	if e.Err == nil || e.Err == sql.ErrNoRows {
		c.n.Add(1)
	}
}

// finishedJobs makes n succeeded jobs over files files, each job with two artifacts,
// through the services (claimed and settled as a worker would).
func (b *bundle) finishedJobs(n, files int) {
	b.t.Helper()
	ctx := context.Background()
	p, err := b.svc.Keys.Authenticate(ctx, b.liveA, netipLoopback)
	require.NoError(b.t, err)
	ids := make([]string, files)
	for i := range ids {
		ids[i] = b.uploadREST(b.liveA, fmt.Sprintf("f%d.png", i), pngBytes(b.t, 20+i, 10))["id"].(string)
	}
	for i := range n {
		j, err := b.svc.Jobs.CreateJob(ctx, p, domain.JobRequest{FileID: ids[i%files], Operation: "inspect"})
		require.NoError(b.t, err)
		j, err = b.svc.Jobs.ClaimJob(ctx, j.ID)
		require.NoError(b.t, err)
		var arts []*domain.Artifact
		for k := range 2 {
			arts = append(arts, &domain.Artifact{ID: domain.NewID(domain.PrefixArtifact), OrganizationID: j.OrganizationID,
				FileID: j.FileID, JobID: j.ID, Name: fmt.Sprintf("out-%d.json", k), MIMEType: "application/json", ByteSize: 10,
				SHA256: "00", StorageKey: "x/" + j.ID, CreatedAt: time.Now().UTC()})
		}
		require.NoError(b.t, b.svc.Jobs.SettleJob(ctx, j, arts, 1))
	}
}

const pageQuery = `query($n: Int) { jobs(first: $n) { nodes { id state artifacts { id name byteSize }
	file { id filename status artifacts { id name } } } pageInfo { hasNextPage endCursor } } }`

// TestPageOfJobsIsAFixedNumberOfQueries: a page of 100 jobs with their files and
// artifacts costs the same few statements as a page of 10: the key, the jobs, their
// artifacts, their files and the files' artifacts.
func TestPageOfJobsIsAFixedNumberOfQueries(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{cfg: func(c *domain.Config) {
		c.DefaultConcurrencyLimit = 1000
		c.AuthCacheTTL = 0 // every request reads its key: counted
	}, gcfg: func(c *graph.ServerConfig) {
		// A page of 100 jobs with their files' artifacts may answer 10,000 artifacts:
		// over the default limit, which is not what this test is about.
		c.MaxComplexity = 30000
	}})
	_, err := b.svc.Credits.Grant(context.Background(), b.orgA.Organization.ID, domain.EnvLive, 100000, "test")
	require.NoError(t, err)
	b.finishedJobs(100, 10)

	// The relay's work on what the setup wrote would mingle with the requests'.
	eventually.True(t, "the condition to hold", func() bool {
		n, err := b.store.DB().NewSelect().Table("event_outbox").Count(context.Background())
		return err == nil && n == 0
	})
	var c queryCounter
	b.store.DB().AddQueryHook(&c)
	count := func(n int) int64 {
		before := c.n.Load()
		r := b.gql(b.liveA, pageQuery, map[string]any{"n": n}).ok(t)
		nodes := field(r, "jobs")["nodes"].([]any)
		require.Len(t, nodes, n)
		for _, node := range nodes {
			j := node.(map[string]any)
			require.Len(t, j["artifacts"], 2)
			require.NotNil(t, j["file"])
			require.Len(t, j["file"].(map[string]any)["artifacts"], 20, "ten jobs on each file, two artifacts each")
		}
		return c.n.Load() - before
	}
	hundred, ten := count(100), count(10)
	t.Logf("statements: page of 100 jobs %d, of 10 jobs %d", hundred, ten)
	require.Equal(t, ten, hundred, "the statements do not grow with the page")
	require.LessOrEqual(t, hundred, int64(5))

	// Without the files' artifacts: at most four.
	before := c.n.Load()
	b.gql(b.liveA, `{ jobs(first: 100) { nodes { id artifacts { id } file { id filename } } } }`, nil).ok(t)
	require.LessOrEqual(t, c.n.Load()-before, int64(4))

	before = c.n.Load()
	st, _ := b.rest("GET", "/v1/jobs?limit=100", b.liveA, nil)
	require.Equal(t, 200, st)
	t.Logf("statements: GET /v1/jobs?limit=100 %d", c.n.Load()-before)
}
