package db_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/db"
	"github.com/filemill/filemill/db/dbtest"
	"github.com/filemill/filemill/domain"
)

// helperEnv makes the test binary a writer process for TestSQLiteSharedByProcesses.
const helperEnv = "FILEMILL_DB_TEST_WRITER"

func TestMain(m *testing.M) {
	if spec := os.Getenv(helperEnv); spec != "" {
		if err := runWriterProcess(spec); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestOpen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("SQLiteURLForms", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		for _, url := range []string{
			filepath.Join(dir, "plain.db"),
			"sqlite://" + filepath.Join(dir, "scheme.db"),
			"file:" + filepath.Join(dir, "file.db"),
			filepath.Join(dir, "params.db") + "?_pragma=cache_size(-4000)",
		} {
			s, err := db.Open(ctx, url)
			require.NoError(t, err, url)
			require.Equal(t, db.DialectSQLite, s.Dialect())
			require.NoError(t, s.Migrate(ctx))
			require.NoError(t, s.Ping(ctx))
			require.NoError(t, s.Close())
		}
		for _, name := range []string{"plain.db", "scheme.db", "file.db", "params.db"} {
			require.FileExists(t, filepath.Join(dir, name))
		}
	})
	t.Run("SQLitePragmas", func(t *testing.T) {
		t.Parallel()
		s := dbtest.Open(t, dbtest.SQLite(t))
		for pragma, want := range map[string]string{
			"journal_mode": "wal", "foreign_keys": "1", "busy_timeout": "10000", "synchronous": "1",
		} {
			var got string
			require.NoError(t, s.DB().NewRaw("PRAGMA "+pragma).Scan(ctx, &got))
			require.Equal(t, want, got, pragma)
		}
	})
	t.Run("SQLiteInMemory", func(t *testing.T) {
		t.Parallel()
		s := dbtest.Open(t, ":memory:")
		org := createOrg(t, s, "mem")
		got, err := s.FindOrganizationByID(ctx, org.ID)
		require.NoError(t, err)
		require.Equal(t, org, got)
	})
	t.Run("Postgres", func(t *testing.T) {
		t.Parallel()
		url := dbtest.Postgres(t)
		s, err := db.Open(ctx, url+"&pool_max_conns=5")
		require.NoError(t, err)
		defer s.Close()
		require.Equal(t, db.DialectPostgres, s.Dialect())
		require.Equal(t, 5, s.DB().Stats().MaxOpenConnections)
		require.NoError(t, s.Ping(ctx))

		s2, err := db.Open(ctx, url)
		require.NoError(t, err)
		defer s2.Close()
		require.Equal(t, 24, s2.DB().Stats().MaxOpenConnections)
	})
	t.Run("Refusals", func(t *testing.T) {
		t.Parallel()
		for _, url := range []string{
			"",
			"mysql://root@localhost/filemill",
			"postgres://postgres@127.0.0.1:5432/test?sslmode=disable&pool_max_conns=zero",
			"postgres://postgres@127.0.0.1:5432/test?sslmode=disable&pool_max_conns=0",
			"postgres://user:secret@127.0.0.1:1/test?sslmode=disable", // nothing listens on port 1
			"postgres://user:secret@127.0.0.1:5432/test?sslmode=bogus",
			"postgres://user:secret@[::1/test",
		} {
			s, err := db.Open(ctx, url)
			require.Error(t, err, url)
			require.Nil(t, s)
			require.NotContains(t, err.Error(), "secret", "the password stays out of errors")
		}
	})
}

func TestMigrate(t *testing.T) {
	t.Parallel()
	dbtest.EachDialect(t, func(t *testing.T, s *db.Store) {
		t.Parallel()
		ctx := context.Background()
		require.NoError(t, s.Migrate(ctx), "a second Migrate finds nothing to do")
		require.NoError(t, s.Migrate(ctx))
		n, err := s.DB().NewSelect().Table("bun_migrations").Count(ctx)
		require.NoError(t, err)
		require.EqualValues(t, migrationCount(t), n, "each migration recorded once")
	})
}

// TestMigrateConcurrently starts two stores, as two processes would, migrating one
// fresh database at the same moment.
func TestMigrateConcurrently(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		url  func(testing.TB) string
	}{{"pg", dbtest.Postgres}, {"sqlite", dbtest.SQLite}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			url := tc.url(t)
			stores := make([]*db.Store, 3)
			for i := range stores {
				s, err := db.Open(ctx, url)
				require.NoError(t, err)
				t.Cleanup(func() { s.Close() })
				stores[i] = s
			}
			errs := make([]error, len(stores))
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i, s := range stores {
				wg.Go(func() {
					<-start
					errs[i] = s.Migrate(ctx)
				})
			}
			close(start)
			wg.Wait()
			for _, err := range errs {
				require.NoError(t, err)
			}
			n, err := stores[0].DB().NewSelect().Table("bun_migrations").Count(ctx)
			require.NoError(t, err)
			require.EqualValues(t, migrationCount(t), n, "each migration applied once")
			createOrg(t, stores[1], "after-migrate")
		})
	}
}

// TestSchemaMatchesModels checks that the hand-written DDL has exactly the columns of the
// domain structs' bun tags, under the table names bun gives them.
func TestSchemaMatchesModels(t *testing.T) {
	t.Parallel()
	models := map[string]any{
		"organizations": (*domain.Organization)(nil), "projects": (*domain.Project)(nil),
		"api_keys": (*domain.APIKey)(nil), "credit_accounts": (*domain.CreditAccount)(nil),
		"ledger_entries": (*domain.LedgerEntry)(nil), "idempotency_records": (*domain.IdempotencyRecord)(nil),
		"events": (*domain.Event)(nil), "webhook_endpoints": (*domain.WebhookEndpoint)(nil),
		"deliveries": (*domain.Delivery)(nil), "uploads": (*domain.Upload)(nil), "files": (*domain.File)(nil),
		"artifacts": (*domain.Artifact)(nil), "jobs": (*domain.Job)(nil), "batches": (*domain.Batch)(nil),
		"maintenance_tasks": (*domain.MaintenanceTask)(nil),
	}
	dbtest.EachDialect(t, func(t *testing.T, s *db.Store) {
		t.Parallel()
		ctx := context.Background()
		for name, model := range models {
			table := s.DB().Table(reflect.TypeOf(model).Elem())
			require.Equal(t, name, table.Name, "bun's table name for %T", model)
			var want []string
			for _, f := range table.Fields {
				want = append(want, f.Name)
			}
			var got []string
			if s.Dialect() == db.DialectPostgres {
				require.NoError(t, s.DB().NewRaw(`SELECT column_name FROM information_schema.columns
					WHERE table_schema = current_schema() AND table_name = ?`, name).Scan(ctx, &got))
			} else {
				require.NoError(t, s.DB().NewRaw(`SELECT name FROM pragma_table_info(?)`, name).Scan(ctx, &got))
			}
			sort.Strings(want)
			sort.Strings(got)
			require.Equal(t, want, got, "columns of %s", name)
		}
	})
}

func TestInTx(t *testing.T) {
	t.Parallel()
	dbtest.EachDialect(t, func(t *testing.T, s *db.Store) {
		t.Parallel()
		ctx := context.Background()
		exists := func(id string) bool {
			t.Helper()
			_, err := s.FindOrganizationByID(ctx, id)
			if errors.Is(err, domain.ErrNotFound) {
				return false
			}
			require.NoError(t, err)
			return true
		}
		newOrg := func(name string) *domain.Organization {
			return &domain.Organization{ID: domain.NewID(domain.PrefixOrganization), Name: name, Status: domain.OrgActive, CreatedAt: now()}
		}

		t.Run("Commit", func(t *testing.T) {
			org := newOrg("commit")
			require.NoError(t, s.InTx(ctx, func(tx domain.Store) error {
				require.NoError(t, tx.CreateOrganization(ctx, org))
				got, err := tx.FindOrganizationByID(ctx, org.ID)
				require.NoError(t, err, "the transaction sees its own write")
				require.Equal(t, org, got)
				require.False(t, exists(org.ID), "others do not, before commit")
				return nil
			}))
			require.True(t, exists(org.ID))
		})
		t.Run("RollbackOnError", func(t *testing.T) {
			org := newOrg("rollback")
			boom := errors.New("boom")
			err := s.InTx(ctx, func(tx domain.Store) error {
				require.NoError(t, tx.CreateOrganization(ctx, org))
				return boom
			})
			require.ErrorIs(t, err, boom)
			require.False(t, exists(org.ID))
		})
		t.Run("RollbackOnPanic", func(t *testing.T) {
			org := newOrg("panic")
			require.Panics(t, func() {
				_ = s.InTx(ctx, func(tx domain.Store) error {
					require.NoError(t, tx.CreateOrganization(ctx, org))
					panic("boom")
				})
			})
			require.False(t, exists(org.ID))
			createOrg(t, s, "after-panic") // the connection went back to the pool
		})
		t.Run("NestedJoins", func(t *testing.T) {
			outer, inner := newOrg("outer"), newOrg("inner")
			boom := errors.New("boom")
			err := s.InTx(ctx, func(tx domain.Store) error {
				require.NoError(t, tx.CreateOrganization(ctx, outer))
				require.NoError(t, tx.InTx(ctx, func(tx2 domain.Store) error {
					_, err := tx2.FindOrganizationByID(ctx, outer.ID)
					require.NoError(t, err, "the nested call runs in the same transaction")
					return tx2.CreateOrganization(ctx, inner)
				}))
				return boom
			})
			require.ErrorIs(t, err, boom)
			require.False(t, exists(outer.ID))
			require.False(t, exists(inner.ID), "the nested work rolled back with the outer")
		})
		t.Run("Ping", func(t *testing.T) {
			require.NoError(t, s.Ping(ctx))
			require.NoError(t, s.InTx(ctx, func(tx domain.Store) error { return tx.Ping(ctx) }))
		})
		t.Run("NoCloseOrMigrateInside", func(t *testing.T) {
			require.NoError(t, s.InTx(ctx, func(tx domain.Store) error {
				require.Error(t, tx.(*db.Store).Close())
				require.Error(t, tx.(*db.Store).Migrate(ctx))
				return nil
			}))
		})
	})
}

// TestWriteContention runs many goroutines' read-then-write transactions at once: on
// SQLite every one must wait its turn, none may see SQLITE_BUSY.
func TestWriteContention(t *testing.T) {
	t.Parallel()
	dbtest.EachDialect(t, func(t *testing.T, s *db.Store) {
		t.Parallel()
		ctx := context.Background()
		tn := setupTenants(t, s)
		const workers, rounds = 40, 15
		var wg sync.WaitGroup
		errs := make(chan error, workers*rounds)
		for w := range workers {
			wg.Go(func() {
				for r := range rounds {
					err := s.InTx(ctx, func(tx domain.Store) error {
						acct, err := tx.FindCreditAccount(ctx, tn.org.ID, domain.EnvLive)
						if err != nil {
							return err
						}
						if err := tx.ApplyLedgerEntry(ctx, entry(acct, domain.LedgerGrant, 1)); err != nil {
							return err
						}
						return tx.CreateEvent(ctx, &domain.Event{ID: domain.NewID(domain.PrefixEvent), Type: "test",
							OrganizationID: tn.org.ID, ProjectID: tn.prj.ID, Environment: domain.EnvLive,
							SubjectID: fmt.Sprintf("w%d-r%d", w, r), CreatedAt: now()})
					})
					if err != nil {
						errs <- err
					}
					// Reads beside the writes, outside any transaction.
					if _, _, err := s.FindJobs(ctx, domain.JobFilter{Scope: domain.Scope{OrganizationID: tn.org.ID}}); err != nil {
						errs <- err
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		acct, err := s.FindCreditAccount(ctx, tn.org.ID, domain.EnvLive)
		require.NoError(t, err)
		require.EqualValues(t, workers*rounds, acct.Balance)
	})
}

func TestTimesComeBackInUTC(t *testing.T) {
	t.Parallel()
	dbtest.EachDialect(t, func(t *testing.T, s *db.Store) {
		t.Parallel()
		ctx := context.Background()
		tn := setupTenants(t, s)
		zone := time.FixedZone("UTC+5", 5*3600)
		at := now().In(zone)

		org := &domain.Organization{ID: domain.NewID(domain.PrefixOrganization), Name: "zoned", Status: domain.OrgActive, CreatedAt: at}
		require.NoError(t, s.CreateOrganization(ctx, org))
		got, err := s.FindOrganizationByID(ctx, org.ID)
		require.NoError(t, err)
		require.Equal(t, time.UTC, got.CreatedAt.Location())
		require.True(t, at.Equal(got.CreatedAt))

		u := &domain.Upload{ID: domain.NewID(domain.PrefixUpload), OrganizationID: tn.org.ID, ProjectID: tn.prj.ID,
			State: domain.UploadOpen, ExpiresAt: at.Add(-time.Minute), CreatedAt: at, CompletedAt: ptr(at)}
		require.NoError(t, s.CreateUpload(ctx, u))
		gu, err := s.FindUploadByID(ctx, u.ID)
		require.NoError(t, err)
		require.Equal(t, time.UTC, gu.CompletedAt.Location())
		require.Equal(t, time.UTC, gu.ExpiresAt.Location())

		// Comparisons are between instants, whatever zone the arguments carry.
		expired, err := s.FindExpiredUploads(ctx, at.UTC(), 10)
		require.NoError(t, err)
		require.Equal(t, []string{u.ID}, ids(expired, uploadID))
		expired, err = s.FindExpiredUploads(ctx, at.Add(-2*time.Minute).In(time.FixedZone("UTC-8", -8*3600)), 10)
		require.NoError(t, err)
		require.Empty(t, expired)
	})
}

// TestSQLiteSharedByProcesses has other processes (this test binary, run as writers)
// write to the same SQLite file while this one does: every write of every process must
// succeed, as when the admin CLI grants credits while serve runs.
func TestSQLiteSharedByProcesses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := dbtest.SQLite(t)
	s := dbtest.Open(t, path)
	tn := setupTenants(t, s)
	acct, err := s.FindCreditAccount(ctx, tn.org.ID, domain.EnvLive)
	require.NoError(t, err)

	const processes, rounds = 3, 150
	var wg sync.WaitGroup
	outputs := make([][]byte, processes)
	errs := make([]error, processes)
	for p := range processes {
		wg.Go(func() {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s|%s|%d", helperEnv, path, acct.ID, rounds))
			outputs[p], errs[p] = cmd.CombinedOutput()
		})
	}
	for range rounds {
		require.NoError(t, writeRound(ctx, s, acct.ID))
	}
	wg.Wait()
	for p := range processes {
		require.NoError(t, errs[p], "writer %d: %s", p, outputs[p])
	}
	got, err := s.FindCreditAccount(ctx, tn.org.ID, domain.EnvLive)
	require.NoError(t, err)
	require.EqualValues(t, (processes+1)*rounds, got.Reserved, "every reserve of every process landed")
	require.EqualValues(t, (processes+1)*rounds, got.Balance)
}

// writeRound is one read-then-write transaction: the shape SQLite answers with
// SQLITE_BUSY when a deferred transaction must upgrade its lock.
func writeRound(ctx context.Context, s *db.Store, accountID string) error {
	return s.InTx(ctx, func(tx domain.Store) error {
		if _, err := tx.FindEventsByFile(ctx, accountID, "file_x", 0); err != nil {
			return err
		}
		for _, kind := range []string{domain.LedgerGrant, domain.LedgerGrant, domain.LedgerReserve} {
			e := &domain.LedgerEntry{AccountID: accountID, Kind: kind, Amount: 1, CreatedAt: now()}
			if err := tx.ApplyLedgerEntry(ctx, e); err != nil {
				return err
			}
		}
		return nil
	})
}

func runWriterProcess(spec string) error {
	parts := strings.SplitN(spec, "|", 3)
	if len(parts) != 3 {
		return fmt.Errorf("%s: want path|account|rounds, got %q", helperEnv, spec)
	}
	path, accountID := parts[0], parts[1]
	rounds, err := strconv.Atoi(parts[2])
	if err != nil {
		return err
	}
	ctx := context.Background()
	s, err := db.Open(ctx, path)
	if err != nil {
		return err
	}
	defer s.Close()
	for i := range rounds {
		if err := writeRound(ctx, s, accountID); err != nil {
			return fmt.Errorf("round %d: %w", i, err)
		}
	}
	return nil
}

// migrationCount is how many migrations the package embeds per dialect.
func migrationCount(t *testing.T) int {
	entries, err := os.ReadDir("migrations/pg")
	require.NoError(t, err)
	n := 0
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".up.sql") {
			n++
		}
	}
	return n
}
