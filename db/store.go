package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	"github.com/uptrace/bun/driver/pgdriver"
	"github.com/uptrace/bun/driver/sqliteshim"

	"github.com/filemill/filemill/domain"
)

// Dialect names, as returned by (*Store).Dialect.
const (
	DialectPostgres = "pg"
	DialectSQLite   = "sqlite"
)

// PostgreSQL pool. On a 2-core API box at ~3,000 req/s a request holds a connection for
// well under a millisecond per query, so a few dozen connections keep both cores busy while
// some wait on row locks (the hot credit account) or the network; more would only queue
// inside the server. Several api and worker processes share the server's max_connections
// (100 by default), so the size can be lowered per process with ?pool_max_conns=N.
const (
	postgresPoolSize        = 24
	postgresConnMaxIdleTime = 5 * time.Minute
	postgresConnMaxLifetime = time.Hour
	poolSizeParam           = "pool_max_conns"
)

// SQLite concurrency. A database file takes one writer at a time, whoever asks. Inside
// one process every write goes through a pool of exactly one connection, so goroutines
// queue in database/sql (cancellable by their context) instead of spinning in SQLite's
// busy handler and failing with SQLITE_BUSY under load. Reads use a separate pool of
// read-only connections, which WAL lets run beside the writer. Across processes (the admin
// CLI writing while serve runs) the writer's transactions are BEGIN IMMEDIATE
// (_txlock=immediate): the write lock is taken up front under busy_timeout, never
// upgraded from a read halfway through, which is the case SQLite cannot wait out and
// answers with SQLITE_BUSY at once. Single statements outside transactions take the write
// lock at their start and wait the same way.
const (
	sqliteBusyTimeout = 10 * time.Second
	sqliteMinReaders  = 4
)

// prefixCreditAccount marks credit account ids; accounts are never shown to clients, so
// the prefix lives here rather than among the contract's.
const prefixCreditAccount = "acct_"

var _ domain.Store = (*Store)(nil)

// Store is the domain.Store on PostgreSQL or SQLite. A Store made by Open is safe for
// concurrent use; InTx hands fn a Store bound to one transaction.
type Store struct {
	db         *bun.DB // writes and transactions; on SQLite a single connection
	read       *bun.DB // reads outside a transaction: db itself on PostgreSQL, read-only connections on SQLite
	tx         bun.IDB // set on a Store bound to a transaction
	dialect    string
	lockPath   string                                // SQLite: the file locked around Migrate, across processes
	prepared   *preparedStatements                   // PostgreSQL: the hot queries' prepared statements
	admissions *batcher[*pending[*domain.Admission]] // combines concurrent admissions on one account
	// transitions combines concurrent transitions that move credits on one account.
	transitions *batcher[*pending[*domain.JobTransition]]
	accountIDs  *sync.Map     // credit account ids by organization/environment
	outbox      *outboxSignal // wakes the relay after commits that wrote events
	txEvents    *atomic.Bool  // set on a transaction-bound Store once it wrote events
}

// Open connects to the metadata database. A url starting with postgres:// or
// postgresql:// is PostgreSQL (pgdriver's parameters apply; add sslmode=disable for a
// server without TLS; pool_max_conns=N sizes the pool). Anything else is a SQLite file
// path, optionally prefixed with sqlite:// or file:, with optional driver parameters
// after '?'. Open does not migrate: call Migrate.
func Open(ctx context.Context, url string) (*Store, error) {
	var (
		s   *Store
		err error
	)
	if strings.HasPrefix(url, "postgres://") || strings.HasPrefix(url, "postgresql://") {
		s, err = openPostgres(url)
	} else {
		s, err = openSQLite(url)
	}
	if err != nil {
		return nil, err
	}
	if err := s.Ping(ctx); err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("connect to %s database: %w", s.dialect, err)
	}
	return s, nil
}

func openPostgres(raw string) (*Store, error) {
	u, err := url.Parse(raw)
	if err != nil {
		// url.Error repeats the URL, password included: keep only the reason.
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return nil, fmt.Errorf("invalid PostgreSQL URL: %w", err)
	}
	poolSize := postgresPoolSize
	q := u.Query()
	if v := q.Get(poolSizeParam); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			return nil, fmt.Errorf("invalid PostgreSQL URL: %s must be between 1 and 1000", poolSizeParam)
		}
		poolSize = n
		// pgdriver would send an unknown parameter to the server as a session setting.
		q.Del(poolSizeParam)
		u.RawQuery = q.Encode()
	}
	connector, err := newPostgresConnector(u.String())
	if err != nil {
		return nil, err
	}
	sqldb := sql.OpenDB(classifyingConnector{connector})
	sqldb.SetMaxOpenConns(poolSize)
	sqldb.SetMaxIdleConns(poolSize) // bursts reuse connections instead of dialling
	sqldb.SetConnMaxIdleTime(postgresConnMaxIdleTime)
	sqldb.SetConnMaxLifetime(postgresConnMaxLifetime) // spreads load again after a failover
	bdb := bun.NewDB(sqldb, pgdialect.New())
	s := &Store{db: bdb, read: bdb, dialect: DialectPostgres, accountIDs: &sync.Map{}, outbox: &outboxSignal{},
		prepared: &preparedStatements{db: sqldb, m: map[*hotQuery]*sql.Stmt{}}}
	s.admissions = newAdmissionBatcher(s.writeAdmissions)
	s.transitions = newTransitionBatcher(s.writeTransitions)
	return s, nil
}

// newPostgresConnector turns pgdriver's panic on a malformed DSN into an error.
func newPostgresConnector(dsn string) (c *pgdriver.Connector, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("invalid PostgreSQL URL: %v", r)
		}
	}()
	// WithDSN comes last so an application_name in the URL wins.
	return pgdriver.NewConnector(pgdriver.WithApplicationName("filemill"), pgdriver.WithDSN(dsn)), nil
}

func openSQLite(raw string) (*Store, error) {
	path, params, err := sqlitePath(raw)
	if err != nil {
		return nil, err
	}
	busy := "_busy_timeout=" + strconv.FormatInt(sqliteBusyTimeout.Milliseconds(), 10)
	extra := ""
	if params != "" {
		extra = "&" + params
	}
	writerDSN := path + "?" + busy + "&_foreign_keys=1&_journal_mode=WAL&_synchronous=NORMAL&_txlock=immediate" + extra
	writer, err := sql.Open(sqliteshim.ShimName, writerDSN)
	if err != nil {
		return nil, fmt.Errorf("open SQLite %s: %w", path, err)
	}
	writer.SetMaxOpenConns(1)
	writer.SetMaxIdleConns(1)
	writer.SetConnMaxLifetime(0) // a connection costs an open and its pragmas: keep it
	writer.SetConnMaxIdleTime(0)
	s := &Store{db: bun.NewDB(writer, sqlitedialect.New()), dialect: DialectSQLite, accountIDs: &sync.Map{}, outbox: &outboxSignal{}}
	s.admissions = newAdmissionBatcher(s.writeAdmissions)
	s.transitions = newTransitionBatcher(s.writeTransitions)
	if path == ":memory:" {
		// Each connection to :memory: is its own database: everything uses the one.
		s.read = s.db
		return s, nil
	}
	s.lockPath = path + ".migrate-lock"

	// query_only turns a write routed to the readers by mistake into an error instead
	// of a second writer.
	readerDSN := path + "?" + busy + "&_foreign_keys=1&_query_only=1" + extra
	reader, err := sql.Open(sqliteshim.ShimName, readerDSN)
	if err != nil {
		_ = writer.Close()
		return nil, fmt.Errorf("open SQLite %s: %w", path, err)
	}
	// Reads are CPU work in this process; more connections than cores only add memory.
	readers := max(sqliteMinReaders, 2*runtime.GOMAXPROCS(0))
	reader.SetMaxOpenConns(readers)
	reader.SetMaxIdleConns(readers)
	reader.SetConnMaxLifetime(0)
	reader.SetConnMaxIdleTime(0)
	s.read = bun.NewDB(reader, sqlitedialect.New())
	return s, nil
}

// sqlitePath splits a SQLite URL into the file path and extra driver parameters.
func sqlitePath(raw string) (path, params string, err error) {
	s := raw
	for _, prefix := range []string{"sqlite://", "sqlite:", "file://", "file:"} {
		if strings.HasPrefix(s, prefix) {
			s = s[len(prefix):]
			break
		}
	}
	if strings.Contains(s, "://") {
		return "", "", fmt.Errorf("unsupported database URL %q: use postgres://… or a SQLite file path", redact(raw))
	}
	path, params, _ = strings.Cut(s, "?")
	if path == "" {
		return "", "", errors.New("empty SQLite path")
	}
	return path, params, nil
}

// redact drops a URL's password, for error messages.
func redact(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		return u.Redacted()
	}
	if i := strings.Index(raw, "@"); i >= 0 {
		return "…" + raw[i:]
	}
	return raw
}

// Close closes the connection pools. Calling it on a Store bound to a transaction is an
// error: the transaction belongs to InTx.
func (s *Store) Close() error {
	if s.tx != nil {
		return errors.New("db: Close on a transaction-bound store")
	}
	var errs []error
	if s.prepared != nil {
		errs = append(errs, s.prepared.close())
	}
	if s.read != s.db {
		errs = append(errs, s.read.Close())
	}
	errs = append(errs, s.db.Close())
	return errors.Join(errs...)
}

// Dialect returns "pg" or "sqlite".
func (s *Store) Dialect() string { return s.dialect }

// DB returns the bun handle that writes (on SQLite a single connection), for benchmarks
// and tests.
func (s *Store) DB() *bun.DB { return s.db }

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error {
	if s.tx != nil {
		_, err := s.tx.ExecContext(ctx, "SELECT 1")
		return err
	}
	// The writer first: on SQLite it creates the file and switches it to WAL, which
	// the read-only connections cannot do.
	if err := s.db.PingContext(ctx); err != nil {
		return err
	}
	if s.read != s.db {
		return s.read.PingContext(ctx)
	}
	return nil
}

// InTx runs fn in one transaction and commits when fn returns nil; an error or a panic
// rolls it back. On a Store already bound to a transaction, fn joins it. On SQLite the
// transaction is BEGIN IMMEDIATE and holds the database's write lock until it ends, so
// fn must use tx, never the outer Store, for its writes: the outer one would wait for
// the lock fn holds.
func (s *Store) InTx(ctx context.Context, fn func(tx domain.Store) error) error {
	if s.tx != nil {
		return fn(s)
	}
	var wrote atomic.Bool
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		st := s.withTx(tx)
		st.txEvents = &wrote
		return fn(st)
	})
	if err == nil && wrote.Load() {
		s.signalOutbox()
	}
	return err
}

func (s *Store) withTx(tx bun.IDB) *Store {
	return &Store{db: s.db, read: s.read, tx: tx, dialect: s.dialect, lockPath: s.lockPath,
		prepared: s.prepared, admissions: s.admissions, transitions: s.transitions, accountIDs: s.accountIDs, outbox: s.outbox, txEvents: s.txEvents}
}

// inTx runs fn in the Store's transaction, or in a new one. Inside the caller's
// transaction it uses a savepoint, so fn's statements are all-or-nothing even when the
// caller goes on after fn's error.
func (s *Store) inTx(ctx context.Context, fn func(ctx context.Context, tx bun.Tx) error) error {
	if s.tx != nil {
		return s.tx.RunInTx(ctx, nil, fn)
	}
	return s.db.RunInTx(ctx, nil, fn)
}

// w is the handle for writes: the transaction, or the writer pool.
func (s *Store) w() bun.IDB {
	if s.tx != nil {
		return s.tx
	}
	return s.db
}

// r is the handle for reads: the transaction (so it sees its own writes), or the readers.
func (s *Store) r() bun.IDB {
	if s.tx != nil {
		return s.tx
	}
	return s.read
}

// ---- query helpers shared by the entity files ----

// insert inserts one row, reporting a unique violation as domain.ErrDuplicate.
func insert(ctx context.Context, idb bun.IDB, kind, id string, model any) error {
	if id == "" {
		return fmt.Errorf("create %s: empty id", kind)
	}
	if _, err := idb.NewInsert().Model(model).Exec(ctx); err != nil {
		if isUniqueViolation(err) {
			return fmt.Errorf("create %s %s: %w: %w", kind, id, domain.ErrDuplicate, err)
		}
		return fmt.Errorf("create %s %s: %w", kind, id, err)
	}
	return nil
}

// findOne selects the one row matching where, or domain.ErrNotFound.
func findOne[T any](ctx context.Context, idb bun.IDB, what string, where func(*bun.SelectQuery) *bun.SelectQuery) (*T, error) {
	v := new(T)
	if err := where(idb.NewSelect().Model(v)).Limit(1).Scan(ctx); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("%s: %w", what, domain.ErrNotFound)
		}
		return nil, fmt.Errorf("find %s: %w", what, err)
	}
	return inUTC(v), nil
}

// findAll selects every row the query builds, in its order; never nil.
func findAll[T any](ctx context.Context, idb bun.IDB, what string, build func(*bun.SelectQuery) *bun.SelectQuery) ([]*T, error) {
	rows := []*T{}
	if err := build(idb.NewSelect().Model(&rows)).Scan(ctx); err != nil {
		return nil, fmt.Errorf("find %s: %w", what, err)
	}
	for _, v := range rows {
		inUTC(v)
	}
	return rows, nil
}

// findPage selects one page of a newest-first list: ids are ULIDs, so id order is
// creation order, and the cursor is the last id of the previous page. It fetches one row
// more than the page to learn whether another page follows.
func findPage[T any](ctx context.Context, idb bun.IDB, what string, p domain.Page, filter func(*bun.SelectQuery) *bun.SelectQuery) ([]*T, bool, error) {
	return findPageInOrder[T](ctx, idb, what, p, true, filter)
}

// findPageOldestFirst is findPage for a list in creation order (a job's artifacts).
func findPageOldestFirst[T any](ctx context.Context, idb bun.IDB, what string, p domain.Page, filter func(*bun.SelectQuery) *bun.SelectQuery) ([]*T, bool, error) {
	return findPageInOrder[T](ctx, idb, what, p, false, filter)
}

func findPageInOrder[T any](ctx context.Context, idb bun.IDB, what string, p domain.Page, newestFirst bool, filter func(*bun.SelectQuery) *bun.SelectQuery) ([]*T, bool, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = domain.DefaultPageSize
	}
	after, order := "id > ?", "id"
	if newestFirst {
		after, order = "id < ?", "id DESC"
	}
	rows, err := findAll[T](ctx, idb, what, func(q *bun.SelectQuery) *bun.SelectQuery {
		q = filter(q)
		if p.StartingAfter != "" {
			q = q.Where(after, p.StartingAfter)
		}
		return q.Order(order).Limit(int64(limit) + 1)
	})
	if err != nil {
		return nil, false, err
	}
	if len(rows) > limit {
		return rows[:limit], true, nil
	}
	return rows, false, nil
}

// scoped confines a list to a tenancy scope and environment. A list without an
// organization is a bug in the caller, refused rather than run across tenants.
func scoped(sc domain.Scope, env domain.Environment, filter func(*bun.SelectQuery) *bun.SelectQuery) (func(*bun.SelectQuery) *bun.SelectQuery, error) {
	if sc.OrganizationID == "" {
		return nil, errors.New("db: list without an organization scope")
	}
	return func(q *bun.SelectQuery) *bun.SelectQuery {
		q = q.Where("organization_id = ?", sc.OrganizationID)
		if sc.ProjectID != "" {
			q = q.Where("project_id = ?", sc.ProjectID)
		}
		if env != "" {
			q = q.Where("environment = ?", env)
		}
		if filter != nil {
			q = filter(q)
		}
		return q
	}, nil
}

// affected returns the rows an UPDATE or DELETE changed.
func affected(res sql.Result, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// batchLimit bounds sweeps that pass no limit.
const batchLimit = 100

func orBatch(limit int) int64 {
	if limit <= 0 {
		return batchLimit
	}
	return int64(limit)
}

// Constraint violation codes: PostgreSQL SQLSTATEs and SQLite extended result codes.
const (
	pgUniqueViolation     = "23505"
	pgForeignKeyViolation = "23503"
	sqliteConstraintFK    = 787  // SQLITE_CONSTRAINT_FOREIGNKEY
	sqliteConstraintPK    = 1555 // SQLITE_CONSTRAINT_PRIMARYKEY
	sqliteConstraintUniq  = 2067 // SQLITE_CONSTRAINT_UNIQUE
)

// sqliteCoder is modernc.org/sqlite's error, seen through the one method we need so
// this file does not depend on which driver sqliteshim picked.
type sqliteCoder interface{ Code() int }

func isUniqueViolation(err error) bool {
	var pe pgdriver.Error
	if errors.As(err, &pe) {
		return pe.Field('C') == pgUniqueViolation
	}
	var se sqliteCoder
	if errors.As(err, &se) {
		return se.Code() == sqliteConstraintUniq || se.Code() == sqliteConstraintPK
	}
	return false
}

func isForeignKeyViolation(err error) bool {
	var pe pgdriver.Error
	if errors.As(err, &pe) {
		return pe.Field('C') == pgForeignKeyViolation
	}
	var se sqliteCoder
	if errors.As(err, &se) {
		return se.Code() == sqliteConstraintFK
	}
	return false
}

var (
	timeType    = reflect.TypeFor[time.Time]()
	timePtrType = reflect.TypeFor[*time.Time]()
)

// inUTC puts every time field of *v in UTC. Both drivers hand back times in a fixed
// zone or in Local; callers compare and serialize them as UTC.
func inUTC[T any](v *T) *T {
	rv := reflect.ValueOf(v).Elem()
	if rv.Kind() != reflect.Struct {
		return v
	}
	for i := range rv.NumField() {
		f := rv.Field(i)
		if !f.CanSet() {
			continue
		}
		switch f.Type() {
		case timeType:
			f.Set(reflect.ValueOf(f.Interface().(time.Time).UTC()))
		case timePtrType:
			if !f.IsNil() {
				t := f.Elem().Interface().(time.Time).UTC()
				f.Set(reflect.ValueOf(&t))
			}
		}
	}
	return v
}
