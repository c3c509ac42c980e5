package rest_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/domain/eventually"
	"github.com/filemill/filemill/jobs"
)

// flakyEngine fails its first failures runs with err, then runs the real engine.
type flakyEngine struct {
	domain.Engine
	failures int32
	err      error
	runs     atomic.Int32
}

func (f *flakyEngine) Run(ctx context.Context, in domain.EngineInput) (*domain.EngineOutput, error) {
	if f.runs.Add(1) <= f.failures {
		return nil, f.err
	}
	return f.Engine.Run(ctx, in)
}

// runOnFlaky runs one inspect job through a worker whose engine is flaky and returns
// the bundle, the finished job and organization A's account from before the job.
func runOnFlaky(t *testing.T, flaky *flakyEngine) (*bundle, map[string]any, *domain.CreditAccount) {
	t.Helper()
	b := setup(t, setupOpts{worker: true, engine: func(e domain.Engine) domain.Engine { flaky.Engine = e; return flaky }})
	file := b.readyFile(b.liveA, "a.pdf", []byte(minimalPDF))
	before := b.account(b.orgA.Organization.ID)
	r := b.createJob(b.liveA, map[string]any{"file_id": file, "operation": "inspect"})
	require.Equal(t, 202, r.status, string(r.body))
	return b, b.waitJob(b.liveA, r.json(t)["id"].(string)), before
}

func TestRetries(t *testing.T) {
	t.Parallel()
	crashed := domain.Errorf(domain.CodeDependencyUnavailable, "the tool crashed")

	t.Run("RetryableFailureThenSuccessIsChargedOnce", func(t *testing.T) {
		t.Parallel()
		flaky := &flakyEngine{failures: 2, err: crashed}
		b, j, before := runOnFlaky(t, flaky)
		require.Equal(t, "succeeded", j["state"])
		require.EqualValues(t, 3, j["attempts"], "two crashes, then success")
		require.EqualValues(t, 3, flaky.runs.Load())
		after := b.account(b.orgA.Organization.ID)
		require.Equal(t, before.Balance-after.Balance, after.Used-before.Used, "charged once")
		require.Zero(t, after.Reserved)
		require.Positive(t, after.Used-before.Used)
	})

	t.Run("RetryableFailureEveryTimeFailsAfterThreeAttemptsUncharged", func(t *testing.T) {
		t.Parallel()
		flaky := &flakyEngine{failures: 100, err: crashed}
		b, j, before := runOnFlaky(t, flaky)
		require.Equal(t, "failed", j["state"])
		require.EqualValues(t, 3, j["attempts"])
		require.Equal(t, domain.CodeDependencyUnavailable, j["error"].(map[string]any)["code"])
		require.EqualValues(t, 3, flaky.runs.Load())
		after := b.account(b.orgA.Organization.ID)
		require.Equal(t, [3]int64{before.Balance, 0, before.Used}, [3]int64{after.Balance, after.Reserved, after.Used}, "nothing charged")
	})

	t.Run("QueuedJobWhoseTaskWentMissingIsRequeued", func(t *testing.T) {
		t.Parallel()
		b := setup(t) // no worker yet
		file := b.readyFile(b.liveA, "a.pdf", []byte(minimalPDF))
		r := b.createJob(b.liveA, map[string]any{"file_id": file, "operation": "inspect"})
		require.Equal(t, 202, r.status, string(r.body))
		id := r.json(t)["id"].(string)
		insp := asynq.NewInspector(b.redisOpt)
		defer insp.Close()
		require.NoError(t, insp.DeleteTask(domain.QueueName([]string{"inspect"}), id), "the task is lost")

		n, err := b.svc.Jobs.RedriveLost(context.Background(), 0)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		info, err := insp.GetTaskInfo(domain.QueueName([]string{"inspect"}), id)
		require.NoError(t, err, "the task is back under the job's id")
		require.Equal(t, id, info.ID)
		n, err = b.svc.Jobs.RedriveLost(context.Background(), 0)
		require.NoError(t, err)
		require.Zero(t, n, "a pending task is left alone")

		startWorker(t, b)
		require.Equal(t, "succeeded", b.waitJob(b.liveA, id)["state"])
	})

	t.Run("ArchivedTaskOfAnUnfinishedJobRunsAgain", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		file := b.readyFile(b.liveA, "a.pdf", []byte(minimalPDF))
		before := b.account(b.orgA.Organization.ID)
		r := b.createJob(b.liveA, map[string]any{"file_id": file, "operation": "inspect"})
		require.Equal(t, 202, r.status, string(r.body))
		id := r.json(t)["id"].(string)
		insp := asynq.NewInspector(b.redisOpt)
		defer insp.Close()
		// As asynq does when a task's attempts ran out without the job's outcome written.
		require.NoError(t, insp.ArchiveTask(inspectQueue, id))

		n, err := b.svc.Jobs.RedriveLost(context.Background(), 0)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		info, err := insp.GetTaskInfo(inspectQueue, id)
		require.NoError(t, err)
		require.Equal(t, asynq.TaskStatePending, info.State)

		startWorker(t, b)
		j := b.waitJob(b.liveA, id)
		require.Equal(t, "succeeded", j["state"])
		require.EqualValues(t, 1, j["attempts"])
		after := b.account(b.orgA.Organization.ID)
		require.Zero(t, after.Reserved)
		require.Equal(t, before.Balance-after.Balance, after.Used-before.Used, "charged once")
	})

	t.Run("RunningJobWhoseLeaseRanOutIsTakenOver", func(t *testing.T) {
		t.Parallel()
		b := setup(t, setupOpts{cfg: func(c *domain.Config) { c.JobLease = time.Second }})
		file := b.readyFile(b.liveA, "a.pdf", []byte(minimalPDF))
		r := b.createJob(b.liveA, map[string]any{"file_id": file, "operation": "inspect"})
		require.Equal(t, 202, r.status, string(r.body))
		id := r.json(t)["id"].(string)
		ctx := context.Background()
		// A worker claims the job, stores a result and dies before recording it; its
		// task is lost with Redis.
		claimed, f, err := b.svc.Jobs.ClaimJobWithFile(ctx, id)
		require.NoError(t, err)
		lost, err := b.svc.Jobs.StoreArtifact(ctx, claimed, f, domain.EngineArtifact{Name: "lost.json", MIMEType: "application/json"},
			strings.NewReader("{}"), 2)
		require.NoError(t, err)
		// and an upload it began and never finished.
		openKey := domain.ArtifactKey(f, id, domain.NewID(domain.PrefixArtifact))
		_, err = b.blobs.CreateUpload(ctx, openKey)
		require.NoError(t, err)
		insp := asynq.NewInspector(b.redisOpt)
		defer insp.Close()
		require.NoError(t, insp.DeleteTask(inspectQueue, id))

		_, err = b.svc.Jobs.ClaimJob(ctx, id)
		require.ErrorIs(t, err, domain.ErrNotRun, "nobody takes a job whose lease holds")
		eventually.True(t, "re-driven once its lease ran out", func() bool {
			n, err := b.svc.Jobs.RedriveLost(ctx, 0)
			require.NoError(t, err)
			return n == 1
		})

		startWorker(t, b)
		j := b.waitJob(b.liveA, id)
		require.Equal(t, "succeeded", j["state"])
		require.EqualValues(t, 2, j["attempts"], "the dead worker's claim, then the new one")
		require.Zero(t, b.account(b.orgA.Organization.ID).Reserved)
		_, err = b.blobs.Stat(ctx, lost.StorageKey)
		require.ErrorIs(t, err, domain.ErrNotFound, "what the dead attempt stored is swept when the job ends")
		arts, err := b.store.FindArtifactsByJob(ctx, id)
		require.NoError(t, err)
		require.Len(t, arts, 1)
		_, err = b.blobs.Stat(ctx, arts[0].StorageKey)
		require.NoError(t, err, "the recorded result stays")
		left, err := b.blobs.AbortUploadsUnder(ctx, path.Dir(openKey)+"/", 10)
		require.NoError(t, err)
		require.Zero(t, left, "the upload the dead attempt left open is ended with the job")
	})

	t.Run("ASettlementWhoseAnswerWasLostKeepsItsResult", func(t *testing.T) {
		t.Parallel()
		st := &answerLostStore{}
		b := setup(t, setupOpts{worker: true, store: func(s domain.Store) domain.Store { st.Store = s; return st }})
		file := b.readyFile(b.liveA, "a.pdf", []byte(minimalPDF))
		r := b.createJob(b.liveA, map[string]any{"file_id": file, "operation": "inspect"})
		require.Equal(t, 202, r.status, string(r.body))
		id := r.json(t)["id"].(string)
		j := b.waitJob(b.liveA, id)
		require.Equal(t, "succeeded", j["state"])
		require.True(t, st.lost.Load())
		arts, err := b.store.FindArtifactsByJob(context.Background(), id)
		require.NoError(t, err)
		require.Len(t, arts, 1)
		_, err = b.blobs.Stat(context.Background(), arts[0].StorageKey)
		require.NoError(t, err, "the settled job's result is still stored")
	})

	t.Run("AttemptsTheStoreCouldNotAnswerDoNotCount", func(t *testing.T) {
		t.Parallel()
		// Every claim fails five times, more than the three attempts a job has, and then
		// the outcome fails to be written twice: as when the database is down.
		st := &unreachableStore{}
		st.claims.Store(5)
		st.settles.Store(2)
		b := setup(t, setupOpts{worker: true, store: func(s domain.Store) domain.Store { st.Store = s; return st }})
		file := b.readyFile(b.liveA, "a.pdf", []byte(minimalPDF))
		before := b.account(b.orgA.Organization.ID)
		r := b.createJob(b.liveA, map[string]any{"file_id": file, "operation": "inspect"})
		require.Equal(t, 202, r.status, string(r.body))
		j := b.waitJob(b.liveA, r.json(t)["id"].(string))
		require.Equal(t, "succeeded", j["state"], "%v", j)
		require.EqualValues(t, 1, j["attempts"])
		require.Negative(t, st.claims.Load(), "every claim fault was met")
		require.Negative(t, st.settles.Load(), "every settlement fault was met")
		after := b.account(b.orgA.Organization.ID)
		require.Zero(t, after.Reserved)
		require.Equal(t, before.Balance-after.Balance, after.Used-before.Used, "charged once")
	})
}

// answerLostStore commits the first settlement, then answers as if the connection broke
// before the answer came.
type answerLostStore struct {
	domain.Store
	lost atomic.Bool
}

func (s *answerLostStore) TransitionJob(ctx context.Context, t *domain.JobTransition) error {
	err := s.Store.TransitionJob(ctx, t)
	if err == nil && t.Job.State == domain.JobSucceeded && s.lost.CompareAndSwap(false, true) {
		return fmt.Errorf("write: %w", &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET})
	}
	return err
}

// unreachableStore fails its first claims and settlements the way a database that is
// down fails them.
type unreachableStore struct {
	domain.Store
	claims, settles atomic.Int32
}

func (s *unreachableStore) TransitionJob(ctx context.Context, t *domain.JobTransition) error {
	n := &s.settles
	if t.Job.State == domain.JobRunning {
		n = &s.claims
	}
	if n.Add(-1) >= 0 {
		return fmt.Errorf("write: %w", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED})
	}
	n.Store(-1)
	return s.Store.TransitionJob(ctx, t)
}

// inspectQueue is the queue of inspect jobs.
var inspectQueue = domain.QueueName([]string{"inspect"})

// startWorker runs a worker on b's queue until the test ends.
func startWorker(t *testing.T, b *bundle) {
	t.Helper()
	w := jobs.NewServer(b.redisOpt, jobs.ServerConfig{Concurrency: 1,
		Pools: jobs.EnginePools(b.svc.Jobs.Registry, b.svc.Jobs.Engines, func(string) jobs.FamilySettings { return jobs.FamilySettings{Concurrency: 1} })},
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	jobs.RegisterTasks(w, b.svc, t.TempDir(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, w.Start())
	t.Cleanup(w.Shutdown)
}

// pagedEngine reports progress the way a page-wise engine does, one step at a time when
// told to, then runs the real engine.
type pagedEngine struct {
	domain.Engine
	steps []int
	next  chan struct{}
}

func (p *pagedEngine) Run(ctx context.Context, in domain.EngineInput) (*domain.EngineOutput, error) {
	for _, pct := range p.steps {
		select {
		case <-p.next:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		in.Progress(pct)
	}
	<-p.next
	return p.Engine.Run(ctx, in)
}

// TestProgressAdvances: what an engine reports of its progress is what the job shows
// while it runs.
func TestProgressAdvances(t *testing.T) {
	t.Parallel()
	paged := &pagedEngine{steps: []int{25, 50, 75}, next: make(chan struct{})}
	b := setup(t, setupOpts{worker: true, engine: func(e domain.Engine) domain.Engine { paged.Engine = e; return paged }})
	f := b.readyFile(b.liveA, "p.pdf", []byte(minimalPDF))
	r := b.createJob(b.liveA, map[string]any{"file_id": f, "operation": "inspect"})
	require.Equal(t, 202, r.status, string(r.body))
	id := r.json(t)["id"].(string)
	progress := func() any {
		return b.do(req{method: "GET", path: "/v1/jobs/" + id, key: b.liveA}).json(t)["progress"]
	}
	for _, want := range []float64{25, 50, 75} {
		paged.next <- struct{}{}
		eventually.True(t, fmt.Sprintf("progress %v", want), func() bool { return progress() == want })
	}
	paged.next <- struct{}{}
	done := b.waitJob(b.liveA, id)
	require.Equal(t, "succeeded", done["state"])
	require.EqualValues(t, 100, done["progress"])
}
