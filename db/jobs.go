package db

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/driver/pgdriver"

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
//
// A transition that moves credits (a settlement, a failure releasing its reservation)
// holds its account's row until its commit is on disk, as an admission does, so on their
// own they would run one at a time, one flush each, with the account's admissions
// waiting behind them. Those on one account that arrive while a write on it is under way
// are written together by the next write (newTransitionBatcher); inside a transaction,
// or on SQLite, a transition is written at once.
func (s *Store) TransitionJob(ctx context.Context, t *domain.JobTransition) error {
	if acct := movedAccount(t.Ledger); s.tx == nil && s.dialect == DialectPostgres && acct != "" && !t.Lazy {
		p := &pending[*domain.JobTransition]{item: t}
		s.transitions.do(ctx, acct, p)
		return p.err
	}
	return s.writeTransitions(ctx, []*domain.JobTransition{t})
}

// movedAccount is the account whose sums entries move, "" when they move none.
func movedAccount(entries []*domain.LedgerEntry) string {
	for _, e := range entries {
		if e.Amount != 0 {
			return e.AccountID
		}
	}
	return ""
}

// writeTransitions writes transitions as one atomic write: all of them, or none
// (ErrStaleJob when a job was no longer where it was moved from, ErrLedgerMismatch
// when the account's sums would go below zero).
func (s *Store) writeTransitions(ctx context.Context, ts []*domain.JobTransition) error {
	w := atomicWrite{lazy: ts[0].Lazy}
	artifacts, entries, events := []*domain.Artifact{}, []*domain.LedgerEntry{}, []*domain.Event{}
	move := &creditMove{}
	for _, t := range ts {
		w.transitions = append(w.transitions, &jobTransition{job: t.Job, fromState: t.FromState, fromAttempts: t.FromAttempts})
		artifacts = append(artifacts, t.Artifacts...)
		moved, err := move.add(t.Ledger, domain.LedgerCharge, domain.LedgerRelease)
		if err != nil {
			return fmt.Errorf("transition job %s: %w", t.Job.ID, err)
		}
		entries = append(entries, moved...)
		events = append(events, eventRows(t.Events)...)
	}
	if len(entries) > 0 {
		w.move = move
	}
	// The same tables every time, empty or not: one prepared statement per shape.
	w.inserts = []any{&artifacts, &entries, &events}
	what := "job " + ts[0].Job.ID + " from " + ts[0].FromState
	if len(ts) > 1 {
		what = fmt.Sprintf("%d jobs", len(ts))
	}
	switch err := s.writeAtOnce(ctx, w); {
	case errors.Is(err, errTransitionFailed):
		return fmt.Errorf("%s: %w", what, domain.ErrStaleJob)
	case errors.Is(err, errGuardFailed):
		return fmt.Errorf("%s: %w", what, domain.ErrLedgerMismatch)
	default:
		return err
	}
}

// maxTransitionBatch bounds the transitions of one combined write.
const maxTransitionBatch = 64

// newTransitionBatcher combines transitions that move credits on one account (the
// batcher's key) into one statement and one flush.
func newTransitionBatcher(write func(context.Context, []*domain.JobTransition) error) *batcher[*pending[*domain.JobTransition]] {
	return newBatcher(func(ctx context.Context, batch []*pending[*domain.JobTransition]) {
		writeTransitionBatch(ctx, write, batch)
	},
		func(*pending[*domain.JobTransition]) int { return 1 }, maxTransitionBatch)
}

// writeTransitionBatch writes a batch at once, its jobs in id order (two batches taking
// the same rows take them in the same order); when that is refused by one member (its
// job moved meanwhile, an artifact already written by an earlier try of its own) or
// lost to a deadlock, it writes the members one by one, so each gets its own answer.
// Any other failure (the database unreachable, a timeout) is every member's.
func writeTransitionBatch(ctx context.Context, write func(context.Context, []*domain.JobTransition) error, batch []*pending[*domain.JobTransition]) {
	slices.SortFunc(batch, func(a, b *pending[*domain.JobTransition]) int { return strings.Compare(a.item.Job.ID, b.item.Job.ID) })
	writeOrEach(ctx, write, batch, func(err error) bool {
		return errors.Is(err, domain.ErrStaleJob) || errors.Is(err, domain.ErrLedgerMismatch) ||
			errors.Is(err, domain.ErrDuplicate) || isDeadlock(err)
	})
}

// isDeadlock reports PostgreSQL's answer to a deadlock it broke by ending this write.
func isDeadlock(err error) bool {
	var pe pgdriver.Error
	return errors.As(err, &pe) && pe.Field('C') == "40P01"
}
