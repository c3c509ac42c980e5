package db

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/filemill/filemill/domain"
)

// CreateJob inserts j. Nil options are stored as JSON null.
func (s *Store) CreateJob(ctx context.Context, j *domain.Job) error {
	row := *j
	row.Options = jsonOrNull(row.Options)
	return insert(ctx, s.w(), "job", row.ID, &row)
}

// FindJobByID returns the job, or domain.ErrNotFound.
func (s *Store) FindJobByID(ctx context.Context, id string) (*domain.Job, error) {
	return findOne[domain.Job](ctx, s.r(), "job "+id, func(q *bun.SelectQuery) *bun.SelectQuery {
		return q.Where("id = ?", id)
	})
}

// FindJobs returns one page of the scope's jobs, newest first, optionally of one state,
// batch or file, and whether more follow.
func (s *Store) FindJobs(ctx context.Context, f domain.JobFilter) ([]*domain.Job, bool, error) {
	filter, err := scoped(f.Scope, f.Environment, func(q *bun.SelectQuery) *bun.SelectQuery {
		if f.State != "" {
			q = q.Where("state = ?", f.State)
		}
		if f.BatchID != "" {
			q = q.Where("batch_id = ?", f.BatchID)
		}
		if f.FileID != "" {
			q = q.Where("file_id = ?", f.FileID)
		}
		return q
	})
	if err != nil {
		return nil, false, err
	}
	return findPage[domain.Job](ctx, s.r(), "jobs", f.Page, filter)
}

// UpdateJobProgress sets the progress of a job still running in the given attempt; false
// when it is not.
func (s *Store) UpdateJobProgress(ctx context.Context, id string, attempts, progress int) (bool, error) {
	n, err := affected(s.w().NewUpdate().Model((*domain.Job)(nil)).Set("progress = ?", progress).
		Where("id = ?", id).Where("state = ?", domain.JobRunning).Where("attempts = ?", attempts).Exec(ctx))
	if err != nil {
		return false, fmt.Errorf("progress of job %s: %w", id, err)
	}
	return n == 1, nil
}

// FindJobsToRedrive returns, by id, up to q.Limit jobs after q.After that may have lost
// their way to a worker: queued ones created before q.QueuedBefore, and running ones
// whose lease ran out before q.LeaseBefore (or that have none).
func (s *Store) FindJobsToRedrive(ctx context.Context, q domain.RedriveQuery) ([]*domain.Job, error) {
	return findAll[domain.Job](ctx, s.r(), "jobs to redrive", func(sq *bun.SelectQuery) *bun.SelectQuery {
		// The state list is written out so the planner sees ix_jobs_active_id applies.
		return sq.Where("state IN ('queued', 'running')").Where("id > ?", q.After).WhereGroup(" AND ", func(sq *bun.SelectQuery) *bun.SelectQuery {
			return sq.Where("state = ? AND created_at < ?", domain.JobQueued, q.QueuedBefore).
				WhereOr("state = ? AND (lease_expires_at IS NULL OR lease_expires_at < ?)", domain.JobRunning, q.LeaseBefore)
		}).Order("id").Limit(orBatch(q.Limit))
	})
}

// RenewJobLease moves the lease of a job still running in the given attempt to until;
// false when the job is no longer there (finished, or taken by another worker).
func (s *Store) RenewJobLease(ctx context.Context, id string, attempts int, until time.Time) (bool, error) {
	n, err := affected(s.w().NewUpdate().Model((*domain.Job)(nil)).Set("lease_expires_at = ?", until.UTC()).
		Where("id = ?", id).Where("state = ?", domain.JobRunning).Where("attempts = ?", attempts).Exec(ctx))
	if err != nil {
		return false, fmt.Errorf("lease of job %s: %w", id, err)
	}
	return n == 1, nil
}

// FindBatchByID returns the batch, or domain.ErrNotFound.
func (s *Store) FindBatchByID(ctx context.Context, id string) (*domain.Batch, error) {
	return findOne[domain.Batch](ctx, s.r(), "batch "+id, func(q *bun.SelectQuery) *bun.SelectQuery {
		return q.Where("id = ?", id)
	})
}

// TransitionJob writes a job's transition with its artifacts, ledger entries and events
// as one atomic write (see writeAtOnce): the job's row is changed only if it is still
// where it was moved from, and the account's sums move only if they stay above zero.
func (s *Store) TransitionJob(ctx context.Context, t *domain.JobTransition) error {
	w := atomicWrite{transition: &jobTransition{job: t.Job, fromState: t.FromState, fromAttempts: t.FromAttempts}, lazy: t.Lazy}
	artifacts := orEmpty(t.Artifacts)
	move := &creditMove{}
	entries, err := move.add(t.Ledger, domain.LedgerCharge, domain.LedgerRelease)
	if err != nil {
		return fmt.Errorf("transition job %s: %w", t.Job.ID, err)
	}
	if len(entries) > 0 {
		w.move = move
	}
	entries, events := orEmpty(entries), eventRows(t.Events)
	// The same tables every time, empty or not: one prepared statement per shape.
	w.inserts = []any{&artifacts, &entries, &events}
	switch err := s.writeAtOnce(ctx, w); {
	case errors.Is(err, errTransitionFailed):
		return fmt.Errorf("job %s from %s: %w", t.Job.ID, t.FromState, domain.ErrStaleJob)
	case errors.Is(err, errGuardFailed):
		return fmt.Errorf("job %s: %w", t.Job.ID, domain.ErrLedgerMismatch)
	default:
		return err
	}
}
