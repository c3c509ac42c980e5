package db

import (
	"context"

	"github.com/uptrace/bun/migrate"
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
