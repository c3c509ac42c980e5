package db

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"

	"github.com/filemill/filemill/domain"
)

// FindMaintenanceTask returns a task's progress, or domain.ErrNotFound.
func (s *Store) FindMaintenanceTask(ctx context.Context, name string) (*domain.MaintenanceTask, error) {
	return findOne[domain.MaintenanceTask](ctx, s.r(), "maintenance task "+name, func(q *bun.SelectQuery) *bun.SelectQuery {
		return q.Where("name = ?", name)
	})
}

// CreateMaintenanceTask inserts t; domain.ErrDuplicate when its task has a row already.
func (s *Store) CreateMaintenanceTask(ctx context.Context, t *domain.MaintenanceTask) error {
	return insert(ctx, s.w(), "maintenance task", t.Name, t)
}

// UpdateMaintenanceTask writes every column of t where the stored steps are fromSteps.
func (s *Store) UpdateMaintenanceTask(ctx context.Context, t *domain.MaintenanceTask, fromSteps int64) (bool, error) {
	n, err := affected(s.w().NewUpdate().Model(t).WherePK().Where("steps = ?", fromSteps).Exec(ctx))
	if err != nil {
		return false, fmt.Errorf("update maintenance task %s: %w", t.Name, err)
	}
	return n == 1, nil
}
