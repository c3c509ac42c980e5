package jobs_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/domain/eventually"
	"github.com/filemill/filemill/jobs"
)

// checkedEngine is an engine whose Check answers what the test says.
type checkedEngine struct {
	version string
	broken  atomic.Bool
}

func (e *checkedEngine) Run(context.Context, domain.EngineInput) (*domain.EngineOutput, error) {
	return nil, errors.New("not run here")
}
func (e *checkedEngine) Version() string { return e.version }
func (e *checkedEngine) Check(context.Context) error {
	if e.broken.Load() {
		return errors.New("tool missing")
	}
	return nil
}

// ocrLike is a checked engine that tells its languages and page limit, as OCR does.
type ocrLike struct {
	checkedEngine
	langs    []string
	maxPages int
}

func (e *ocrLike) Languages() ([]string, error) { return e.langs, nil }
func (e *ocrLike) MaxPages() int                { return e.maxPages }

// TestEngineDirectory: what workers advertise is what the directory reads; an engine
// whose check fails is not advertised; a worker that stops is gone at once.
func TestEngineDirectory(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, open func(t *testing.T) string) {
		url := open(t)
		b := setup(t, url)
		_, ropts, err := jobs.ParseRedisURL(url)
		require.NoError(t, err)
		rdb := redis.NewClient(ropts)
		t.Cleanup(func() { rdb.Close() })
		dir := jobs.NewDirectory(rdb, 0)
		ctx := context.Background()

		live, err := dir.LiveEngines(ctx)
		require.NoError(t, err)
		require.Empty(t, live, "no worker yet")

		scan := &checkedEngine{version: "clamav 1.4"}
		scan.broken.Store(true)
		var firstChecks <-chan map[string]error
		w1 := b.server(t, fastConfig(), func(s *jobs.Server) {
			firstChecks = s.AdvertiseEngines(map[string]domain.Engine{"pdf": &checkedEngine{version: "pdfcpu 0.15"}, "scan": scan,
				"ocr": &ocrLike{checkedEngine: checkedEngine{version: "tesseract 5"}, langs: []string{"deu", "eng"}, maxPages: 500}})
		})
		w2 := b.server(t, fastConfig(), func(s *jobs.Server) {
			s.AdvertiseEngines(map[string]domain.Engine{"pdf": &checkedEngine{version: "pdfcpu 0.15"},
				"ocr": &ocrLike{checkedEngine: checkedEngine{version: "tesseract 5"}, langs: []string{"eng", "fra"}, maxPages: 300}})
		})
		eventually.True(t, "the condition to hold", func() bool {
			live, err = dir.LiveEngines(ctx)
			return err == nil && live["pdf"].Workers == 2
		})
		require.Equal(t, "pdfcpu 0.15", live["pdf"].Version)
		require.Nil(t, live["pdf"].Languages, "an engine without languages tells none")
		require.Equal(t, domain.EngineInfo{Version: "tesseract 5", Workers: 2, Languages: []string{"eng"}, MaxPages: 300}, live["ocr"],
			"any worker may take a job: the languages all have, the lowest page limit")
		require.NotContains(t, live, "scan", "an engine that fails its check is not advertised")
		require.Contains(t, b.logs.String(), "engine unavailable")
		first := <-firstChecks // the outcome of the first checks, for the report at start
		require.Len(t, first, 3)
		require.NoError(t, first["pdf"])
		require.EqualError(t, first["scan"], "tool missing")

		w2.Shutdown()
		live, err = dir.LiveEngines(ctx)
		require.NoError(t, err)
		require.Equal(t, 1, live["pdf"].Workers, "a worker that stops leaves at once")
		require.Equal(t, []string{"deu", "eng"}, live["ocr"].Languages)

		// A worker of an earlier release wrote the version alone.
		require.NoError(t, rdb.HSet(ctx, "fm:engine-worker:old", "pdf", "pdfcpu 0.11").Err())
		require.NoError(t, rdb.SAdd(ctx, "fm:engine-workers", "old").Err())
		live, err = dir.LiveEngines(ctx)
		require.NoError(t, err)
		require.Equal(t, 2, live["pdf"].Workers)
		require.NoError(t, rdb.Del(ctx, "fm:engine-worker:old").Err())
		w1.Shutdown()
		live, err = dir.LiveEngines(ctx)
		require.NoError(t, err)
		require.Empty(t, live)
	})
}

// TestEnginePoolsServeOnlyWhatTheWorkerRuns: a worker takes jobs only from the queues
// of engine sets it runs entirely; a job needing an engine it lacks stays queued for
// a worker that has it.
func TestEnginePoolsServeOnlyWhatTheWorkerRuns(t *testing.T) {
	t.Parallel()
	reg := domain.NewRegistry()
	require.NoError(t, reg.AddOperations(
		domain.OperationSpec{Name: "a.op", Engine: "alpha", Description: "a", Price: domain.Price{Credits: 1, Per: "file"}, InputFormats: []string{"*"}},
		domain.OperationSpec{Name: "b.op", Engine: "beta", Description: "b", Price: domain.Price{Credits: 1, Per: "file"}, InputFormats: []string{"*"}},
	))
	require.NoError(t, reg.AddPreset(domain.PresetSpec{Name: "ab", InputFormats: []string{"*"},
		Steps: []domain.StepSpec{{Name: "a", Operation: "a.op"}, {Name: "b", Operation: "b.op"}}}))
	alphaOnly := map[string]domain.Engine{"alpha": &checkedEngine{}}
	pools := jobs.EnginePools(reg, alphaOnly, func(string) jobs.FamilySettings { return jobs.FamilySettings{Concurrency: 3} })
	require.Len(t, pools, 1)
	require.Equal(t, map[string]int{"engine:alpha": 3}, pools[0].Queues, "alpha's own queue; not the preset's, which needs beta too")
	require.Equal(t, 3, pools[0].Concurrency)
	both := map[string]domain.Engine{"alpha": &checkedEngine{}, "beta": &checkedEngine{}}
	pools = jobs.EnginePools(reg, both, func(f string) jobs.FamilySettings {
		if f == "beta" {
			return jobs.FamilySettings{Concurrency: 1, Weight: 5, PollInterval: time.Second}
		}
		return jobs.FamilySettings{Concurrency: 3}
	})
	require.Len(t, pools, 2, "a pool per family")
	require.Equal(t, "beta", pools[1].Name)
	require.Equal(t, map[string]int{"engine:beta": 3, "engine:alpha+beta": 2}, pools[1].Queues,
		"a job needing both runs in the pool of the heavier family, after lighter jobs")
	require.Equal(t, 1, pools[1].Concurrency)
	require.Equal(t, time.Second, pools[1].PollInterval)

	b := setup(t, open(t))
	var ran atomic.Int32
	b.server(t, jobs.ServerConfig{Concurrency: 1, TaskCheckInterval: 10 * time.Millisecond,
		Pools: jobs.EnginePools(reg, alphaOnly, func(string) jobs.FamilySettings { return jobs.FamilySettings{Concurrency: 1} })}, func(s *jobs.Server) {
		s.Handle(jobs.TypeJobRun, asynq.HandlerFunc(func(context.Context, *asynq.Task) error { ran.Add(1); return nil }))
	})
	ctx := context.Background()
	require.NoError(t, b.queue.EnqueueJob(ctx, domain.JobTask{JobID: "job_01BETA", Queue: domain.QueueName([]string{"beta"})}))
	require.NoError(t, b.queue.EnqueueJob(ctx, domain.JobTask{JobID: "job_01ALPHA", Queue: domain.QueueName([]string{"alpha"})}))
	eventually.True(t, "the condition to hold", func() bool {
		info, err := b.insp.GetTaskInfo("engine:alpha", "job_01ALPHA")
		return err == nil && info.State == asynq.TaskStateCompleted
	})
	// The beta task was enqueued first: a worker serving its queue would have taken it
	// by the time the alpha one has run.
	info, err := b.insp.GetTaskInfo("engine:beta", "job_01BETA")
	require.NoError(t, err)
	require.Equal(t, asynq.TaskStatePending, info.State, "a worker without beta never takes its jobs")
	require.EqualValues(t, 1, ran.Load())
}

func open(t *testing.T) string { return backends["Redis"](t) }

// TestDefaultFamilySettings: heavy families run fewer jobs per CPU and look for work
// less often than light ones; a family the table does not know runs one per CPU.
func TestDefaultFamilySettings(t *testing.T) {
	t.Parallel()
	poll := 100 * time.Millisecond
	inspect := jobs.DefaultFamilySettings("inspect", 2, poll)
	require.Equal(t, jobs.FamilySettings{Concurrency: 4, PollInterval: poll, Weight: 0}, inspect)
	image := jobs.DefaultFamilySettings("image", 2, poll)
	require.Equal(t, jobs.FamilySettings{Concurrency: 2, PollInterval: 3 * poll, Weight: 2}, image)
	ocr := jobs.DefaultFamilySettings("ocr", 1, poll)
	require.Equal(t, 1, ocr.Concurrency, "at least one, however few the CPUs")
	require.Equal(t, 10*poll, ocr.PollInterval)
	require.Greater(t, jobs.DefaultFamilySettings("office", 2, poll).Weight, image.Weight)
	require.Equal(t, jobs.FamilySettings{Concurrency: 8, PollInterval: poll}, jobs.DefaultFamilySettings("new", 8, poll))
}
