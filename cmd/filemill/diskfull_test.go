package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/db/dbtest"
	"github.com/filemill/filemill/domain/eventually"
	"github.com/filemill/filemill/jobs/redistest"
)

// TestDiskFull runs `serve` with its storage and its work directory on small file
// systems of their own and fills them: an upload is answered 503 dependency_unavailable
// with a plain sentence and the failure is logged, /readyz names what cannot be
// written, and a job whose input does not fit the work directory fails with a plain
// sentence, never a path. Once there is room again, all is well again.
func TestDiskFull(t *testing.T) {
	t.Parallel()
	data, work := mountTmpfs(t, "8m"), mountTmpfs(t, "1m")
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	addr, storageAddr := freeAddr(t), freeAddr(t)
	env := cleanEnv("FILEMILL_DATABASE_URL="+dbtest.Postgres(t), "FILEMILL_REDIS_URL="+redistest.URL(t),
		"FILEMILL_DATA_DIR="+data, "FILEMILL_WORK_DIR="+work, "FILEMILL_ADDR="+addr, "FILEMILL_STORAGE_ADDR="+storageAddr,
		"FILEMILL_STORAGE_SECRET="+hex.EncodeToString(secret))
	base := "http://" + addr
	dir := t.TempDir()
	key := bootstrapKey(t, dir, env, "--org", "o", "--project", "p", "--credits", "10")
	srv := start(t, dir, env, "serve")
	waitReady(t, base)
	waitAvailable(t, base, key, "inspect")

	// Fits the storage, not the work directory.
	big := uploadText(t, base, key, strings.Repeat("no room for this at the worker\n", 2<<20/31))
	status, opened := apiPost(t, base+"/v1/uploads", key, map[string]any{"filename": "b.txt", "byte_size": 64 << 10})
	require.Equal(t, 201, status, "%v", opened)
	filler := fill(t, data)

	t.Run("UploadIs503WithAPlainSentence", func(t *testing.T) {
		req, _ := http.NewRequest("PUT", opened["upload_url"].(string), bytes.NewReader(make([]byte, 64<<10)))
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var body struct {
			Error struct{ Code, Message string }
		}
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
		require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
		require.Equal(t, "dependency_unavailable", body.Error.Code)
		requirePlain(t, body.Error.Message)
		require.NotEmpty(t, resp.Header.Get("Retry-After"))

		// Opening an upload stages it on the same disk.
		status, up := apiPost(t, base+"/v1/uploads", key, map[string]any{"filename": "c.txt", "byte_size": 10})
		require.Equal(t, http.StatusServiceUnavailable, status, "%v", up)
		e := up["error"].(map[string]any)
		require.Equal(t, "dependency_unavailable", e["code"])
		requirePlain(t, e["message"].(string))
	})

	t.Run("ReadyzNamesTheStorage", func(t *testing.T) {
		checks := readyz(t, base, http.StatusServiceUnavailable)
		require.Contains(t, checks["storage"], "no space left on device")
		require.NotContains(t, checks["storage"], data, "no path")
		require.Equal(t, "ok", checks["work_dir"])
	})

	t.Run("JobFailsWithAPlainSentence", func(t *testing.T) {
		status, job := apiPost(t, base+"/v1/jobs", key, map[string]any{"file_id": big, "operation": "inspect"})
		require.Equal(t, 202, status, "%v", job)
		// Three attempts, spaced by the retry delays.
		j := eventually.Value(t, "the job to finish", func() (map[string]any, bool) {
			_, j := apiGet(t, base+"/v1/jobs/"+job["id"].(string), key)
			return j, j["state"] != "queued" && j["state"] != "running"
		})
		require.Equal(t, "failed", j["state"], "%v", j)
		e := j["error"].(map[string]any)
		require.Equal(t, "dependency_unavailable", e["code"])
		requirePlain(t, e["message"].(string))
		require.EqualValues(t, 0, j["credits_charged"])
	})

	t.Run("ReadyzNamesTheWorkDirectory", func(t *testing.T) {
		fill(t, work)
		checks := readyz(t, base, http.StatusServiceUnavailable)
		require.Contains(t, checks["work_dir"], "no space left on device")
		require.NotContains(t, checks["work_dir"], work, "no path")
	})

	require.NoError(t, os.Remove(filler))
	require.NoError(t, os.Remove(filepath.Join(work, "filler")))
	readyz(t, base, http.StatusOK)
	uploadText(t, base, key, "room again\n")

	require.NoError(t, srv.cmd.Process.Signal(syscall.SIGTERM))
	_ = srv.cmd.Wait()
	<-srv.stderr.done
	logs := srv.stderr.buf.String()
	var storageLogged, jobLogged bool
	for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), "not JSON: %s", line)
		storageLogged = storageLogged || (m["msg"] == "storage write failed" && strings.Contains(line, "no space left on device"))
		jobLogged = jobLogged || (m["msg"] == "task failed" && strings.Contains(line, "no space left on device"))
	}
	require.True(t, storageLogged, "the failed upload is logged with its cause")
	require.True(t, jobLogged, "the failed attempts are logged with their cause")
}

// requirePlain checks that a message for a client names no path and no system error.
func requirePlain(t *testing.T, msg string) {
	t.Helper()
	require.NotEmpty(t, msg)
	require.NotContains(t, msg, "/", "no path: %q", msg)
	require.NotContains(t, msg, "no space left on device", "no system error: %q", msg)
	require.NotContains(t, msg, "copy_file_range", "no system call: %q", msg)
}

// readyz waits until /readyz answers status, and returns its checks.
func readyz(t *testing.T, base string, status int) map[string]string {
	t.Helper()
	return eventually.Value(t, fmt.Sprintf("/readyz to answer %d", status), func() (map[string]string, bool) {
		resp, err := http.Get(base + "/readyz")
		require.NoError(t, err)
		var body struct{ Checks map[string]string }
		_ = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		return body.Checks, resp.StatusCode == status
	})
}

// mountTmpfs mounts a file system of the given size for the test, to be filled.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "fs")
	require.NoError(t, os.Mkdir(dir, 0o755))
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Fatalf("mount a %s tmpfs at %s: %v\nThis test fills a file system of its own and needs to mount one: run it as root "+
			"(or with CAP_SYS_ADMIN), as make test and CI do.", size, dir, err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// fill writes dir/filler until the file system is full, and returns its path.
func fill(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	require.NoError(t, err)
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			require.True(t, errors.Is(err, syscall.ENOSPC), "filling %s: %v", dir, err)
			return path
		}
	}
}
