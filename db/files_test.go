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

func TestUploads(t *testing.T) {
	t.Parallel()
	dbtest.EachDialect(t, func(t *testing.T, s *db.Store) {
		t.Parallel()
		ctx := context.Background()
		tn := setupTenants(t, s)
		newUpload := func(expires time.Time) *domain.Upload {
			u := &domain.Upload{ID: domain.NewID(domain.PrefixUpload), OrganizationID: tn.org.ID, ProjectID: tn.prj.ID,
				Environment: domain.EnvLive, FileID: domain.NewID(domain.PrefixFile), State: domain.UploadOpen,
				ByteSize: 10 << 20, StorageKey: "uploads/x", ExpiresAt: expires, CreatedAt: now()}
			return u
		}

		t.Run("RoundTrip", func(t *testing.T) {
			multi := newUpload(now().Add(time.Hour))
			multi.Multipart, multi.PartSize, multi.PartCount, multi.StorageUploadID = true, 5<<20, 2, "s3-upload-id"
			multi.Validation = &domain.Validation{Formats: []string{"png", "pdf"}, MaxBytes: 100 << 20, MinBytes: 1}
			multi.SourceURL = "https://example.com/a.pdf"
			single := newUpload(now().Add(time.Hour))
			for _, u := range []*domain.Upload{multi, single} {
				require.NoError(t, s.CreateUpload(ctx, u))
				got, err := s.FindUploadByID(ctx, u.ID)
				require.NoError(t, err)
				require.Equal(t, u, got)
			}
			_, err := s.FindUploadByID(ctx, domain.NewID(domain.PrefixUpload))
			require.ErrorIs(t, err, domain.ErrNotFound)
		})
		t.Run("Transition", func(t *testing.T) {
			u := newUpload(now().Add(time.Hour))
			require.NoError(t, s.CreateUpload(ctx, u))
			at := now()
			ok, err := s.TransitionUpload(ctx, u.ID, domain.UploadOpen, domain.UploadCompleted, at)
			require.NoError(t, err)
			require.True(t, ok)
			ok, err = s.TransitionUpload(ctx, u.ID, domain.UploadOpen, domain.UploadAborted, at)
			require.NoError(t, err)
			require.False(t, ok, "no longer open")
			got, err := s.FindUploadByID(ctx, u.ID)
			require.NoError(t, err)
			require.Equal(t, domain.UploadCompleted, got.State)
			require.Equal(t, at, *got.CompletedAt)

			aborted := newUpload(now().Add(time.Hour))
			require.NoError(t, s.CreateUpload(ctx, aborted))
			ok, err = s.TransitionUpload(ctx, aborted.ID, domain.UploadOpen, domain.UploadAborted, at)
			require.NoError(t, err)
			require.True(t, ok)
			got, err = s.FindUploadByID(ctx, aborted.ID)
			require.NoError(t, err)
			require.Equal(t, domain.UploadAborted, got.State)
			require.Nil(t, got.CompletedAt, "only completion sets completed_at")

			ok, err = s.TransitionUpload(ctx, "upl_missing", domain.UploadOpen, domain.UploadAborted, at)
			require.NoError(t, err)
			require.False(t, ok)
		})
		t.Run("Expired", func(t *testing.T) {
			base := now().Add(-time.Hour)
			late := newUpload(base.Add(2 * time.Minute))
			early := newUpload(base.Add(time.Minute))
			future := newUpload(now().Add(time.Hour))
			done := newUpload(base)
			for _, u := range []*domain.Upload{late, early, future, done} {
				require.NoError(t, s.CreateUpload(ctx, u))
			}
			ok, err := s.TransitionUpload(ctx, done.ID, domain.UploadOpen, domain.UploadCompleted, now())
			require.NoError(t, err)
			require.True(t, ok)

			got, err := s.FindExpiredUploads(ctx, now(), 10)
			require.NoError(t, err)
			require.Equal(t, []string{early.ID, late.ID}, ids(got, uploadID), "open only, longest expired first")
			got, err = s.FindExpiredUploads(ctx, now(), 1)
			require.NoError(t, err)
			require.Equal(t, []string{early.ID}, ids(got, uploadID))
			got, err = s.FindExpiredUploads(ctx, early.ExpiresAt, 10)
			require.NoError(t, err)
			require.Equal(t, []string{early.ID}, ids(got, uploadID), "expires_at <= now")
		})
	})
}

func TestFiles(t *testing.T) {
	t.Parallel()
	dbtest.EachDialect(t, func(t *testing.T, s *db.Store) {
		t.Parallel()
		ctx := context.Background()
		tn := setupTenants(t, s)
		create := func(f *domain.File) *domain.File {
			require.NoError(t, s.CreateFile(ctx, f))
			return f
		}

		t.Run("RoundTrip", func(t *testing.T) {
			ready := create(newFile(tn.prj, domain.EnvLive))
			ready.ExpiresAt = nil
			rejected := newFile(tn.prj, domain.EnvLive)
			rejected.Status, rejected.ReadyAt, rejected.SHA256 = domain.FileRejected, nil, ""
			rejected.Findings = []domain.Finding{{Code: "format", Message: "not allowed"}}
			rejected.ExpiresAt = ptr(now().Add(24 * time.Hour))
			create(rejected)
			for _, f := range []*domain.File{ready, rejected} {
				got, err := s.FindFileByID(ctx, f.ID)
				require.NoError(t, err)
				require.Equal(t, f, got)
			}
			_, err := s.FindFileByID(ctx, domain.NewID(domain.PrefixFile))
			require.ErrorIs(t, err, domain.ErrNotFound)
		})
		t.Run("UpdateIsConditional", func(t *testing.T) {
			f := newFile(tn.prj, domain.EnvLive)
			f.Status, f.ReadyAt, f.SHA256 = domain.FileAwaitingUpload, nil, ""
			create(f)
			upd := *f
			upd.Status, upd.ByteSize, upd.SHA256, upd.ReadyAt = domain.FileReady, 99, "abc", ptr(now())
			upd.DuplicateOf = domain.NewID(domain.PrefixFile)
			ok, err := s.UpdateFile(ctx, &upd, domain.FileAwaitingUpload)
			require.NoError(t, err)
			require.True(t, ok)
			got, err := s.FindFileByID(ctx, f.ID)
			require.NoError(t, err)
			require.Equal(t, &upd, got)

			stale := upd
			stale.Status = domain.FileRejected
			ok, err = s.UpdateFile(ctx, &stale, domain.FileAwaitingUpload)
			require.NoError(t, err)
			require.False(t, ok, "the status moved on")
			got, err = s.FindFileByID(ctx, f.ID)
			require.NoError(t, err)
			require.Equal(t, domain.FileReady, got.Status)
		})
		t.Run("DeletedStillFoundByID", func(t *testing.T) {
			f := newFile(tn.prj, domain.EnvLive)
			f.Status, f.DeletedAt = domain.FileDeleted, ptr(now())
			create(f)
			got, err := s.FindFileByID(ctx, f.ID)
			require.NoError(t, err)
			require.Equal(t, domain.FileDeleted, got.Status)
		})
		t.Run("OldestReadyByHash", func(t *testing.T) {
			prj := createProject(t, s, tn.org.ID, "dedup")
			hash := "1111111111111111111111111111111111111111111111111111111111111111"
			mk := func(status string, created time.Time) *domain.File {
				f := newFile(prj, domain.EnvLive)
				f.Status, f.SHA256, f.CreatedAt = status, hash, created
				return create(f)
			}
			base := now().Add(-time.Hour)
			second := mk(domain.FileReady, base.Add(2*time.Minute))
			first := mk(domain.FileReady, base.Add(time.Minute))
			mk(domain.FileRejected, base)
			mk(domain.FileDeleted, base)
			elsewhere := newFile(tn.prj, domain.EnvLive)
			elsewhere.SHA256, elsewhere.CreatedAt = hash, base.Add(-time.Hour)
			create(elsewhere)

			got, err := s.FindOldestReadyFileByHash(ctx, prj.ID, hash, "")
			require.NoError(t, err)
			require.Equal(t, first.ID, got.ID)
			got, err = s.FindOldestReadyFileByHash(ctx, prj.ID, hash, first.ID)
			require.NoError(t, err)
			require.Equal(t, second.ID, got.ID)
			_, err = s.FindOldestReadyFileByHash(ctx, prj.ID, "2222", "")
			require.ErrorIs(t, err, domain.ErrNotFound)
		})
	})
}

func TestFileList(t *testing.T) {
	t.Parallel()
	dbtest.EachDialect(t, func(t *testing.T, s *db.Store) {
		t.Parallel()
		ctx := context.Background()
		tn := setupTenants(t, s)
		var want []string // newest first
		for i := range 7 {
			f := newFile(tn.prj, domain.EnvLive)
			f.Filename = label(i)
			require.NoError(t, s.CreateFile(ctx, f))
			want = append([]string{f.ID}, want...)
		}
		deleted := newFile(tn.prj, domain.EnvLive)
		deleted.Status = domain.FileDeleted
		other := []*domain.File{deleted, newFile(tn.prj, domain.EnvTest), newFile(tn.prj2, domain.EnvLive), newFile(tn.oprj, domain.EnvLive)}
		for _, f := range other {
			require.NoError(t, s.CreateFile(ctx, f))
		}
		filter := domain.FileFilter{Scope: domain.Scope{OrganizationID: tn.org.ID, ProjectID: tn.prj.ID}, Environment: domain.EnvLive}

		var got []string
		cursor := ""
		for pages := 0; ; pages++ {
			require.Less(t, pages, 4)
			filter.Page = domain.Page{Limit: 3, StartingAfter: cursor}
			page, more, err := s.FindFiles(ctx, filter)
			require.NoError(t, err)
			got = append(got, ids(page, fileID)...)
			if !more {
				require.Len(t, page, 1)
				break
			}
			require.Len(t, page, 3)
			cursor = page[len(page)-1].ID
		}
		require.Equal(t, want, got, "every live file of the project once, newest first, deleted ones left out")

		filter.Page = domain.Page{Limit: 7}
		page, more, err := s.FindFiles(ctx, filter)
		require.NoError(t, err)
		require.False(t, more, "exactly a full page")
		require.Len(t, page, 7)

		filter.Page = domain.Page{} // the default page size
		page, _, err = s.FindFiles(ctx, filter)
		require.NoError(t, err)
		require.Len(t, page, 7)

		all, _, err := s.FindFiles(ctx, domain.FileFilter{Scope: domain.Scope{OrganizationID: tn.org.ID}, Environment: domain.EnvLive})
		require.NoError(t, err)
		require.Equal(t, append([]string{other[2].ID}, want...), ids(all, fileID), "every project of the organization")

		foreign, _, err := s.FindFiles(ctx, domain.FileFilter{Scope: domain.Scope{OrganizationID: tn.other.ID, ProjectID: tn.prj.ID}})
		require.NoError(t, err)
		require.Empty(t, foreign)
	})
}

func TestArtifacts(t *testing.T) {
	t.Parallel()
	dbtest.EachDialect(t, func(t *testing.T, s *db.Store) {
		t.Parallel()
		ctx := context.Background()
		tn := setupTenants(t, s)
		file, job := domain.NewID(domain.PrefixFile), domain.NewID(domain.PrefixJob)
		mk := func(fileID, jobID string) *domain.Artifact {
			a := &domain.Artifact{ID: domain.NewID(domain.PrefixArtifact), OrganizationID: tn.org.ID, FileID: fileID, JobID: jobID,
				Name: "out.webp", MIMEType: "image/webp", ByteSize: 123, SHA256: "abc", StorageKey: "artifacts/x", CreatedAt: now()}
			require.NoError(t, s.CreateArtifact(ctx, a))
			return a
		}
		a1 := mk(file, job)
		a2 := mk(file, job)
		a3 := mk(file, domain.NewID(domain.PrefixJob))
		mk(domain.NewID(domain.PrefixFile), domain.NewID(domain.PrefixJob))

		got, err := s.FindArtifactByID(ctx, a1.ID)
		require.NoError(t, err)
		require.Equal(t, a1, got)
		_, err = s.FindArtifactByID(ctx, domain.NewID(domain.PrefixArtifact))
		require.ErrorIs(t, err, domain.ErrNotFound)

		byFile, err := s.FindArtifactsByFile(ctx, file)
		require.NoError(t, err)
		require.Equal(t, []string{a1.ID, a2.ID, a3.ID}, ids(byFile, artifactID))
		byJob, err := s.FindArtifactsByJob(ctx, job)
		require.NoError(t, err)
		require.Equal(t, []*domain.Artifact{a1, a2}, byJob)
		none, err := s.FindArtifactsByJob(ctx, "job_none")
		require.NoError(t, err)
		require.NotNil(t, none)
		require.Empty(t, none)
	})
}

// TestReadsOfMany: the files and artifacts of many ids in one read each, on both
// dialects; ids with nothing give nothing.
func TestReadsOfMany(t *testing.T) {
	t.Parallel()
	dbtest.EachDialect(t, func(t *testing.T, s *db.Store) {
		t.Parallel()
		ctx := context.Background()
		tn := setupTenants(t, s)
		f1, f2, f3 := newFile(tn.prj, domain.EnvLive), newFile(tn.prj, domain.EnvLive), newFile(tn.oprj, domain.EnvLive)
		f2.Status = domain.FileDeleted
		for _, f := range []*domain.File{f1, f2, f3} {
			require.NoError(t, s.CreateFile(ctx, f))
		}
		files, err := s.FindFilesByIDs(ctx, []string{f1.ID, f2.ID, domain.NewID(domain.PrefixFile)})
		require.NoError(t, err)
		require.ElementsMatch(t, []string{f1.ID, f2.ID}, ids(files, fileID), "whatever their status; the caller decides")
		none, err := s.FindFilesByIDs(ctx, nil)
		require.NoError(t, err)
		require.Empty(t, none)

		j1, j2 := domain.NewID(domain.PrefixJob), domain.NewID(domain.PrefixJob)
		mk := func(fileID, jobID string) *domain.Artifact {
			a := &domain.Artifact{ID: domain.NewID(domain.PrefixArtifact), OrganizationID: tn.org.ID, FileID: fileID, JobID: jobID,
				Name: "out.json", MIMEType: "application/json", ByteSize: 1, SHA256: "00", StorageKey: "x", CreatedAt: now()}
			require.NoError(t, s.CreateArtifact(ctx, a))
			return a
		}
		a1, a2, a3 := mk(f1.ID, j1), mk(f1.ID, j2), mk(f3.ID, j2)
		mk(domain.NewID(domain.PrefixFile), domain.NewID(domain.PrefixJob))
		byFiles, err := s.FindArtifactsByFiles(ctx, []string{f1.ID, f3.ID}, 0)
		require.NoError(t, err)
		require.Equal(t, []string{a1.ID, a2.ID, a3.ID}, ids(byFiles, artifactID))
		byJobs, err := s.FindArtifactsByJobs(ctx, []string{j2, "job_none"}, 0)
		require.NoError(t, err)
		require.Equal(t, []*domain.Artifact{a2, a3}, byJobs)
		byIDs, err := s.FindArtifactsByIDs(ctx, []string{a3.ID, a1.ID, domain.NewID(domain.PrefixArtifact)})
		require.NoError(t, err)
		require.ElementsMatch(t, []*domain.Artifact{a1, a3}, byIDs, "of any file and organization")
		byIDs, err = s.FindArtifactsByIDs(ctx, nil)
		require.NoError(t, err)
		require.Empty(t, byIDs)
		empty, err := s.FindArtifactsByJobs(ctx, nil, 0)
		require.NoError(t, err)
		require.Empty(t, empty)

		// The first few of each job: a preview costs its rows, not the job's.
		a4, a5 := mk(f1.ID, j1), mk(f1.ID, j1)
		first, err := s.FindArtifactsByJobs(ctx, []string{j1, j2}, 2)
		require.NoError(t, err)
		require.Equal(t, []*domain.Artifact{a1, a2, a3, a4}, first)
		// And of each file.
		firstOfFiles, err := s.FindArtifactsByFiles(ctx, []string{f1.ID, f3.ID}, 2)
		require.NoError(t, err)
		require.Equal(t, []string{a1.ID, a2.ID, a3.ID}, ids(firstOfFiles, artifactID))

		// A job's artifacts a page at a time, oldest first, within the organization.
		page, more, err := s.FindArtifacts(ctx, domain.ArtifactFilter{OrganizationID: tn.org.ID, JobID: j1, Page: domain.Page{Limit: 2}})
		require.NoError(t, err)
		require.True(t, more)
		require.Equal(t, []*domain.Artifact{a1, a4}, page)
		page, more, err = s.FindArtifacts(ctx, domain.ArtifactFilter{OrganizationID: tn.org.ID, JobID: j1, Page: domain.Page{Limit: 2, StartingAfter: a4.ID}})
		require.NoError(t, err)
		require.False(t, more)
		require.Equal(t, []*domain.Artifact{a5}, page)
		page, _, err = s.FindArtifacts(ctx, domain.ArtifactFilter{OrganizationID: tn.other.ID, JobID: j1, Page: domain.Page{Limit: 2}})
		require.NoError(t, err)
		require.Empty(t, page, "another organization's job has none")
	})
}
