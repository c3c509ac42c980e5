package domain_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/db"
	"github.com/filemill/filemill/db/dbtest"
	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/domain/eventually"
	"github.com/filemill/filemill/storage"
	"github.com/filemill/filemill/storage/miniotest"
)

// setClock is a clock the test sets to a moment.
type setClock struct {
	mu sync.Mutex
	at time.Time
}

func (c *setClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.at
}

func (c *setClock) set(at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.at = at.UTC()
}

// watchedBlobs is a real store that counts its listings and fails the deletes of the
// keys in failDelete, once each.
type watchedBlobs struct {
	domain.Blobs
	lists      atomic.Int32
	mu         sync.Mutex
	failDelete map[string]bool
}

func (w *watchedBlobs) List(ctx context.Context, prefix, after string, limit int) ([]domain.StoredObject, error) {
	w.lists.Add(1)
	return w.Blobs.List(ctx, prefix, after, limit)
}

func (w *watchedBlobs) Delete(ctx context.Context, key string) error {
	w.mu.Lock()
	fail := w.failDelete[key]
	delete(w.failDelete, key)
	w.mu.Unlock()
	if fail {
		return errors.New("storage unreachable")
	}
	return w.Blobs.Delete(ctx, key)
}

// newSweepBlobs returns an empty store: a local directory, or a bucket of its own on
// the shared MinIO server.
func newSweepBlobs(t *testing.T, backend string) domain.Blobs {
	t.Helper()
	if backend == "s3" {
		endpoint, access, secret := miniotest.Start(t)
		b := make([]byte, 6)
		_, _ = rand.Read(b)
		cfg, err := storage.ParseS3URL(fmt.Sprintf("s3://%s:%s@%s/legacy-%s?secure=false", access, secret, endpoint, hex.EncodeToString(b)))
		require.NoError(t, err)
		s3, err := storage.NewS3(context.Background(), cfg)
		require.NoError(t, err)
		return s3
	}
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	local, err := storage.NewLocal(storage.LocalConfig{Dir: t.TempDir(), PublicURL: "http://127.0.0.1:9", Secret: secret})
	require.NoError(t, err)
	return local
}

// TestSweepLegacyArtifacts: what attempts stored and never recorded under the layout
// before artifacts were stored under their job is removed once it is grace old; what a
// row records, what is recent and every other key stay; a completed sweep lists nothing
// again.
func TestSweepLegacyArtifacts(t *testing.T) {
	t.Parallel()
	const grace = 24 * time.Hour
	// Pages of two: a pass takes several, and a run goes on from one to the next.
	t.Cleanup(domain.SetLegacyListPage(2))
	for _, backend := range []string{"local", "s3"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			dbtest.EachDialect(t, func(t *testing.T, s *db.Store) {
				t.Parallel()
				testSweepLegacyArtifacts(t, s, &watchedBlobs{Blobs: newSweepBlobs(t, backend)}, grace)
			})
		})
	}
}

func testSweepLegacyArtifacts(t *testing.T, s *db.Store, blobs *watchedBlobs, grace time.Duration) {
	ctx := context.Background()
	clock := &setClock{}
	svc := domain.NewServices(domain.DefaultConfig(), domain.Deps{Store: s, Blobs: blobs, Clock: clock})
	sweep := func(wantRemoved int) {
		t.Helper()
		blobs.lists.Store(0)
		n, err := svc.Files.SweepLegacyArtifacts(ctx, grace)
		require.NoError(t, err)
		require.Equal(t, wantRemoved, n, "objects removed")
	}
	put := func(key string) {
		t.Helper()
		require.NoError(t, blobs.Put(ctx, key, bytes.NewReader([]byte("bytes")), 5))
	}
	// stored tells when each object was written, by the store's clock.
	stored := func() map[string]time.Time {
		t.Helper()
		objs, err := blobs.Blobs.List(ctx, "", "", 1000)
		require.NoError(t, err)
		at := map[string]time.Time{}
		for _, o := range objs {
			at[o.Key] = o.ModifiedAt
		}
		return at
	}
	findTask := func() *domain.MaintenanceTask {
		t.Helper()
		task, err := s.FindMaintenanceTask(ctx, domain.TaskLegacyArtifacts)
		require.NoError(t, err)
		return task
	}

	org, prj, file := domain.NewID(domain.PrefixOrganization), domain.NewID(domain.PrefixProject), domain.NewID(domain.PrefixFile)
	dir := org + "/" + prj + "/" + file + "/artifacts/"
	recorded := &domain.Artifact{ID: domain.NewID(domain.PrefixArtifact), OrganizationID: org, FileID: file,
		JobID: domain.NewID(domain.PrefixJob), Name: "out.png", MIMEType: "image/png", ByteSize: 5, SHA256: "00",
		CreatedAt: time.Now().UTC().Truncate(time.Microsecond)}
	recorded.StorageKey = dir + recorded.ID
	require.NoError(t, s.CreateArtifact(ctx, recorded))
	// Never recorded; ids minted later sort later, so the listing meets failing first.
	failing := dir + domain.NewID(domain.PrefixArtifact)
	lost := dir + domain.NewID(domain.PrefixArtifact)
	kept := []string{
		recorded.StorageKey,
		dir + domain.NewID(domain.PrefixJob) + "/" + domain.NewID(domain.PrefixArtifact), // the job's layout, unrecorded
		dir + "notes", // not an artifact's
		org + "/" + prj + "/" + file + "/original", // the file's
		"elsewhere/" + domain.NewID(domain.PrefixArtifact),
	}
	for _, k := range append([]string{failing, lost}, kept...) {
		put(k)
	}
	var oldest time.Time // the newest of the objects the first pass finds grace old
	for _, at := range stored() {
		if at.After(oldest) {
			oldest = at
		}
	}
	oldest = oldest.Truncate(time.Microsecond).Add(time.Microsecond) // as a clock the databases keep reads
	// Stored after them by the store's clock: still recent when they are grace old.
	recent := dir + domain.NewID(domain.PrefixArtifact)
	recentAt := eventually.Value(t, "an object stored after the others", func() (time.Time, bool) {
		put(recent)
		at := stored()[recent]
		return at, at.After(oldest.Add(time.Millisecond))
	})

	// The first run dates the first pass, grace later, and lists nothing.
	clock.set(oldest)
	sweep(0)
	require.Zero(t, blobs.lists.Load())
	task := findTask()
	require.Equal(t, oldest.Add(grace), task.NotBefore)
	require.Nil(t, task.CompletedAt)
	clock.set(task.NotBefore.Add(-time.Microsecond))
	sweep(0)
	require.Zero(t, blobs.lists.Load(), "not before the first pass's date")

	// A run interrupted (a delete that fails) keeps the pages it finished; the next run
	// does the page it was on again.
	clock.set(task.NotBefore)
	blobs.failDelete = map[string]bool{failing: true}
	n, err := svc.Files.SweepLegacyArtifacts(ctx, grace)
	require.ErrorContains(t, err, "storage unreachable")
	require.Zero(t, n)
	task = findTask()
	require.NotEmpty(t, task.ResumeAfter, "the pages before are done")
	require.Less(t, task.ResumeAfter, failing, "the page it was on is not")
	require.Nil(t, task.CompletedAt)
	sweep(2)

	at := stored()
	for _, k := range kept {
		require.Contains(t, at, k, "kept")
	}
	require.NotContains(t, at, failing)
	require.NotContains(t, at, lost)
	require.Contains(t, at, recent, "stored within grace")
	task = findTask()
	require.Nil(t, task.CompletedAt, "a pass that met a recent object does not complete")
	next := recentAt.Add(grace).Truncate(time.Second).Add(time.Second)
	require.Equal(t, next, task.NotBefore, "the next pass once it is grace old")
	require.Empty(t, task.ResumeAfter)
	require.Nil(t, task.HeldUntil)
	require.EqualValues(t, 2, task.Removed)

	clock.set(next.Add(-time.Microsecond))
	sweep(0)
	require.Zero(t, blobs.lists.Load(), "not before the next pass's date")
	clock.set(next)
	sweep(1)
	require.Positive(t, blobs.lists.Load())
	at = stored()
	require.NotContains(t, at, recent)
	require.Len(t, at, len(kept))
	task = findTask()
	require.NotNil(t, task.CompletedAt)
	require.EqualValues(t, 3, task.Removed)

	// Completed: nothing is listed again, however much later.
	late := dir + domain.NewID(domain.PrefixArtifact)
	put(late)
	clock.set(next.Add(10 * grace))
	sweep(0)
	require.Zero(t, blobs.lists.Load())
	require.Contains(t, stored(), late)
}
