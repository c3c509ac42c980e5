package db

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/uptrace/bun"

	"github.com/filemill/filemill/domain"
)

// claimAttempts bounds ClaimIdempotencyKey's retries: one after replacing an expired
// record, one more if the record it saw vanished before it could read it.
const claimAttempts = 3

// claimInsert is the insert of a claim: of many concurrent claims of one key, exactly
// one inserts, on both dialects, inside or outside a transaction.
const claimInsert = `INSERT INTO idempotency_records (id, organization_id, endpoint, "key", fingerprint, created_at, expires_at)
	VALUES (?, ?, ?, ?, ?, ?, ?)
	ON CONFLICT (organization_id, endpoint, "key") DO NOTHING RETURNING id`

// On PostgreSQL a claim commits without waiting for its flush to disk, so a request waits
// for one flush, its effect's, not two. That loses nothing: every effect of the request
// commits after the claim and waits for its own flush, which writes the claim's too, and
// a claim lost in a crash before any such commit guarded nothing yet; the retry claims
// again. (set_config's setting lasts until the end of the statement's transaction, whose
// commit reads it.)
var (
	claimPostgres = newHotQuery(`WITH async AS (SELECT set_config('synchronous_commit', 'off', true)),
	claimed AS (` + claimInsert + `)
	SELECT claimed.id FROM claimed, async`)
	claimSQLite = newHotQuery(claimInsert)
)

// idempotencyAnswer is the stored answer of a finished idempotent request.
type idempotencyAnswer struct {
	bun.BaseModel   `bun:"table:idempotency_answers"`
	RecordID        string            `bun:"record_id,pk"`
	ResponseStatus  int               `bun:"response_status,notnull"`
	ResponseHeaders map[string]string `bun:"response_headers,type:jsonb"`
	ResponseBody    []byte            `bun:"response_body"`
	CreatedAt       time.Time         `bun:"created_at,notnull"`
}

// answerOf is rec's answer as stored.
func answerOf(rec *domain.IdempotencyRecord) *idempotencyAnswer {
	return &idempotencyAnswer{RecordID: rec.ID, ResponseStatus: rec.ResponseStatus, ResponseHeaders: rec.ResponseHeaders,
		ResponseBody: rec.ResponseBody, CreatedAt: time.Now().UTC()}
}

// idempotencyRow is a claim read with its answer, if it has one.
type idempotencyRow struct {
	domain.IdempotencyRecord
	Answered        bool              `bun:"answered"`
	ResponseStatus  sql.NullInt64     `bun:"response_status"`
	ResponseHeaders map[string]string `bun:"response_headers,type:jsonb"`
	ResponseBody    []byte            `bun:"response_body"`
}

// findIdempotencyRecord reads the claim of a key with its answer.
func (s *Store) findIdempotencyRecord(ctx context.Context, orgID, endpoint, key string) (*domain.IdempotencyRecord, error) {
	rows, err := s.queryHot(ctx, s.r(), s.idempotencyRecordQuery(), orgID, endpoint, key)
	if err != nil {
		return nil, fmt.Errorf("find idempotency record: %w", err)
	}
	var found []idempotencyRow
	if err := s.db.ScanRows(ctx, rows, &found); err != nil {
		return nil, fmt.Errorf("find idempotency record: %w", err)
	}
	if len(found) == 0 {
		return nil, fmt.Errorf("idempotency record: %w", domain.ErrNotFound)
	}
	row := &found[0]
	rec := inUTC(&row.IdempotencyRecord)
	rec.State = domain.IdempotencyInProgress
	if row.Answered {
		rec.State, rec.ResponseStatus = domain.IdempotencyDone, int(row.ResponseStatus.Int64)
		rec.ResponseHeaders, rec.ResponseBody = row.ResponseHeaders, row.ResponseBody
	}
	return rec, nil
}

// idempotencyRecordQueries holds the read of a key's claim with its answer — every replay
// runs it — built once from the claims table's columns.
var idempotencyRecordQueries struct {
	once sync.Once
	q    *hotQuery
}

func (s *Store) idempotencyRecordQuery() *hotQuery {
	q := &idempotencyRecordQueries
	q.once.Do(func() {
		q.q = newHotQuery(`SELECT ` + columnList(s.db.Table(reflect.TypeFor[domain.IdempotencyRecord]()), "r.") + `,
	a.record_id IS NOT NULL AS answered, a.response_status, a.response_headers, a.response_body
FROM idempotency_records AS r LEFT JOIN idempotency_answers AS a ON a.record_id = r.id
WHERE r.organization_id = ? AND r.endpoint = ? AND r."key" = ?`)
	})
	return q.q
}

// ClaimIdempotencyKey inserts rec unless a record with the same (organization, endpoint,
// key) exists. It returns (nil, nil) when rec was inserted, and (existing, nil) when a
// live record exists. A record that expired by rec.CreatedAt is deleted and the claim
// retried.
func (s *Store) ClaimIdempotencyKey(ctx context.Context, rec *domain.IdempotencyRecord) (*domain.IdempotencyRecord, error) {
	if rec.ID == "" {
		return nil, errors.New("claim idempotency key: empty id")
	}
	for range claimAttempts {
		inserted, err := s.claim(ctx, rec)
		if err != nil {
			return nil, fmt.Errorf("claim idempotency key: %w", err)
		}
		if inserted {
			return nil, nil
		}
		existing, err := s.findIdempotencyRecord(ctx, rec.OrganizationID, rec.Endpoint, rec.Key)
		if errors.Is(err, domain.ErrNotFound) {
			continue // released or swept between the insert and the read
		}
		if err != nil {
			return nil, err
		}
		if existing.ExpiresAt.After(rec.CreatedAt) {
			return existing, nil
		}
		// Conditional on the id and expiry, so of concurrent claimers replacing the same
		// expired record none deletes the live one another just inserted.
		if _, err := s.deleteIdempotency(ctx, func(q *bun.SelectQuery) *bun.SelectQuery {
			return q.Where("id = ?", existing.ID).Where("expires_at <= ?", rec.CreatedAt)
		}); err != nil {
			return nil, fmt.Errorf("replace expired idempotency record %s: %w", existing.ID, err)
		}
	}
	return nil, fmt.Errorf("claim idempotency key: still contended after %d attempts", claimAttempts)
}

// claim inserts rec, in progress; false when its key is taken.
func (s *Store) claim(ctx context.Context, rec *domain.IdempotencyRecord) (bool, error) {
	q := claimSQLite
	if s.dialect == DialectPostgres && s.tx == nil {
		q = claimPostgres
	}
	rows, err := s.queryHot(ctx, s.w(), q, rec.ID, rec.OrganizationID, rec.Endpoint, rec.Key,
		rec.Fingerprint, rec.CreatedAt.UTC(), rec.ExpiresAt.UTC())
	if err != nil {
		return false, err
	}
	defer rows.Close()
	inserted := rows.Next()
	return inserted, rows.Err()
}

// FinishIdempotencyKey stores rec's answer; domain.ErrNotFound when the record is gone
// (released, or replaced after expiring).
func (s *Store) FinishIdempotencyKey(ctx context.Context, rec *domain.IdempotencyRecord) error {
	a := answerOf(rec)
	headers, err := json.Marshal(a.ResponseHeaders)
	if err != nil {
		return err
	}
	jsonArg, bytesArg := "?", "?"
	if s.dialect == DialectPostgres {
		// Untyped in a SELECT list they would be text, which converts to neither.
		jsonArg, bytesArg = "CAST(? AS jsonb)", "CAST(? AS bytea)"
	}
	n, err := affected(s.w().NewRaw(`INSERT INTO idempotency_answers (record_id, response_status, response_headers, response_body, created_at)
		SELECT ?, ?, `+jsonArg+`, `+bytesArg+`, ? WHERE EXISTS (SELECT 1 FROM idempotency_records WHERE id = ?)
		ON CONFLICT (record_id) DO NOTHING`,
		a.RecordID, a.ResponseStatus, string(headers), a.ResponseBody, a.CreatedAt, a.RecordID).Exec(ctx))
	if err != nil {
		return fmt.Errorf("finish idempotency record %s: %w", rec.ID, err)
	}
	if n == 0 {
		return fmt.Errorf("idempotency record %s: %w", rec.ID, domain.ErrNotFound)
	}
	return nil
}

// ReleaseIdempotencyKey deletes an in-progress record so the request can be retried. A
// finished or missing record is left alone.
func (s *Store) ReleaseIdempotencyKey(ctx context.Context, id string) error {
	_, err := s.w().NewDelete().Model((*domain.IdempotencyRecord)(nil)).Where("id = ?", id).
		Where("NOT EXISTS (SELECT 1 FROM idempotency_answers AS a WHERE a.record_id = ?)", id).Exec(ctx)
	if err != nil {
		return fmt.Errorf("release idempotency record %s: %w", id, err)
	}
	return nil
}

// deleteIdempotency deletes the records the filter selects and their answers, and
// returns how many records; in the caller's transaction or a new one.
func (s *Store) deleteIdempotency(ctx context.Context, filter func(*bun.SelectQuery) *bun.SelectQuery) (int64, error) {
	var n int64
	err := s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		var ids []string
		if err := filter(tx.NewSelect().Model((*domain.IdempotencyRecord)(nil)).Column("id")).Scan(ctx, &ids); err != nil {
			return err
		}
		if len(ids) == 0 {
			return nil
		}
		if _, err := tx.NewDelete().Model((*idempotencyAnswer)(nil)).Where("record_id IN (?)", bun.In(ids)).Exec(ctx); err != nil {
			return err
		}
		var err error
		n, err = affected(tx.NewDelete().Model((*domain.IdempotencyRecord)(nil)).Where("id IN (?)", bun.In(ids)).Exec(ctx))
		return err
	})
	return n, err
}

// sweepBatch bounds one DELETE of a sweep: on SQLite a long delete would hold the one
// write lock against every request.
const sweepBatch = 1000

// DeleteExpiredIdempotencyKeys deletes records that expired by now, with their answers,
// in batches, and returns how many.
func (s *Store) DeleteExpiredIdempotencyKeys(ctx context.Context, now time.Time) (int, error) {
	total := 0
	for {
		n, err := s.deleteIdempotency(ctx, func(q *bun.SelectQuery) *bun.SelectQuery {
			return q.Where("expires_at <= ?", now).Limit(sweepBatch)
		})
		if err != nil {
			return total, fmt.Errorf("delete expired idempotency records: %w", err)
		}
		total += int(n)
		if n < sweepBatch {
			return total, nil
		}
	}
}
