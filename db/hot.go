package db

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/uptrace/bun"
)

// A hotQuery is a statement every job creation or upload runs. bun writes arguments into
// the SQL text, so PostgreSQL parses and plans each statement anew, and for short
// statements like these that is most of their cost (a prepared admission read runs about
// four times as often per second on the same cores). On PostgreSQL outside a transaction
// a hotQuery therefore runs as a prepared statement, planned once per connection;
// elsewhere it runs through bun like any other query, from the same SQL text.
type hotQuery struct {
	sql string // with ? placeholders, as bun takes them
	pg  string // the same with $1, $2, … for PostgreSQL's prepared form
}

func newHotQuery(sql string) *hotQuery {
	return &hotQuery{sql: sql, pg: numberPlaceholders(sql)}
}

// numberPlaceholders turns each ? outside quotes into $1, $2, ….
func numberPlaceholders(sql string) string {
	var b strings.Builder
	n, quoted := 0, false
	for _, r := range sql {
		switch {
		case r == '\'':
			quoted = !quoted
		case r == '?' && !quoted:
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// preparedStatements holds the prepared form of each hotQuery for one pool; database/sql
// prepares it again on each connection that runs it.
type preparedStatements struct {
	db *sql.DB
	mu sync.Mutex
	m  map[*hotQuery]*sql.Stmt
}

func (p *preparedStatements) get(ctx context.Context, q *hotQuery) (*sql.Stmt, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if st, ok := p.m[q]; ok {
		return st, nil
	}
	// Prepared on first use rather than at Open: the tables exist only after Migrate.
	st, err := p.db.PrepareContext(ctx, q.pg)
	if err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	p.m[q] = st
	return st, nil
}

func (p *preparedStatements) close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var first error
	for q, st := range p.m {
		if err := st.Close(); err != nil && first == nil {
			first = err
		}
		delete(p.m, q)
	}
	return first
}

// queryHot runs q with args on idb (the reader or the writer, which on PostgreSQL are one
// pool), prepared where it can be.
func (s *Store) queryHot(ctx context.Context, idb bun.IDB, q *hotQuery, args ...any) (*sql.Rows, error) {
	if s.tx == nil && s.prepared != nil {
		st, err := s.prepared.get(ctx, q)
		if err != nil {
			return nil, err
		}
		return st.QueryContext(ctx, args...)
	}
	return idb.QueryContext(ctx, q.sql, args...)
}
