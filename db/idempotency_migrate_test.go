package db_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/db"
	"github.com/filemill/filemill/db/dbtest"
	"github.com/filemill/filemill/domain"
)

// TestAnswersBecomeDoorNeutral: answers stored as HTTP responses before the migration
// that made them door-neutral are replayed the same after it; a claim still in progress
// gets a lease.
func TestAnswersBecomeDoorNeutral(t *testing.T) {
	t.Parallel()
	for _, dialect := range []string{db.DialectPostgres, db.DialectSQLite} {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := unmigrated(t, dialect)
			require.NoError(t, s.MigrateThrough(ctx, "20261123000005"))

			at := now()
			type old struct {
				key, status, headers, body string
			}
			rows := []old{
				{"created", "201", `{"Content-Type": "application/json"}`, `{"id":"we_1","object":"webhook_endpoint"}` + "\n"},
				{"empty", "204", `{}`, ""},
				{"refused", "402", `{"Content-Type": "application/json", "Retry-After": "3"}`,
					`{"error":{"code":"payment_required","message":"short","param":"file_id","request_id":"req_1","details":{"credits_required":3}}}` + "\n"},
				{"pending", "", "", ""},
			}
			for _, r := range rows {
				_, err := s.DB().NewRaw(`INSERT INTO idempotency_records (id, organization_id, endpoint, "key", fingerprint, created_at, expires_at)
					VALUES (?, 'org_1', 'POST /v1/x', ?, 'fp', ?, ?)`, "idem_"+r.key, r.key, at, at.Add(24*time.Hour)).Exec(ctx)
				require.NoError(t, err)
				if r.status == "" {
					continue
				}
				var body any
				if r.body != "" {
					body = []byte(r.body)
				}
				_, err = s.DB().NewRaw(`INSERT INTO idempotency_answers (record_id, response_status, response_headers, response_body, created_at)
					VALUES (?, ?, ?, ?, ?)`, "idem_"+r.key, r.status, r.headers, body, at).Exec(ctx)
				require.NoError(t, err)
			}
			require.NoError(t, s.Migrate(ctx))

			claim := func(key string) *domain.IdempotencyRecord {
				t.Helper()
				probe := newIdempotencyRecord("org_1", key, now())
				// Claims made before scopes keep the empty one.
				probe.Endpoint, probe.Environment, probe.ProjectID = "POST /v1/x", "", ""
				existing, err := s.ClaimIdempotencyKey(ctx, probe)
				require.NoError(t, err)
				return existing
			}
			stored := func(key string) *domain.IdempotencyRecord {
				t.Helper()
				existing := claim(key)
				require.NotNil(t, existing, key)
				return existing
			}
			created := stored("created")
			require.Equal(t, domain.IdempotencyDone, created.State)
			require.Equal(t, domain.ResultCreated, created.Answer.Result)
			require.Equal(t, `{"id":"we_1","object":"webhook_endpoint"}`, string(created.Answer.Object))
			empty := stored("empty")
			require.Equal(t, domain.ResultEmpty, empty.Answer.Result)
			require.Empty(t, empty.Answer.Object)
			refused := stored("refused")
			require.Equal(t, &domain.AnswerError{Code: "payment_required", Message: "short", Param: "file_id",
				RequestID: "req_1", Details: []byte(`{"credits_required":3}`), RetryAfter: 3}, normalized(t, refused.Answer.Error))
			if dialect == db.DialectPostgres {
				pending := stored("pending")
				require.Equal(t, domain.IdempotencyInProgress, pending.State)
				require.True(t, pending.LeaseUntil.Equal(at.Add(5*time.Minute)), "the rule it was made under")
			} else {
				require.Nil(t, claim("pending"), "its process is gone: the key is free")
			}
		})
	}
}

// unmigrated opens a new, empty database of dialect, for a test of a migration.
func unmigrated(t *testing.T, dialect string) *db.Store {
	t.Helper()
	url := dbtest.SQLite(t)
	if dialect == db.DialectPostgres {
		url = dbtest.Postgres(t)
	}
	s, err := db.Open(context.Background(), url)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// normalized returns e with its details in compact JSON, as the databases reformat them.
func normalized(t *testing.T, e *domain.AnswerError) *domain.AnswerError {
	t.Helper()
	require.NotNil(t, e)
	c := *e
	var buf []byte
	for _, b := range e.Details {
		if b != ' ' {
			buf = append(buf, b)
		}
	}
	c.Details = buf
	return &c
}

// TestClaimsGetScopes: claims made before keys were scoped by environment, project and
// API key keep the empty scope — their answers kept, never given to a request, which
// always has a scope — and a request's claim of the same key is a new one. Rolled back,
// the first claim of each key stays.
func TestClaimsGetScopes(t *testing.T) {
	t.Parallel()
	const before, scopes = "20261124005001", "20261127001001"
	for _, dialect := range []string{db.DialectPostgres, db.DialectSQLite} {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := unmigrated(t, dialect)
			require.NoError(t, s.MigrateThrough(ctx, before))

			at := now()
			ids := map[string]string{}
			for _, key := range []string{"answered", "pending"} {
				ids[key] = domain.NewID(domain.PrefixIdempotency)
				_, err := s.DB().NewRaw(`INSERT INTO idempotency_records (id, organization_id, endpoint, "key", fingerprint, created_at, expires_at, lease_until)
					VALUES (?, 'org_1', 'webhook_endpoints.create', ?, 'fp', ?, ?, ?)`, ids[key], key, at, at.Add(24*time.Hour), at.Add(time.Hour)).Exec(ctx)
				require.NoError(t, err)
			}
			_, err := s.DB().NewRaw(`INSERT INTO idempotency_answers (record_id, result, body, created_at) VALUES (?, 'created', ?, ?)`,
				ids["answered"], []byte(`{"id":"we_1","secret":"whsec_x"}`), at).Exec(ctx)
			require.NoError(t, err)
			require.NoError(t, s.MigrateThrough(ctx, scopes))

			scoped := func(key string) *domain.IdempotencyRecord {
				r := newIdempotencyRecord("org_1", key, now())
				r.Endpoint, r.APIKeyID = "webhook_endpoints.create", "key_1"
				return r
			}
			for _, key := range []string{"answered", "pending"} {
				require.NoError(t, claimed(t, s, scoped(key)), "a request's claim is new: %s", key)
			}
			legacy := scoped("answered")
			legacy.Environment, legacy.ProjectID, legacy.APIKeyID = "", "", ""
			kept := answered(t, s, legacy)
			require.Equal(t, ids["answered"], kept.ID)
			require.Equal(t, `{"id":"we_1","secret":"whsec_x"}`, string(kept.Answer.Object), "answers stay with their claims")

			// The answers still need their claim: an answer is stored for a claim that
			// exists, and a claim with an answer is not taken over.
			rec := scoped("fresh")
			require.NoError(t, claimed(t, s, rec))
			rec.State, rec.Answer = domain.IdempotencyDone, &domain.Answer{Result: domain.ResultEmpty}
			require.NoError(t, s.FinishIdempotencyKey(ctx, rec))
			_, err = s.DB().NewRaw(`INSERT INTO idempotency_answers (record_id, result, created_at) VALUES ('idem_missing', 'empty', ?)`, at).Exec(ctx)
			require.Error(t, err, "an answer without its claim")
			if dialect == db.DialectSQLite {
				var parent string
				require.NoError(t, s.DB().NewRaw(`SELECT "table" FROM pragma_foreign_key_list('idempotency_answers')`).Scan(ctx, &parent))
				require.Equal(t, "idempotency_records", parent, "the reference follows the renamed table")
			}

			require.NoError(t, s.RollbackLast(ctx))
			var keys []string
			require.NoError(t, s.DB().NewRaw(`SELECT id FROM idempotency_records ORDER BY id`).Scan(ctx, &keys))
			require.Equal(t, []string{ids["answered"], ids["pending"], rec.ID}, keys, "the first claim of each key stays")
			require.NoError(t, s.Migrate(ctx))
		})
	}
}
