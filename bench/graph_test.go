package bench

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/filemill/filemill/domain"
)

// statementCounter counts the statements the store sends.
type statementCounter struct{ n atomic.Int64 }

func (c *statementCounter) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context {
	return ctx
}
func (c *statementCounter) AfterQuery(_ context.Context, e *bun.QueryEvent) {
	if e.Err == nil || e.Err == sql.ErrNoRows {
		c.n.Add(1)
	}
}

// seedFinishedJobs makes n succeeded jobs over files files (ready, no bytes needed to
// read them back), each with two artifacts, claimed and settled through the services.
func (s *stack) seedFinishedJobs(tb testing.TB, n, files int) {
	tb.Helper()
	ctx := context.Background()
	p, err := s.svc.Keys.Authenticate(ctx, s.key, netip.MustParseAddr("127.0.0.1"))
	if err != nil {
		tb.Fatal(err)
	}
	ids := make([]string, files)
	now := time.Now().UTC()
	for i := range ids {
		f := &domain.File{ID: domain.NewID(domain.PrefixFile), OrganizationID: p.Organization.ID, ProjectID: p.Key.ProjectID,
			Environment: p.Environment(), UploadID: domain.NewID(domain.PrefixUpload), Filename: fmt.Sprintf("f%d.png", i),
			Status: domain.FileReady, ByteSize: 1000, DetectedExt: "png", DetectedMIMEType: "image/png",
			SHA256: fmt.Sprintf("%064d", i), StorageKey: fmt.Sprintf("seed/%d", i), Findings: []domain.Finding{}, CreatedAt: now, ReadyAt: &now}
		if err := s.store.CreateFile(ctx, f); err != nil {
			tb.Fatal(err)
		}
		ids[i] = f.ID
	}
	for i := range n {
		j, err := s.svc.Jobs.CreateJob(ctx, p, domain.JobRequest{FileID: ids[i%files], Operation: "inspect"})
		if err != nil {
			tb.Fatal(err)
		}
		if j, err = s.svc.Jobs.ClaimJob(ctx, j.ID); err != nil {
			tb.Fatal(err)
		}
		var arts []*domain.Artifact
		for k := range 2 {
			arts = append(arts, &domain.Artifact{ID: domain.NewID(domain.PrefixArtifact), OrganizationID: j.OrganizationID,
				FileID: j.FileID, JobID: j.ID, Name: fmt.Sprintf("out-%d.json", k), MIMEType: "application/json", ByteSize: 10,
				SHA256: "00", StorageKey: "seed/" + j.ID, CreatedAt: time.Now().UTC()})
		}
		if err := s.svc.Jobs.SettleJob(ctx, j, arts, 1); err != nil {
			tb.Fatal(err)
		}
	}
}

const benchPageQuery = `{ jobs(first: 100) { nodes { id operation state progress creditsCharged createdAt finishedAt
	artifacts { id name mimeType byteSize } file { id filename status byteSize detectedFormat { extension mimeType } } }
	pageInfo { hasNextPage endCursor } } }`

// BenchmarkGraphQLPageOfJobs reads a page of 100 jobs with their files and artifacts
// through GraphQL, next to GET /v1/jobs?limit=100 (the jobs with their artifacts) in
// the same run: statements per request (goal for GraphQL: at most 4) and latency.
func BenchmarkGraphQLPageOfJobs(b *testing.B) {
	s := newStack(b, stackOpts{})
	s.seedFinishedJobs(b, 100, 25)
	client := NewClient(loadWorkers)
	gqlBody, _ := json.Marshal(map[string]any{"query": benchPageQuery})
	newReq := map[string]func(ctx context.Context) *http.Request{
		"graphql": func(ctx context.Context) *http.Request {
			req, _ := http.NewRequestWithContext(ctx, "POST", s.srv.URL+"/graphql", bytes.NewReader(gqlBody))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+s.key)
			return req
		},
		"rest": func(ctx context.Context) *http.Request {
			req, _ := http.NewRequestWithContext(ctx, "GET", s.srv.URL+"/v1/jobs?limit=100", nil)
			req.Header.Set("Authorization", "Bearer "+s.key)
			return req
		},
	}
	var counter statementCounter
	s.store.DB().AddQueryHook(&counter)
	for _, door := range []string{"graphql", "rest"} {
		b.Run(door, func(b *testing.B) {
			ok := func(ctx context.Context, _, _ int) bool {
				resp, err := client.Do(newReq[door](ctx))
				if err != nil {
					return false
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				return resp.StatusCode == 200 && !bytes.Contains(body, []byte(`"errors"`)) && bytes.Count(body, []byte(`"art_`)) >= 200
			}
			// Statements of one request, the key read from the database: the services'
			// clock moves past the authentication cache's hold on it.
			s.clock.advance(s.svc.Config.AuthCacheTTL)
			before := counter.n.Load()
			if !ok(context.Background(), 0, 0) {
				b.Fatalf("%s: the page did not read back", door)
			}
			stmts := counter.n.Load() - before
			Drive(context.Background(), loadWorkers, time.Second, ok)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				r := Drive(context.Background(), loadWorkers, loadDuration, ok)
				report(b, r)
				b.ReportMetric(float64(stmts), "statements/req")
			}
		})
	}
}
