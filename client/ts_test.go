package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/client"
	"github.com/filemill/filemill/client/api"
)

// TestTypeScriptSDK builds the TypeScript SDK (client/ts) and runs its vitest suite
// against the same `filemill serve`, with a fault proxy in front of it and a real
// webhook delivery to verify. Node and the packages come from `make deps`
// (.ci/ensure-deps runs npm ci in client/ts); without them the test fails, never skips.
func TestTypeScriptSDK(t *testing.T) {
	npx, err := exec.LookPath("npx")
	if err != nil {
		t.Fatal("node/npx is not installed: run `make deps` (.ci/ensure-deps installs Node.js and the SDK's packages)")
	}
	dir, err := filepath.Abs("ts")
	require.NoError(t, err)
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "vitest")); err != nil {
		t.Fatalf("the TypeScript SDK's packages are not installed in %s: run `make deps` (or npm ci there)", dir)
	}
	// The package builds (dist/, ignored by git), types checked.
	build := exec.Command("npm", "run", "--silent", "build")
	build.Dir = dir
	out, err := build.CombinedOutput()
	require.NoError(t, err, "npm run build: %s", out)
	_, err = os.Stat(filepath.Join(dir, "dist", "index.d.ts"))
	require.NoError(t, err)

	faultKey := embedded.key(t)
	proxy := newFaultProxy(t, embedded.base)
	proxy.inject(fault{method: "POST", path: "/v1/jobs", kind: unavailable}, fault{method: "POST", path: "/v1/jobs", kind: drop})

	cmd := exec.Command(npx, "--no-install", "vitest", "run", "--reporter=verbose")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "FILEMILL_API_URL="+embedded.base, "FILEMILL_API_KEY="+embedded.key(t),
		"FILEMILL_PAGING_KEY="+embedded.key(t), "FILEMILL_FAULT_KEY="+faultKey, "FILEMILL_FAULT_URL="+proxy.URL(),
		"FILEMILL_WEBHOOK_FIXTURE="+webhookFixture(t), "NO_COLOR=1")
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stdout
	err = cmd.Run()
	t.Logf("vitest:\n%s", stdout.String())
	require.NoError(t, err, "vitest failed")

	attempts := proxy.requests("POST", "/v1/jobs")
	require.GreaterOrEqual(t, len(attempts), 3, "the 503, the dropped answer, and the replay")
	for _, a := range attempts {
		require.Equal(t, attempts[0].IdempotencyKey, a.IdempotencyKey, "every attempt carries the first one's key")
	}
}

// webhookFixture captures a real file.ready delivery and writes it, with its secret,
// for the TypeScript verifier.
func webhookFixture(t *testing.T) string {
	t.Helper()
	c, _ := embedded.client(t, "", embedded.key(t))
	ctx := context.Background()
	url, deliveries := receiver.listen()
	ep, err := c.CreateWebhookEndpoint(ctx, api.CreateWebhookEndpointRequest{Url: url,
		EnabledEvents: []api.SubscribableEvent{api.SubscribableEventFileReady}})
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "note.txt")
	require.NoError(t, os.WriteFile(path, []byte("sign me"), 0o600))
	file, err := c.UploadFile(ctx, path, client.UploadOptions{})
	require.NoError(t, err)
	var d delivery
	select {
	case d = <-deliveries:
	case <-time.After(time.Minute):
		t.Fatal("no delivery within a minute")
	}
	headers := map[string]string{}
	for k := range d.header {
		headers[k] = d.header.Get(k)
	}
	raw, err := json.Marshal(map[string]any{"secret": ep.Secret, "headers": headers, "body": string(d.body), "file_id": file.Id})
	require.NoError(t, err)
	fx := filepath.Join(t.TempDir(), "delivery.json")
	require.NoError(t, os.WriteFile(fx, raw, 0o600))
	return fx
}
