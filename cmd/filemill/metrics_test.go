package main

import (
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMetricsHaveTheirOwnListener: /metrics shows every tenant's figures and asks for no
// key, so the API listener does not serve it; FILEMILL_METRICS_ADDR does.
func TestMetricsHaveTheirOwnListener(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	addr, storageAddr, metricsAddr := freeAddr(t), freeAddr(t), freeAddr(t)
	env := cleanEnv("FILEMILL_DATA_DIR="+dir, "FILEMILL_ADDR="+addr, "FILEMILL_STORAGE_ADDR="+storageAddr,
		"FILEMILL_METRICS_ADDR="+metricsAddr)
	start(t, dir, env, "serve")
	base := "http://" + addr
	waitReady(t, base)
	status, _ := apiGet(t, base+"/v1/jobs", "fm_live_nope")
	require.Equal(t, 401, status)

	get := func(url string) (int, string) {
		resp, err := http.Get(url)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(body)
	}
	status, body := get(base + "/metrics")
	require.Equal(t, 404, status)
	require.NotContains(t, body, "filemill_")
	status, body = get("http://" + metricsAddr + "/metrics")
	require.Equal(t, 200, status)
	require.Contains(t, body, `filemill_http_requests_total{route="GET /v1/jobs",status="401"} 1`)
}
