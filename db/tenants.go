package db

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/filemill/filemill/domain"
)

// CreateOrganization inserts org; domain.ErrDuplicate when the name is taken.
func (s *Store) CreateOrganization(ctx context.Context, org *domain.Organization) error {
	return insert(ctx, s.w(), "organization", org.ID, org)
}

// FindOrganizationByID returns the organization, or domain.ErrNotFound.
func (s *Store) FindOrganizationByID(ctx context.Context, id string) (*domain.Organization, error) {
	return findOne[domain.Organization](ctx, s.r(), "organization "+id, func(q *bun.SelectQuery) *bun.SelectQuery {
		return q.Where("id = ?", id)
	})
}

// FindOrganizationByName returns the organization, or domain.ErrNotFound.
func (s *Store) FindOrganizationByName(ctx context.Context, name string) (*domain.Organization, error) {
	return findOne[domain.Organization](ctx, s.r(), "organization named "+name, func(q *bun.SelectQuery) *bun.SelectQuery {
		return q.Where("name = ?", name)
	})
}

// SetOrganizationStatus sets active/suspended; domain.ErrNotFound when there is no such row.
func (s *Store) SetOrganizationStatus(ctx context.Context, id, status string) error {
	n, err := affected(s.w().NewUpdate().Model((*domain.Organization)(nil)).
		Set("status = ?", status).Where("id = ?", id).Exec(ctx))
	if err != nil {
		return fmt.Errorf("set organization %s status: %w", id, err)
	}
	if n == 0 {
		return fmt.Errorf("organization %s: %w", id, domain.ErrNotFound)
	}
	return nil
}

// CreateProject inserts p; domain.ErrDuplicate when the organization has a project of
// that name.
func (s *Store) CreateProject(ctx context.Context, p *domain.Project) error {
	return insert(ctx, s.w(), "project", p.ID, p)
}

// FindProjectByID returns the project, or domain.ErrNotFound.
func (s *Store) FindProjectByID(ctx context.Context, id string) (*domain.Project, error) {
	return findOne[domain.Project](ctx, s.r(), "project "+id, func(q *bun.SelectQuery) *bun.SelectQuery {
		return q.Where("id = ?", id)
	})
}

// FindProjectByName returns an organization's project by name, or domain.ErrNotFound.
func (s *Store) FindProjectByName(ctx context.Context, orgID, name string) (*domain.Project, error) {
	return findOne[domain.Project](ctx, s.r(), "project named "+name, func(q *bun.SelectQuery) *bun.SelectQuery {
		return q.Where("organization_id = ?", orgID).Where("name = ?", name)
	})
}

// SetProjectConcurrencyLimit sets the project's limit (0 = default); domain.ErrNotFound
// when there is no such project.
func (s *Store) SetProjectConcurrencyLimit(ctx context.Context, id string, limit int) error {
	n, err := affected(s.w().NewUpdate().Model((*domain.Project)(nil)).
		Set("concurrency_limit = ?", limit).Where("id = ?", id).Exec(ctx))
	if err != nil {
		return fmt.Errorf("set project %s concurrency limit: %w", id, err)
	}
	if n == 0 {
		return fmt.Errorf("project %s: %w", id, domain.ErrNotFound)
	}
	return nil
}

// CreateAPIKey inserts k; domain.ErrDuplicate when the hash exists. Nil lists are
// stored as empty ones.
func (s *Store) CreateAPIKey(ctx context.Context, k *domain.APIKey) error {
	row := *k
	row.Scopes = orEmpty(row.Scopes)
	row.IPAllowList = orEmpty(row.IPAllowList)
	row.AllowedOperations = orEmpty(row.AllowedOperations)
	row.AllowedProjects = orEmpty(row.AllowedProjects)
	return insert(ctx, s.w(), "API key", row.ID, &row)
}

// FindAPIKeyByID returns the key, or domain.ErrNotFound.
func (s *Store) FindAPIKeyByID(ctx context.Context, id string) (*domain.APIKey, error) {
	return findOne[domain.APIKey](ctx, s.r(), "API key "+id, func(q *bun.SelectQuery) *bun.SelectQuery {
		return q.Where("id = ?", id)
	})
}

// keyWithOwners is an API key row joined with its organization's and project's columns.
type keyWithOwners struct {
	bun.BaseModel `bun:"table:api_keys,alias:k"`
	domain.APIKey
	OrgName             string    `bun:"org_name"`
	OrgStatus           string    `bun:"org_status"`
	OrgCreatedAt        time.Time `bun:"org_created_at"`
	PrjName             string    `bun:"prj_name"`
	PrjConcurrencyLimit int       `bun:"prj_concurrency_limit"`
	PrjCreatedAt        time.Time `bun:"prj_created_at"`
}

// FindAPIKeyByHash returns the key with this secret hash, its organization and its
// project in one round trip (it runs on every authenticated request), or
// domain.ErrNotFound.
func (s *Store) FindAPIKeyByHash(ctx context.Context, hash string) (*domain.APIKey, *domain.Organization, *domain.Project, error) {
	row, err := findOne[keyWithOwners](ctx, s.r(), "API key by hash", func(q *bun.SelectQuery) *bun.SelectQuery {
		return q.ColumnExpr("k.*").
			ColumnExpr("o.name AS org_name, o.status AS org_status, o.created_at AS org_created_at").
			ColumnExpr("p.name AS prj_name, p.concurrency_limit AS prj_concurrency_limit, p.created_at AS prj_created_at").
			Join("JOIN organizations AS o ON o.id = k.organization_id").
			Join("JOIN projects AS p ON p.id = k.project_id").
			Where("k.hash = ?", hash)
	})
	if err != nil {
		return nil, nil, nil, err
	}
	key := inUTC(&row.APIKey)
	org := &domain.Organization{ID: key.OrganizationID, Name: row.OrgName, Status: row.OrgStatus, CreatedAt: row.OrgCreatedAt.UTC()}
	prj := &domain.Project{ID: key.ProjectID, OrganizationID: key.OrganizationID, Name: row.PrjName,
		ConcurrencyLimit: row.PrjConcurrencyLimit, CreatedAt: row.PrjCreatedAt.UTC()}
	return key, org, prj, nil
}

// FindAPIKeys returns an organization's keys, optionally one project's, newest first.
func (s *Store) FindAPIKeys(ctx context.Context, f domain.APIKeyFilter) ([]*domain.APIKey, error) {
	if f.OrganizationID == "" {
		return nil, errors.New("db: list of API keys without an organization")
	}
	return findAll[domain.APIKey](ctx, s.r(), "API keys", func(q *bun.SelectQuery) *bun.SelectQuery {
		q = q.Where("organization_id = ?", f.OrganizationID)
		if f.ProjectID != "" {
			q = q.Where("project_id = ?", f.ProjectID)
		}
		return q.Order("id DESC")
	})
}

// RevokeAPIKey sets revoked_at once; revoking a revoked key changes nothing.
// domain.ErrNotFound when there is no such key.
func (s *Store) RevokeAPIKey(ctx context.Context, id string, at time.Time) error {
	n, err := affected(s.w().NewUpdate().Model((*domain.APIKey)(nil)).
		Set("revoked_at = ?", at).Where("id = ?", id).Where("revoked_at IS NULL").Exec(ctx))
	if err != nil {
		return fmt.Errorf("revoke API key %s: %w", id, err)
	}
	if n == 0 {
		if _, err := s.FindAPIKeyByID(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

// orEmpty makes a nil slice an empty one, which JSON writes as [] rather than null.
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// FindAPIKeyPage returns one page of an organization's keys (one project's when set),
// newest first, and whether more follow.
func (s *Store) FindAPIKeyPage(ctx context.Context, f domain.APIKeyFilter) ([]*domain.APIKey, bool, error) {
	if f.OrganizationID == "" {
		return nil, false, errors.New("db: list of API keys without an organization")
	}
	rows, more, err := findPage[domain.APIKey](ctx, s.r(), "API keys", f.Page, func(q *bun.SelectQuery) *bun.SelectQuery {
		q = q.Where("organization_id = ?", f.OrganizationID)
		if f.ProjectID != "" {
			q = q.Where("project_id = ?", f.ProjectID)
		}
		return q
	})
	return rows, more, err
}

// CountActiveAPIKeys counts an organization's keys neither revoked nor expired at now.
func (s *Store) CountActiveAPIKeys(ctx context.Context, orgID string, now time.Time) (int, error) {
	n, err := s.r().NewSelect().Model((*domain.APIKey)(nil)).Where("organization_id = ?", orgID).
		Where("revoked_at IS NULL").Where("expires_at IS NULL OR expires_at > ?", now.UTC()).Count(ctx)
	if err != nil {
		return 0, fmt.Errorf("count API keys of %s: %w", orgID, err)
	}
	return int(n), nil
}

// TouchAPIKey sets a key's last use.
func (s *Store) TouchAPIKey(ctx context.Context, id string, at time.Time) error {
	if _, err := s.w().NewUpdate().Model((*domain.APIKey)(nil)).Set("last_used_at = ?", at.UTC()).Where("id = ?", id).Exec(ctx); err != nil {
		return fmt.Errorf("touch API key %s: %w", id, err)
	}
	return nil
}

// FindProjects returns up to limit of an organization's projects, oldest first.
func (s *Store) FindProjects(ctx context.Context, orgID string, limit int) ([]*domain.Project, error) {
	return findAll[domain.Project](ctx, s.r(), "projects", func(q *bun.SelectQuery) *bun.SelectQuery {
		return q.Where("organization_id = ?", orgID).Order("id").Limit(int64(max(limit, 1)))
	})
}

// CountProjects counts an organization's projects.
func (s *Store) CountProjects(ctx context.Context, orgID string) (int, error) {
	n, err := s.r().NewSelect().Model((*domain.Project)(nil)).Where("organization_id = ?", orgID).Count(ctx)
	if err != nil {
		return 0, fmt.Errorf("count projects of %s: %w", orgID, err)
	}
	return int(n), nil
}

// RenameProject renames a project; domain.ErrDuplicate when its organization has one of
// that name, domain.ErrNotFound when there is no such project.
func (s *Store) RenameProject(ctx context.Context, id, name string) error {
	n, err := affected(s.w().NewUpdate().Model((*domain.Project)(nil)).Set("name = ?", name).Where("id = ?", id).Exec(ctx))
	if err != nil {
		if isUniqueViolation(err) {
			return fmt.Errorf("rename project %s: %w: %w", id, domain.ErrDuplicate, err)
		}
		return fmt.Errorf("rename project %s: %w", id, err)
	}
	if n == 0 {
		return fmt.Errorf("project %s: %w", id, domain.ErrNotFound)
	}
	return nil
}
