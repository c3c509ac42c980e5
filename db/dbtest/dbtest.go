// Package dbtest gives tests a fresh, migrated metadata database on PostgreSQL or SQLite.
//
// PostgreSQL comes from TEST_DATABASE_URL (default DefaultURL): each call to Postgres
// creates a database of its own on that server and drops it when the test ends. A
// server that cannot be reached fails the test, never skips it, so a green run always
// means both dialects were exercised.
package dbtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun/driver/pgdriver"

	"github.com/filemill/filemill/db"
)

// DefaultURL is the PostgreSQL server used when TEST_DATABASE_URL is not set.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// testPoolSize keeps a test's store small: test binaries of several packages run at
// once against one server and its max_connections (100 by default).
const testPoolSize = "8"

const setupTimeout = time.Minute

// server is the connection, shared by every test of the binary, that creates and drops
// the test databases.
var server struct {
	once sync.Once
	db   *sql.DB
	url  *url.URL
	err  error
}

func adminDB(t testing.TB) (*sql.DB, *url.URL) {
	t.Helper()
	server.once.Do(func() {
		raw := os.Getenv("TEST_DATABASE_URL")
		if raw == "" {
			raw = DefaultURL
		}
		server.url, server.err = url.Parse(raw)
		if server.err != nil {
			server.err = fmt.Errorf("TEST_DATABASE_URL is not a URL: %w", server.err)
			return
		}
		if s := server.url.Scheme; s != "postgres" && s != "postgresql" {
			server.err = fmt.Errorf("TEST_DATABASE_URL must start with postgres://, not %s://", s)
			return
		}
		connector, err := newConnector(raw)
		if err != nil {
			server.err = err
			return
		}
		server.db = sql.OpenDB(connector)
		server.db.SetMaxOpenConns(4)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		server.err = server.db.PingContext(ctx)
	})
	if server.err != nil {
		u := DefaultURL
		if server.url != nil {
			u = server.url.Redacted()
		}
		t.Fatalf("dbtest: PostgreSQL at %s is unreachable: %v\n"+
			"Start it (`make deps`, or `docker run -d -p 5432:5432 -e POSTGRES_HOST_AUTH_METHOD=trust postgres:15`) "+
			"or point TEST_DATABASE_URL at a server where the user may CREATE DATABASE.", u, server.err)
	}
	return server.db, server.url
}

// newConnector turns pgdriver's panic on a malformed DSN into an error.
func newConnector(dsn string) (c *pgdriver.Connector, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("TEST_DATABASE_URL: %v", r)
		}
	}()
	// CREATE and DROP DATABASE queue behind each other on the server; with many tests
	// ending at once a drop may wait longer than pgdriver's 10 s read timeout.
	return pgdriver.NewConnector(pgdriver.WithDSN(dsn), pgdriver.WithReadTimeout(setupTimeout),
		pgdriver.WithWriteTimeout(setupTimeout)), nil
}

// Postgres creates an empty database on the test server and returns its URL. The
// database is dropped, with any connections left to it, when the test ends.
func Postgres(t testing.TB) string {
	t.Helper()
	admin, base := adminDB(t)
	name := databaseName(t)
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("dbtest: create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
		defer cancel()
		if _, err := admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("dbtest: drop database %s: %v", name, err)
		}
	})
	u := *base
	u.Path = "/" + name
	return u.String()
}

// databaseName is a fresh name that says which test made it, in case one is left behind.
func databaseName(t testing.TB) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	var sb strings.Builder
	for _, r := range strings.ToLower(t.Name()) {
		if sb.Len() >= 32 {
			break
		}
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			sb.WriteRune(r)
		} else {
			sb.WriteByte('_')
		}
	}
	return "filemill_test_" + sb.String() + "_" + hex.EncodeToString(b[:])
}

// SQLite returns the path of a SQLite database in the test's temporary directory.
func SQLite(t testing.TB) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "filemill.db")
}

// Open opens and migrates the database at url and closes it when the test ends.
func Open(t testing.TB, url string) *db.Store {
	t.Helper()
	if strings.HasPrefix(url, "postgres://") || strings.HasPrefix(url, "postgresql://") {
		url = withTestPoolSize(url)
	}
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	s, err := db.Open(ctx, url)
	if err != nil {
		t.Fatalf("dbtest: open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("dbtest: close: %v", err)
		}
	})
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("dbtest: migrate %s: %v", s.Dialect(), err)
	}
	return s
}

func withTestPoolSize(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw // db.Open reports it
	}
	q := u.Query()
	if q.Get("pool_max_conns") == "" {
		q.Set("pool_max_conns", testPoolSize)
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// dialects lists the dialects EachDialect runs, with how to make a database of each.
var dialects = []struct {
	Name string
	URL  func(testing.TB) string
}{
	{db.DialectPostgres, Postgres},
	{db.DialectSQLite, SQLite},
}

// EachDialect runs fn as one subtest per dialect ("pg", "sqlite"), each on a fresh
// migrated store. fn may call t.Parallel.
func EachDialect(t *testing.T, fn func(t *testing.T, s *db.Store)) {
	t.Helper()
	for _, d := range dialects {
		t.Run(d.Name, func(t *testing.T) {
			fn(t, Open(t, d.URL(t)))
		})
	}
}
