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
			url := dbtest.SQLite(t)
			if dialect == db.DialectPostgres {
				url = dbtest.Postgres(t)
			}
			s, err := db.Open(ctx, url)
			require.NoError(t, err)
			t.Cleanup(func() { s.Close() })
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
				probe.Endpoint = "POST /v1/x"
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
