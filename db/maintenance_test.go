package db_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/db"
	"github.com/filemill/filemill/db/dbtest"
	"github.com/filemill/filemill/domain"
)

func TestMaintenanceTasks(t *testing.T) {
	t.Parallel()
	dbtest.EachDialect(t, func(t *testing.T, s *db.Store) {
		t.Parallel()
		ctx := context.Background()
		_, err := s.FindMaintenanceTask(ctx, "task")
		require.ErrorIs(t, err, domain.ErrNotFound)

		at := now()
		task := &domain.MaintenanceTask{Name: "task", NotBefore: at.Add(time.Hour), UpdatedAt: at}
		require.NoError(t, s.CreateMaintenanceTask(ctx, task))
		require.ErrorIs(t, s.CreateMaintenanceTask(ctx, &domain.MaintenanceTask{Name: "task", NotBefore: at, UpdatedAt: at}),
			domain.ErrDuplicate, "a task has one row")
		got, err := s.FindMaintenanceTask(ctx, "task")
		require.NoError(t, err)
		require.Equal(t, task, got)

		next := *task
		next.ResumeAfter, next.HeldUntil, next.Removed, next.Steps = "org_1/a", ptr(at.Add(2*time.Hour)), 3, 1
		ok, err := s.UpdateMaintenanceTask(ctx, &next, task.Steps)
		require.NoError(t, err)
		require.True(t, ok)
		stale := *task
		stale.Steps, stale.CompletedAt = 1, &at
		ok, err = s.UpdateMaintenanceTask(ctx, &stale, task.Steps)
		require.NoError(t, err)
		require.False(t, ok, "a run that read step 0 does not write over step 1")
		got, err = s.FindMaintenanceTask(ctx, "task")
		require.NoError(t, err)
		require.Equal(t, &next, got)

		done := next
		done.ResumeAfter, done.HeldUntil, done.CompletedAt, done.Steps = "", nil, &at, 2
		ok, err = s.UpdateMaintenanceTask(ctx, &done, next.Steps)
		require.NoError(t, err)
		require.True(t, ok)
		got, err = s.FindMaintenanceTask(ctx, "task")
		require.NoError(t, err)
		require.Equal(t, &done, got)
	})
}
