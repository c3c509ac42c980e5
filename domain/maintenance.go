package domain

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// MaintenanceTask is the progress of a once-only maintenance task (MaintenanceStore).
// A task works in passes over something too large for one run; a pass that leaves
// nothing behind completes it.
type MaintenanceTask struct {
	Name string `bun:"name,pk"`
	// ResumeAfter is where the current pass goes on: the last key it dealt with; "" at
	// the start of a pass.
	ResumeAfter string `bun:"resume_after,notnull"`
	// NotBefore is when the task may next work: a task waits before its first pass, and
	// before a pass that must see again what the last one left alone.
	NotBefore time.Time `bun:"not_before,notnull"`
	// HeldUntil is, while a pass runs, until when what it left alone for now must wait:
	// the next pass starts then. Nil when the pass has left nothing so far.
	HeldUntil *time.Time `bun:"held_until"`
	// Removed counts what the task removed, over every pass.
	Removed int64 `bun:"removed,notnull"`
	// Steps counts the updates: an update applies only over the step it read, so two
	// runs at once never both move the task on.
	Steps       int64      `bun:"steps,notnull"`
	CompletedAt *time.Time `bun:"completed_at"`
	UpdatedAt   time.Time  `bun:"updated_at,notnull"`
}

// Names of the maintenance tasks.
const (
	// TaskLegacyArtifacts is SweepLegacyArtifacts.
	TaskLegacyArtifacts = "legacy_artifacts"
)

// LegacyArtifactGrace is how old an object must be before SweepLegacyArtifacts may
// remove it, and how long after its first run the first pass waits: far longer than any
// attempt runs between storing an artifact and recording it, and than a rolling upgrade
// leaves processes of the old version running.
const LegacyArtifactGrace = 24 * time.Hour

// legacyRunTime bounds one run, which holds one of the few slots the sweeps share; the
// next run goes on where it stopped.
const legacyRunTime = 30 * time.Second

// legacyListPage is how many objects one listing reads; tests page through a few.
var legacyListPage = 1000

// legacyArtifactID returns the artifact a key of the layout before artifacts were
// stored under their job names: <org>/<project>/<file>/artifacts/<artifact>.
func legacyArtifactID(key string) (string, bool) {
	seg := strings.Split(key, "/")
	if len(seg) != 5 || seg[3] != "artifacts" || !ValidID(PrefixOrganization, seg[0]) ||
		!ValidID(PrefixProject, seg[1]) || !ValidID(PrefixFile, seg[2]) || !ValidID(PrefixArtifact, seg[4]) {
		return "", false
	}
	return seg[4], true
}

// SweepLegacyArtifacts removes, once, what attempts of the version before artifacts
// were stored under their job (ArtifactKey) stored and never recorded: such objects sit
// directly under their file's artifacts/, where no job's sweep (sweepLostArtifacts)
// looks. It lists the whole store, a page at a time, each run going on where the last
// stopped, and removes an object of that layout whose artifact has no row, if it was
// written more than grace ago. Objects of another shape are never touched, nor one whose
// artifact has a row (a recorded artifact of that layout is served as any other).
//
// Its first run only dates the first pass, grace later: processes of the old version
// still running during a rolling upgrade have that long to record what they store. A
// pass that met an object of that layout written within grace before it (an old-version
// process is still at work) does not complete the task: another pass starts once that
// object is grace old. A completed task lists nothing again. It returns how many objects
// it removed; running it in several processes at once is harmless.
func (s *Files) SweepLegacyArtifacts(ctx context.Context, grace time.Duration) (int, error) {
	if s.Blobs == nil {
		return 0, nil
	}
	t, err := s.Store.FindMaintenanceTask(ctx, TaskLegacyArtifacts)
	if errors.Is(err, ErrNotFound) {
		now := s.Clock.Now()
		t = &MaintenanceTask{Name: TaskLegacyArtifacts, NotBefore: now.Add(grace), UpdatedAt: now}
		if err := s.Store.CreateMaintenanceTask(ctx, t); err != nil && !errors.Is(err, ErrDuplicate) {
			return 0, err
		}
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	removed := 0
	for start := time.Now(); time.Since(start) < legacyRunTime; {
		if t.CompletedAt != nil || s.Clock.Now().Before(t.NotBefore) {
			break
		}
		n, ok, err := s.sweepLegacyPage(ctx, t, grace)
		removed += n
		if err != nil || !ok {
			return removed, err
		}
	}
	return removed, nil
}

// sweepLegacyPage deals with one page of the listing and moves t on past it; false when
// another run moved the task on first.
func (s *Files) sweepLegacyPage(ctx context.Context, t *MaintenanceTask, grace time.Duration) (int, bool, error) {
	objs, err := s.Blobs.List(ctx, "", t.ResumeAfter, legacyListPage)
	if err != nil {
		return 0, false, fmt.Errorf("list the stored objects: %w", err)
	}
	type legacyObject struct {
		StoredObject
		artifactID string
	}
	var legacy []legacyObject
	var ids []string
	for _, o := range objs {
		if id, ok := legacyArtifactID(o.Key); ok {
			legacy = append(legacy, legacyObject{o, id})
			ids = append(ids, id)
		}
	}
	recorded := map[string]bool{}
	if len(ids) > 0 {
		arts, err := s.Store.FindArtifactsByIDs(ctx, ids)
		if err != nil {
			return 0, false, err
		}
		// The key ends with the artifact's id (ArtifactKey), so the row that can name
		// it is that artifact's; any row of that id keeps the object.
		for _, a := range arts {
			recorded[a.ID] = true
		}
	}
	now := s.Clock.Now()
	next := *t
	removed := 0
	for _, o := range legacy {
		if o.ModifiedAt.After(now.Add(-grace)) {
			// Written within grace: the next pass sees it again once it is grace old, to
			// the second after, past the rounding of any store's or database's clock.
			hold := o.ModifiedAt.Add(grace).Truncate(time.Second).Add(time.Second)
			if next.HeldUntil == nil || hold.After(*next.HeldUntil) {
				next.HeldUntil = &hold
			}
			continue
		}
		if recorded[o.artifactID] {
			continue
		}
		if err := s.Blobs.Delete(ctx, o.Key); err != nil {
			return removed, false, fmt.Errorf("delete %s: %w", o.Key, err)
		}
		removed++
	}
	next.Removed += int64(removed)
	next.Steps++
	next.UpdatedAt = now
	ended := len(objs) < legacyListPage // the end of the store: the pass is over
	if !ended {
		next.ResumeAfter = objs[len(objs)-1].Key
	} else {
		next.ResumeAfter = ""
		if next.HeldUntil == nil {
			next.CompletedAt = &now
		} else {
			next.NotBefore, next.HeldUntil = *next.HeldUntil, nil
		}
	}
	ok, err := s.Store.UpdateMaintenanceTask(ctx, &next, t.Steps)
	if err != nil || !ok {
		return removed, false, err
	}
	*t = next
	if ended {
		s.logLegacyPass(ctx, t)
	}
	return removed, true, nil
}

func (s *Files) logLegacyPass(ctx context.Context, t *MaintenanceTask) {
	if s.Log == nil {
		return
	}
	if t.CompletedAt != nil {
		s.Log.InfoContext(ctx, "sweep of artifacts stored under the old layout completed", "removed", t.Removed)
		return
	}
	s.Log.InfoContext(ctx, "sweep of artifacts stored under the old layout met recent ones: another pass will follow",
		"removed", t.Removed, "next_pass_at", t.NotBefore)
}
