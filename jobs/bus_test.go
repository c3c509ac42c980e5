package jobs_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/domain/eventually"
	"github.com/filemill/filemill/jobs"
	"github.com/filemill/filemill/jobs/redistest"
)

func busEvent(t *testing.T, typ string, batchID string) *domain.Event {
	t.Helper()
	j := &domain.Job{ID: domain.NewID(domain.PrefixJob), ProjectID: "prj_01M85ZZZZZZZZZZZZZZZZZZZZZ", Environment: domain.EnvLive,
		FileID: domain.NewID(domain.PrefixFile), BatchID: batchID, State: domain.JobRunning, Progress: 40, CreatedAt: time.Now().UTC()}
	e, err := domain.NewEvent(context.Background(), typ, "org_x", j.ProjectID, j.Environment, j.ID, j.View(), j.CreatedAt)
	require.NoError(t, err)
	e.FileID = j.FileID
	return e
}

func receive(t *testing.T, sub domain.Subscription) *domain.Event {
	t.Helper()
	select {
	case e := <-sub.Events():
		return e
	case <-time.After(10 * time.Second):
		t.Fatal("nothing arrived")
		return nil
	}
}

func nothing(t *testing.T, sub domain.Subscription) {
	t.Helper()
	select {
	case e := <-sub.Events():
		t.Fatalf("unexpected %s", e.Type)
	case <-time.After(100 * time.Millisecond):
	}
}

// TestRedisBusAcrossProcesses publishes on one bus and subscribes on another, as an API
// process and a worker process share Redis.
func TestRedisBusAcrossProcesses(t *testing.T) {
	t.Parallel()
	opts, err := redis.ParseURL(redistest.URL(t))
	require.NoError(t, err)
	open := func() *jobs.RedisBus {
		rdb := redis.NewClient(opts)
		b := jobs.NewRedisBus(rdb, nil)
		t.Cleanup(func() { b.Close(); rdb.Close() })
		return b
	}
	api, worker := open(), open()
	ctx := context.Background()
	batch := domain.NewID(domain.PrefixBatch)
	e := busEvent(t, domain.EventJobProgress, batch)

	byJob, err := api.Subscribe(ctx, e.SubjectID)
	require.NoError(t, err)
	byBatch, err := api.Subscribe(ctx, batch)
	require.NoError(t, err)
	byProject, err := api.Subscribe(ctx, domain.ProjectTopic(e.ProjectID, domain.EnvLive))
	require.NoError(t, err)
	otherEnv, err := api.Subscribe(ctx, domain.ProjectTopic(e.ProjectID, domain.EnvTest))
	require.NoError(t, err)
	// Redis confirms subscriptions asynchronously: publish until the first arrives.
	eventually.True(t, "the condition to hold", func() bool {
		require.NoError(t, worker.Publish(ctx, e))
		select {
		case got := <-byJob.Events():
			require.Equal(t, e.Type, got.Type)
			require.Equal(t, e.OrganizationID, got.OrganizationID, "the tenancy travels with it")
			var d struct{ Object domain.JobView }
			require.NoError(t, json.Unmarshal(got.Data, &d))
			require.Equal(t, 40, d.Object.Progress)
			return true
		case <-time.After(50 * time.Millisecond):
			return false
		}
	})
	require.Equal(t, e.SubjectID, receive(t, byBatch).SubjectID)
	require.Equal(t, e.SubjectID, receive(t, byProject).SubjectID)
	nothing(t, otherEnv)

	byJob.Close()
	_, open2 := <-byJob.Events()
	for open2 { // drain what the retries above published
		_, open2 = <-byJob.Events()
	}

	// The relay's nudge crosses processes too.
	nudges := worker.Nudges()
	eventually.True(t, "the condition to hold", func() bool {
		api.Nudge()
		select {
		case <-nudges:
			return true
		case <-time.After(50 * time.Millisecond):
			return false
		}
	})
}

func TestLocalBus(t *testing.T) {
	t.Parallel()
	b := jobs.NewLocalBus()
	ctx, cancel := context.WithCancel(context.Background())
	e := busEvent(t, domain.EventJobSucceeded, "")
	sub, err := b.Subscribe(ctx, e.SubjectID, e.FileID)
	require.NoError(t, err)
	require.NoError(t, b.Publish(ctx, e))
	require.Equal(t, e, receive(t, sub))
	nothing(t, sub) // one event, though it matched two of the topics
	cancel()
	eventually.True(t, "a subscription ends with its context", func() bool {
		_, open := <-sub.Events()
		return !open
	})
	require.NoError(t, b.Publish(context.Background(), e), "publishing to nobody is fine")
}
