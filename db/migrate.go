package db

import (
	"context"
	"database/sql/driver"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/uptrace/bun/migrate"
)

// migrationFiles holds one directory of SQL migrations per dialect, named by Dialect().
// Each dialect's DDL is written by hand: deriving it from the domain structs would let a
// struct change rewrite history.
//
//go:embed migrations
var migrationFiles embed.FS

// migrateLockKey is the PostgreSQL advisory lock held around Migrate ("filemill" in
// ASCII). Advisory locks are per database, so databases sharing a server do not contend.
const migrateLockKey int64 = 0x66696c656d696c6c

// lockPollInterval is how often a process waiting for another's migration looks again.
const lockPollInterval = 100 * time.Millisecond

// Migrate applies the migrations not applied yet, recording them in bun's
// bun_migrations table. It is idempotent, and safe when several processes start at once:
// on PostgreSQL they queue on an advisory lock, on SQLite on a lock file beside the
// database; the later ones find nothing left to do.
func (s *Store) Migrate(ctx context.Context) (err error) {
	if s.tx != nil {
		return errors.New("db: Migrate on a transaction-bound store")
	}
	migrations, err := s.migrations()
	if err != nil {
		return err
	}
	unlock, err := s.lockMigrations(ctx)
	if err != nil {
		return fmt.Errorf("lock migrations: %w", err)
	}
	defer func() { err = errors.Join(err, unlock()) }()

	// Only a migration that succeeded is recorded, so a failed one runs again next time.
	m := migrate.NewMigrator(s.db, migrations, migrate.WithMarkAppliedOnSuccess(true))
	if err := m.Init(ctx); err != nil {
		return fmt.Errorf("create migration tables: %w", err)
	}
	if _, err := m.Migrate(ctx); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

func (s *Store) migrations() (*migrate.Migrations, error) {
	dir, err := fs.Sub(migrationFiles, "migrations/"+s.dialect)
	if err != nil {
		return nil, err
	}
	ms := migrate.NewMigrations()
	if err := ms.Discover(dir); err != nil {
		return nil, fmt.Errorf("read %s migrations: %w", s.dialect, err)
	}
	return ms, nil
}

// lockMigrations takes the lock that makes Migrate run in one process at a time and
// returns its release.
func (s *Store) lockMigrations(ctx context.Context) (func() error, error) {
	switch {
	case s.dialect == DialectPostgres:
		return s.lockPostgres(ctx)
	case s.lockPath != "":
		return lockFile(ctx, s.lockPath)
	default: // an in-memory SQLite database belongs to this process alone
		return func() error { return nil }, nil
	}
}

// lockPostgres holds a session advisory lock on a connection of its own. It polls with
// pg_try_advisory_lock rather than blocking in pg_advisory_lock, so waiting behind a long
// migration honours ctx and never trips the driver's read timeout.
func (s *Store) lockPostgres(ctx context.Context) (func() error, error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	for {
		var locked bool
		if err := conn.NewRaw("SELECT pg_try_advisory_lock(?)", migrateLockKey).Scan(ctx, &locked); err != nil {
			_ = conn.Close()
			return nil, err
		}
		if locked {
			break
		}
		select {
		case <-ctx.Done():
			_ = conn.Close()
			return nil, ctx.Err()
		case <-time.After(lockPollInterval):
		}
	}
	return func() error {
		// Unlock even when ctx is done: otherwise the lock lives on with the connection.
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_, err := conn.ExecContext(uctx, "SELECT pg_advisory_unlock(?)", migrateLockKey)
		if err != nil {
			// The session may still hold the lock: discard the connection, which ends it.
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
		return errors.Join(err, conn.Close())
	}, nil
}
