package db_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/db"
	"github.com/filemill/filemill/db/dbtest"
	"github.com/filemill/filemill/domain"
)

func TestEvents(t *testing.T) {
	t.Parallel()
	dbtest.EachDialect(t, func(t *testing.T, s *db.Store) {
		t.Parallel()
		ctx := context.Background()
		tn := setupTenants(t, s)
		file := domain.NewID(domain.PrefixFile)
		newEvent := func(org *domain.Organization, prj *domain.Project, subjectID, fileID, typ string) *domain.Event {
			e := &domain.Event{ID: domain.NewID(domain.PrefixEvent), Type: typ, OrganizationID: org.ID, ProjectID: prj.ID,
				Environment: domain.EnvLive, SubjectID: subjectID, FileID: fileID,
				Data: json.RawMessage(`{"object":{"id":"` + subjectID + `","state":"` + typ + `"}}`), CreatedAt: now()}
			require.NoError(t, s.CreateEvent(ctx, e))
			return e
		}
		ready := newEvent(tn.org, tn.prj, file, file, domain.EventFileReady)
		job := domain.NewID(domain.PrefixJob)
		queued := newEvent(tn.org, tn.prj, job, file, domain.EventJobQueued)
		other := newEvent(tn.org, tn.prj, domain.NewID(domain.PrefixJob), domain.NewID(domain.PrefixFile), domain.EventJobQueued)
		running := newEvent(tn.org, tn.prj, job, file, domain.EventJobRunning)
		foreign := newEvent(tn.other, tn.oprj, job, file, domain.EventJobQueued) // same ids, other tenant
		all := []*domain.Event{ready, queued, other, running, foreign}

		t.Run("ByFile", func(t *testing.T) {
			got, err := s.FindEventsByFile(ctx, tn.org.ID, file, 0)
			require.NoError(t, err)
			require.Len(t, got, 3)
			for i, want := range []*domain.Event{ready, queued, running} {
				requireJSONField(t, want.Data, &got[i].Data)
				require.Equal(t, want, got[i])
			}
			// The latest two, still oldest first.
			latest, err := s.FindEventsByFile(ctx, tn.org.ID, file, 2)
			require.NoError(t, err)
			require.Equal(t, []string{queued.ID, running.ID}, ids(latest, eventID))
			got, err = s.FindEventsByFile(ctx, tn.org.ID, "file_none", 0)
			require.NoError(t, err)
			require.NotNil(t, got)
			require.Empty(t, got)
		})
		t.Run("OutboxHoldsEveryNewEvent", func(t *testing.T) {
			var claimed []*domain.Event
			require.NoError(t, s.InTx(ctx, func(tx domain.Store) error {
				var err error
				claimed, err = tx.ClaimOutbox(ctx, 100)
				return err
			}))
			require.Equal(t, ids(all, eventID), ids(claimed, eventID), "oldest first, not released: still there")
			_, err := s.ClaimOutbox(ctx, 1)
			require.Error(t, err, "a claim outside a transaction would hold no lock")
		})
		t.Run("ListNewestFirstByType", func(t *testing.T) {
			got, more, err := s.FindEvents(ctx, domain.EventFilter{Scope: domain.Scope{OrganizationID: tn.org.ID},
				Environment: domain.EnvLive, Types: []string{domain.EventJobQueued, domain.EventFileReady}, Page: domain.Page{Limit: 2}})
			require.NoError(t, err)
			require.True(t, more)
			require.Equal(t, []string{other.ID, queued.ID}, ids(got, eventID))
			got, more, err = s.FindEvents(ctx, domain.EventFilter{Scope: domain.Scope{OrganizationID: tn.org.ID},
				Environment: domain.EnvLive, Types: []string{domain.EventJobQueued, domain.EventFileReady},
				Page: domain.Page{Limit: 2, StartingAfter: queued.ID}})
			require.NoError(t, err)
			require.False(t, more)
			require.Equal(t, []string{ready.ID}, ids(got, eventID))
			got, _, err = s.FindEvents(ctx, domain.EventFilter{Scope: domain.Scope{OrganizationID: tn.org.ID},
				Environment: domain.EnvLive, Types: []string{domain.EventJobQueued}, Since: time.Now().Add(time.Hour)})
			require.NoError(t, err)
			require.Empty(t, got, "older than the window")
		})
		t.Run("NilData", func(t *testing.T) {
			e := &domain.Event{ID: domain.NewID(domain.PrefixEvent), Type: domain.EventWebhookTest, OrganizationID: tn.org.ID,
				ProjectID: tn.prj.ID, Environment: domain.EnvTest, SubjectID: "we_x", CreatedAt: now()}
			require.NoError(t, s.CreateEvent(ctx, e))
			got, err := s.FindEventByID(ctx, e.ID)
			require.NoError(t, err)
			require.JSONEq(t, "null", string(got.Data))
		})
		t.Run("InvalidJSONRefused", func(t *testing.T) {
			e := &domain.Event{ID: domain.NewID(domain.PrefixEvent), Type: domain.EventWebhookTest, OrganizationID: tn.org.ID,
				Data: json.RawMessage(`{not json`), CreatedAt: now()}
			require.Error(t, s.CreateEvent(ctx, e))
		})
	})
}

func TestWebhookEndpoints(t *testing.T) {
	t.Parallel()
	dbtest.EachDialect(t, func(t *testing.T, s *db.Store) {
		t.Parallel()
		ctx := context.Background()
		tn := setupTenants(t, s)
		create := func(p *domain.Project, env domain.Environment) *domain.WebhookEndpoint {
			e := newEndpoint(p, env)
			require.NoError(t, s.CreateWebhookEndpoint(ctx, e))
			return e
		}
		a1 := create(tn.prj, domain.EnvLive)
		a2 := create(tn.prj, domain.EnvLive)
		a3 := create(tn.prj, domain.EnvLive)
		b1 := create(tn.prj2, domain.EnvLive)
		test1 := create(tn.prj, domain.EnvTest)
		foreign := create(tn.oprj, domain.EnvLive)

		t.Run("RoundTrip", func(t *testing.T) {
			got, err := s.FindWebhookEndpointByID(ctx, a1.ID)
			require.NoError(t, err)
			require.Equal(t, a1, got)
		})
		t.Run("NilEventsComeBackEmpty", func(t *testing.T) {
			e := newEndpoint(tn.prj2, domain.EnvTest)
			e.EnabledEvents = nil
			require.NoError(t, s.CreateWebhookEndpoint(ctx, e))
			got, err := s.FindWebhookEndpointByID(ctx, e.ID)
			require.NoError(t, err)
			require.NotNil(t, got.EnabledEvents)
			require.Empty(t, got.EnabledEvents)
		})
		t.Run("ListScoping", func(t *testing.T) {
			list := func(sc domain.Scope, env domain.Environment) []string {
				t.Helper()
				got, more, err := s.FindWebhookEndpoints(ctx, domain.WebhookEndpointFilter{Scope: sc, Environment: env, Page: domain.Page{Limit: 100}})
				require.NoError(t, err)
				require.False(t, more)
				return ids(got, endpointID)
			}
			require.Equal(t, []string{a3.ID, a2.ID, a1.ID}, list(domain.Scope{OrganizationID: tn.org.ID, ProjectID: tn.prj.ID}, domain.EnvLive))
			require.Equal(t, []string{b1.ID, a3.ID, a2.ID, a1.ID}, list(domain.Scope{OrganizationID: tn.org.ID}, domain.EnvLive))
			require.Equal(t, []string{test1.ID}, list(domain.Scope{OrganizationID: tn.org.ID, ProjectID: tn.prj.ID}, domain.EnvTest))
			require.Equal(t, []string{foreign.ID}, list(domain.Scope{OrganizationID: tn.other.ID}, domain.EnvLive))
			require.Empty(t, list(domain.Scope{OrganizationID: tn.other.ID, ProjectID: tn.prj.ID}, domain.EnvLive),
				"another organization's project id gives nothing")
			_, _, err := s.FindWebhookEndpoints(ctx, domain.WebhookEndpointFilter{})
			require.Error(t, err)
		})
		t.Run("Pages", func(t *testing.T) {
			sc := domain.Scope{OrganizationID: tn.org.ID, ProjectID: tn.prj.ID}
			page, more, err := s.FindWebhookEndpoints(ctx, domain.WebhookEndpointFilter{Scope: sc, Environment: domain.EnvLive, Page: domain.Page{Limit: 2}})
			require.NoError(t, err)
			require.True(t, more)
			require.Equal(t, []string{a3.ID, a2.ID}, ids(page, endpointID))
			page, more, err = s.FindWebhookEndpoints(ctx, domain.WebhookEndpointFilter{Scope: sc, Environment: domain.EnvLive,
				Page: domain.Page{Limit: 2, StartingAfter: a2.ID}})
			require.NoError(t, err)
			require.False(t, more)
			require.Equal(t, []string{a1.ID}, ids(page, endpointID))
		})
		t.Run("Delete", func(t *testing.T) {
			require.NoError(t, s.DeleteWebhookEndpoint(ctx, a2.ID, now()))
			_, err := s.FindWebhookEndpointByID(ctx, a2.ID)
			require.ErrorIs(t, err, domain.ErrNotFound)
			require.ErrorIs(t, s.DeleteWebhookEndpoint(ctx, a2.ID, now()), domain.ErrNotFound, "already deleted")
			require.ErrorIs(t, s.DeleteWebhookEndpoint(ctx, "we_missing", now()), domain.ErrNotFound)
			got, _, err := s.FindWebhookEndpoints(ctx, domain.WebhookEndpointFilter{
				Scope: domain.Scope{OrganizationID: tn.org.ID, ProjectID: tn.prj.ID}, Environment: domain.EnvLive})
			require.NoError(t, err)
			require.Equal(t, []string{a3.ID, a1.ID}, ids(got, endpointID))
		})
	})
}

func TestOutboxNudge(t *testing.T) {
	t.Parallel()
	dbtest.EachDialect(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		tn := setupTenants(t, s)
		var nudges atomic.Int32
		s.OnOutbox(func() { nudges.Add(1) })
		ev := func() *domain.Event {
			return &domain.Event{ID: domain.NewID(domain.PrefixEvent), Type: domain.EventFileReady, OrganizationID: tn.org.ID,
				ProjectID: tn.prj.ID, Environment: domain.EnvLive, SubjectID: "file_x", Data: json.RawMessage(`{}`), CreatedAt: now()}
		}
		require.NoError(t, s.CreateEvent(ctx, ev()))
		require.EqualValues(t, 1, nudges.Load(), "a write outside a transaction nudges at once")
		err := s.InTx(ctx, func(tx domain.Store) error {
			require.NoError(t, tx.CreateEvent(ctx, ev()))
			require.EqualValues(t, 1, nudges.Load(), "not before the commit")
			return nil
		})
		require.NoError(t, err)
		require.EqualValues(t, 2, nudges.Load(), "at the commit")
		_ = s.InTx(ctx, func(tx domain.Store) error {
			require.NoError(t, tx.CreateEvent(ctx, ev()))
			return errors.New("rolled back")
		})
		require.EqualValues(t, 2, nudges.Load(), "a rolled back write wakes nobody")
		require.NoError(t, s.InTx(ctx, func(tx domain.Store) error { _, err := tx.FindEventByID(ctx, "evt_x"); _ = err; return nil }))
		require.EqualValues(t, 2, nudges.Load(), "nor one that wrote no event")
		j := newJob(tn.prj, domain.EnvLive)
		require.NoError(t, s.CreateJob(ctx, j))
		next := *j
		next.State = domain.JobRunning
		e := ev()
		e.Type, e.SubjectID = domain.EventJobRunning, j.ID
		require.NoError(t, s.TransitionJob(ctx, &domain.JobTransition{Job: &next, FromState: domain.JobQueued, Events: []*domain.Event{e}}))
		require.EqualValues(t, 3, nudges.Load(), "an atomic write with events nudges")
		var claimed []*domain.Event
		require.NoError(t, s.InTx(ctx, func(tx domain.Store) error {
			var err error
			if claimed, err = tx.ClaimOutbox(ctx, 100); err != nil {
				return err
			}
			return tx.ReleaseOutbox(ctx, ids(claimed, eventID))
		}))
		require.Len(t, claimed, 3, "every committed event, the one in the atomic write included")
		require.NoError(t, s.InTx(ctx, func(tx domain.Store) error {
			var err error
			claimed, err = tx.ClaimOutbox(ctx, 100)
			return err
		}))
		require.Empty(t, claimed, "released")
	})
}
