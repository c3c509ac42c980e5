package db

import (
	"context"
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

// FindJobs returns one page of the scope's jobs, newest first, optionally of one state
// or batch, and whether more follow.
func (s *Store) FindJobs(ctx context.Context, f domain.JobFilter) ([]*domain.Job, bool, error) {
	filter, err := scoped(f.Scope, f.Environment, func(q *bun.SelectQuery) *bun.SelectQuery {
		if f.State != "" {
			q = q.Where("state = ?", f.State)
		}
		if f.BatchID != "" {
			q = q.Where("batch_id = ?", f.BatchID)
		}
		return q
	})
	if err != nil {
		return nil, false, err
	}
	return findPage[domain.Job](ctx, s.r(), "jobs", f.Page, filter)
}

// UpdateJob writes every column of j where the stored state is fromState; false when it
// was not. Of a cancel and a claim racing from "queued", exactly one wins.
func (s *Store) UpdateJob(ctx context.Context, j *domain.Job, fromState string) (bool, error) {
	row := *j
	row.Options = jsonOrNull(row.Options)
	n, err := affected(s.w().NewUpdate().Model(&row).WherePK().Where("state = ?", fromState).Exec(ctx))
	if err != nil {
		return false, fmt.Errorf("update job %s: %w", j.ID, err)
	}
	return n == 1, nil
}

// FindStaleQueuedJobs returns up to limit jobs still queued that were created before a
// moment, oldest first.
func (s *Store) FindStaleQueuedJobs(ctx context.Context, before time.Time, limit int) ([]*domain.Job, error) {
	return findAll[domain.Job](ctx, s.r(), "stale queued jobs", func(q *bun.SelectQuery) *bun.SelectQuery {
		return q.Where("state = ?", domain.JobQueued).Where("created_at < ?", before).
			Order("created_at", "id").Limit(orBatch(limit))
	})
}

// FindBatchByID returns the batch, or domain.ErrNotFound.
func (s *Store) FindBatchByID(ctx context.Context, id string) (*domain.Batch, error) {
	return findOne[domain.Batch](ctx, s.r(), "batch "+id, func(q *bun.SelectQuery) *bun.SelectQuery {
		return q.Where("id = ?", id)
	})
}
