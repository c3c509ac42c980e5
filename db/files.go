package db

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/filemill/filemill/domain"
)

// CreateUpload inserts u.
func (s *Store) CreateUpload(ctx context.Context, u *domain.Upload) error {
	return insert(ctx, s.w(), "upload", u.ID, u)
}

// OpenUpload writes a new file, its upload session and the upload.opened event as one
// write (see writeAtOnce).
func (s *Store) OpenUpload(ctx context.Context, f *domain.File, u *domain.Upload, e *domain.Event) error {
	files, uploads, events := []*domain.File{f}, []*domain.Upload{u}, eventRows([]*domain.Event{e})
	return s.writeAtOnce(ctx, atomicWrite{inserts: []any{&files, &uploads, &events}})
}

// FindUploadByID returns the upload session, or domain.ErrNotFound.
func (s *Store) FindUploadByID(ctx context.Context, id string) (*domain.Upload, error) {
	return findOne[domain.Upload](ctx, s.r(), "upload "+id, func(q *bun.SelectQuery) *bun.SelectQuery {
		return q.Where("id = ?", id)
	})
}

// TransitionUpload moves an upload from one state to another, setting completed_at to
// at when it completes; false when it was not in from (another request got there first).
func (s *Store) TransitionUpload(ctx context.Context, id, from, to string, at time.Time) (bool, error) {
	q := s.w().NewUpdate().Model((*domain.Upload)(nil)).Set("state = ?", to).
		Where("id = ?", id).Where("state = ?", from)
	if to == domain.UploadCompleted {
		q = q.Set("completed_at = ?", at)
	}
	n, err := affected(q.Exec(ctx))
	if err != nil {
		return false, fmt.Errorf("move upload %s from %s to %s: %w", id, from, to, err)
	}
	return n == 1, nil
}

// FindExpiredUploads returns up to limit open uploads whose time ran out by now, the
// longest expired first.
func (s *Store) FindExpiredUploads(ctx context.Context, now time.Time, limit int) ([]*domain.Upload, error) {
	return findAll[domain.Upload](ctx, s.r(), "expired uploads", func(q *bun.SelectQuery) *bun.SelectQuery {
		return q.Where("state = ?", domain.UploadOpen).Where("expires_at <= ?", now).
			Order("expires_at", "id").Limit(orBatch(limit))
	})
}

// CreateFile inserts f.
func (s *Store) CreateFile(ctx context.Context, f *domain.File) error {
	return insert(ctx, s.w(), "file", f.ID, f)
}

// FindFileByID returns the file whatever its status (the caller decides what a deleted
// file means), or domain.ErrNotFound.
func (s *Store) FindFileByID(ctx context.Context, id string) (*domain.File, error) {
	return findOne[domain.File](ctx, s.r(), "file "+id, func(q *bun.SelectQuery) *bun.SelectQuery {
		return q.Where("id = ?", id)
	})
}

// FindFiles returns one page of the scope's files that are not deleted, newest first,
// and whether more follow.
func (s *Store) FindFiles(ctx context.Context, f domain.FileFilter) ([]*domain.File, bool, error) {
	filter, err := scoped(f.Scope, f.Environment, func(q *bun.SelectQuery) *bun.SelectQuery {
		return q.Where("status <> ?", domain.FileDeleted)
	})
	if err != nil {
		return nil, false, err
	}
	return findPage[domain.File](ctx, s.r(), "files", f.Page, filter)
}

// UpdateFile writes every column of f where the stored status is fromStatus; false when
// it was not.
func (s *Store) UpdateFile(ctx context.Context, f *domain.File, fromStatus string) (bool, error) {
	n, err := affected(s.w().NewUpdate().Model(f).WherePK().Where("status = ?", fromStatus).Exec(ctx))
	if err != nil {
		return false, fmt.Errorf("update file %s: %w", f.ID, err)
	}
	return n == 1, nil
}

// FindOldestReadyFileByHash returns the oldest ready file of a project with this hash,
// other than excludeID, or domain.ErrNotFound.
func (s *Store) FindOldestReadyFileByHash(ctx context.Context, projectID, sha256, excludeID string) (*domain.File, error) {
	return findOne[domain.File](ctx, s.r(), "ready file with hash "+sha256, func(q *bun.SelectQuery) *bun.SelectQuery {
		return q.Where("project_id = ?", projectID).Where("sha256 = ?", sha256).
			Where("status = ?", domain.FileReady).Where("id <> ?", excludeID).
			Order("created_at", "id")
	})
}

// CreateArtifact inserts a on its own; jobs store their artifacts with their settlement
// (TransitionJob).
func (s *Store) CreateArtifact(ctx context.Context, a *domain.Artifact) error {
	return insert(ctx, s.w(), "artifact", a.ID, a)
}

// FindArtifactByID returns the artifact, or domain.ErrNotFound.
func (s *Store) FindArtifactByID(ctx context.Context, id string) (*domain.Artifact, error) {
	return findOne[domain.Artifact](ctx, s.r(), "artifact "+id, func(q *bun.SelectQuery) *bun.SelectQuery {
		return q.Where("id = ?", id)
	})
}

// FindArtifactsByFile returns a file's artifacts in creation order.
func (s *Store) FindArtifactsByFile(ctx context.Context, fileID string) ([]*domain.Artifact, error) {
	return findAll[domain.Artifact](ctx, s.r(), "artifacts of file "+fileID, func(q *bun.SelectQuery) *bun.SelectQuery {
		return q.Where("file_id = ?", fileID).Order("id")
	})
}

// FindArtifactsByJob returns a job's artifacts in creation order.
func (s *Store) FindArtifactsByJob(ctx context.Context, jobID string) ([]*domain.Artifact, error) {
	return findAll[domain.Artifact](ctx, s.r(), "artifacts of job "+jobID, func(q *bun.SelectQuery) *bun.SelectQuery {
		return q.Where("job_id = ?", jobID).Order("id")
	})
}

// FindArtifactsByIDs returns the artifacts among ids, by primary key.
func (s *Store) FindArtifactsByIDs(ctx context.Context, ids []string) ([]*domain.Artifact, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	return findAll[domain.Artifact](ctx, s.r(), "artifacts by id", func(q *bun.SelectQuery) *bun.SelectQuery {
		return q.Where("id IN (?)", bun.In(ids))
	})
}

// FindFilesByIDs returns the files among ids, whatever their status.
func (s *Store) FindFilesByIDs(ctx context.Context, ids []string) ([]*domain.File, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	return findAll[domain.File](ctx, s.r(), "files by id", func(q *bun.SelectQuery) *bun.SelectQuery {
		return q.Where("id IN (?)", bun.In(ids))
	})
}

// FindArtifactsByFiles returns the first perFile artifacts of each of these files (all
// of them when perFile is 0), in creation order.
func (s *Store) FindArtifactsByFiles(ctx context.Context, fileIDs []string, perFile int) ([]*domain.Artifact, error) {
	if len(fileIDs) == 0 {
		return nil, nil
	}
	return findAll[domain.Artifact](ctx, s.r(), "artifacts of files", func(q *bun.SelectQuery) *bun.SelectQuery {
		if perFile <= 0 {
			return q.Where("file_id IN (?)", bun.In(fileIDs)).Order("id")
		}
		// Ranked within each file, so a file of many artifacts costs its first few rows.
		ranked := s.r().NewSelect().Model((*domain.Artifact)(nil)).ColumnExpr("*").
			ColumnExpr("row_number() OVER (PARTITION BY file_id ORDER BY id) AS preview_rank").
			Where("file_id IN (?)", bun.In(fileIDs))
		return q.ModelTableExpr("(?) AS artifact", ranked).Where("preview_rank <= ?", perFile).Order("id")
	})
}

// FindArtifactsByJobs returns the first perJob artifacts of each of these jobs (all
// of them when perJob is 0), in creation order.
func (s *Store) FindArtifactsByJobs(ctx context.Context, jobIDs []string, perJob int) ([]*domain.Artifact, error) {
	if len(jobIDs) == 0 {
		return nil, nil
	}
	return findAll[domain.Artifact](ctx, s.r(), "artifacts of jobs", func(q *bun.SelectQuery) *bun.SelectQuery {
		if perJob <= 0 {
			return q.Where("job_id IN (?)", bun.In(jobIDs)).Order("id")
		}
		// Ranked within each job along ix_artifacts_job_id_id, so a job of many artifacts
		// costs its first few rows, not all of them.
		ranked := s.r().NewSelect().Model((*domain.Artifact)(nil)).ColumnExpr("*").
			ColumnExpr("row_number() OVER (PARTITION BY job_id ORDER BY id) AS preview_rank").
			Where("job_id IN (?)", bun.In(jobIDs))
		return q.ModelTableExpr("(?) AS artifact", ranked).Where("preview_rank <= ?", perJob).Order("id")
	})
}

// FindArtifacts returns one page of a job's artifacts in creation order (the order the
// job made them: parts, pages), after f.StartingAfter, and whether more follow.
func (s *Store) FindArtifacts(ctx context.Context, f domain.ArtifactFilter) ([]*domain.Artifact, bool, error) {
	if f.OrganizationID == "" {
		return nil, false, errors.New("db: list without an organization scope")
	}
	return findPageOldestFirst[domain.Artifact](ctx, s.r(), "artifacts of job "+f.JobID, f.Page, func(q *bun.SelectQuery) *bun.SelectQuery {
		return q.Where("job_id = ?", f.JobID).Where("organization_id = ?", f.OrganizationID)
	})
}
