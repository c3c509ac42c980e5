package db

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/filemill/filemill/domain"
)

// SumProjectCredits returns what a project's queued and running jobs of one environment
// hold reserved now, and what the project was charged on an account since a moment. Both
// read only what is live or recent, however long the ledger grows.
func (s *Store) SumProjectCredits(ctx context.Context, accountID, projectID string, env domain.Environment, since time.Time) (reserved, used int64, err error) {
	err = s.r().NewSelect().Model((*domain.Job)(nil)).
		ColumnExpr("CAST(COALESCE(SUM(credits_reserved), 0) AS BIGINT)").
		Where("project_id = ?", projectID).Where("environment = ?", env).Where("state IN ("+activeStates+")").
		Scan(ctx, &reserved)
	if err != nil {
		return 0, 0, fmt.Errorf("sum reserved by project %s: %w", projectID, err)
	}
	err = s.r().NewSelect().Model((*domain.LedgerEntry)(nil)).
		ColumnExpr("CAST(COALESCE(SUM(amount), 0) AS BIGINT)").
		Where("project_id = ?", projectID).Where("kind = ?", domain.LedgerCharge).Where("created_at >= ?", since).
		Where("account_id = ?", accountID).
		Scan(ctx, &used)
	if err != nil {
		return 0, 0, fmt.Errorf("sum charged to project %s: %w", projectID, err)
	}
	return reserved, used, nil
}

// SumStoredFiles returns the bytes a project stores in one environment (its ready and
// rejected files and their artifacts) and how many such files there are.
func (s *Store) SumStoredFiles(ctx context.Context, projectID string, env domain.Environment) (int64, int, error) {
	stored := []string{domain.FileReady, domain.FileRejected}
	var files struct {
		Bytes int64 `bun:"bytes"`
		Count int   `bun:"count"`
	}
	err := s.r().NewSelect().Model((*domain.File)(nil)).
		ColumnExpr("CAST(COALESCE(SUM(byte_size), 0) AS BIGINT) AS bytes").ColumnExpr("COUNT(*) AS count").
		Where("project_id = ?", projectID).Where("environment = ?", env).Where("status IN (?)", bun.In(stored)).
		Scan(ctx, &files)
	if err != nil {
		return 0, 0, fmt.Errorf("sum files of project %s: %w", projectID, err)
	}
	var artBytes int64
	err = s.r().NewSelect().TableExpr("artifacts AS a").Join("JOIN files AS f ON f.id = a.file_id").
		ColumnExpr("CAST(COALESCE(SUM(a.byte_size), 0) AS BIGINT)").
		Where("f.project_id = ?", projectID).Where("f.environment = ?", env).Where("f.status IN (?)", bun.In(stored)).
		Scan(ctx, &artBytes)
	if err != nil {
		return 0, 0, fmt.Errorf("sum artifacts of project %s: %w", projectID, err)
	}
	return files.Bytes + artBytes, files.Count, nil
}

func period(t time.Time) string { return t.UTC().Format("2006-01") }

// AddEgress adds n bytes served to a project's counter for the month of at.
func (s *Store) AddEgress(ctx context.Context, orgID, projectID string, env domain.Environment, at time.Time, n int64) error {
	// The month's counter answers GET /v1/usage; the day's, the console's usage series.
	return s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		_, err := tx.NewRaw(`INSERT INTO egress_counters (organization_id, project_id, environment, period, bytes)
			VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (project_id, environment, period) DO UPDATE SET bytes = egress_counters.bytes + excluded.bytes`,
			orgID, projectID, string(env), period(at), n).Exec(ctx)
		if err == nil {
			_, err = tx.NewRaw(`INSERT INTO egress_days (organization_id, project_id, environment, day, bytes)
				VALUES (?, ?, ?, ?, ?)
				ON CONFLICT (project_id, environment, day) DO UPDATE SET bytes = egress_days.bytes + excluded.bytes`,
				orgID, projectID, string(env), at.UTC().Format(time.DateOnly), n).Exec(ctx)
		}
		if err != nil {
			return fmt.Errorf("count egress of project %s: %w", projectID, err)
		}
		return nil
	})
}

// SumEgress returns the bytes served from a project in the month of at.
func (s *Store) SumEgress(ctx context.Context, projectID string, env domain.Environment, at time.Time) (int64, error) {
	var n int64
	err := s.r().NewSelect().TableExpr("egress_counters").ColumnExpr("CAST(COALESCE(SUM(bytes), 0) AS BIGINT)").
		Where("project_id = ?", projectID).Where("environment = ?", string(env)).Where("period = ?", period(at)).
		Scan(ctx, &n)
	if err != nil {
		return 0, fmt.Errorf("sum egress of project %s: %w", projectID, err)
	}
	return n, nil
}

// dayOf is the SQL expression of a timestamp column's UTC day, YYYY-MM-DD. SQLite
// keeps timestamps as UTC text, whose first ten characters are the day.
func (s *Store) dayOf(col string) string {
	if s.dialect == DialectPostgres {
		return "to_char(" + col + " AT TIME ZONE 'UTC', 'YYYY-MM-DD')"
	}
	return "substr(" + col + ", 1, 10)"
}

// FindDailyUsage returns a project's usage on the days of [q.From, q.To) that had any,
// oldest first, and the credits charged per operation over the range: four grouped
// reads, each on an index of its table.
func (s *Store) FindDailyUsage(ctx context.Context, q domain.DailyUsageQuery) ([]domain.DailyUsage, []domain.OperationUsage, error) {
	from, to := q.From.UTC(), q.To.UTC()
	days := map[string]*domain.DailyUsage{}
	day := func(d string) *domain.DailyUsage {
		if days[d] == nil {
			days[d] = &domain.DailyUsage{Day: d}
		}
		return days[d]
	}
	var credits []struct {
		Day    string `bun:"day"`
		Amount int64  `bun:"amount"`
	}
	err := s.r().NewSelect().Model((*domain.LedgerEntry)(nil)).
		ColumnExpr(s.dayOf("created_at")+" AS day").ColumnExpr("CAST(SUM(amount) AS BIGINT) AS amount").
		Where("project_id = ?", q.ProjectID).Where("kind = ?", domain.LedgerCharge).Where("account_id = ?", q.AccountID).
		Where("created_at >= ?", from).Where("created_at < ?", to).GroupExpr("day").Scan(ctx, &credits)
	if err != nil {
		return nil, nil, fmt.Errorf("sum credits per day: %w", err)
	}
	for _, c := range credits {
		day(c.Day).Credits = c.Amount
	}
	var jobs []struct {
		Day  string `bun:"day"`
		Jobs int    `bun:"jobs"`
	}
	err = s.r().NewSelect().Model((*domain.Job)(nil)).
		ColumnExpr(s.dayOf("finished_at")+" AS day").ColumnExpr("COUNT(*) AS jobs").
		Where("project_id = ?", q.ProjectID).Where("environment = ?", q.Environment).Where("finished_at IS NOT NULL").
		Where("finished_at >= ?", from).Where("finished_at < ?", to).Where("state IN (?)", bun.In([]string{domain.JobSucceeded, domain.JobFailed})).
		GroupExpr("day").Scan(ctx, &jobs)
	if err != nil {
		return nil, nil, fmt.Errorf("count jobs per day: %w", err)
	}
	for _, j := range jobs {
		day(j.Day).Jobs = j.Jobs
	}
	var uploads []struct {
		Day   string `bun:"day"`
		Bytes int64  `bun:"bytes"`
	}
	err = s.r().NewSelect().Model((*domain.File)(nil)).
		ColumnExpr(s.dayOf("ready_at")+" AS day").ColumnExpr("CAST(SUM(byte_size) AS BIGINT) AS bytes").
		Where("project_id = ?", q.ProjectID).Where("environment = ?", q.Environment).Where("ready_at IS NOT NULL").
		Where("ready_at >= ?", from).Where("ready_at < ?", to).GroupExpr("day").Scan(ctx, &uploads)
	if err != nil {
		return nil, nil, fmt.Errorf("sum uploads per day: %w", err)
	}
	for _, u := range uploads {
		day(u.Day).UploadedBytes = u.Bytes
	}
	var egress []struct {
		Day   string `bun:"day"`
		Bytes int64  `bun:"bytes"`
	}
	err = s.r().NewSelect().TableExpr("egress_days").ColumnExpr("day, bytes").
		Where("project_id = ?", q.ProjectID).Where("environment = ?", string(q.Environment)).
		Where("day >= ?", from.Format(time.DateOnly)).Where("day < ?", to.Format(time.DateOnly)).Scan(ctx, &egress)
	if err != nil {
		return nil, nil, fmt.Errorf("read egress per day: %w", err)
	}
	for _, e := range egress {
		day(e.Day).EgressBytes = e.Bytes
	}
	out := make([]domain.DailyUsage, 0, len(days))
	for _, d := range days {
		out = append(out, *d)
	}
	slices.SortFunc(out, func(a, b domain.DailyUsage) int { return strings.Compare(a.Day, b.Day) })

	ops := []domain.OperationUsage{}
	err = s.r().NewSelect().Model((*domain.Job)(nil)).
		ColumnExpr("CASE WHEN operation <> '' THEN operation ELSE preset END AS operation").
		ColumnExpr("COUNT(*) AS jobs").ColumnExpr("CAST(COALESCE(SUM(credits_charged), 0) AS BIGINT) AS credits").
		Where("project_id = ?", q.ProjectID).Where("environment = ?", q.Environment).Where("finished_at IS NOT NULL").
		Where("finished_at >= ?", from).Where("finished_at < ?", to).Where("state IN (?)", bun.In([]string{domain.JobSucceeded, domain.JobFailed})).
		GroupExpr("1").OrderExpr("credits DESC, operation").Scan(ctx, &ops)
	if err != nil {
		return nil, nil, fmt.Errorf("sum credits per operation: %w", err)
	}
	return out, ops, nil
}
