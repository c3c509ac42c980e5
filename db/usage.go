package db

import (
	"context"
	"fmt"
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
	_, err := s.w().NewRaw(`INSERT INTO egress_counters (organization_id, project_id, environment, period, bytes)
		VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (project_id, environment, period) DO UPDATE SET bytes = egress_counters.bytes + excluded.bytes`,
		orgID, projectID, string(env), period(at), n).Exec(ctx)
	if err != nil {
		return fmt.Errorf("count egress of project %s: %w", projectID, err)
	}
	return nil
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
