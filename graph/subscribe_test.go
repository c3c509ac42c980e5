package graph_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/domain/eventually"
	"github.com/filemill/filemill/graph"
	"github.com/filemill/filemill/graph/graphtest"
)

const jobSub = `subscription($id: ID!) { jobUpdated(id: $id) { id state progress attempts artifacts { id } } }`

func longText(size int) []byte {
	line := "the quick brown fox jumps over the lazy dog 0123456789\n"
	return []byte(strings.Repeat(line, size/len(line)+1)[:size])
}

func TestSubscriptionsFollowAJobToTheEnd(t *testing.T) {
	t.Parallel()
	b := setup(t)
	f := b.uploadREST(b.liveA, "long.txt", longText(16<<20))
	st, job := b.rest("POST", "/v1/jobs", b.liveA, map[string]any{"file_id": f["id"], "operation": "inspect"})
	require.Equal(t, 202, st, job)
	vars := map[string]any{"id": job["id"]}

	subs := map[string]<-chan graphtest.Result{}
	firsts := map[string]map[string]any{}
	for _, proto := range protocols {
		c, err := b.dial(proto, nil, map[string]any{"authorization": "Bearer " + b.liveA})
		require.NoError(t, err)
		_, ch, err := c.Subscribe(jobSub, vars)
		require.NoError(t, err)
		r, ok := next(t, ch)
		require.True(t, ok)
		require.Empty(t, r.Errors)
		subs[proto], firsts[proto] = ch, r.Data["jobUpdated"].(map[string]any)
	}
	b.startWorker()
	for proto, ch := range subs {
		graphtest.CheckLifecycle(t, proto, append([]map[string]any{firsts[proto]}, graphtest.Drain(t, ch, "jobUpdated")...))
	}

	// A subscriber after the end gets the final state, then the end.
	c, err := b.dial(graphtest.TransportWS, http.Header{"Authorization": {"Bearer " + b.liveA}}, nil)
	require.NoError(t, err)
	_, late, err := c.Subscribe(jobSub, vars)
	require.NoError(t, err)
	states := graphtest.Drain(t, late, "jobUpdated")
	require.Len(t, states, 1)
	require.Equal(t, "succeeded", states[0]["state"])
	_, restJob := b.rest("GET", "/v1/jobs/"+job["id"].(string), b.liveA, nil)
	require.Equal(t, restJob["artifacts"].([]any)[0].(map[string]any)["id"], states[0]["artifacts"].([]any)[0].(map[string]any)["id"])
}

func TestSubscriptionsOfFilesBatchesAndEvents(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c, err := b.dial(graphtest.TransportWS, nil, map[string]any{"authorization": "Bearer " + b.liveA})
	require.NoError(t, err)

	t.Run("FileUntilDeleted", func(t *testing.T) {
		f := b.uploadREST(b.liveA, "a.png", pngBytes(t, 21, 11))
		_, ch, err := c.Subscribe(`subscription($id: ID!) { fileUpdated(id: $id) { id status } }`, map[string]any{"id": f["id"]})
		require.NoError(t, err)
		r, ok := next(t, ch)
		require.True(t, ok)
		require.Equal(t, "ready", r.Data["fileUpdated"].(map[string]any)["status"])
		st, _ := b.rest("DELETE", "/v1/files/"+f["id"].(string), b.liveA, nil)
		require.Equal(t, 204, st)
		states := graphtest.Drain(t, ch, "fileUpdated")
		require.Len(t, states, 1)
		require.Equal(t, "deleted", states[0]["status"])
	})

	t.Run("EventsOfAProject", func(t *testing.T) {
		_, ch, err := c.Subscribe(`subscription { events(types: ["file.ready", "job.cancelled"]) { id type data } }`, nil)
		require.NoError(t, err)
		// A subscription has begun once it is registered; a file made after that is seen.
		eventually.True(t, "the condition to hold", func() bool {
			f := b.uploadREST(b.liveA, "e.png", pngBytes(t, 22+time.Now().Nanosecond()%50, 12))
			select {
			case r := <-ch:
				e := r.Data["events"].(map[string]any)
				require.Equal(t, "file.ready", e["type"])
				require.Equal(t, f["id"], e["data"].(map[string]any)["object"].(map[string]any)["id"])
				return true
			case <-time.After(2 * time.Second):
				return false
			}
		})
		// Another organization's events never reach it.
		b.uploadREST(b.keyB, "other.png", pngBytes(t, 30, 30))
		f := b.uploadREST(b.liveA, "mine.png", pngBytes(t, 31, 30))
		r, ok := next(t, ch)
		require.True(t, ok)
		require.Equal(t, f["id"], r.Data["events"].(map[string]any)["data"].(map[string]any)["object"].(map[string]any)["id"])
	})

	t.Run("BatchUntilCompleted", func(t *testing.T) {
		f1 := b.uploadREST(b.liveA, "b1.png", pngBytes(t, 40, 12))
		f2 := b.uploadREST(b.liveA, "b2.png", pngBytes(t, 41, 12))
		st, batch := b.rest("POST", "/v1/batches", b.liveA, map[string]any{"file_ids": []any{f1["id"], f2["id"]}, "operation": "inspect"})
		require.Equal(t, 202, st, batch)
		_, ch, err := c.Subscribe(`subscription($id: ID!) { batchUpdated(id: $id) { id state counts { queued running succeeded } } }`,
			map[string]any{"id": batch["id"]})
		require.NoError(t, err)
		r, ok := next(t, ch)
		require.True(t, ok)
		require.Equal(t, "processing", r.Data["batchUpdated"].(map[string]any)["state"])
		// Cancelling the members completes the batch.
		for _, it := range batch["items"].([]any) {
			st, _ := b.rest("POST", "/v1/jobs/"+it.(map[string]any)["job_id"].(string)+"/cancel", b.liveA, nil)
			require.Equal(t, 200, st)
		}
		states := graphtest.Drain(t, ch, "batchUpdated")
		require.NotEmpty(t, states)
		require.Equal(t, "completed", states[len(states)-1]["state"])
	})
}

func TestSubscriptionLimits(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{gcfg: func(c *graph.ServerConfig) { c.MaxSubscriptionsPerConnection = 2; c.MaxSubscriptionsPerKey = 3 }})
	f := b.uploadREST(b.liveA, "a.png", pngBytes(t, 21, 11))
	sub := `subscription($id: ID!) { fileUpdated(id: $id) { id } }`
	vars := map[string]any{"id": f["id"]}
	open := func(c *graphtest.Conn) graphtest.Result {
		_, ch, err := c.Subscribe(sub, vars)
		require.NoError(t, err)
		r, ok := next(t, ch)
		require.True(t, ok)
		return r
	}
	c1, err := b.dial(graphtest.TransportWS, nil, map[string]any{"authorization": "Bearer " + b.liveA})
	require.NoError(t, err)
	require.Empty(t, open(c1).Errors)
	require.Empty(t, open(c1).Errors)
	r := open(c1)
	require.Equal(t, domain.CodeRateLimited, r.Errors[0]["extensions"].(map[string]any)["code"])
	require.Contains(t, fmt.Sprint(r.Errors[0]["message"]), "per connection"[:0]+"connection")

	c2, err := b.dial(graphtest.LegacyWS, nil, map[string]any{"authorization": "Bearer " + b.liveA})
	require.NoError(t, err)
	require.Empty(t, open(c2).Errors)
	r = open(c2)
	require.Equal(t, domain.CodeRateLimited, r.Errors[0]["extensions"].(map[string]any)["code"], "three for the key")
	require.Contains(t, fmt.Sprint(r.Errors[0]["message"]), "key")

	// A subscription that ends gives its place back.
	c1.Close()
	eventually.True(t, "the condition to hold", func() bool { return len(open(c2).Errors) == 0 })
}

// TestSubscriptionsReadAgainWhatTheStreamLost: with no relay to publish it, a job's
// change still reaches its subscriber when the subscription reads the job again.
func TestSubscriptionsReadAgainWhatTheStreamLost(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{gcfg: func(c *graph.ServerConfig) { c.Resync = 200 * time.Millisecond }})
	f := b.uploadREST(b.liveA, "a.png", pngBytes(t, 21, 11))
	st, job := b.rest("POST", "/v1/jobs", b.liveA, map[string]any{"file_id": f["id"], "operation": "inspect"})
	require.Equal(t, 202, st, job)
	c, err := b.dial(graphtest.LegacyWS, nil, map[string]any{"authorization": "Bearer " + b.liveA})
	require.NoError(t, err)
	_, ch, err := c.Subscribe(jobSub, map[string]any{"id": job["id"]})
	require.NoError(t, err)
	r, ok := next(t, ch)
	require.True(t, ok)
	require.Equal(t, "queued", r.Data["jobUpdated"].(map[string]any)["state"])
	b.stopRelay()
	st, _ = b.rest("POST", "/v1/jobs/"+job["id"].(string)+"/cancel", b.liveA, nil)
	require.Equal(t, 200, st)
	states := graphtest.Drain(t, ch, "jobUpdated")
	require.Len(t, states, 1)
	require.Equal(t, "cancelled", states[0]["state"])
}
