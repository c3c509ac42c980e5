package db

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/filemill/filemill/domain"
)

// claimAttempts bounds ClaimIdempotencyKey's retries: one after replacing an expired
// record, one more if the record it saw vanished before it could read it.
const claimAttempts = 3

// claimInsert is the insert of a claim: of many concurrent claims of one key, exactly
// one inserts, on both dialects, inside or outside a transaction.
const claimInsert = `INSERT INTO idempotency_records
	(id, organization_id, endpoint, "key", fingerprint, state, response_status, created_at, expires_at)
	VALUES (?, ?, ?, ?, ?, ?, 0, ?, ?)
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

// ClaimIdempotencyKey inserts rec unless a record with the same (organization, endpoint,
// key) exists. It returns (nil, nil) when rec was inserted, and (existing, nil) when a
// live record exists. A record that expired by rec.CreatedAt is deleted and the claim
// retried.
func (s *Store) ClaimIdempotencyKey(ctx context.Context, rec *domain.IdempotencyRecord) (*domain.IdempotencyRecord, error) {
	if rec.ID == "" {
		return nil, errors.New("claim idempotency key: empty id")
	}
	w := s.w()
	for range claimAttempts {
		inserted, err := s.claim(ctx, rec)
		if err != nil {
			return nil, fmt.Errorf("claim idempotency key: %w", err)
		}
		if inserted {
			return nil, nil
		}
		existing, err := findOne[domain.IdempotencyRecord](ctx, s.r(), "idempotency record",
			func(q *bun.SelectQuery) *bun.SelectQuery {
				return q.Where("organization_id = ?", rec.OrganizationID).
					Where("endpoint = ?", rec.Endpoint).Where(`"key" = ?`, rec.Key)
			})
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
		_, err = w.NewDelete().Model((*domain.IdempotencyRecord)(nil)).
			Where("id = ?", existing.ID).Where("expires_at <= ?", rec.CreatedAt).Exec(ctx)
		if err != nil {
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
		rec.Fingerprint, domain.IdempotencyInProgress, rec.CreatedAt.UTC(), rec.ExpiresAt.UTC())
	if err != nil {
		return false, err
	}
	defer rows.Close()
	inserted := rows.Next()
	return inserted, rows.Err()
}

// finishIdempotency stores rec's response and state: on its own in FinishIdempotencyKey,
// or in the write of the effect it answers (domain.Admission.Answer).
func finishIdempotency(rec *domain.IdempotencyRecord) func(bun.IDB) *bun.UpdateQuery {
	return func(idb bun.IDB) *bun.UpdateQuery {
		return idb.NewUpdate().Model(rec).
			Column("state", "response_status", "response_headers", "response_body").
			WherePK()
	}
}

// FinishIdempotencyKey stores the response and state of rec; domain.ErrNotFound when the
// record is gone (released, or replaced after expiring).
func (s *Store) FinishIdempotencyKey(ctx context.Context, rec *domain.IdempotencyRecord) error {
	n, err := affected(finishIdempotency(rec)(s.w()).Exec(ctx))
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
	_, err := s.w().NewDelete().Model((*domain.IdempotencyRecord)(nil)).
		Where("id = ?", id).Where("state = ?", domain.IdempotencyInProgress).Exec(ctx)
	if err != nil {
		return fmt.Errorf("release idempotency record %s: %w", id, err)
	}
	return nil
}

// sweepBatch bounds one DELETE of a sweep: on SQLite a long delete would hold the one
// write lock against every request.
const sweepBatch = 1000

// DeleteExpiredIdempotencyKeys deletes records that expired by now, in batches, and
// returns how many.
func (s *Store) DeleteExpiredIdempotencyKeys(ctx context.Context, now time.Time) (int, error) {
	w := s.w()
	total := 0
	for {
		expired := w.NewSelect().Model((*domain.IdempotencyRecord)(nil)).Column("id").
			Where("expires_at <= ?", now).Limit(sweepBatch)
		n, err := affected(w.NewDelete().Model((*domain.IdempotencyRecord)(nil)).
			Where("id IN (?)", expired).Exec(ctx))
		if err != nil {
			return total, fmt.Errorf("delete expired idempotency records: %w", err)
		}
		total += int(n)
		if n < sweepBatch {
			return total, nil
		}
	}
}
