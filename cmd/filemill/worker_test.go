package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/db/dbtest"
	"github.com/filemill/filemill/domain/eventually"
	"github.com/filemill/filemill/internal/testaddr"
	"github.com/filemill/filemill/jobs"
	"github.com/filemill/filemill/jobs/redistest"
)

// ports spaces the test binaries' addresses from those of bench/chaos.
var ports = &testaddr.Ports{Lo: 20000, Hi: 30000, Stride: 25}

func freeAddr(t *testing.T) string { t.Helper(); return ports.Free(t) }

func apiPost(t *testing.T, url, key string, body any) (int, map[string]any) {
	t.Helper()
	var raw []byte
	if body != nil {
		raw, _ = json.Marshal(body)
	}
	req, _ := http.NewRequest("POST", url, bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	secret := make([]byte, 8)
	_, _ = rand.Read(secret)
	req.Header.Set("Idempotency-Key", hex.EncodeToString(secret))
	return apiDo(t, req, key)
}

// TestWorkerKilledMidJob runs the split deployment (one api process, worker processes)
// on PostgreSQL, Redis and shared local storage, kills the worker with SIGKILL while it
// runs a job, and checks that another worker finishes the job exactly once.
func TestWorkerKilledMidJob(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	addr, storageAddr := freeAddr(t), freeAddr(t)
	work := t.TempDir()
	env := cleanEnv("FILEMILL_DATABASE_URL="+dbtest.Postgres(t), "FILEMILL_REDIS_URL="+redistest.URL(t),
		"FILEMILL_DATA_DIR="+dir, "FILEMILL_ADDR="+addr, "FILEMILL_STORAGE_ADDR="+storageAddr,
		"FILEMILL_STORAGE_SECRET="+hex.EncodeToString(secret), "FILEMILL_WORKER_CONCURRENCY=1", "FILEMILL_WORK_DIR="+work)
	base := "http://" + addr

	key := bootstrapKey(t, dir, env, "--org", "k", "--project", "p", "--credits", "10")

	start(t, dir, env, "api")
	waitReady(t, base)

	// A large text file keeps the inspect engine busy long enough to be killed mid-run.
	const size = 600 << 20
	status, up := apiPost(t, base+"/v1/uploads", key, map[string]any{"filename": "big.txt", "byte_size": size})
	require.Equal(t, 201, status, "%v", up)
	line := "the quick brown fox jumps over the lazy dog 0123456789\n"
	body := io.LimitReader(strings.NewReader(strings.Repeat(line, size/len(line)+1)), size)
	req, _ := http.NewRequest("PUT", up["upload_url"].(string), body)
	req.ContentLength = size
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Less(t, resp.StatusCode, 300)
	status, file := apiPost(t, base+"/v1/files/"+up["file_id"].(string)+"/complete", key, nil)
	require.Equal(t, 200, status, "%v", file)
	// A job is admitted only while a live worker runs its engine.
	victim := start(t, dir, env, "worker")
	var status2 int
	var job map[string]any
	eventually.True(t, "the worker to advertise inspect", func() bool {
		status2, job = apiPost(t, base+"/v1/jobs", key, map[string]any{"file_id": file["id"], "operation": "inspect"})
		return status2 != 503
	})
	require.Equal(t, 202, status2, "%v", job)
	jobURL := base + "/v1/jobs/" + job["id"].(string)
	scratch := filepath.Join(work, jobs.WorkDirPrefix+job["id"].(string)+"-*")
	// The job turns running when claimed, a moment before the attempt makes its scratch
	// directory: the kill waits for the directory, so the attempt is surely under way.
	eventually.True(t, "the worker to begin the job", func() bool {
		_, j := apiGet(t, jobURL, key)
		dirs, err := filepath.Glob(scratch)
		require.NoError(t, err)
		require.Contains(t, []any{"queued", "running"}, j["state"], "the job must still be running when the worker dies: %v", j)
		return j["state"] == "running" && len(dirs) == 1
	})
	require.NoError(t, victim.cmd.Process.Signal(syscall.SIGKILL))
	_ = victim.cmd.Wait()
	_, j := apiGet(t, jobURL, key)
	require.Equal(t, "running", j["state"], "killed mid-job: %v", j)

	start(t, dir, env, "worker")
	// The task returns after its lease runs out.
	j = eventually.Value(t, "the job to come back", func() (map[string]any, bool) {
		_, j := apiGet(t, jobURL, key)
		return j, j["state"] != "running"
	})
	require.Equal(t, "succeeded", j["state"], "%v", j)
	require.EqualValues(t, 2, j["attempts"])
	require.EqualValues(t, 1, j["credits_charged"])
	require.Len(t, j["artifacts"], 1)
	_, usage := apiGet(t, base+"/v1/usage", key)
	credits := usage["credits"].(map[string]any)
	require.EqualValues(t, 1, credits["used"], "charged once: %v", usage)
	require.EqualValues(t, 0, credits["reserved"])
	require.EqualValues(t, 9, credits["balance"], fmt.Sprint(usage))

	// The killed worker's scratch directory is left in FILEMILL_WORK_DIR (an hourly-old
	// one is swept); the second worker removes its own once the outcome is recorded.
	var left []string
	eventually.True(t, fmt.Sprintf("the killed attempt's only: %v", left), func() bool {
		left, err = filepath.Glob(scratch)
		return err == nil && len(left) == 1
	})
}

// TestAvailabilityFollowsWorkers: whether an operation can run is what live worker
// processes say, not what the API process has: with no worker it is unavailable and
// refused with 503; a worker that starts makes it available and runs its jobs; a
// worker that stops takes it away again.
func TestAvailabilityFollowsWorkers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	addr, storageAddr := freeAddr(t), freeAddr(t)
	env := cleanEnv("FILEMILL_DATABASE_URL="+dbtest.Postgres(t), "FILEMILL_REDIS_URL="+redistest.URL(t),
		"FILEMILL_DATA_DIR="+dir, "FILEMILL_ADDR="+addr, "FILEMILL_STORAGE_ADDR="+storageAddr,
		"FILEMILL_STORAGE_SECRET="+hex.EncodeToString(secret), "FILEMILL_WORK_DIR="+t.TempDir())
	base := "http://" + addr
	key := bootstrapKey(t, dir, env, "--org", "k", "--project", "p", "--credits", "10")
	start(t, dir, env, "api")
	waitReady(t, base)

	inspectAvailable := func() bool { return operationAvailable(t, base, key, "inspect") }
	require.False(t, inspectAvailable(), "no worker runs it")

	status, up := apiPost(t, base+"/v1/uploads", key, map[string]any{"filename": "a.txt", "byte_size": 5})
	require.Equal(t, 201, status, "%v", up)
	req, _ := http.NewRequest("PUT", up["upload_url"].(string), strings.NewReader("hello"))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	status, file := apiPost(t, base+"/v1/files/"+up["file_id"].(string)+"/complete", key, nil)
	require.Equal(t, 200, status, "%v", file)
	status, refused := apiPost(t, base+"/v1/jobs", key, map[string]any{"file_id": file["id"], "operation": "inspect"})
	require.Equal(t, 503, status, "%v", refused)
	require.Equal(t, "processing_unavailable", refused["error"].(map[string]any)["code"])

	worker := start(t, dir, append(env, "FILEMILL_ENGINES=inspect"), "worker")
	eventually.True(t, "the worker to advertise inspect", inspectAvailable)
	status, job := apiPost(t, base+"/v1/jobs", key, map[string]any{"file_id": file["id"], "operation": "inspect"})
	require.Equal(t, 202, status, "%v", job)
	eventually.True(t, "the job to succeed", func() bool {
		_, j := apiGet(t, base+"/v1/jobs/"+job["id"].(string), key)
		if j["state"] == "succeeded" {
			return true
		}
		require.Contains(t, []any{"queued", "running"}, j["state"], "%v", j)
		return false
	})

	require.NoError(t, worker.cmd.Process.Signal(syscall.SIGTERM))
	_ = worker.cmd.Wait()
	eventually.True(t, "a stopped worker to stop counting", func() bool { return !inspectAvailable() })
}
