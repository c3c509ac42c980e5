package db

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"strings"

	"github.com/uptrace/bun/driver/pgdriver"

	"github.com/filemill/filemill/domain"
)

// The PostgreSQL driver wrapped so that every failure to reach the server is marked
// domain.ErrUnavailable, in the one place every statement passes through: a connection
// that cannot be made, a connection that broke (reset, closed, timed out), a server
// shutting down or not taking connections. The doors answer these with
// dependency_unavailable instead of internal_error. Errors are otherwise returned as
// the driver made them, so database/sql still sees driver.ErrBadConn and driver.ErrSkip.
//
// Waiting for a free connection of a full pool is database/sql's and ends only with the
// request's deadline; it is bounded in practice by the driver's own timeouts (a dial
// gives up after 5 s, a read after 10 s), whose failures are marked here.

// unreachable reports whether err, from the PostgreSQL driver, means the server could
// not be reached, rather than that the statement failed.
func unreachable(err error) bool {
	if err == nil || errors.Is(err, driver.ErrBadConn) || errors.Is(err, driver.ErrSkip) {
		return false
	}
	if domain.IsUnreachable(err) || errors.Is(err, io.EOF) {
		return true
	}
	var pe pgdriver.Error
	if errors.As(err, &pe) {
		code := pe.Field('C')
		// 08: connection exceptions; 57P01-03: admin or crash shutdown, cannot connect
		// now; 53300: too many connections.
		return strings.HasPrefix(code, "08") || code == "57P01" || code == "57P02" || code == "57P03" || code == "53300"
	}
	return false
}

// classify marks err when it means the database could not be reached.
func classify(err error) error {
	if unreachable(err) {
		return domain.MarkUnavailable("database", err)
	}
	return err
}

// classifyingConnector makes connections whose failures are classified.
type classifyingConnector struct{ *pgdriver.Connector }

func (c classifyingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	cn, err := c.Connector.Connect(ctx)
	if err != nil {
		// Whatever stops a connection being made — refused, timed out, a server that
		// is starting or stopping, a login refused — the database cannot be reached.
		return nil, domain.MarkUnavailable("database", err)
	}
	return &classifyingConn{Conn: cn.(*pgdriver.Conn)}, nil
}

func (c classifyingConnector) Driver() driver.Driver { return c.Connector.Driver() }

// classifyingConn is a pgdriver connection whose failures are classified. Embedding
// keeps every optional interface of the driver's connection (session reset, validity);
// the methods that run statements are wrapped.
type classifyingConn struct{ *pgdriver.Conn }

var (
	_ driver.ConnPrepareContext = (*classifyingConn)(nil)
	_ driver.ConnBeginTx        = (*classifyingConn)(nil)
	_ driver.ExecerContext      = (*classifyingConn)(nil)
	_ driver.QueryerContext     = (*classifyingConn)(nil)
	_ driver.Pinger             = (*classifyingConn)(nil)
	_ driver.SessionResetter    = (*classifyingConn)(nil)
	_ driver.Validator          = (*classifyingConn)(nil)
)

func (c *classifyingConn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

func (c *classifyingConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	st, err := c.Conn.PrepareContext(ctx, query)
	if err != nil {
		return nil, classify(err)
	}
	return &classifyingStmt{Stmt: st}, nil
}

func (c *classifyingConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *classifyingConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	tx, err := c.Conn.BeginTx(ctx, opts)
	if err != nil {
		return nil, classify(err)
	}
	return classifyingTx{tx}, nil
}

func (c *classifyingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	res, err := c.Conn.ExecContext(ctx, query, args)
	return res, classify(err)
}

func (c *classifyingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	rows, err := c.Conn.QueryContext(ctx, query, args)
	if err != nil {
		return nil, classify(err)
	}
	return classifyingRows{rows}, nil
}

func (c *classifyingConn) Ping(ctx context.Context) error { return classify(c.Conn.Ping(ctx)) }

// ResetSession runs before a pooled connection is used again. A connection whose server
// went away while it sat in the pool (a restart, a failover, an idle timeout) is
// reported bad here, before any statement is sent on it: database/sql then closes it
// and runs the statement on another connection, a new one at the latest, so the first
// requests after the database comes back are served rather than answered 503.
func (c *classifyingConn) ResetSession(ctx context.Context) error {
	if err := c.Conn.ResetSession(ctx); err != nil {
		return err
	}
	if err := connCheck(c.Conn.Conn()); err != nil {
		_ = c.Conn.Close()
		return driver.ErrBadConn
	}
	return nil
}

// classifyingStmt is a prepared statement whose failures are classified.
type classifyingStmt struct{ driver.Stmt }

var (
	_ driver.StmtExecContext  = (*classifyingStmt)(nil)
	_ driver.StmtQueryContext = (*classifyingStmt)(nil)
)

func (s *classifyingStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	res, err := s.Stmt.(driver.StmtExecContext).ExecContext(ctx, args)
	return res, classify(err)
}

func (s *classifyingStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	rows, err := s.Stmt.(driver.StmtQueryContext).QueryContext(ctx, args)
	if err != nil {
		return nil, classify(err)
	}
	return classifyingRows{rows}, nil
}

// classifyingRows is a result whose failures while reading are classified; io.EOF, the
// end of the rows, stays as it is.
type classifyingRows struct{ driver.Rows }

func (r classifyingRows) Next(dest []driver.Value) error {
	err := r.Rows.Next(dest)
	if err == io.EOF {
		return err
	}
	return classify(err)
}

// classifyingTx is a transaction whose commit and rollback failures are classified.
type classifyingTx struct{ driver.Tx }

func (t classifyingTx) Commit() error   { return classify(t.Tx.Commit()) }
func (t classifyingTx) Rollback() error { return classify(t.Tx.Rollback()) }
