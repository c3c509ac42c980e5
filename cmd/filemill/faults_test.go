package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun/driver/pgdriver"

	"github.com/filemill/filemill/db/dbtest"
	"github.com/filemill/filemill/domain/eventually"
	"github.com/filemill/filemill/jobs/redistest"
)

// TestOutages runs the split deployment (an api process and two worker processes) on a
// PostgreSQL and a Redis of the test's own under a steady load of jobs, stops one of
// them for a while and starts it again, and checks that every job reaches its end with
// no one's help, charged once, and that the logs stay JSON and say a dependency is down
// once per interval rather than once per attempt.
func TestOutages(t *testing.T) {
	t.Parallel()
	t.Run("PostgresStopped30s", func(t *testing.T) {
		t.Parallel()
		runOutage(t, "postgres", 30*time.Second)
	})
	t.Run("RedisStopped15s", func(t *testing.T) {
		t.Parallel()
		runOutage(t, "redis", 15*time.Second)
	})
}

// Bounds of the scenario. The sweep and the lease are short so the test need not wait
// minutes; a job must be finished within recoveryBound of the server's return.
const (
	loadEvery     = 100 * time.Millisecond // 10 jobs a second
	loadAround    = 3 * time.Second        // of load before the outage and after it
	recoveryBound = 60 * time.Second
	grantCredits  = 100000
)

func runOutage(t *testing.T, stopped string, outage time.Duration) {
	pg := dbtest.StartPostgres(t)
	rd := redistest.StartRedis(t)
	dir := t.TempDir()
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	addr, storageAddr := freeAddr(t), freeAddr(t)
	env := cleanEnv("FILEMILL_DATABASE_URL="+pg.URL(), "FILEMILL_REDIS_URL="+rd.URL(),
		"FILEMILL_DATA_DIR="+dir, "FILEMILL_ADDR="+addr, "FILEMILL_STORAGE_ADDR="+storageAddr,
		"FILEMILL_STORAGE_SECRET="+hex.EncodeToString(secret), "FILEMILL_WORKER_CONCURRENCY=4",
		"FILEMILL_JOB_LEASE=3s", "FILEMILL_SWEEP_INTERVAL=2s",
		"FILEMILL_RATE_LIMIT_PER_MINUTE=100000", "FILEMILL_PROJECT_CONCURRENCY_LIMIT=100000")
	base := "http://" + addr

	key := bootstrapKey(t, dir, env, "--org", "o", "--project", "p", "--credits", fmt.Sprint(grantCredits))

	api := start(t, dir, env, "api")
	workers := []*proc{start(t, dir, env, "worker"), start(t, dir, env, "worker")}
	waitReady(t, base)
	waitAvailable(t, base, key, "inspect")
	file := uploadText(t, base, key, "steady load\n")

	// The load: a job every loadEvery, each its own idempotent request, until stopped.
	client := &http.Client{Timeout: 10 * time.Second}
	var (
		mu       sync.Mutex
		accepted []string
		answers  = map[int]int{}
		// late are the requests sent once the server was back that were not served.
		late      []string
		recovered time.Time
	)
	stopLoad := make(chan struct{})
	loadDone := make(chan struct{})
	go func() {
		defer close(loadDone)
		tick := time.NewTicker(loadEvery)
		defer tick.Stop()
		var wg sync.WaitGroup
		defer wg.Wait()
		for {
			select {
			case <-stopLoad:
				return
			case <-tick.C:
			}
			wg.Add(1)
			mu.Lock()
			afterRecovery := !recovered.IsZero()
			mu.Unlock()
			go func() {
				defer wg.Done()
				status, id := postJob(client, base, key, file)
				mu.Lock()
				defer mu.Unlock()
				answers[status]++
				if afterRecovery && (status == 0 || status >= 500) {
					late = append(late, fmt.Sprintf("%d at +%s", status, time.Since(recovered).Round(time.Millisecond)))
				}
				if status == http.StatusAccepted {
					accepted = append(accepted, id)
				}
			}()
		}
	}()

	stop, restart := pg.Stop, pg.Start
	if stopped == "redis" {
		stop, restart = rd.Stop, rd.Start
	}
	time.Sleep(loadAround - time.Second)
	// The workers fall behind for the last second, so tasks wait in the queue when the
	// server goes: each then meets the outage, as a backlog would.
	for _, w := range workers {
		require.NoError(t, w.cmd.Process.Signal(syscall.SIGSTOP))
	}
	time.Sleep(time.Second)
	stop()
	for _, w := range workers {
		require.NoError(t, w.cmd.Process.Signal(syscall.SIGCONT))
	}
	t.Logf("%s stopped for %s", stopped, outage)
	time.Sleep(outage)
	restart()
	mu.Lock()
	recovered = time.Now()
	mu.Unlock()
	time.Sleep(loadAround)
	close(stopLoad)
	<-loadDone
	mu.Lock()
	t.Logf("answers by status: %v", answers)
	if stopped == "postgres" {
		// The first requests after the server is back are served: none meets a
		// connection that died in a pool during the outage. (A Redis that comes back
		// empty has lost the workers' announcements: jobs are refused 503
		// processing_unavailable until the next heartbeat, as documented.)
		require.Empty(t, late, "requests sent after %s came back that were not served", stopped)
	}
	require.Greater(t, len(accepted), int((2*loadAround/loadEvery)/2), "jobs were accepted before and after the outage")
	mu.Unlock()

	db := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(pg.URL())))
	defer db.Close()
	ctx := context.Background()
	var unfinished int
	_, err := eventually.Wait(time.Until(recovered.Add(recoveryBound)), func() (struct{}, bool) {
		require.NoError(t, db.QueryRowContext(ctx, "SELECT count(*) FROM jobs WHERE state IN ('queued', 'running')").Scan(&unfinished))
		return struct{}{}, unfinished == 0
	})
	require.NoError(t, err, "%d jobs unfinished %s after %s came back", unfinished, recoveryBound, stopped)
	t.Logf("every job finished %s after %s came back", time.Since(recovered).Round(100*time.Millisecond), stopped)

	// Every accepted job succeeded: an outage costs a job none of its attempts.
	states := map[string]string{}
	rows, err := db.QueryContext(ctx, "SELECT id, state FROM jobs")
	require.NoError(t, err)
	for rows.Next() {
		var id, state string
		require.NoError(t, rows.Scan(&id, &state))
		states[id] = state
	}
	require.NoError(t, rows.Err())
	rows.Close()
	for _, id := range accepted {
		require.Equal(t, "succeeded", states[id], "job %s", id)
	}
	for id, state := range states {
		require.Equal(t, "succeeded", state, "job %s (written, whether or not its answer arrived)", id)
	}

	// Charged once: per job one reservation, at most one charge, and what was reserved
	// is exactly what was charged and released.
	var bad int
	require.NoError(t, db.QueryRowContext(ctx, `SELECT count(*) FROM jobs j WHERE
		(SELECT count(*) FROM ledger_entries WHERE job_id = j.id AND kind = 'reserve') <> 1 OR
		(SELECT count(*) FROM ledger_entries WHERE job_id = j.id AND kind = 'charge') > 1 OR
		(SELECT coalesce(sum(amount), 0) FROM ledger_entries WHERE job_id = j.id AND kind = 'charge') <> j.credits_charged OR
		(SELECT coalesce(sum(CASE kind WHEN 'reserve' THEN amount ELSE -amount END), 0) FROM ledger_entries
			WHERE job_id = j.id AND kind IN ('reserve', 'charge', 'release')) <> 0`).Scan(&bad))
	require.Zero(t, bad, "jobs whose ledger entries do not add up")
	var balance, reserved, used, charged, jobsCharged int64
	require.NoError(t, db.QueryRowContext(ctx, "SELECT balance, reserved, used FROM credit_accounts WHERE environment = 'live'").
		Scan(&balance, &reserved, &used))
	require.NoError(t, db.QueryRowContext(ctx, "SELECT coalesce(sum(amount), 0) FROM ledger_entries WHERE kind = 'charge'").Scan(&charged))
	require.NoError(t, db.QueryRowContext(ctx, "SELECT coalesce(sum(credits_charged), 0) FROM jobs").Scan(&jobsCharged))
	require.Zero(t, reserved, "nothing held back")
	require.Equal(t, jobsCharged, charged, "the ledger's charges are the jobs'")
	require.Equal(t, jobsCharged, used)
	require.EqualValues(t, grantCredits, balance+used)
	require.Equal(t, int64(len(states)), jobsCharged, "inspect costs 1 credit a job")

	// Logs: JSON, every line; the dependency's absence said once per interval per
	// source, not once per attempt or per dial.
	for _, p := range append([]*proc{api}, workers...) {
		require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
		_ = p.cmd.Wait()
		<-p.stderr.done
	}
	for i, p := range append([]*proc{api}, workers...) {
		lines, refused := 0, 0
		sc := bufio.NewScanner(strings.NewReader(p.stderr.buf.String()))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			lines++
			var m map[string]any
			require.NoError(t, json.Unmarshal(sc.Bytes(), &m), "process %d wrote a line that is not JSON: %s", i, sc.Text())
			if strings.Contains(sc.Text(), "refused") {
				refused++
			}
		}
		t.Logf("process %d: %d log lines, %d about the refused connection", i, lines, refused)
		if i > 0 {
			// A worker's sources: go-redis or pgdriver, asynq's loops (a handful),
			// the job attempts, the sweeps; each once per 10 s. Once per attempt
			// would be hundreds.
			require.Less(t, refused, 12*int(outage/(10*time.Second)+2), "a worker logs the outage once per interval per source")
		}
	}
}

// postJob asks for an inspect job; it answers the status (0 when no answer came) and
// the job's id.
func postJob(client *http.Client, base, key, file string) (int, string) {
	body := strings.NewReader(fmt.Sprintf(`{"file_id":%q,"operation":"inspect"}`, file))
	req, _ := http.NewRequest("POST", base+"/v1/jobs", body)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	idem := make([]byte, 8)
	_, _ = rand.Read(idem)
	req.Header.Set("Idempotency-Key", hex.EncodeToString(idem))
	resp, err := client.Do(req)
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	var j struct {
		ID string `json:"id"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&j)
	return resp.StatusCode, j.ID
}

// uploadText uploads content as a ready text file and returns its id.
func uploadText(t *testing.T, base, key, content string) string {
	t.Helper()
	status, up := apiPost(t, base+"/v1/uploads", key, map[string]any{"filename": "a.txt", "byte_size": len(content)})
	require.Equal(t, 201, status, "%v", up)
	req, _ := http.NewRequest("PUT", up["upload_url"].(string), strings.NewReader(content))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Less(t, resp.StatusCode, 300)
	status, file := apiPost(t, base+"/v1/files/"+up["file_id"].(string)+"/complete", key, nil)
	require.Equal(t, 200, status, "%v", file)
	return file["id"].(string)
}
