package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/driver/pgdriver"

	"github.com/filemill/filemill/domain"
)

// activeStates are the job states a concurrency limit counts.
var activeStates = "'" + domain.JobQueued + "', '" + domain.JobRunning + "'"

// admissionFactsRow is one row of the admission facts query: a file, the load of its
// project, and the credit account, whose columns are NULL until it is first used.
type admissionFactsRow struct {
	domain.File
	ProjectConcurrencyLimit int            `bun:"project_concurrency_limit"`
	ProjectActive           int            `bun:"project_active"`
	AccountID               sql.NullString `bun:"account_id"`
	AccountBalance          sql.NullInt64  `bun:"account_balance"`
	AccountReserved         sql.NullInt64  `bun:"account_reserved"`
	AccountUsed             sql.NullInt64  `bun:"account_used"`
	AccountCreatedAt        bun.NullTime   `bun:"account_created_at"`
}

// admissionFactsQueries holds the admission facts query, built once from the files
// table's columns (named, not *, so a prepared statement survives a migration that adds
// one): for one file, the hot path of every job, and for several, a batch's.
var admissionFactsQueries = struct {
	once      sync.Once
	one, many *hotQuery
}{}

func (s *Store) admissionFactsQuery(files int) *hotQuery {
	q := &admissionFactsQueries
	q.once.Do(func() {
		var cols []string
		for _, f := range s.db.Table(reflect.TypeFor[domain.File]()).Fields {
			cols = append(cols, "f."+f.Name)
		}
		build := func(idMatch string) *hotQuery {
			return newHotQuery(`SELECT ` + strings.Join(cols, ", ") + `,
	p.concurrency_limit AS project_concurrency_limit,
	(SELECT count(*) FROM jobs AS j WHERE j.project_id = f.project_id AND j.environment = f.environment
		AND j.state IN (` + activeStates + `)) AS project_active,
	a.id AS account_id, a.balance AS account_balance, a.reserved AS account_reserved, a.used AS account_used,
	a.created_at AS account_created_at
FROM files AS f
JOIN projects AS p ON p.id = f.project_id
LEFT JOIN credit_accounts AS a ON a.organization_id = f.organization_id AND a.environment = ?
WHERE f.organization_id = ? AND ` + idMatch)
		}
		q.one, q.many = build("f.id = ?"), build("f.id IN (?)")
	})
	if files == 1 {
		return q.one
	}
	return q.many
}

// FindAdmissionFacts reads the organization's files among q.FileIDs, the load of their
// projects and the environment's credit account in one query, creating the account on
// its first use.
func (s *Store) FindAdmissionFacts(ctx context.Context, q domain.AdmissionQuery) (*domain.AdmissionFacts, error) {
	var (
		rows *sql.Rows
		err  error
	)
	if len(q.FileIDs) == 1 {
		rows, err = s.queryHot(ctx, s.r(), s.admissionFactsQuery(1), string(q.Environment), q.OrganizationID, q.FileIDs[0])
	} else {
		// Never prepared: the generic plan of a list of ids would scan the whole table.
		rows, err = s.r().QueryContext(ctx, s.admissionFactsQuery(len(q.FileIDs)).sql,
			string(q.Environment), q.OrganizationID, bun.In(q.FileIDs))
	}
	if err != nil {
		return nil, fmt.Errorf("admission facts: %w", err)
	}
	var found []admissionFactsRow
	if err := s.db.ScanRows(ctx, rows, &found); err != nil {
		return nil, fmt.Errorf("admission facts: %w", err)
	}
	facts := &domain.AdmissionFacts{Files: map[string]*domain.File{}, Projects: map[string]domain.ProjectLoad{}}
	for i := range found {
		row := &found[i]
		f := row.File
		facts.Files[f.ID] = inUTC(&f)
		facts.Projects[f.ProjectID] = domain.ProjectLoad{ConcurrencyLimit: row.ProjectConcurrencyLimit, Active: row.ProjectActive}
		if row.AccountID.Valid {
			facts.Account = &domain.CreditAccount{ID: row.AccountID.String, OrganizationID: q.OrganizationID,
				Environment: q.Environment, Balance: row.AccountBalance.Int64, Reserved: row.AccountReserved.Int64,
				Used: row.AccountUsed.Int64, CreatedAt: row.AccountCreatedAt.Time.UTC()}
		}
	}
	if facts.Account == nil && len(found) > 0 {
		// First use of this environment's account: make it.
		if facts.Account, err = s.FindCreditAccount(ctx, q.OrganizationID, q.Environment); err != nil {
			return nil, err
		}
	}
	return facts, nil
}

// activeJobsExpr counts a project's queued and running jobs in one environment (the
// environment's credit account orders its admissions). On PostgreSQL it is a
// volatile function, which takes a snapshot of its own: evaluated after a write has
// locked the credit account, it sees every admission committed before that lock was
// granted, which the statement's own snapshot, taken when it started, does not.
func (s *Store) activeJobsExpr(projectID string, env domain.Environment) (string, []any) {
	if s.dialect == DialectPostgres {
		return "filemill_active_jobs(?, ?)", []any{projectID, string(env)}
	}
	return "(SELECT count(*) FROM jobs WHERE project_id = ? AND environment = ? AND state IN (" + activeStates + "))",
		[]any{projectID, string(env)}
}

// keySpendExpr sums what a key's spend limit counts: credits charged since a moment plus
// those its queued and running jobs hold. A volatile function on PostgreSQL, as
// activeJobsExpr.
func (s *Store) keySpendExpr(apiKeyID string, since time.Time) (string, []any) {
	if s.dialect == DialectPostgres {
		return "filemill_key_spend(?, ?)", []any{apiKeyID, since}
	}
	return `((SELECT COALESCE(SUM(credits_reserved), 0) FROM jobs WHERE api_key_id = ? AND state IN (` + activeStates + `)) +
		(SELECT COALESCE(SUM(amount), 0) FROM ledger_entries WHERE api_key_id = ? AND kind = 'charge' AND created_at >= ?))`,
		[]any{apiKeyID, apiKeyID, since}
}

// SumKeySpend returns a key's credits charged since a moment plus those its queued and
// running jobs hold reserved.
func (s *Store) SumKeySpend(ctx context.Context, apiKeyID string, since time.Time) (int64, error) {
	expr, args := s.keySpendExpr(apiKeyID, since)
	var sum int64
	if err := s.r().NewRaw("SELECT CAST("+expr+" AS BIGINT)", args...).Scan(ctx, &sum); err != nil {
		return 0, fmt.Errorf("spend of key %s: %w", apiKeyID, err)
	}
	return sum, nil
}

// AdmitJobs writes an admission all or nothing, enforcing its limits. Admissions on one
// credit account that arrive while a write on it is under way are written together by
// the next write (see admissionQueue); inside a transaction it writes at once.
func (s *Store) AdmitJobs(ctx context.Context, a *domain.Admission) error {
	if a.AccountID == "" {
		return errors.New("admit jobs: no credit account")
	}
	if s.tx != nil {
		return s.writeAdmissions(ctx, []*domain.Admission{a})
	}
	return s.admissions.admit(ctx, a)
}

// writeAdmissions writes admissions on one credit account as one atomic write: every
// row, every answer, one move of the balance covering all reservations, and the limits
// checked after it, against what is committed by then. Whatever refuses the write
// refuses all of it; admissionQueue then writes them one by one.
func (s *Store) writeAdmissions(ctx context.Context, as []*domain.Admission) error {
	var (
		w        atomicWrite
		batches  []*domain.Batch
		jobs     []*domain.Job
		events   []*domain.Event
		entries  []*domain.LedgerEntry
		sum      int64
		projects = map[string]*projectAllowance{}
		keys     = map[string]*spendAllowance{}
		order    []string
	)
	acct := as[0].AccountID
	for _, a := range as {
		if a.AccountID != acct {
			return fmt.Errorf("admit jobs: admissions on accounts %s and %s in one write", acct, a.AccountID)
		}
		if len(a.Jobs) == 0 {
			return errors.New("admit jobs: an admission without jobs")
		}
		if a.Batch != nil {
			b := *a.Batch
			b.Options = jsonOrNull(b.Options)
			batches = append(batches, &b)
		}
		for _, j := range a.Jobs {
			row := *j
			row.Options = jsonOrNull(row.Options)
			jobs = append(jobs, &row)
		}
		events = append(events, eventRows(a.Events)...)
		moved, n, err := reservation(acct, a.Reserve)
		if err != nil {
			return err
		}
		entries, sum = append(entries, moved...), sum+n
		if a.Answer != nil {
			w.updates = append(w.updates, finishIdempotency(a.Answer))
		}
		if a.ProjectLimit > 0 {
			pa, ok := projects[a.ProjectID]
			if !ok {
				pa = &projectAllowance{limit: a.ProjectLimit, env: a.Jobs[0].Environment}
				projects[a.ProjectID] = pa
				order = append(order, a.ProjectID)
			}
			pa.limit, pa.last = min(pa.limit, a.ProjectLimit), len(a.Jobs)
		}
		if a.SpendLimit > 0 {
			ka, ok := keys[a.APIKeyID]
			if !ok {
				ka = &spendAllowance{limit: a.SpendLimit, since: a.SpendSince}
				keys[a.APIKeyID] = ka
			}
			ka.limit = min(ka.limit, a.SpendLimit)
		}
	}
	for _, rows := range []any{&batches, &jobs, &events, &entries} {
		if reflect.ValueOf(rows).Elem().Len() > 0 {
			w.inserts = append(w.inserts, rows)
		}
	}
	// Always run, even for free work: its row lock is what orders admissions on the
	// account, across processes, for the limit checks after it.
	w.guard = func(idb bun.IDB) *bun.UpdateQuery {
		return idb.NewUpdate().Model((*domain.CreditAccount)(nil)).
			Set("balance = balance - ?", sum).Set("reserved = reserved + ?", sum).
			Where("id = ?", acct).Where("balance >= ?", sum)
	}
	// The project's jobs admitted before the last admission into it must have left room
	// under its limit: those now active minus that admission's own.
	for _, id := range order {
		pa := projects[id]
		expr, args := s.activeJobsExpr(id, pa.env)
		w.checks = append(w.checks, writeCheck{expr: expr + " <= ?", args: append(args, pa.limit-1+pa.last), err: domain.ErrConcurrencyLimit})
	}
	for id, ka := range keys {
		expr, args := s.keySpendExpr(id, ka.since)
		w.checks = append(w.checks, writeCheck{expr: expr + " <= ?", args: append(args, ka.limit), err: domain.ErrSpendLimit})
	}
	err := s.writeAtOnce(ctx, w)
	if errors.Is(err, errGuardFailed) {
		return fmt.Errorf("reserve %d on account %s: %w", sum, acct, domain.ErrInsufficientCredits)
	}
	return err
}

type projectAllowance struct {
	limit, last int
	env         domain.Environment
}

type spendAllowance struct {
	limit int64
	since time.Time
}

func eventRows(events []*domain.Event) []*domain.Event {
	out := make([]*domain.Event, len(events))
	for i, e := range events {
		row := *e
		row.Data = jsonOrNull(row.Data)
		out[i] = &row
	}
	return out
}

// admissionQueue combines admissions on one credit account. Every admission locks the
// account's row until its commit is on disk, so on their own they would run one at a
// time, one disk flush each. Instead the first admission on an idle account starts a
// writer; those arriving while it writes wait, and the writer's next write takes them
// all, one statement and one flush for the lot. A lone admission is written at once.
type admissionQueue struct {
	write func(ctx context.Context, as []*domain.Admission) error

	mu      sync.Mutex
	waiting map[string][]*pendingAdmission // by account; present while its writer runs
}

type pendingAdmission struct {
	a    *domain.Admission
	err  error
	done chan struct{}
}

// maxAdmissionJobs bounds the jobs of one combined write, so its statement stays small.
const maxAdmissionJobs = 256

// admissionWriteTimeout bounds a combined write: it serves several requests, so none of
// their contexts can cancel it.
const admissionWriteTimeout = 30 * time.Second

func newAdmissionQueue(write func(context.Context, []*domain.Admission) error) *admissionQueue {
	return &admissionQueue{write: write, waiting: map[string][]*pendingAdmission{}}
}

// admit queues a and waits for its write. Once queued it is written whatever becomes of
// ctx: the caller learns the outcome either way.
func (q *admissionQueue) admit(ctx context.Context, a *domain.Admission) error {
	p := &pendingAdmission{a: a, done: make(chan struct{})}
	q.mu.Lock()
	waiting, busy := q.waiting[a.AccountID]
	q.waiting[a.AccountID] = append(waiting, p)
	q.mu.Unlock()
	if !busy {
		go q.drain(context.WithoutCancel(ctx), a.AccountID)
	}
	<-p.done
	return p.err
}

// drain writes what waits on an account until nothing does.
func (q *admissionQueue) drain(ctx context.Context, acct string) {
	for {
		q.mu.Lock()
		waiting := q.waiting[acct]
		if len(waiting) == 0 {
			delete(q.waiting, acct)
			q.mu.Unlock()
			return
		}
		n, jobs := 0, 0
		for n < len(waiting) && (n == 0 || jobs+len(waiting[n].a.Jobs) <= maxAdmissionJobs) {
			jobs += len(waiting[n].a.Jobs)
			n++
		}
		group := waiting[:n:n]
		q.waiting[acct] = waiting[n:]
		q.mu.Unlock()
		q.writeGroup(ctx, group)
	}
}

// writeGroup writes a group at once; when that is refused (one member short of credits
// or over a limit), it writes the members one by one, so each gets its own answer.
func (q *admissionQueue) writeGroup(ctx context.Context, group []*pendingAdmission) {
	as := make([]*domain.Admission, len(group))
	for i, p := range group {
		as[i] = p.a
	}
	wctx, cancel := context.WithTimeout(ctx, admissionWriteTimeout)
	err := q.write(wctx, as)
	cancel()
	if err != nil && len(group) > 1 {
		for _, p := range group {
			wctx, cancel := context.WithTimeout(ctx, admissionWriteTimeout)
			p.err = q.write(wctx, []*domain.Admission{p.a})
			cancel()
			close(p.done)
		}
		return
	}
	for _, p := range group {
		p.err = err
		close(p.done)
	}
}

// errGuardFailed reports that writeAtOnce's guard changed no row, so nothing was written.
var errGuardFailed = errors.New("guard changed no row")

// Messages filemill_assert raises for a guard that changed no row and for check i
// (checkFailed + i) that did not hold.
const (
	guardFailed = "filemill_guard_failed"
	checkFailed = "filemill_check_failed:"
)

// atomicWrite is written all or nothing by writeAtOnce.
type atomicWrite struct {
	inserts []any                            // pointers to models or to slices of models
	updates []func(bun.IDB) *bun.UpdateQuery // each may change no row
	guard   func(bun.IDB) *bun.UpdateQuery   // must change a row, after the inserts and updates
	checks  []writeCheck                     // must hold after the guard
}

// writeCheck is a boolean SQL expression that must hold once the guard has run; err
// reports that it did not.
type writeCheck struct {
	expr string
	args []any
	err  error
}

// writeAtOnce applies w all or nothing. On PostgreSQL it is a single statement of
// data-modifying CTEs — one round trip, atomic even outside a transaction — ending in a
// SELECT that aborts it through filemill_assert when the guard changed no row or a check
// does not hold, so the guard's row lock lasts only while that statement commits.
// Elsewhere (SQLite, whose writes are serial anyway) the same statements run in a
// transaction. errGuardFailed when the guard changed no row; a check's err when it did
// not hold.
func (s *Store) writeAtOnce(ctx context.Context, w atomicWrite) error {
	if s.dialect != DialectPostgres {
		return s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
			for _, r := range w.inserts {
				if _, err := tx.NewInsert().Model(r).Exec(ctx); err != nil {
					return wrapInsert(err)
				}
			}
			for _, u := range w.updates {
				if _, err := u(tx).Exec(ctx); err != nil {
					return fmt.Errorf("write: %w", err)
				}
			}
			if w.guard != nil {
				n, err := affected(w.guard(tx).Exec(ctx))
				if err != nil {
					return fmt.Errorf("write: %w", err)
				}
				if n == 0 {
					return errGuardFailed
				}
			}
			for _, c := range w.checks {
				var ok bool
				if err := tx.NewRaw("SELECT CASE WHEN "+c.expr+" THEN 1 ELSE 0 END", c.args...).Scan(ctx, &ok); err != nil {
					return fmt.Errorf("write: %w", err)
				}
				if !ok {
					return c.err
				}
			}
			return nil
		})
	}
	idb := s.w()
	var ctes, inserted, updated []string
	var args []any
	want := 0
	for i, r := range w.inserts {
		name := fmt.Sprintf("w%d", i)
		ctes = append(ctes, name+" AS (?)")
		args = append(args, idb.NewInsert().Model(r).Returning("1"))
		inserted = append(inserted, "SELECT 1 FROM "+name)
		if v := reflect.ValueOf(r).Elem(); v.Kind() == reflect.Slice {
			want += v.Len()
		} else {
			want++
		}
	}
	for i, u := range w.updates {
		name := fmt.Sprintf("u%d", i)
		ctes = append(ctes, name+" AS (?)")
		args = append(args, u(idb).Returning("1"))
		updated = append(updated, "SELECT 1 FROM "+name)
	}
	final := "SELECT true"
	if w.guard != nil {
		// The guard reads what the others wrote, so they run before it: PostgreSQL runs
		// an unread data-modifying CTE only after the main query, which would hold the
		// guard's row lock through every insert.
		q := w.guard(idb)
		if len(inserted) > 0 {
			q = q.Where("(SELECT count(*) FROM ("+strings.Join(inserted, " UNION ALL ")+") AS inserted) = ?", want)
		}
		if len(updated) > 0 {
			q = q.Where("(SELECT count(*) FROM (" + strings.Join(updated, " UNION ALL ") + ") AS updated) >= 0")
		}
		ctes = append(ctes, "guarded AS (?)")
		args = append(args, q.Returning("1"))
		// CASE takes its branches in order: the checks run after the guard has locked
		// its row, and only when it changed one.
		var b strings.Builder
		b.WriteString("SELECT CASE WHEN NOT EXISTS (SELECT 1 FROM guarded) THEN filemill_assert(false, ?)")
		args = append(args, guardFailed)
		for i, c := range w.checks {
			b.WriteString(" WHEN NOT (" + c.expr + ") THEN filemill_assert(false, ?)")
			args = append(args, c.args...)
			args = append(args, fmt.Sprintf("%s%d", checkFailed, i))
		}
		b.WriteString(" ELSE true END")
		final = b.String()
	} else if len(w.checks) > 0 {
		return errors.New("write: checks need a guard to order them")
	}
	if len(ctes) == 0 {
		return nil
	}
	_, err := idb.NewRaw("WITH "+strings.Join(ctes, ", ")+" "+final, args...).Exec(ctx)
	var pe pgdriver.Error
	if errors.As(err, &pe) && pe.Field('C') == "P0001" {
		msg := pe.Field('M')
		if msg == guardFailed {
			return errGuardFailed
		}
		var i int
		if _, scanErr := fmt.Sscanf(strings.TrimPrefix(msg, checkFailed), "%d", &i); strings.HasPrefix(msg, checkFailed) && scanErr == nil && i < len(w.checks) {
			return w.checks[i].err
		}
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
