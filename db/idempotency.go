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

// claimInsert is the insert of a claim: of many concurrent claims of one key in one
// scope, exactly one inserts, on both dialects, inside or outside a transaction.
const claimInsert = `INSERT INTO idempotency_records (id, organization_id, environment, project_id, endpoint, api_key_id, "key",
		fingerprint, created_at, expires_at, lease_until)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
	ON CONFLICT (organization_id, environment, project_id, endpoint, api_key_id, "key") DO NOTHING RETURNING id`

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

// idempotencyAnswer is the stored answer of a finished idempotent request: its result
// kind and the resource's JSON, or "error" and the refusal's JSON.
type idempotencyAnswer struct {
	bun.BaseModel `bun:"table:idempotency_answers"`
	RecordID      string    `bun:"record_id,pk"`
	Result        string    `bun:"result,notnull"`
	Body          []byte    `bun:"body"`
	CreatedAt     time.Time `bun:"created_at,notnull"`
}

// resultError is the result kind of a stored refusal.
const resultError = "error"

// answerOf is rec's answer as stored.
func answerOf(rec *domain.IdempotencyRecord) (*idempotencyAnswer, error) {
	a := rec.Answer
	if a == nil {
		return nil, fmt.Errorf("idempotency record %s: no answer to store", rec.ID)
	}
	row := &idempotencyAnswer{RecordID: rec.ID, Result: a.Result, Body: a.Object, CreatedAt: time.Now().UTC()}
	if a.Error != nil {
		body, err := json.Marshal(a.Error)
		if err != nil {
			return nil, err
		}
		row.Result, row.Body = resultError, body
	}
	return row, nil
}

// answer is the stored answer as the domain takes it.
func (a *idempotencyAnswer) answer() (*domain.Answer, error) {
	if a.Result != resultError {
		return &domain.Answer{Result: a.Result, Object: a.Body}, nil
	}
	var e domain.AnswerError
	if err := json.Unmarshal(a.Body, &e); err != nil {
		return nil, fmt.Errorf("stored refusal of %s: %w", a.RecordID, err)
	}
	return &domain.Answer{Error: &e}, nil
}

// idempotencyRow is a claim read with its answer, if it has one.
type idempotencyRow struct {
	domain.IdempotencyRecord
	Answered bool           `bun:"answered"`
	Result   sql.NullString `bun:"result"`
	Body     []byte         `bun:"body"`
}

// findIdempotencyRecord reads the claim of probe's key in probe's scope with its answer.
func (s *Store) findIdempotencyRecord(ctx context.Context, probe *domain.IdempotencyRecord) (*domain.IdempotencyRecord, error) {
	rows, err := s.queryHot(ctx, s.r(), s.idempotencyRecordQuery(), probe.OrganizationID, probe.Environment, probe.ProjectID,
		probe.Endpoint, probe.APIKeyID, probe.Key)
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
		stored := &idempotencyAnswer{RecordID: rec.ID, Result: row.Result.String, Body: row.Body}
		if rec.Answer, err = stored.answer(); err != nil {
			return nil, err
		}
		rec.State = domain.IdempotencyDone
	}
	return rec, nil
}

// FindIdempotencyKey reads the record of probe's key in probe's scope, with its answer.
func (s *Store) FindIdempotencyKey(ctx context.Context, probe *domain.IdempotencyRecord) (*domain.IdempotencyRecord, error) {
	return s.findIdempotencyRecord(ctx, probe)
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
	a.record_id IS NOT NULL AS answered, a.result, a.body
FROM idempotency_records AS r LEFT JOIN idempotency_answers AS a ON a.record_id = r.id
WHERE r.organization_id = ? AND r.environment = ? AND r.project_id = ? AND r.endpoint = ? AND r.api_key_id = ?
	AND r."key" = ?`)
	})
	return q.q
}

// ClaimIdempotencyKey inserts rec unless a record with the same scope (organization,
// environment, project, endpoint, API key) and key exists. It returns (nil, nil) when rec was inserted, and (existing, nil) when a
// live record exists. A record that expired by rec.CreatedAt, or that is still in
// progress with its lease ended by then (its holder died), is deleted and the claim
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
		existing, err := s.findIdempotencyRecord(ctx, rec)
		if errors.Is(err, domain.ErrNotFound) {
			continue // released or swept between the insert and the read
		}
		if err != nil {
			return nil, err
		}
		switch {
		case !existing.ExpiresAt.After(rec.CreatedAt):
			// Conditional on the id and expiry, so of concurrent claimers replacing the
			// same expired record none deletes the live one another just inserted.
			if _, err := s.deleteIdempotency(ctx, func(q *bun.SelectQuery) *bun.SelectQuery {
				return q.Where("id = ?", existing.ID).Where("expires_at <= ?", rec.CreatedAt)
			}); err != nil {
				return nil, fmt.Errorf("replace expired idempotency record %s: %w", existing.ID, err)
			}
		case existing.State == domain.IdempotencyInProgress && !existing.LeaseUntil.After(rec.CreatedAt):
			if err := s.takeOver(ctx, existing.ID, rec.CreatedAt); err != nil {
				return nil, err
			}
		default:
			return existing, nil
		}
	}
	return nil, fmt.Errorf("claim idempotency key: still contended after %d attempts", claimAttempts)
}

// takeOver deletes the claim id, still in progress with its lease ended by now, so the
// claim can be made again. Conditional on both, so a holder that renewed or answered in
// the meantime keeps its claim; an answer being written at the same moment makes the
// delete fail on the answer's foreign key, and the claim is read again.
func (s *Store) takeOver(ctx context.Context, id string, now time.Time) error {
	_, err := s.w().NewDelete().Model((*domain.IdempotencyRecord)(nil)).Where("id = ?", id).Where("lease_until <= ?", now).
		Where("NOT EXISTS (SELECT 1 FROM idempotency_answers AS a WHERE a.record_id = ?)", id).Exec(ctx)
	if err != nil && !isForeignKeyViolation(err) {
		return fmt.Errorf("take over idempotency record %s: %w", id, err)
	}
	return nil
}

// RenewIdempotencyKey moves the lease of the claim id to until.
func (s *Store) RenewIdempotencyKey(ctx context.Context, id string, until time.Time) error {
	if _, err := s.w().NewUpdate().Model((*domain.IdempotencyRecord)(nil)).Set("lease_until = ?", until.UTC()).
		Where("id = ?", id).Exec(ctx); err != nil {
		return fmt.Errorf("renew idempotency record %s: %w", id, err)
	}
	return nil
}

// claim inserts rec, in progress; false when its key is taken.
func (s *Store) claim(ctx context.Context, rec *domain.IdempotencyRecord) (bool, error) {
	q := claimSQLite
	if s.dialect == DialectPostgres && s.tx == nil {
		q = claimPostgres
	}
	rows, err := s.queryHot(ctx, s.w(), q, rec.ID, rec.OrganizationID, rec.Environment, rec.ProjectID, rec.Endpoint,
		rec.APIKeyID, rec.Key, rec.Fingerprint, rec.CreatedAt.UTC(), rec.ExpiresAt.UTC(), rec.LeaseUntil.UTC())
	if err != nil {
		return false, err
	}
	defer rows.Close()
	inserted := rows.Next()
	return inserted, rows.Err()
}

// FinishIdempotencyKey stores rec's answer; domain.ErrNotFound when the record is gone
// (released, taken over, or replaced after expiring).
func (s *Store) FinishIdempotencyKey(ctx context.Context, rec *domain.IdempotencyRecord) error {
	a, err := answerOf(rec)
	if err != nil {
		return err
	}
	bytesArg := "?"
	if s.dialect == DialectPostgres {
		// Untyped in a SELECT list it would be text, which does not convert to bytea.
		bytesArg = "CAST(? AS bytea)"
	}
	n, err := affected(s.w().NewRaw(`INSERT INTO idempotency_answers (record_id, result, body, created_at)
		SELECT ?, ?, `+bytesArg+`, ? WHERE EXISTS (SELECT 1 FROM idempotency_records WHERE id = ?)
		ON CONFLICT (record_id) DO NOTHING`,
		a.RecordID, a.Result, a.Body, a.CreatedAt, a.RecordID).Exec(ctx))
	if isForeignKeyViolation(err) {
		n, err = 0, nil // taken over between the check and the insert
	}
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
