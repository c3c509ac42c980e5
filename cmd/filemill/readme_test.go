package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/graph/graphtest"
)

// readmeExample returns the README's code block of the given language that contains
// marker, so a test runs the very text a reader copies.
func readmeExample(t *testing.T, lang, marker string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	require.NoError(t, err)
	blocks := strings.Split(string(raw), "```"+lang+"\n")
	for _, b := range blocks[1:] {
		code, _, ok := strings.Cut(b, "\n```")
		if ok && strings.Contains(code, marker) {
			return code + "\n"
		}
	}
	t.Fatalf("README.md has no %s block with %q", lang, marker)
	return ""
}

// TestReadmeSubscriptionExample runs the README's GraphQL subscription example, as
// written there, with the Node on this machine and the pinned npm client against
// `filemill serve`: it prints the job's states up to succeeded and exits.
func TestReadmeSubscriptionExample(t *testing.T) {
	t.Parallel()
	node, clientDir := nodeClient(t)
	const url, jobPlaceholder = "'ws://127.0.0.1:8080/graphql'", "'job_01...'"
	code := readmeExample(t, "js", "createClient")
	require.Contains(t, code, url, "the example's URL, which the test points at its server")
	require.Contains(t, code, jobPlaceholder, "the example's job id, which the test fills in")

	dir := t.TempDir()
	addr, storageAddr := freeAddr(t), freeAddr(t)
	env := cleanEnv("FILEMILL_ADDR="+addr, "FILEMILL_STORAGE_ADDR="+storageAddr, "FILEMILL_ENGINES=inspect")
	start(t, dir, env, "serve")
	base := "http://" + addr
	waitReady(t, base)
	key := bootstrapFileKey(t, dir)
	waitAvailable(t, base, key, "inspect")
	file := uploadText(t, base, key, "a line to inspect\n")
	status, job := apiPost(t, base+"/v1/jobs", key, map[string]any{"file_id": file, "operation": "inspect"})
	require.Equal(t, 202, status, "%v", job)

	// The example beside the installed client's modules, as a reader's project has them.
	example := t.TempDir()
	require.NoError(t, os.Symlink(filepath.Join(clientDir, "node_modules"), filepath.Join(example, "node_modules")))
	code = strings.ReplaceAll(code, url, "'"+graphtest.URL(base)+"'")
	code = strings.ReplaceAll(code, jobPlaceholder, "'"+job["id"].(string)+"'")
	require.NoError(t, os.WriteFile(filepath.Join(example, "subscribe.mjs"), []byte(code), 0o600))

	// Bounded in case the example hangs; it ends with the job.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "subscribe.mjs")
	cmd.Dir, cmd.Env = example, append(os.Environ(), "KEY="+key)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	require.NoError(t, err, "the README's example failed:\n%s%s", stderr.String(), stdout.String())
	require.Empty(t, stderr.String(), "the example printed an error")
	require.Contains(t, stdout.String(), "state: 'succeeded'", "the example printed the job's states:\n%s", stdout.String())
	t.Logf("the README's example printed:\n%s", stdout.String())
}
