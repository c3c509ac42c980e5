package rest_test

import (
	"database/sql"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun/driver/pgdriver"

	"github.com/filemill/filemill/db/dbtest"
	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/domain/eventually"
)

// TestDatabaseUnreachable: while PostgreSQL cannot be reached, a request with a valid
// key is answered 503 dependency_unavailable with Retry-After — never 429 or 500 — and
// is not counted as a failed authentication against the client address; once the
// database is back, requests are served again.
func TestDatabaseUnreachable(t *testing.T) {
	t.Parallel()
	const addressLimit = 5
	b := setup(t, setupOpts{proxyDB: true, cfg: func(c *domain.Config) {
		c.DefaultRateLimit = addressLimit // the address's bucket: a few counted failures would empty it
		c.AuthCacheTTL = time.Hour        // a key seen before the outage is still known
	}})
	generous := func(k *domain.NewKey) { k.RateLimit = 1000 }
	known, unknown := b.newKey(generous), b.newKey(generous)
	file := b.readyFile(known, "a.pdf", []byte(minimalPDF))
	require.Equal(t, 200, b.do(req{method: "GET", path: "/v1/jobs", key: known}).status)

	b.dbProxy.cut()
	requireUnavailable := func(r response) {
		t.Helper()
		require.Equal(t, 503, r.status, string(r.body))
		require.Equal(t, domain.CodeDependencyUnavailable, r.errorCode(t))
		retry, err := strconv.Atoi(r.header.Get("Retry-After"))
		require.NoError(t, err)
		require.Positive(t, retry)
		require.NotContains(t, string(r.body), "127.0.0.1", "no address of ours in the answer")
	}
	t.Run("KeyNotYetKnown", func(t *testing.T) {
		// Its authentication needs the database: many times the address's limit.
		for range 3 * addressLimit {
			requireUnavailable(b.do(req{method: "GET", path: "/v1/jobs", key: unknown}))
		}
	})
	t.Run("KeyKnown", func(t *testing.T) {
		requireUnavailable(b.do(req{method: "GET", path: "/v1/jobs", key: known}))
		requireUnavailable(b.do(req{method: "GET", path: "/v1/files/" + file, key: known}))
		requireUnavailable(b.do(req{method: "POST", path: "/v1/jobs", key: known, idem: "outage-1",
			body: map[string]any{"file_id": file, "operation": "inspect"}}))
		requireUnavailable(b.do(req{method: "POST", path: "/v1/webhook-endpoints", key: known, idem: "outage-2",
			body: webhookBody("https://example.com/outage")}))
	})

	b.dbProxy.restore()
	eventually.True(t, "served again once the database is back", func() bool {
		return b.do(req{method: "GET", path: "/v1/jobs", key: unknown}).status == 200
	})
	t.Run("NothingWasCountedAgainstTheAddress", func(t *testing.T) {
		r := b.do(req{method: "GET", path: "/v1/jobs"}) // no key: the address's bucket
		require.Equal(t, 401, r.status)
		require.Equal(t, strconv.Itoa(addressLimit-1), r.header.Get("X-RateLimit-Remaining"))
	})
	t.Run("TheRequestsOfTheOutageRanNothing", func(t *testing.T) {
		r := b.do(req{method: "POST", path: "/v1/jobs", key: known, idem: "outage-1",
			body: map[string]any{"file_id": file, "operation": "inspect"}})
		require.Equal(t, 202, r.status, string(r.body))
		require.Empty(t, r.header.Get("Idempotent-Replayed"), "the key was never taken")
	})
}

// TestDatabaseRestarted: the connections a process pooled before PostgreSQL restarted
// are dead once it is back; the first requests after its return are served, none of
// them answered 5xx for a connection that died in the pool.
func TestDatabaseRestarted(t *testing.T) {
	t.Parallel()
	pg := dbtest.StartPostgres(t)
	b := setup(t, setupOpts{postgres: pg})
	file := b.readyFile(b.liveA, "a.pdf", []byte(minimalPDF))

	// Fill the pool: requests at once each hold a connection of their own.
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			hr, _ := http.NewRequest("GET", b.srv.URL+"/v1/jobs", nil)
			hr.Header.Set("Authorization", "Bearer "+b.liveA)
			if resp, err := b.client.Do(hr); err == nil {
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()
	admin := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(pg.URL())))
	var pooled int
	require.NoError(t, admin.QueryRow("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'filemill'").Scan(&pooled))
	admin.Close()
	require.GreaterOrEqual(t, pooled, 2, "the pool holds connections before the restart")

	pg.Stop()
	pg.Start()

	for i := range 3 * pooled {
		r := b.do(req{method: "GET", path: "/v1/jobs", key: b.liveA})
		require.Equal(t, 200, r.status, "request %d after the restart: %s", i+1, r.body)
		r = b.do(req{method: "GET", path: "/v1/files/" + file, key: b.liveA})
		require.Equal(t, 200, r.status, "request %d after the restart: %s", i+1, r.body)
	}
	r := b.do(req{method: "POST", path: "/v1/jobs", key: b.liveA, idem: "after-restart",
		body: map[string]any{"file_id": file, "operation": "inspect"}})
	require.Equal(t, 202, r.status, string(r.body))
}
