package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/uptrace/bun"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/domain/eventually"
	"github.com/filemill/filemill/jobs"
)

const samplePDF = "%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj\n3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 612 792]>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n"

// BenchmarkCreateJob drives POST /v1/jobs on PostgreSQL + Redis — the rate limit, the
// idempotency claim, the admission read, the admission write (job, event, reservation,
// answer, limits; combined with concurrent ones on the same account), the enqueue — and
// in the same run the ceiling of one bare job INSERT plus one asynq enqueue, with a
// worker running the jobs both make, as in service: with its default settings, or
// BENCH_JOB_WORKERS jobs at a time (0: no worker). Goal: ≥ 1,000 req/s with p99 ≤ 25 ms,
// ≥ 0.3 of the ceiling.
func BenchmarkCreateJob(b *testing.B) {
	l := newCreateJobLoad(b)
	defer l.close()
	Drive(context.Background(), loadWorkers, time.Second, l.api)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := Drive(context.Background(), loadWorkers, loadDuration, l.api)
		// After, not in turns with it: the ceiling's jobs, made faster than the worker
		// runs them, are cancelled in their thousands, and the worker passing them by
		// would fall on the requests' turns.
		ceiling := Drive(context.Background(), loadWorkers, loadDuration, l.bare)
		report(b, r)
		b.ReportMetric(ceiling.RPS(), "bare-insert+enqueue/s")
		b.ReportMetric(100*r.RPS()/ceiling.RPS(), "%-of-ceiling")
	}
}

// createJobLoad is BenchmarkCreateJob's service and its two loads: api (POST /v1/jobs
// for an inspect job) and bare (its ceiling: one job INSERT and one asynq enqueue).
type createJobLoad struct {
	api, bare func(ctx context.Context, _, _ int) bool
	close     func()
}

func newCreateJobLoad(b *testing.B) *createJobLoad {
	s := newStack(b, stackOpts{})
	fileID := s.readyFile(b, "a.pdf", []byte(samplePDF))
	workers := -1 // the worker's defaults
	if v := os.Getenv("BENCH_JOB_WORKERS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			b.Fatalf("BENCH_JOB_WORKERS: %q", v)
		}
		workers = n
	}
	var w *jobs.Server
	if workers != 0 {
		w = s.startWorker(b, workers)
	}
	client := NewClient(loadWorkers)
	api := func(ctx context.Context, _, _ int) bool {
		st, _, err := s.call(ctx, client, "POST", "/v1/jobs", map[string]any{"file_id": fileID, "operation": "inspect"})
		return err == nil && st == 202
	}
	f, err := s.store.FindFileByID(context.Background(), fileID)
	if err != nil {
		b.Fatal(err)
	}
	bare := func(ctx context.Context, _, _ int) bool {
		j := &domain.Job{ID: domain.NewID(domain.PrefixJob), OrganizationID: f.OrganizationID, ProjectID: f.ProjectID,
			Environment: f.Environment, FileID: f.ID, Operation: "inspect", Options: json.RawMessage("{}"),
			State: domain.JobQueued, CreatedAt: time.Now()}
		return s.store.CreateJob(ctx, j) == nil && s.queue.EnqueueJob(ctx, domain.JobTask{JobID: j.ID}) == nil
	}
	// The requests come faster than one worker on these cores runs the jobs, so the
	// backlog would grow without bound, which the project's concurrency limit forbids in
	// service. Every 50 ms the queued jobs past the worker's next 200 are cancelled (it
	// then passes them by), keeping the backlog what a limit would allow.
	stop := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				// All but the 200 oldest, which the worker takes next, and none a claim holds:
				// the stand-in must not make the worker wait on row locks of its own.
				_, _ = s.store.DB().ExecContext(context.Background(), `UPDATE jobs SET state = ? WHERE id IN
					(SELECT id FROM jobs WHERE project_id = ? AND state = ? ORDER BY created_at OFFSET 200 FOR UPDATE SKIP LOCKED)`,
					domain.JobCancelled, f.ProjectID, domain.JobQueued)
			}
		}
	}()
	return &createJobLoad{api: api, bare: bare, close: func() {
		close(stop)
		<-finished
		if w != nil {
			w.Shutdown()
		}
	}}
}

// timedEngine records how long each engine run took, in order and by job (the job id
// is in the name of the scratch directory the input sits in).
type timedEngine struct {
	domain.Engine
	mu    sync.Mutex
	spent []time.Duration
	byJob map[string]time.Duration
}

func (t *timedEngine) Run(ctx context.Context, in domain.EngineInput) (*domain.EngineOutput, error) {
	t0 := time.Now()
	out, err := t.Engine.Run(ctx, in)
	d := time.Since(t0)
	t.mu.Lock()
	t.spent = append(t.spent, d)
	if t.byJob == nil {
		t.byJob = map[string]time.Duration{}
	}
	dir := filepath.Base(filepath.Dir(in.Path))
	if len(dir) > len(jobs.WorkDirPrefix)+30 {
		t.byJob[dir[len(jobs.WorkDirPrefix):len(jobs.WorkDirPrefix)+30]] += d
	}
	t.mu.Unlock()
	return out, err
}

// BenchmarkBookkeepingInFlight keeps 8 inspect jobs in flight, each client creating a
// job and polling GET /v1/jobs/{id} until it ends, against a worker running 8 at a
// time, and reports finished_at − created_at minus the engine's time: everything the
// platform adds (API, admission, queue, claim, download, artifact upload, settlement).
// Goal: p50 ≤ 20 ms.
func BenchmarkBookkeepingInFlight(b *testing.B) {
	rec := phaseTableOn()
	s := newStack(b, stackOpts{})
	te := &timedEngine{Engine: s.engines["inspect"]}
	s.engines["inspect"] = te
	w := s.startWorker(b, 8)
	defer w.Shutdown()
	fileID := s.readyFile(b, "a.pdf", []byte(samplePDF))
	const inFlight, perClient = 8, 50
	// Clients poll every BENCH_POLL (default 10 ms): a tight loop, which a real client
	// would not run, adding its GETs to the load.
	pollEvery := 10 * time.Millisecond
	if v := os.Getenv("BENCH_POLL"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			b.Fatalf("BENCH_POLL: %v", err)
		}
		pollEvery = d
	}
	client := NewClient(inFlight)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var mu sync.Mutex
		var overhead, waited []time.Duration
		var followed []followedJob
		t0 := time.Now()
		var wg sync.WaitGroup
		for c := 0; c < inFlight; c++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := 0; k < perClient; k++ {
					st, j, err := s.call(context.Background(), client, "POST", "/v1/jobs", map[string]any{"file_id": fileID, "operation": "inspect"})
					if err != nil || st != 202 {
						b.Errorf("create: %d %v", st, err)
						return
					}
					id := j["id"].(string)
					var seen time.Time
					for {
						st, job, err := s.call(context.Background(), client, "GET", "/v1/jobs/"+id, nil)
						if err != nil || st != 200 {
							b.Errorf("poll: %d %v", st, err)
							return
						}
						if job["state"] == "succeeded" {
							seen = time.Now()
							break
						}
						if job["state"] != "queued" && job["state"] != "running" {
							b.Errorf("job %s: %v", id, job)
							return
						}
						time.Sleep(pollEvery)
					}
					done, err := s.store.FindJobByID(context.Background(), id)
					if err != nil {
						b.Error(err)
						return
					}
					te.mu.Lock()
					eng := te.byJob[id]
					te.mu.Unlock()
					mu.Lock()
					overhead = append(overhead, done.FinishedAt.Sub(done.CreatedAt)-eng)
					waited = append(waited, done.StartedAt.Sub(done.CreatedAt))
					followed = append(followed, followedJob{id: id, seen: seen})
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		elapsed := time.Since(t0)
		if len(overhead) == 0 {
			b.Fatal("no job finished")
		}
		sort.Slice(overhead, func(i, j int) bool { return overhead[i] < overhead[j] })
		b.ReportMetric(float64(overhead[len(overhead)/2].Microseconds())/1000, "bookkeeping-p50-ms")
		b.ReportMetric(float64(overhead[len(overhead)*99/100].Microseconds())/1000, "bookkeeping-p99-ms")
		b.ReportMetric(float64(len(overhead))/elapsed.Seconds(), "jobs/s")
		sort.Slice(waited, func(i, j int) bool { return waited[i] < waited[j] })
		b.ReportMetric(float64(waited[len(waited)/2].Microseconds())/1000, "created-to-claimed-p50-ms")
		if rec != nil {
			phaseTable(b, rec, followed)
			rec.Reset()
		}
	}
}

// BenchmarkInspectBookkeeping runs inspect jobs one at a time and reports the time from
// creation to success minus the engine's own time: claim, download, artifact upload,
// settlement, events. Goal: p50 ≤ 20 ms.
func BenchmarkInspectBookkeeping(b *testing.B) {
	s := newStack(b, stackOpts{})
	te := &timedEngine{Engine: s.engines["inspect"]}
	s.engines["inspect"] = te
	w := s.startWorker(b, 1)
	defer w.Shutdown()
	fileID := s.readyFile(b, "a.pdf", []byte(samplePDF))
	client := NewClient(1)
	const n = 200
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var overhead []time.Duration
		te.spent = nil
		for k := 0; k < n; k++ {
			st, j, err := s.call(context.Background(), client, "POST", "/v1/jobs", map[string]any{"file_id": fileID, "operation": "inspect"})
			if err != nil || st != 202 {
				b.Fatalf("create: %d %v", st, err)
			}
			id := j["id"].(string)
			for {
				job, err := s.store.FindJobByID(context.Background(), id)
				if err != nil {
					b.Fatal(err)
				}
				if job.Terminal() {
					if job.State != domain.JobSucceeded {
						b.Fatalf("job %s: %s %s", id, job.State, job.ErrorMessage)
					}
					overhead = append(overhead, job.FinishedAt.Sub(job.CreatedAt))
					break
				}
				time.Sleep(time.Millisecond)
			}
		}
		for k := range overhead {
			overhead[k] -= te.spent[k]
		}
		sort.Slice(overhead, func(i, j int) bool { return overhead[i] < overhead[j] })
		b.ReportMetric(float64(overhead[n/2].Microseconds())/1000, "bookkeeping-p50-ms")
		b.ReportMetric(float64(overhead[n*99/100].Microseconds())/1000, "bookkeeping-p99-ms")
		var eng time.Duration
		for _, d := range te.spent {
			eng += d
		}
		b.ReportMetric(float64(eng.Microseconds())/1000/float64(n), "engine-mean-ms")
	}
}

// BenchmarkInspectThroughput queues inspect jobs and measures how many per second one,
// then two, `filemill worker` processes finish, on PostgreSQL + Redis.
func BenchmarkInspectThroughput(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "filemill")
	if msg, err := exec.Command("go", "build", "-o", bin, "../cmd/filemill").CombinedOutput(); err != nil {
		b.Fatalf("build: %v %s", err, msg)
	}
	for _, procs := range []int{1, 2} {
		b.Run(fmt.Sprintf("%d-worker-processes", procs), func(b *testing.B) {
			dataDir := b.TempDir()
			s := newStack(b, stackOpts{dataDir: filepath.Join(dataDir, "blobs")})
			fileID := s.readyFile(b, "a.pdf", []byte(samplePDF))
			const n = 1000
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				client := NewClient(loadWorkers)
				var wg sync.WaitGroup
				for w := 0; w < loadWorkers; w++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for k := 0; k < n/loadWorkers+1; k++ {
							_, _, _ = s.call(context.Background(), client, "POST", "/v1/jobs", map[string]any{"file_id": fileID, "operation": "inspect"})
						}
					}()
				}
				wg.Wait()
				var cmds []*exec.Cmd
				for p := 0; p < procs; p++ {
					cmd := exec.Command(bin, "worker")
					cmd.Env = append(os.Environ(), "FILEMILL_DATABASE_URL="+s.dbURL, "FILEMILL_REDIS_URL="+s.redisURL,
						"FILEMILL_DATA_DIR="+dataDir, "FILEMILL_LOG_LEVEL=warn")
					if err := cmd.Start(); err != nil {
						b.Fatal(err)
					}
					cmds = append(cmds, cmd)
				}
				b.StartTimer()
				var first, last time.Time
				done := 0
				_, drain := eventually.Wait(5*time.Minute, func() (struct{}, bool) {
					jobs, more, err := s.store.FindJobs(context.Background(), domain.JobFilter{Scope: domain.Scope{OrganizationID: s.org.Organization.ID},
						Environment: domain.EnvLive, State: domain.JobQueued, Page: domain.Page{Limit: 1}})
					if err != nil {
						b.Fatal(err)
					}
					running, _, _ := s.store.FindJobs(context.Background(), domain.JobFilter{Scope: domain.Scope{OrganizationID: s.org.Organization.ID},
						Environment: domain.EnvLive, State: domain.JobRunning, Page: domain.Page{Limit: 1}})
					return struct{}{}, len(jobs) == 0 && !more && len(running) == 0
				})
				b.StopTimer()
				for _, c := range cmds {
					_ = c.Process.Kill()
					_ = c.Wait()
				}
				if drain != nil {
					b.Fatal("the workers did not finish the jobs in 5 minutes")
				}
				first, last, done = s.finishedSpan(b)
				b.ReportMetric(float64(done)/last.Sub(first).Seconds(), "jobs/s")
				b.StartTimer()
			}
		})
	}
}

// finishedSpan reads every succeeded job's start and finish times.
func (s *stack) finishedSpan(b *testing.B) (time.Time, time.Time, int) {
	var first, last time.Time
	n := 0
	page := domain.Page{Limit: 100}
	for {
		js, more, err := s.store.FindJobs(context.Background(), domain.JobFilter{Scope: domain.Scope{OrganizationID: s.org.Organization.ID},
			Environment: domain.EnvLive, State: domain.JobSucceeded, Page: page})
		if err != nil {
			b.Fatal(err)
		}
		for _, j := range js {
			if first.IsZero() || j.StartedAt.Before(first) {
				first = *j.StartedAt
			}
			if j.FinishedAt.After(last) {
				last = *j.FinishedAt
			}
			n++
		}
		if !more {
			return first, last, n
		}
		page.StartingAfter = js[len(js)-1].ID
	}
}

// BenchmarkRedriveLost measures one run of the job sweep over 1,000 jobs whose tasks
// were lost (Redis restarted empty), 1,000 whose tasks were archived with the jobs
// unfinished (their attempts ran out against a database that was down), and 1,000 whose
// tasks wait in the queue (left alone): how long after an outage every lost job is queued
// again. Goal: every lost job re-driven well within a minute, whatever their number.
func BenchmarkRedriveLost(b *testing.B) {
	s := newStack(b, stackOpts{})
	fileID := s.readyFile(b, "a.pdf", []byte(samplePDF))
	ctx := context.Background()
	f, err := s.store.FindFileByID(ctx, fileID)
	if err != nil {
		b.Fatal(err)
	}
	insp := asynq.NewInspector(s.redisOpt)
	defer insp.Close()
	const each = 1000
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		_, _ = s.store.DB().NewUpdate().Model((*domain.Job)(nil)).Set("state = ?", domain.JobCancelled).
			Where("state IN (?)", bun.In([]string{domain.JobQueued, domain.JobRunning})).Exec(ctx)
		if err := s.rdb.FlushDB(ctx).Err(); err != nil {
			b.Fatal(err)
		}
		// A client of its own: asynq's remembers which queues it registered, and the
		// flush forgot them.
		queue := jobs.NewQueue(s.redisOpt)
		for n := range 3 * each {
			j := &domain.Job{ID: domain.NewID(domain.PrefixJob), OrganizationID: f.OrganizationID, ProjectID: f.ProjectID,
				Environment: f.Environment, FileID: f.ID, Operation: "inspect", Options: json.RawMessage("{}"),
				State: domain.JobQueued, CreatedAt: time.Now().Add(-time.Minute)}
			if err := s.store.CreateJob(ctx, j); err != nil {
				b.Fatal(err)
			}
			switch n % 3 {
			case 1: // archived
				if err := queue.EnqueueJob(ctx, domain.JobTask{JobID: j.ID}); err != nil {
					b.Fatal(err)
				}
				if err := insp.ArchiveTask(jobs.DefaultQueueName, j.ID); err != nil {
					b.Fatal(err)
				}
			case 2: // waiting
				if err := queue.EnqueueJob(ctx, domain.JobTask{JobID: j.ID}); err != nil {
					b.Fatal(err)
				}
			}
		}
		queue.Close()
		b.StartTimer()
		t0 := time.Now()
		n, err := s.svc.Jobs.RedriveLost(ctx, 0)
		spent := time.Since(t0)
		if err != nil {
			b.Fatal(err)
		}
		if n != 2*each {
			b.Fatalf("re-drove %d jobs, want %d", n, 2*each)
		}
		b.ReportMetric(spent.Seconds(), "s/sweep")
		b.ReportMetric(float64(3*each)/spent.Seconds(), "jobs-checked/s")
	}
}
