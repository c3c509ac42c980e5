package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/uptrace/bun"

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
// table's columns: for one file, the hot path of every job, and for several, a batch's.
var admissionFactsQueries = struct {
	once      sync.Once
	one, many *hotQuery
}{}

func (s *Store) admissionFactsQuery(files int) *hotQuery {
	q := &admissionFactsQueries
	q.once.Do(func() {
		cols := columnList(s.db.Table(reflect.TypeFor[domain.File]()), "f.")
		build := func(idMatch string) *hotQuery {
			return newHotQuery(`SELECT ` + cols + `,
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

// keySpendExpr sums what a key's spend limit counts: credits charged since a moment plus
// those its queued and running jobs hold.
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
// the next write (see newAdmissionBatcher); inside a transaction it writes at once.
func (s *Store) AdmitJobs(ctx context.Context, a *domain.Admission) error {
	if a.AccountID == "" {
		return errors.New("admit jobs: no credit account")
	}
	if s.tx != nil {
		return s.writeAdmissions(ctx, []*domain.Admission{a})
	}
	p := &pending[*domain.Admission]{item: a}
	s.admissions.do(ctx, a.AccountID, p)
	return p.err
}

// writeAdmissions writes admissions on one credit account as one atomic write: every
// row, every answer, one move of the balance covering all reservations, and the limits
// checked after it, against what is committed by then. Whatever refuses the write
// refuses all of it; the batcher then writes them one by one (writeOrEach).
func (s *Store) writeAdmissions(ctx context.Context, as []*domain.Admission) error {
	var (
		batches  = []*domain.Batch{}
		jobs     = []*domain.Job{}
		events   = []*domain.Event{}
		entries  = []*domain.LedgerEntry{}
		claims   = []*domain.IdempotencyRecord{}
		answers  = []*idempotencyAnswer{}
		projects = map[string]*projectAllowance{}
		keys     = map[string]*spendLimit{}
		order    []string
	)
	acct := as[0].AccountID
	// Made even for free work: its row lock is what orders admissions on the account,
	// across processes, for the limit checks after it.
	w := atomicWrite{move: &creditMove{account: acct}}
	for _, a := range as {
		if a.AccountID != acct {
			return fmt.Errorf("admit jobs: admissions on accounts %s and %s in one write", acct, a.AccountID)
		}
		if len(a.Jobs) == 0 {
			return errors.New("admit jobs: an admission without jobs")
		}
		// Its limits are those of its jobs' project and key, the same for all.
		first := a.Jobs[0]
		for _, j := range a.Jobs {
			if j.ProjectID != first.ProjectID || j.APIKeyID != first.APIKeyID || j.Environment != first.Environment {
				return fmt.Errorf("admit jobs: job %s is not of the project, key and environment of job %s", j.ID, first.ID)
			}
		}
		if a.Batch != nil {
			b := *a.Batch
			b.Options = jsonObject(b.Options)
			batches = append(batches, &b)
		}
		for _, j := range a.Jobs {
			row := *j
			row.Options = jsonObject(row.Options)
			jobs = append(jobs, &row)
		}
		events = append(events, eventRows(a.Events)...)
		moved, err := w.move.add(a.Reserve, domain.LedgerReserve)
		if err != nil {
			return fmt.Errorf("admit jobs: %w", err)
		}
		entries = append(entries, moved...)
		if a.Answer != nil {
			ans, err := answerOf(a.Answer)
			if err != nil {
				return fmt.Errorf("admit jobs: %w", err)
			}
			answers = append(answers, ans)
			if a.ClaimAtWrite {
				claims = append(claims, a.Answer)
			}
		}
		if a.ProjectLimit > 0 {
			pa, ok := projects[first.ProjectID]
			if !ok {
				pa = &projectAllowance{limit: a.ProjectLimit, env: first.Environment}
				projects[first.ProjectID] = pa
				order = append(order, first.ProjectID)
			}
			pa.limit, pa.last = min(pa.limit, a.ProjectLimit), len(a.Jobs)
		}
		if a.SpendLimit > 0 {
			if kl, ok := keys[first.APIKeyID]; ok {
				kl.Allowed = min(kl.Allowed, a.SpendLimit)
			} else {
				keys[first.APIKeyID] = &spendLimit{APIKeyID: first.APIKeyID, Since: a.SpendSince, Allowed: a.SpendLimit}
			}
		}
	}
	// Always the same tables, empty or not, so every admission is one prepared statement.
	// Claims before their answers, which refer to them.
	w.inserts = []any{&batches, &jobs, &events, &entries, &claims, &answers}
	// The project's jobs admitted before the last admission into it must have left room
	// under its limit: those now active minus that admission's own.
	for _, id := range order {
		pa := projects[id]
		w.projectLimits = append(w.projectLimits, projectLimit{ProjectID: id, Environment: string(pa.env), Allowed: pa.limit - 1 + pa.last})
	}
	for _, kl := range keys {
		w.spendLimits = append(w.spendLimits, *kl)
	}
	err := s.writeAtOnce(ctx, w)
	if errors.Is(err, errGuardFailed) {
		return fmt.Errorf("reserve %d on account %s: %w", w.move.reserved, acct, domain.ErrInsufficientCredits)
	}
	return err
}

type projectAllowance struct {
	limit, last int
	env         domain.Environment
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

// maxAdmissionJobs bounds the jobs of one combined write, so its statement stays small.
const maxAdmissionJobs = 256

// newAdmissionBatcher combines admissions on one credit account (the batcher's key).
// Every admission locks the account's row until its commit is on disk, so on their own
// they would run one at a time, one flush each; together they share one statement and
// one flush.
func newAdmissionBatcher(write func(context.Context, []*domain.Admission) error) *batcher[*pending[*domain.Admission]] {
	return newBatcher(func(ctx context.Context, batch []*pending[*domain.Admission]) {
		writeOrEach(ctx, write, batch, refusal)
	},
		func(p *pending[*domain.Admission]) int { return len(p.item.Jobs) }, maxAdmissionJobs)
}

// refusal reports whether an admission write was refused by what one of its admissions
// asked for (or by the loss of one's idempotency claim, or its key being taken), rather
// than failed.
func refusal(err error) bool {
	return errors.Is(err, domain.ErrInsufficientCredits) || errors.Is(err, domain.ErrConcurrencyLimit) ||
		errors.Is(err, domain.ErrSpendLimit) || errors.Is(err, domain.ErrDuplicate) || errors.Is(err, domain.ErrClaimLost) ||
		errors.Is(err, domain.ErrIdempotencyTaken)
}
