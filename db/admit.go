package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/driver/pgdriver"

	"github.com/filemill/filemill/domain"
)

// admissionFactsRow is one row of the admission facts query; the account columns are
// NULL until the account is first used.
type admissionFactsRow struct {
	ConcurrencyLimit int            `bun:"concurrency_limit"`
	Active           int            `bun:"active"`
	AccountID        sql.NullString `bun:"account_id"`
	Balance          sql.NullInt64  `bun:"balance"`
	Reserved         sql.NullInt64  `bun:"reserved"`
	Used             sql.NullInt64  `bun:"used"`
	CreatedAt        bun.NullTime   `bun:"created_at"`
}

// activeJobsUpToLimit counts a project's queued and running jobs, stopping at the limit
// that applies to it; LIMIT takes an uncorrelated subquery on both dialects.
const activeJobsUpToLimit = `(SELECT count(*) FROM (SELECT 1 FROM jobs WHERE project_id = ? AND state IN (?)
	LIMIT (SELECT CASE WHEN concurrency_limit > 0 THEN concurrency_limit ELSE ? END FROM projects WHERE id = ?)) AS active_jobs)`

// FindAdmissionFacts reads the project's limit, its active jobs and the credit account
// in one query.
func (s *Store) FindAdmissionFacts(ctx context.Context, projectID, orgID string, env domain.Environment, defaultLimit int) (*domain.AdmissionFacts, error) {
	var row admissionFactsRow
	err := s.r().NewSelect().TableExpr("projects AS p").
		ColumnExpr("p.concurrency_limit").
		ColumnExpr(activeJobsUpToLimit+" AS active", projectID, bun.In([]string{domain.JobQueued, domain.JobRunning}), defaultLimit, projectID).
		ColumnExpr("a.id AS account_id, a.balance, a.reserved, a.used, a.created_at").
		Join("LEFT JOIN credit_accounts AS a ON a.organization_id = p.organization_id AND a.environment = ?", env).
		Where("p.id = ?", projectID).Where("p.organization_id = ?", orgID).
		Scan(ctx, &row)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("project %s: %w", projectID, domain.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("admission facts of project %s: %w", projectID, err)
	}
	facts := &domain.AdmissionFacts{ConcurrencyLimit: row.ConcurrencyLimit, Active: row.Active}
	if !row.AccountID.Valid {
		// First use of this environment's account: make it.
		if facts.Account, err = s.FindCreditAccount(ctx, orgID, env); err != nil {
			return nil, err
		}
		return facts, nil
	}
	facts.Account = &domain.CreditAccount{ID: row.AccountID.String, OrganizationID: orgID, Environment: env,
		Balance: row.Balance.Int64, Reserved: row.Reserved.Int64, Used: row.Used.Int64, CreatedAt: row.CreatedAt.Time.UTC()}
	return facts, nil
}

// AdmitJobs writes an admission all or nothing with the reservation last, as one write
// (see writeAtOnce): on PostgreSQL the account row is locked only while that single
// statement commits.
func (s *Store) AdmitJobs(ctx context.Context, a *domain.Admission) error {
	var rows []any
	if a.Batch != nil {
		b := *a.Batch
		b.Options = jsonOrNull(b.Options)
		rows = append(rows, &b)
	}
	if len(a.Jobs) > 0 {
		jobs := make([]*domain.Job, len(a.Jobs))
		for i, j := range a.Jobs {
			row := *j
			row.Options = jsonOrNull(row.Options)
			jobs[i] = &row
		}
		rows = append(rows, &jobs)
	}
	if len(a.Events) > 0 {
		rows = append(rows, eventRows(a.Events))
	}
	entries, acct, sum, err := reservation(a.Reserve)
	if err != nil {
		return err
	}
	var guard func(bun.IDB) *bun.UpdateQuery
	if sum > 0 {
		rows = append(rows, &entries)
		guard = func(idb bun.IDB) *bun.UpdateQuery {
			return idb.NewUpdate().Model((*domain.CreditAccount)(nil)).
				Set("balance = balance - ?", sum).Set("reserved = reserved + ?", sum).
				Where("id = ?", acct).Where("balance >= ?", sum)
		}
	}
	err = s.writeAtOnce(ctx, rows, guard)
	if errors.Is(err, errGuardFailed) {
		return fmt.Errorf("reserve %d on account %s: %w", sum, acct, domain.ErrInsufficientCredits)
	}
	return err
}

func eventRows(events []*domain.Event) *[]*domain.Event {
	out := make([]*domain.Event, len(events))
	for i, e := range events {
		row := *e
		row.Data = jsonOrNull(row.Data)
		out[i] = &row
	}
	return &out
}

// errGuardFailed reports that writeAtOnce's guard changed no row, so nothing was written.
var errGuardFailed = errors.New("guard changed no row")

// guardFailed is the message filemill_assert raises for a guard that changed no row.
const guardFailed = "filemill_guard_failed"

// writeAtOnce inserts rows (each a pointer to a model or a slice of models) and then runs
// guard, an UPDATE that must change a row, all or nothing. On PostgreSQL it is a single
// statement of data-modifying CTEs: one round trip, atomic even outside a transaction,
// and the guard's row lock lasts only while that statement commits; a guard that
// changes nothing aborts it through filemill_assert. Elsewhere (SQLite, whose writes are
// serial anyway) the same statements run in a transaction. errGuardFailed when the
// guard changed no row.
func (s *Store) writeAtOnce(ctx context.Context, rows []any, guard func(bun.IDB) *bun.UpdateQuery) error {
	if s.dialect != DialectPostgres {
		return s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
			for _, r := range rows {
				if _, err := tx.NewInsert().Model(r).Exec(ctx); err != nil {
					return wrapInsert(err)
				}
			}
			if guard == nil {
				return nil
			}
			n, err := affected(guard(tx).Exec(ctx))
			if err != nil {
				return err
			}
			if n == 0 {
				return errGuardFailed
			}
			return nil
		})
	}
	idb := s.w()
	var ctes, written []string
	var args []any
	want := 0
	for i, r := range rows {
		name := fmt.Sprintf("w%d", i)
		ctes = append(ctes, name+" AS (?)")
		args = append(args, idb.NewInsert().Model(r).Returning("1"))
		written = append(written, "SELECT 1 FROM "+name)
		if v := reflect.ValueOf(r).Elem(); v.Kind() == reflect.Slice {
			want += v.Len()
		} else {
			want++
		}
	}
	final := "SELECT true"
	if guard != nil {
		// The guard reads what the inserts wrote, so they run before it: PostgreSQL runs
		// an unread data-modifying CTE only after the main query, which would hold the
		// guard's row lock through every insert.
		q := guard(idb)
		if len(written) > 0 {
			q = q.Where("(SELECT count(*) FROM ("+strings.Join(written, " UNION ALL ")+") AS written) = ?", want)
		}
		ctes = append(ctes, "guarded AS (?)")
		args = append(args, q.Returning("1"))
		final = "SELECT filemill_assert(EXISTS (SELECT 1 FROM guarded), ?)"
		args = append(args, guardFailed)
	}
	if len(ctes) == 0 {
		return nil
	}
	_, err := idb.NewRaw("WITH "+strings.Join(ctes, ", ")+" "+final, args...).Exec(ctx)
	var pe pgdriver.Error
	if errors.As(err, &pe) && pe.Field('C') == "P0001" && pe.Field('M') == guardFailed {
		return errGuardFailed
	}
	return wrapInsert(err)
}

// wrapInsert marks a unique violation as domain.ErrDuplicate.
func wrapInsert(err error) error {
	switch {
	case err == nil:
		return nil
	case isUniqueViolation(err):
		return fmt.Errorf("write: %w: %w", domain.ErrDuplicate, err)
	}
	return fmt.Errorf("write: %w", err)
}
