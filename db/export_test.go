package db

import (
	"context"

	"github.com/uptrace/bun/migrate"

	"github.com/filemill/filemill/domain"
)

// MigrateThrough applies the migrations up to and including the one named name (its
// version prefix), for tests of a migration on the data of the schema before it.
func (s *Store) MigrateThrough(ctx context.Context, name string) error {
	all, err := s.migrations()
	if err != nil {
		return err
	}
	some := migrate.NewMigrations()
	for _, m := range all.Sorted() {
		if m.Name <= name {
			some.Add(m)
		}
	}
	m := migrate.NewMigrator(s.db, some, migrate.WithMarkAppliedOnSuccess(true))
	if err := m.Init(ctx); err != nil {
		return err
	}
	_, err = m.Migrate(ctx)
	return err
}

// RollbackLast rolls back the last group of migrations applied (the one the last
// Migrate or MigrateThrough applied).
func (s *Store) RollbackLast(ctx context.Context) error {
	all, err := s.migrations()
	if err != nil {
		return err
	}
	_, err = migrate.NewMigrator(s.db, all).Rollback(ctx)
	return err
}

// WriteTransitions writes transitions as one write, as a batch of the store's
// transition batcher is written.
func (s *Store) WriteTransitions(ctx context.Context, ts []*domain.JobTransition) error {
	return s.writeTransitions(ctx, ts)
}

// WriteTransitionBatch writes transitions as the batcher does: together, or each alone
// when one refuses the write. It answers each one's error.
func (s *Store) WriteTransitionBatch(ctx context.Context, ts []*domain.JobTransition) []error {
	batch := make([]*pending[*domain.JobTransition], len(ts))
	for i, t := range ts {
		batch[i] = &pending[*domain.JobTransition]{item: t}
	}
	writeTransitionBatch(ctx, s.writeTransitions, batch)
	errs := make([]error, len(ts))
	for _, p := range batch { // sorted by job id: matched back by transition
		for k, t := range ts {
			if p.item == t {
				errs[k] = p.err
			}
		}
	}
	return errs
}
