package db

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/domain/eventually"
)

// recordingWriter records the groups the admission batcher writes. The first write on an
// account blocks until release is closed, so the test can line others up behind it.
type recordingWriter struct {
	mu      sync.Mutex
	groups  [][]string // job ids per write
	started chan struct{}
	release chan struct{}
	refuse  map[string]bool // a write containing one of these is refused
	fail    error           // when set, every write fails with it
}

func newRecordingWriter() *recordingWriter {
	return &recordingWriter{started: make(chan struct{}, 100), release: make(chan struct{}), refuse: map[string]bool{}}
}

func (w *recordingWriter) write(ctx context.Context, as []*domain.Admission) error {
	var ids []string
	refused := false
	for _, a := range as {
		for _, j := range a.Jobs {
			ids = append(ids, j.ID)
			refused = refused || w.refuse[j.ID]
		}
	}
	w.mu.Lock()
	first := len(w.groups) == 0
	w.groups = append(w.groups, ids)
	w.mu.Unlock()
	w.started <- struct{}{}
	if first {
		<-w.release
	}
	if w.fail != nil {
		return w.fail
	}
	if refused {
		return domain.ErrInsufficientCredits
	}
	return nil
}

func jobsAdmission(acct string, n int) *domain.Admission {
	a := &domain.Admission{AccountID: acct}
	for range n {
		a.Jobs = append(a.Jobs, &domain.Job{ID: domain.NewID(domain.PrefixJob)})
	}
	return a
}

// admitAll queues each admission from its own goroutine once the queue's first write
// has started, and returns their outcomes by job id of their first job.
func admitAll(t *testing.T, s *Store, w *recordingWriter, first *domain.Admission, rest []*domain.Admission) map[string]error {
	t.Helper()
	out := map[string]error{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	run := func(a *domain.Admission) {
		defer wg.Done()
		err := s.AdmitJobs(context.Background(), a)
		mu.Lock()
		out[a.Jobs[0].ID] = err
		mu.Unlock()
	}
	wg.Add(1)
	go run(first)
	<-w.started
	for _, a := range rest {
		wg.Add(1)
		go run(a)
	}
	// Wait until every one of them is queued behind the blocked write.
	eventually.True(t, "the condition to hold", func() bool {
		s.admissions.mu.Lock()
		defer s.admissions.mu.Unlock()
		return len(s.admissions.waiting[first.AccountID]) == len(rest)
	})
	close(w.release)
	wg.Wait()
	return out
}

func TestAdmissionBatcher(t *testing.T) {
	t.Parallel()

	t.Run("WritesThoseWaitingTogether", func(t *testing.T) {
		t.Parallel()
		w := newRecordingWriter()
		q := &Store{admissions: newAdmissionBatcher(w.write)}
		first := jobsAdmission("acct_a", 1)
		var rest []*domain.Admission
		for range 5 {
			rest = append(rest, jobsAdmission("acct_a", 2))
		}
		for _, err := range admitAll(t, q, w, first, rest) {
			require.NoError(t, err)
		}
		require.Len(t, w.groups, 2, "the first alone, then the five that waited, at once")
		require.Len(t, w.groups[1], 10)
		eventually.True(t, "an idle batcher keeps nothing", func() bool {
			q.admissions.mu.Lock()
			defer q.admissions.mu.Unlock()
			return len(q.admissions.waiting) == 0
		})
	})

	t.Run("RefusedGroupIsWrittenOneByOne", func(t *testing.T) {
		t.Parallel()
		w := newRecordingWriter()
		q := &Store{admissions: newAdmissionBatcher(w.write)}
		first := jobsAdmission("acct_a", 1)
		rest := []*domain.Admission{jobsAdmission("acct_a", 1), jobsAdmission("acct_a", 1), jobsAdmission("acct_a", 1)}
		w.refuse[rest[1].Jobs[0].ID] = true
		got := admitAll(t, q, w, first, rest)
		require.NoError(t, got[first.Jobs[0].ID])
		require.NoError(t, got[rest[0].Jobs[0].ID])
		require.ErrorIs(t, got[rest[1].Jobs[0].ID], domain.ErrInsufficientCredits, "only the member refused on its own")
		require.NoError(t, got[rest[2].Jobs[0].ID])
		require.Len(t, w.groups, 1+1+3, "the first, the refused group, then each member alone")
	})

	t.Run("FailedGroupIsNotRetriedMemberByMember", func(t *testing.T) {
		t.Parallel()
		w := newRecordingWriter()
		w.fail = errors.New("connection refused")
		q := &Store{admissions: newAdmissionBatcher(w.write)}
		first := jobsAdmission("acct_a", 1)
		rest := []*domain.Admission{jobsAdmission("acct_a", 1), jobsAdmission("acct_a", 1), jobsAdmission("acct_a", 1)}
		for _, err := range admitAll(t, q, w, first, rest) {
			require.ErrorIs(t, err, w.fail)
		}
		require.Len(t, w.groups, 2, "the first alone, then the three together, once")
	})

	t.Run("GroupsStayUnderTheJobBound", func(t *testing.T) {
		t.Parallel()
		w := newRecordingWriter()
		q := &Store{admissions: newAdmissionBatcher(w.write)}
		first := jobsAdmission("acct_a", 1)
		var rest []*domain.Admission
		for range 6 {
			rest = append(rest, jobsAdmission("acct_a", 100))
		}
		admitAll(t, q, w, first, rest)
		require.Len(t, w.groups, 4, "600 waiting jobs in writes of at most 256: 200, 200, 200")
		for _, g := range w.groups {
			require.LessOrEqual(t, len(g), maxAdmissionJobs)
		}
	})

	t.Run("AccountsDoNotWaitForEachOther", func(t *testing.T) {
		t.Parallel()
		w := newRecordingWriter()
		q := &Store{admissions: newAdmissionBatcher(w.write)}
		blocked := make(chan error)
		go func() { blocked <- q.AdmitJobs(context.Background(), jobsAdmission("acct_a", 1)) }()
		<-w.started
		require.NoError(t, q.AdmitJobs(context.Background(), jobsAdmission("acct_b", 1)), "written while acct_a's write is blocked")
		close(w.release)
		require.NoError(t, <-blocked)
	})

	t.Run("AnAdmissionWithoutAccountIsRefused", func(t *testing.T) {
		t.Parallel()
		s := &Store{admissions: newAdmissionBatcher(func(context.Context, []*domain.Admission) error { return errors.New("not reached") })}
		require.ErrorContains(t, s.AdmitJobs(context.Background(), &domain.Admission{}), "no credit account")
	})
}
