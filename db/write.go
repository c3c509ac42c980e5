package db

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/driver/pgdriver"
	"github.com/uptrace/bun/schema"

	"github.com/filemill/filemill/domain"
)

// atomicWrite is written all or nothing by writeAtOnce.
type atomicWrite struct {
	// transitions move jobs from a state and attempt count to their new values; when
	// one is no longer there, nothing is written (errTransitionFailed).
	transitions []*jobTransition
	// inserts are pointers to slices of models, one table each; an empty slice writes
	// nothing.
	inserts []any
	// move, when set, moves credits on an account after the inserts, and refuses the
	// write (errGuardFailed) when a sum would go below zero. Its lock on the account row
	// orders the writes on that account, for the limit checks after it.
	move *creditMove
	// The limits hold after the move, counting everything committed before its lock was
	// granted (domain.ErrConcurrencyLimit, domain.ErrSpendLimit otherwise).
	projectLimits []projectLimit
	spendLimits   []spendLimit
	// lazy commits without waiting for the WAL to reach the disk (PostgreSQL's
	// synchronous_commit off, for this write only).
	lazy bool
}

type jobTransition struct {
	job          *domain.Job // the job as it is to be
	fromState    string
	fromAttempts int
}

// creditMove adds to an account's running sums.
type creditMove struct {
	account                 string
	balance, reserved, used int64
}

// projectLimit: the project's queued and running jobs in one environment, at most Allowed.
type projectLimit struct {
	ProjectID   string `json:"project_id"`
	Environment string `json:"environment"`
	Allowed     int    `json:"allowed"`
}

// spendLimit: the key's credits charged since Since plus those it holds, at most Allowed.
type spendLimit struct {
	APIKeyID string    `json:"api_key_id"`
	Since    time.Time `json:"since"`
	Allowed  int64     `json:"allowed"`
}

var (
	// errGuardFailed reports that a credit move would have taken a sum below zero.
	errGuardFailed = errors.New("credit move would go below zero")
	// errTransitionFailed reports that the job was no longer in the state to move from.
	errTransitionFailed = errors.New("job is no longer in the state it was moved from")
)

// Messages filemill_assert raises when part of a write refuses it.
const (
	transitionFailed   = "filemill_transition_failed"
	guardFailed        = "filemill_guard_failed"
	concurrencyFailed  = "filemill_limit_failed:concurrency"
	spendFailed        = "filemill_limit_failed:spend"
	postgresRaiseError = "P0001"
)

// writeAtOnce applies w all or nothing.
//
// On PostgreSQL it is one statement of data-modifying CTEs: the job's transition, then
// each table's rows inserted from one JSON parameter (jsonb_populate_recordset), then the
// credit move, then the limit checks, aborted through filemill_assert when any refuses.
// Its text depends only on the shape of the write, so it is a prepared statement, parsed
// and planned once per connection; its only lookups are by primary key, so no cached
// generic plan can turn into a scan as tables grow. It is atomic without a transaction
// round trip, and the account row is locked only while it commits. Elsewhere (SQLite,
// whose writes are serial anyway) the same writes run in a transaction.
func (s *Store) writeAtOnce(ctx context.Context, w atomicWrite) error {
	err := s.writeAtOnceQuietly(ctx, w)
	if err == nil && w.writesEvents() {
		s.wroteEvents()
	}
	return err
}

func (s *Store) writeAtOnceQuietly(ctx context.Context, w atomicWrite) error {
	if s.dialect != DialectPostgres {
		return s.writeInTx(ctx, w)
	}
	if w.move == nil && len(w.projectLimits)+len(w.spendLimits) > 0 {
		return errors.New("write: limits need a credit move to order them")
	}
	q, err := s.writeStatement(w)
	if err != nil {
		return err
	}
	var args []any
	switch ts := w.transitions; len(ts) {
	case 0:
	case 1:
		j := ts[0].job
		args = append(args, j.State, j.Progress, j.Attempts, j.CreditsCharged, j.ArtifactCount, j.ErrorCode, j.ErrorMessage,
			nullTime(j.StartedAt), nullTime(j.FinishedAt), nullTime(j.LeaseExpiresAt), j.ID, ts[0].fromState, ts[0].fromAttempts)
	default:
		moves, err := json.Marshal(transitionRows(ts))
		if err != nil {
			return err
		}
		args = append(args, string(moves))
	}
	want := 0
	for _, rows := range w.inserts {
		text, n, err := s.rowsJSON(rows)
		if err != nil {
			return err
		}
		args = append(args, text)
		want += n
	}
	if m := w.move; m != nil {
		projects, err := json.Marshal(orEmpty(w.projectLimits))
		if err != nil {
			return err
		}
		spends, err := json.Marshal(orEmpty(w.spendLimits))
		if err != nil {
			return err
		}
		args = append(args, m.balance, m.reserved, m.used, m.account, m.balance, m.reserved, m.used, want)
		if len(w.transitions) > 1 {
			args = append(args, len(w.transitions))
		}
		args = append(args, string(projects), string(spends))
	} else if len(w.transitions) > 1 {
		args = append(args, len(w.transitions))
	}
	rows, err := s.queryHot(ctx, s.w(), q, args...)
	if err == nil {
		for rows.Next() {
		}
		err = rows.Err()
		rows.Close()
	}
	var pe pgdriver.Error
	if errors.As(err, &pe) && pe.Field('C') == postgresRaiseError {
		switch pe.Field('M') {
		case transitionFailed:
			return errTransitionFailed
		case guardFailed:
			return errGuardFailed
		case concurrencyFailed:
			return domain.ErrConcurrencyLimit
		case spendFailed:
			return domain.ErrSpendLimit
		}
	}
	return wrapInsert(err)
}

// nullTime is t as a statement parameter: NULL when nil.
func nullTime(t *time.Time) any {
	if t == nil {
		return nil
	}
	return t.UTC()
}

// writeStatements caches the statement of each shape of write: the tables it inserts
// into, and whether it reserves.
var writeStatements = struct {
	sync.Mutex
	m map[string]*hotQuery
}{m: map[string]*hotQuery{}}

func (s *Store) writeStatement(w atomicWrite) (*hotQuery, error) {
	var tables []*schema.Table
	var shape strings.Builder
	switch len(w.transitions) {
	case 0:
	case 1:
		shape.WriteString("transition,")
	default:
		shape.WriteString("transitions,")
	}
	for _, rows := range w.inserts {
		t, err := s.sliceTable(rows)
		if err != nil {
			return nil, err
		}
		tables = append(tables, t)
		shape.WriteString(t.Name + ",")
	}
	if w.move != nil {
		shape.WriteString("move,")
	}
	if w.lazy {
		shape.WriteString("lazy,")
	}
	writeStatements.Lock()
	defer writeStatements.Unlock()
	if q, ok := writeStatements.m[shape.String()]; ok {
		return q, nil
	}
	var ctes, inserted, checks []string
	onlyIfMoved := ""
	switch len(w.transitions) {
	case 0:
	case 1:
		ctes = append(ctes, `transitioned AS (UPDATE jobs SET state = ?, progress = ?, attempts = ?, credits_charged = ?,
	artifact_count = ?, error_code = ?, error_message = ?, started_at = ?, finished_at = ?, lease_expires_at = ?
	WHERE id = ? AND state = ? AND attempts = ? RETURNING 1)`)
		checks = append(checks, "WHEN NOT EXISTS (SELECT 1 FROM transitioned) THEN filemill_assert(false, '"+transitionFailed+"')")
	default:
		ctes = append(ctes, `transitioned AS (UPDATE jobs SET state = m.state, progress = m.progress, attempts = m.attempts,
	credits_charged = m.credits_charged, artifact_count = m.artifact_count, error_code = m.error_code,
	error_message = m.error_message, started_at = m.started_at, finished_at = m.finished_at, lease_expires_at = m.lease_expires_at
	FROM jsonb_to_recordset(?) AS m(id text, state text, progress integer, attempts integer, credits_charged bigint,
		artifact_count integer, error_code text, error_message text, started_at timestamptz, finished_at timestamptz,
		lease_expires_at timestamptz, from_state text, from_attempts integer)
	WHERE jobs.id = m.id AND jobs.state = m.from_state AND jobs.attempts = m.from_attempts RETURNING 1)`)
		checks = append(checks, "WHEN (SELECT count(*) FROM transitioned) <> ? THEN filemill_assert(false, '"+transitionFailed+"')")
	}
	if len(w.transitions) > 0 {
		// Everything else is written only when the jobs moved: it reads transitioned, so
		// it also runs after it.
		onlyIfMoved = " WHERE EXISTS (SELECT 1 FROM transitioned)"
	}
	for i, t := range tables {
		list := columnList(t, "")
		name := fmt.Sprintf("i%d", i)
		ctes = append(ctes, fmt.Sprintf("%s AS (INSERT INTO %s (%s) SELECT %s FROM jsonb_populate_recordset(NULL::%s, ?)%s RETURNING 1)",
			name, t.SQLName, list, list, t.SQLName, onlyIfMoved))
		inserted = append(inserted, "SELECT 1 FROM "+name)
	}
	if w.move != nil {
		// The move reads what the inserts wrote, so they run before it: PostgreSQL runs
		// an unread data-modifying CTE only after the main query, which would hold the
		// account's row lock through every insert.
		written := "0"
		if len(inserted) > 0 {
			written = "(SELECT count(*) FROM (" + strings.Join(inserted, " UNION ALL ") + ") AS inserted)"
		}
		cond := ""
		if len(w.transitions) > 0 {
			cond = " AND EXISTS (SELECT 1 FROM transitioned)"
		}
		ctes = append(ctes, `credited AS (UPDATE credit_accounts SET balance = balance + ?, reserved = reserved + ?, used = used + ?
	WHERE id = ? AND balance + ? >= 0 AND reserved + ? >= 0 AND used + ? >= 0 AND `+written+` = ?`+cond+` RETURNING 1)`)
		// CASE takes its branches in order, and the EXISTS subqueries run only when
		// reached: the limits are counted after the move holds the account's row lock.
		checks = append(checks, "WHEN NOT EXISTS (SELECT 1 FROM credited) THEN filemill_assert(false, '"+guardFailed+"')",
			`WHEN EXISTS (SELECT 1 FROM jsonb_to_recordset(?) AS c(project_id text, environment text, allowed bigint)
		WHERE filemill_active_jobs(c.project_id, c.environment) > c.allowed) THEN filemill_assert(false, '`+concurrencyFailed+`')`,
			`WHEN EXISTS (SELECT 1 FROM jsonb_to_recordset(?) AS c(api_key_id text, since timestamptz, allowed bigint)
		WHERE filemill_key_spend(c.api_key_id, c.since) > c.allowed) THEN filemill_assert(false, '`+spendFailed+`')`)
	}
	if len(ctes) == 0 {
		return nil, errors.New("write: nothing to write")
	}
	final := "SELECT true"
	if len(checks) > 0 {
		final = "SELECT CASE " + strings.Join(checks, "\n\t") + " ELSE true END"
	}
	if w.lazy {
		// Local to the statement's own transaction, and read as it commits.
		final += ", set_config('synchronous_commit', 'off', true)"
	}
	q := newHotQuery("WITH " + strings.Join(ctes, ",\n") + "\n" + final)
	writeStatements.m[shape.String()] = q
	return q, nil
}

// writeInTx applies w in a transaction: the SQLite form of writeAtOnce.
func (s *Store) writeInTx(ctx context.Context, w atomicWrite) error {
	return s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		for _, t := range w.transitions {
			j := t.job
			n, err := affected(tx.NewUpdate().Model((*domain.Job)(nil)).
				Set("state = ?", j.State).Set("progress = ?", j.Progress).Set("attempts = ?", j.Attempts).
				Set("credits_charged = ?", j.CreditsCharged).Set("artifact_count = ?", j.ArtifactCount).Set("error_code = ?", j.ErrorCode).
				Set("error_message = ?", j.ErrorMessage).Set("started_at = ?", j.StartedAt).Set("finished_at = ?", j.FinishedAt).
				Set("lease_expires_at = ?", j.LeaseExpiresAt).
				Where("id = ?", j.ID).Where("state = ?", t.fromState).Where("attempts = ?", t.fromAttempts).Exec(ctx))
			if err != nil {
				return fmt.Errorf("write: %w", err)
			}
			if n == 0 {
				return errTransitionFailed
			}
		}
		for _, rows := range w.inserts {
			if reflect.ValueOf(rows).Elem().Len() == 0 {
				continue
			}
			if _, err := tx.NewInsert().Model(rows).Exec(ctx); err != nil {
				if _, answers := rows.(*[]*idempotencyAnswer); answers && isForeignKeyViolation(err) {
					return fmt.Errorf("write: %w: %w", domain.ErrClaimLost, err)
				}
				if _, claims := rows.(*[]*domain.IdempotencyRecord); claims && isUniqueViolation(err) {
					return fmt.Errorf("write: %w: %w", domain.ErrIdempotencyTaken, err)
				}
				return wrapInsert(err)
			}
		}
		m := w.move
		if m == nil {
			return nil
		}
		n, err := m.apply(ctx, tx)
		if err != nil {
			return fmt.Errorf("write: %w", err)
		}
		if n == 0 {
			return errGuardFailed
		}
		for _, l := range w.projectLimits {
			var active int
			if err := tx.NewRaw("SELECT count(*) FROM jobs WHERE project_id = ? AND environment = ? AND state IN ("+activeStates+")",
				l.ProjectID, l.Environment).Scan(ctx, &active); err != nil {
				return fmt.Errorf("write: %w", err)
			}
			if active > l.Allowed {
				return domain.ErrConcurrencyLimit
			}
		}
		for _, l := range w.spendLimits {
			expr, args := s.keySpendExpr(l.APIKeyID, l.Since)
			var spent int64
			if err := tx.NewRaw("SELECT "+expr, args...).Scan(ctx, &spent); err != nil {
				return fmt.Errorf("write: %w", err)
			}
			if spent > l.Allowed {
				return domain.ErrSpendLimit
			}
		}
		return nil
	})
}

// columnList names a table's columns for a statement, each after prefix (a table alias
// and a dot, or nothing). Columns are named rather than *, so a prepared statement
// survives a migration that adds one.
func columnList(t *schema.Table, prefix string) string {
	cols := make([]string, len(t.Fields))
	for i, f := range t.Fields {
		cols[i] = prefix + string(f.SQLName)
	}
	return strings.Join(cols, ", ")
}

// sliceTable is the table of a pointer to a slice of models.
func (s *Store) sliceTable(rows any) (*schema.Table, error) {
	t := reflect.TypeOf(rows)
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Slice {
		return nil, fmt.Errorf("write: %T is not a pointer to a slice of models", rows)
	}
	elem := t.Elem().Elem()
	if elem.Kind() == reflect.Pointer {
		elem = elem.Elem()
	}
	return s.db.Table(elem), nil
}

// postgresTimeLayout is how bun writes times: microseconds, which PostgreSQL keeps.
const postgresTimeLayout = "2006-01-02 15:04:05.999999-07:00"

// rowsJSON renders a pointer to a slice of models as the JSON array
// jsonb_populate_recordset reads: one object per row, keyed by column, with each value
// in a form the column's type accepts. It returns the text and the number of rows.
func (s *Store) rowsJSON(rows any) (string, int, error) {
	t, err := s.sliceTable(rows)
	if err != nil {
		return "", 0, err
	}
	v := reflect.ValueOf(rows).Elem()
	b := []byte{'['}
	for i := range v.Len() {
		if i > 0 {
			b = append(b, ',')
		}
		strct := reflect.Indirect(v.Index(i))
		b = append(b, '{')
		for j, f := range t.Fields {
			if j > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendQuote(b, f.Name) // column names are plain ASCII
			b = append(b, ':')
			if b, err = appendColumnJSON(b, f, strct); err != nil {
				return "", 0, fmt.Errorf("write %s.%s: %w", t.Name, f.Name, err)
			}
		}
		b = append(b, '}')
	}
	b = append(b, ']')
	return string(b), v.Len(), nil
}

var (
	rawJSONType = reflect.TypeFor[json.RawMessage]()
	bytesType   = reflect.TypeFor[[]byte]()
)

func appendColumnJSON(b []byte, f *schema.Field, strct reflect.Value) ([]byte, error) {
	if f.NullZero && f.HasZeroValue(strct) {
		return append(b, "null"...), nil
	}
	v := f.Value(strct)
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return append(b, "null"...), nil
		}
		v = v.Elem()
	}
	switch {
	case v.Type() == timeType:
		b = append(b, '"')
		b = v.Interface().(time.Time).UTC().AppendFormat(b, postgresTimeLayout)
		return append(b, '"'), nil
	case v.Type() == rawJSONType:
		// JSON null would become SQL NULL here, not the JSON null bun writes.
		if len(v.Bytes()) == 0 || string(v.Bytes()) == "null" {
			if f.NotNull {
				return nil, errors.New("empty JSON for a NOT NULL column")
			}
			return append(b, "null"...), nil
		}
		return append(b, v.Bytes()...), nil
	case v.Type() == bytesType:
		if v.IsNil() {
			return append(b, "null"...), nil
		}
		b = append(b, `"\\x`...)
		b = hex.AppendEncode(b, v.Bytes())
		return append(b, '"'), nil
	case f.UserSQLType == "jsonb":
		if (v.Kind() == reflect.Map || v.Kind() == reflect.Slice) && v.IsNil() {
			if f.NotNull {
				return nil, errors.New("nil for a NOT NULL JSON column")
			}
			return append(b, "null"...), nil
		}
	case v.Kind() == reflect.String:
		s := v.String()
		if strings.IndexByte(s, 0) >= 0 {
			return nil, errors.New("NUL byte in a string")
		}
		return appendJSONString(b, s), nil
	case v.CanInt():
		return strconv.AppendInt(b, v.Int(), 10), nil
	case v.Kind() == reflect.Bool:
		return strconv.AppendBool(b, v.Bool()), nil
	}
	raw, err := json.Marshal(v.Interface())
	if err != nil {
		return nil, err
	}
	return append(b, raw...), nil
}

func appendJSONString(b []byte, s string) []byte {
	raw, _ := json.Marshal(s) // a string always marshals
	return append(b, raw...)
}

// wrapInsert marks a unique violation as domain.ErrDuplicate, and an answer whose
// idempotency claim is gone as domain.ErrClaimLost.
func wrapInsert(err error) error {
	switch {
	case err == nil:
		return nil
	case isKeyTaken(err):
		return fmt.Errorf("write: %w: %w", domain.ErrIdempotencyTaken, err)
	case isUniqueViolation(err):
		return fmt.Errorf("write: %w: %w", domain.ErrDuplicate, err)
	case isClaimLost(err):
		return fmt.Errorf("write: %w: %w", domain.ErrClaimLost, err)
	}
	return fmt.Errorf("write: %w", err)
}

// claimScopeConstraint is the uniqueness of a key in its scope (PostgreSQL).
const claimScopeConstraint = "uq_idempotency_records_scope_key"

// isKeyTaken reports a write refused because a claim it inserts finds its key taken.
// PostgreSQL names the constraint; SQLite does not, and writeInTx tells by the table.
func isKeyTaken(err error) bool {
	var pe pgdriver.Error
	return errors.As(err, &pe) && pe.Field('C') == pgUniqueViolation && pe.Field('n') == claimScopeConstraint
}

// answerClaimConstraint is the foreign key from an answer to its claim (PostgreSQL).
const answerClaimConstraint = "fk_idempotency_answers_record_id"

// isClaimLost reports a write refused because an answer's claim is gone. PostgreSQL
// names the constraint; SQLite does not, and writeInTx tells by the table.
func isClaimLost(err error) bool {
	var pe pgdriver.Error
	return errors.As(err, &pe) && pe.Field('C') == pgForeignKeyViolation && pe.Field('n') == answerClaimConstraint
}

// transitionRow is one job's move in a write of several (jsonb_to_recordset's columns).
type transitionRow struct {
	ID             string     `json:"id"`
	State          string     `json:"state"`
	Progress       int        `json:"progress"`
	Attempts       int        `json:"attempts"`
	CreditsCharged int64      `json:"credits_charged"`
	ArtifactCount  int        `json:"artifact_count"`
	ErrorCode      string     `json:"error_code"`
	ErrorMessage   string     `json:"error_message"`
	StartedAt      *time.Time `json:"started_at"`
	FinishedAt     *time.Time `json:"finished_at"`
	LeaseExpiresAt *time.Time `json:"lease_expires_at"`
	FromState      string     `json:"from_state"`
	FromAttempts   int        `json:"from_attempts"`
}

func transitionRows(ts []*jobTransition) []transitionRow {
	rows := make([]transitionRow, len(ts))
	for i, t := range ts {
		j := t.job
		rows[i] = transitionRow{ID: j.ID, State: j.State, Progress: j.Progress, Attempts: j.Attempts, CreditsCharged: j.CreditsCharged,
			ArtifactCount: j.ArtifactCount, ErrorCode: j.ErrorCode, ErrorMessage: j.ErrorMessage, StartedAt: j.StartedAt,
			FinishedAt: j.FinishedAt, LeaseExpiresAt: j.LeaseExpiresAt, FromState: t.fromState, FromAttempts: t.fromAttempts}
	}
	return rows
}
