package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/db/dbtest"
	"github.com/filemill/filemill/domain/eventually"
	"github.com/filemill/filemill/jobs/redistest"
)

// TestWebhooksAcrossProcesses runs the split deployment: an event committed by the api
// process wakes the relay in a worker process (over Redis), which delivers it, signed,
// to an HTTPS receiver that the outbound guard lets through only because
// FILEMILL_OUTBOUND_ALLOW_CIDRS opens loopback.
func TestWebhooksAcrossProcesses(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []*http.Request
	var bodies [][]byte
	recvURL, caFile := httpsReceiver(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		got, bodies = append(got, r), append(bodies, body)
		mu.Unlock()
		w.WriteHeader(204)
	}))

	dir := t.TempDir()
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	addr, storageAddr := freeAddr(t), freeAddr(t)
	env := cleanEnv("FILEMILL_DATABASE_URL="+dbtest.Postgres(t), "FILEMILL_REDIS_URL="+redistest.URL(t),
		"FILEMILL_DATA_DIR="+dir, "FILEMILL_ADDR="+addr, "FILEMILL_STORAGE_ADDR="+storageAddr,
		"FILEMILL_STORAGE_SECRET="+hex.EncodeToString(secret), "FILEMILL_OUTBOUND_ALLOW_CIDRS=127.0.0.1",
		"SSL_CERT_FILE="+caFile)
	base := "http://" + addr
	key := bootstrapKey(t, dir, env, "--org", "w", "--project", "p", "--credits", "10")
	start(t, dir, env, "api")
	start(t, dir, env, "worker")
	waitReady(t, base)

	status, ep := apiPost(t, base+"/v1/webhook-endpoints", key, map[string]any{"url": recvURL + "/in",
		"enabled_events": []string{"file.ready"}})
	require.Equal(t, 201, status, "%v", ep)
	status, refused := apiPost(t, base+"/v1/webhook-endpoints", key, map[string]any{"url": "https://10.1.2.3/in",
		"enabled_events": []string{"file.ready"}})
	require.Equal(t, 400, status, "%v", refused)

	status, test := apiPost(t, base+"/v1/webhook-endpoints/"+ep["id"].(string)+"/test", key, nil)
	require.Equal(t, 202, status, "%v", test)
	status, up := apiPost(t, base+"/v1/uploads", key, map[string]any{"filename": "a.txt", "byte_size": 5})
	require.Equal(t, 201, status, "%v", up)
	req, _ := http.NewRequest("PUT", up["upload_url"].(string), strings.NewReader("hello"))
	for k, v := range up["upload_headers"].(map[string]any) {
		req.Header.Set(k, v.(string))
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	status, f := apiPost(t, base+"/v1/files/"+up["file_id"].(string)+"/complete", key, nil)
	require.Equal(t, 200, status, "%v", f)

	eventually.True(t, "the test event and file.ready were delivered", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) >= 2
	})
	wh, err := standardwebhooks.NewWebhook(ep["secret"].(string))
	require.NoError(t, err)
	types := map[string]string{}
	mu.Lock()
	defer mu.Unlock()
	for i, r := range got {
		require.NoError(t, wh.Verify(bodies[i], r.Header))
		var ev struct {
			ID   string `json:"id"`
			Type string `json:"type"`
			Data struct {
				Object map[string]any `json:"object"`
			} `json:"data"`
		}
		require.NoError(t, json.Unmarshal(bodies[i], &ev))
		types[ev.Type] = ev.Data.Object["id"].(string)
	}
	require.Equal(t, map[string]string{"webhook.test": ep["id"].(string), "file.ready": up["file_id"].(string)}, types)
}
