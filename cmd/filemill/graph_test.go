package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/db/dbtest"
	"github.com/filemill/filemill/jobs/redistest"
)

// TestGraphQLServedBesideREST: the api process serves /graphql and its playground on
// the REST listener, with the same keys.
func TestGraphQLServedBesideREST(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	addr, storageAddr := freeAddr(t), freeAddr(t)
	env := cleanEnv("FILEMILL_DATABASE_URL="+dbtest.Postgres(t), "FILEMILL_REDIS_URL="+redistest.URL(t),
		"FILEMILL_DATA_DIR="+dir, "FILEMILL_ADDR="+addr, "FILEMILL_STORAGE_ADDR="+storageAddr,
		"FILEMILL_STORAGE_SECRET="+hex.EncodeToString(secret))
	base := "http://" + addr
	out, stderr, err := runCLI(t, dir, env, "admin", "bootstrap", "--org", "gq", "--project", "p", "--json")
	require.NoError(t, err, stderr)
	var boot map[string]string
	require.NoError(t, json.Unmarshal([]byte(out), &boot))
	start(t, dir, env, "api")
	waitReady(t, base)

	body, _ := json.Marshal(map[string]any{"query": `{ viewer { organization { name } project { id } } jobs { nodes { id } } }`})
	req, _ := http.NewRequest("POST", base+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+boot["api_key"])
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode, string(raw))
	var r struct {
		Data struct {
			Viewer struct {
				Organization struct{ Name string }
				Project      struct{ ID string }
			}
		}
		Errors []any
	}
	require.NoError(t, json.Unmarshal(raw, &r))
	require.Empty(t, r.Errors, string(raw))
	require.Equal(t, "gq", r.Data.Viewer.Organization.Name)
	require.Equal(t, boot["project_id"], r.Data.Viewer.Project.ID)

	// Without a key: nothing, with the REST status.
	resp, err = http.Post(base+"/graphql", "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 401, resp.StatusCode)

	resp, err = http.Get(base + "/graphql/play")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
}
