package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/db/dbtest"
	"github.com/filemill/filemill/domain/eventually"
	"github.com/filemill/filemill/graph/graphtest"
	"github.com/filemill/filemill/jobs/redistest"
)

const jobSubscription = `subscription($id: ID!) { jobUpdated(id: $id) { id state progress attempts artifacts { id } } }`

// TestSubscriptionSeesAJobRunByAnotherProcess runs the split deployment (an api
// process, a worker process) on PostgreSQL and Redis, subscribes to a queued job over
// real websockets — graphql-transport-ws, the legacy graphql-ws, and the reference npm
// graphql-ws client — and sees it go queued → running (with progress) → succeeded as
// the worker in the other process runs it. A subscriber arriving after the end gets the
// final state.
func TestSubscriptionSeesAJobRunByAnotherProcess(t *testing.T) {
	t.Parallel()
	node, nodeDir := nodeClient(t)
	dir := t.TempDir()
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	addr, storageAddr := freeAddr(t), freeAddr(t)
	env := cleanEnv("FILEMILL_DATABASE_URL="+dbtest.Postgres(t), "FILEMILL_REDIS_URL="+redistest.URL(t),
		"FILEMILL_DATA_DIR="+dir, "FILEMILL_ADDR="+addr, "FILEMILL_STORAGE_ADDR="+storageAddr,
		"FILEMILL_STORAGE_SECRET="+hex.EncodeToString(secret), "FILEMILL_WORKER_CONCURRENCY=1", "FILEMILL_ENGINE_CONCURRENCY=inspect=1", "FILEMILL_ENGINES=inspect",
		"FILEMILL_WORK_DIR="+t.TempDir())
	base := "http://" + addr
	key := bootstrapKey(t, dir, env, "--org", "g", "--project", "p", "--credits", "10")
	start(t, dir, env, "api")
	waitReady(t, base)

	// Texts long enough for the inspect engine to report progress as it counts: one to
	// keep the only worker slot busy, one to follow.
	upload := func(name string, size int) string {
		status, up := apiPost(t, base+"/v1/uploads", key, map[string]any{"filename": name, "byte_size": size})
		require.Equal(t, 201, status, "%v", up)
		line := "the quick brown fox jumps over the lazy dog 0123456789\n"
		req, _ := http.NewRequest("PUT", up["upload_url"].(string), io.LimitReader(strings.NewReader(strings.Repeat(line, size/len(line)+1)), int64(size)))
		req.ContentLength = int64(size)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Less(t, resp.StatusCode, 300)
		status, file := apiPost(t, base+"/v1/files/"+up["file_id"].(string)+"/complete", key, nil)
		require.Equal(t, 200, status, "%v", file)
		return file["id"].(string)
	}
	busy, followed := upload("busy.txt", 400<<20), upload("long.txt", 48<<20)

	// A job is admitted only while a live worker runs its engine: the worker takes the
	// first job, and the second waits in the queue behind it.
	start(t, dir, env, "worker")
	var status int
	var first map[string]any
	eventually.True(t, "the worker to advertise inspect", func() bool {
		status, first = apiPost(t, base+"/v1/jobs", key, map[string]any{"file_id": busy, "operation": "inspect"})
		return status != 503
	})
	require.Equal(t, 202, status, "%v", first)
	eventually.True(t, "the worker to take the first job", func() bool {
		_, j := apiGet(t, base+"/v1/jobs/"+first["id"].(string), key)
		if j["state"] == "running" {
			return true
		}
		require.Equal(t, "queued", j["state"], "the first job ended before the second could wait: %v", j)
		return false
	})
	status, job := apiPost(t, base+"/v1/jobs", key, map[string]any{"file_id": followed, "operation": "inspect"})
	require.Equal(t, 202, status, "%v", job)
	jobID := job["id"].(string)
	vars := map[string]any{"id": jobID}

	// Three subscribers while the job waits for the worker.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	modern, err := graphtest.Dial(ctx, graphtest.URL(base), graphtest.Options{Protocol: graphtest.TransportWS,
		Header: http.Header{"Authorization": {"Bearer " + key}}})
	require.NoError(t, err)
	defer modern.Close()
	legacy, err := graphtest.Dial(ctx, graphtest.URL(base), graphtest.Options{Protocol: graphtest.LegacyWS,
		InitPayload: map[string]any{"authorization": "Bearer " + key}})
	require.NoError(t, err)
	defer legacy.Close()
	_, modernCh, err := modern.Subscribe(jobSubscription, vars)
	require.NoError(t, err)
	_, legacyCh, err := legacy.Subscribe(jobSubscription, vars)
	require.NoError(t, err)
	nodeCmd := exec.Command(node, filepath.Join(nodeDir, "subscribe.mjs"), graphtest.URL(base), key, jobID)
	var nodeOut, nodeErr bytes.Buffer
	nodeCmd.Stdout, nodeCmd.Stderr = &nodeOut, &nodeErr
	require.NoError(t, nodeCmd.Start())
	defer func() { _ = nodeCmd.Process.Kill() }()
	// Everyone has the current state before the worker starts.
	current := func(ch <-chan graphtest.Result) graphtest.Result {
		select {
		case r := <-ch:
			return r
		case <-ctx.Done():
			t.Fatal("no current state within a minute")
			return graphtest.Result{}
		}
	}
	modernFirst, legacyFirst := current(modernCh), current(legacyCh)
	eventually.True(t, fmt.Sprintf("the graphql-ws client got nothing: %s", nodeErr.String()), func() bool { return bytes.Contains(nodeOut.Bytes(), []byte("queued")) })

	modernStates := append([]map[string]any{modernFirst.Data["jobUpdated"].(map[string]any)}, graphtest.Drain(t, modernCh, "jobUpdated")...)
	legacyStates := append([]map[string]any{legacyFirst.Data["jobUpdated"].(map[string]any)}, graphtest.Drain(t, legacyCh, "jobUpdated")...)
	graphtest.CheckLifecycle(t, graphtest.TransportWS, modernStates)
	graphtest.CheckLifecycle(t, graphtest.LegacyWS, legacyStates)

	done := make(chan error, 1)
	go func() { done <- nodeCmd.Wait() }()
	select {
	case err := <-done:
		require.NoError(t, err, "graphql-ws client: %s", nodeErr.String())
	case <-time.After(2 * time.Minute):
		t.Fatalf("the graphql-ws client never saw the end: %s %s", nodeOut.String(), nodeErr.String())
	}
	var nodeStates []map[string]any
	sc := bufio.NewScanner(&nodeOut)
	for sc.Scan() {
		var r graphtest.Result
		require.NoError(t, json.Unmarshal(sc.Bytes(), &r))
		require.Empty(t, r.Errors)
		nodeStates = append(nodeStates, r.Data["jobUpdated"].(map[string]any))
	}
	graphtest.CheckLifecycle(t, "npm graphql-ws", nodeStates)

	// A late subscriber gets the final state, and the end.
	_, late, err := modern.Subscribe(jobSubscription, vars)
	require.NoError(t, err)
	states := graphtest.Drain(t, late, "jobUpdated")
	require.Len(t, states, 1)
	require.Equal(t, "succeeded", states[0]["state"])
}

// nodeClient finds node and the graphql-ws client installed by .ci/ensure-deps.
func nodeClient(t *testing.T) (string, string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not installed: run `make deps` (.ci/ensure-deps installs nodejs and the graphql-ws client)")
	}
	dir, err := filepath.Abs(filepath.Join("..", "..", "graph", "testdata", "wsclient"))
	require.NoError(t, err)
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "graphql-ws")); err != nil {
		t.Fatalf("the graphql-ws client is not installed in %s: run `make deps` (or npm ci there)", dir)
	}
	return node, dir
}
