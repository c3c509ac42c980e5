//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"maps"
	"sort"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/filemill/filemill/domain/eventually"
)

// checkAll waits for the load to drain and checks every invariant, then reports the
// campaign's figures.
func (d *deployment) checkAll(ctx context.Context, c *client, l *load, hooks *delivered, endpointID string, f *faults) {
	t := d.t
	l.mu.Lock()
	for _, e := range l.errs {
		t.Errorf("load: %s", e)
	}
	l.mu.Unlock()

	// Every job ends with no one's help.
	drained := time.Now()
	waitFor(t, "every job to end", drainBound, func() bool {
		var open int
		err := d.db.QueryRowContext(ctx, "SELECT count(*) FROM jobs WHERE state IN ('queued', 'running')").Scan(&open)
		return err == nil && open == 0
	})
	t.Logf("chaos: every job ended %s after the load stopped", time.Since(drained).Round(time.Millisecond))

	// Every accepted job reached a terminal state exactly once: one terminal event, of
	// its final state; and what its client saw (polling or subscribed) is that state.
	type jobRow struct {
		state, events string
		n             int
		charged       int64
	}
	jobs := map[string]jobRow{}
	rows, err := d.db.QueryContext(ctx, `SELECT j.id, j.state, j.credits_charged, count(e.id), coalesce(string_agg(e.type, ','), '')
		FROM jobs j LEFT JOIN events e ON e.subject_id = j.id AND e.type IN ('job.succeeded', 'job.failed', 'job.cancelled')
		GROUP BY j.id, j.state, j.credits_charged`)
	if err != nil {
		t.Fatal(err)
	}
	states := map[string]int{}
	for rows.Next() {
		var id string
		var r jobRow
		if err := rows.Scan(&id, &r.state, &r.charged, &r.n, &r.events); err != nil {
			t.Fatal(err)
		}
		jobs[id] = r
		states[r.state]++
		if !terminal[r.state] {
			t.Errorf("job %s is %s", id, r.state)
		}
		if r.n != 1 || r.events != "job."+r.state {
			t.Errorf("job %s (%s) has %d terminal events: %q", id, r.state, r.n, r.events)
		}
		if r.state != "succeeded" && r.charged != 0 {
			t.Errorf("job %s (%s) was charged %d", id, r.state, r.charged)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	l.mu.Lock()
	accepted := len(l.accepted)
	for id, seen := range l.accepted {
		r, ok := jobs[id]
		if !ok {
			t.Errorf("job %s was accepted (202) and is not stored", id)
		} else if seen != "" && seen != r.state {
			t.Errorf("job %s: its client saw it end %s, it is %s", id, seen, r.state)
		}
	}
	batches := len(l.batches)
	l.mu.Unlock()
	probes.Lock()
	for _, id := range probes.ids {
		if _, ok := jobs[id]; !ok {
			t.Errorf("probe job %s was accepted (202) and is not stored", id)
		}
	}
	probeJobs := len(probes.ids)
	probes.Unlock()

	// The ledger is balanced: nothing reserved at rest; per job one reservation, at
	// most one charge, and what was reserved charged or released; the charges are the
	// succeeded jobs' prices.
	var bad int
	// One pass over the entries (the service has no index on their job: it never reads
	// them by job), so a long campaign's thousands of jobs check in one scan.
	if err := d.db.QueryRowContext(ctx, `SELECT count(*) FROM jobs j LEFT JOIN (
		SELECT job_id,
			count(*) FILTER (WHERE kind = 'reserve') AS reserves,
			count(*) FILTER (WHERE kind = 'charge') AS charges,
			coalesce(sum(amount) FILTER (WHERE kind = 'charge'), 0) AS charged,
			coalesce(sum(CASE kind WHEN 'reserve' THEN amount ELSE -amount END) FILTER (WHERE kind IN ('reserve', 'charge', 'release')), 0) AS open
		FROM ledger_entries WHERE job_id <> '' GROUP BY job_id) l ON l.job_id = j.id
		WHERE coalesce(l.reserves, 0) <> 1 OR coalesce(l.charges, 0) > 1 OR coalesce(l.charged, 0) <> j.credits_charged OR
			coalesce(l.open, 0) <> 0`).Scan(&bad); err != nil {
		t.Fatal(err)
	}
	if bad != 0 {
		t.Errorf("ledger: %d jobs whose entries do not add up", bad)
	}
	var balance, reserved, used, charged, succeededPrice int64
	if err := d.db.QueryRowContext(ctx, "SELECT balance, reserved, used FROM credit_accounts WHERE environment = 'live'").Scan(&balance, &reserved, &used); err != nil {
		t.Fatal(err)
	}
	_ = d.db.QueryRowContext(ctx, "SELECT coalesce(sum(amount), 0) FROM ledger_entries WHERE kind = 'charge'").Scan(&charged)
	_ = d.db.QueryRowContext(ctx, "SELECT coalesce(sum(credits_charged), 0) FROM jobs WHERE state = 'succeeded'").Scan(&succeededPrice)
	if reserved != 0 {
		t.Errorf("ledger: %d credits still reserved at rest", reserved)
	}
	if charged != succeededPrice || used != charged || balance+used != grantCredits {
		t.Errorf("ledger: charged %d, succeeded jobs' prices %d, used %d, balance %d (+used should be %d)", charged, succeededPrice, used, balance, grantCredits)
	}

	// Every event the endpoint subscribes to is delivered at least once. A delivery
	// whose automatic retries are spaced minutes apart (the receiver was down, slow or
	// erroring, or asked for a later retry) is retried by hand, as an operator would
	// after fixing the receiver; counted by how its last attempt went.
	manual := map[string]int{}
	var missing []string
	waitFor(t, "every event delivered to the webhook receiver", drainBound, func() bool {
		missing = missing[:0]
		rows, err := d.db.QueryContext(ctx, "SELECT id FROM events WHERE type = ANY($1)", pgArray(hookEvents))
		if err != nil {
			return false
		}
		hooks.mu.Lock()
		for rows.Next() {
			var id string
			if rows.Scan(&id) == nil && hooks.events[id] == 0 {
				missing = append(missing, id)
			}
		}
		hooks.mu.Unlock()
		rows.Close()
		if len(missing) == 0 {
			return true
		}
		// Deliveries waiting more than a few seconds for their next attempt, or given
		// up, are retried now.
		drows, err := d.db.QueryContext(ctx, `SELECT id, last_status_code, last_error FROM deliveries WHERE endpoint_id = $1 AND event_id = ANY($2)
			AND (status = 'failed' OR (status = 'pending' AND next_attempt_at > now() + interval '10 seconds'))`, endpointID, pgArray(missing))
		if err != nil {
			return false
		}
		retry := map[string]string{}
		for drows.Next() {
			var id, lastErr string
			var code int
			if drows.Scan(&id, &code, &lastErr) == nil {
				retry[id] = lastOutcome(code, lastErr)
			}
		}
		drows.Close()
		for id, outcome := range retry {
			status, body, err := c.do(ctx, requestBound, "POST", "/v1/webhook-endpoints/"+endpointID+"/deliveries/"+id+"/retry", nil)
			if err != nil || status >= 300 {
				t.Errorf("retry delivery %s: %d %v %v", id, status, body, err)
			}
			manual[outcome]++
		}
		time.Sleep(time.Second) // between rounds of looking, not a wait on anything
		return false
	})
	hooks.mu.Lock()
	events, dupes := len(hooks.events), 0
	for _, n := range hooks.events {
		if n > 1 {
			dupes++
		}
	}
	for _, b := range hooks.bad {
		t.Errorf("webhook: %s", b)
	}
	held, errored := hooks.held, maps.Clone(hooks.errored)
	hooks.mu.Unlock()
	// A 429's Retry-After puts the delivery's next attempt no earlier than it asks.
	var throttled, early int
	if err := d.db.QueryRowContext(ctx, `SELECT count(*), count(*) FILTER (WHERE next_attempt_at < created_at + $1 * interval '1 second')
		FROM delivery_attempts WHERE status_code = 429 AND next_attempt_at IS NOT NULL`, int(hookRetryAfter.Seconds())).Scan(&throttled, &early); err != nil {
		t.Fatal(err)
	}
	if early > 0 {
		t.Errorf("webhook: %d of %d attempts answered 429 with Retry-After: %d scheduled the next one sooner", early, throttled, int(hookRetryAfter.Seconds()))
	}

	// The bucket: every artifact's and file's object there with its recorded size (no
	// half-written artifact), and no object nothing refers to, but the artifacts an
	// attempt stored before its worker died (the service leaves those: see README).
	mc := d.minio.client(t)
	objects := map[string]int64{}
	for o := range mc.ListObjects(ctx, "chaos", minio.ListObjectsOptions{Recursive: true}) {
		if o.Err != nil {
			t.Fatalf("list the bucket: %v", o.Err)
		}
		objects[o.Key] = o.Size
	}
	refs := map[string]bool{}
	sizes := func(query, what string, mustExist bool) int {
		rows, err := d.db.QueryContext(ctx, query)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		n := 0
		for rows.Next() {
			var id, key string
			var size int64
			if err := rows.Scan(&id, &key, &size); err != nil {
				t.Fatal(err)
			}
			refs[key] = true
			got, ok := objects[key]
			switch {
			case ok && got != size:
				t.Errorf("%s %s: object %s has %d bytes, recorded %d (half-written)", what, id, key, got, size)
			case !ok && mustExist:
				t.Errorf("%s %s: object %s is missing", what, id, key)
			}
			n++
		}
		return n
	}
	artifacts := sizes("SELECT id, storage_key, byte_size FROM artifacts", "artifact", true)
	sizes("SELECT id, storage_key, byte_size FROM files WHERE status = 'ready'", "file", true)
	sizes("SELECT id, storage_key, byte_size FROM files WHERE status <> 'ready'", "file", false)
	// Objects a killed attempt stored are swept when its job ends; only a job that
	// ended while storage was down may keep them.
	endedStorageDown := map[string]bool{}
	jrows, err := d.db.QueryContext(ctx, "SELECT id, finished_at FROM jobs WHERE attempts > 1 AND finished_at IS NOT NULL")
	if err != nil {
		t.Fatal(err)
	}
	for jrows.Next() {
		var id string
		var at time.Time
		_ = jrows.Scan(&id, &at)
		for _, w := range f.storageDown {
			if !at.Before(w[0]) && !at.After(w[1].Add(2*time.Second)) {
				endedStorageDown[id] = true
			}
		}
	}
	jrows.Close()
	leftByDesign := 0
	for key := range objects {
		if refs[key] {
			continue
		}
		parts := strings.Split(key, "/")
		if len(parts) == 6 && parts[3] == "artifacts" && endedStorageDown[parts[4]] {
			leftByDesign++
			continue
		}
		t.Errorf("orphan object %s: no file or artifact refers to it", key)
	}

	// No process left behind: the five stop as a deploy stops them, and nothing they
	// or their killed predecessors started (LibreOffice, tesseract) lives on.
	for _, s := range append(append([]*slot{}, d.apis...), d.workers...) {
		s.stop(60 * time.Second)
	}
	var left []string
	minioPid := -1
	d.minio.mu.Lock()
	if d.minio.cmd != nil {
		minioPid = d.minio.cmd.Process.Pid
	}
	d.minio.mu.Unlock()
	// What is still there after the bound is reported with the figures.
	_, _ = eventually.Wait(60*time.Second, func() (struct{}, bool) {
		left = left[:0]
		for _, p := range processesUnder(d.root) {
			if !strings.HasPrefix(p, fmt.Sprint(minioPid)+" ") {
				left = append(left, p)
			}
		}
		return struct{}{}, len(left) == 0
	})

	// The figures.
	say(t, "chaos: ---- figures ----")
	kinds := make([]string, 0, len(f.byKind))
	for k := range f.byKind {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	say(t, "chaos: %d faults injected:", f.count)
	for _, k := range kinds {
		p50, mx := percentiles(f.recovery[k])
		say(t, "chaos:   %-32s %3d  recovery p50 %8s  max %8s  (%d measured)", k, f.byKind[k], p50.Round(time.Millisecond), mx.Round(time.Millisecond), len(f.recovery[k]))
	}
	say(t, "chaos: workers killed with %d attempts under way (%d kills met a conversion; %d of %d kills aimed at an artifact upload landed before its body had reached MinIO whole)",
		f.victims, f.officeHits, f.uploadHits, f.uploadKills)
	say(t, "chaos: jobs stored %d by state %v; accepted by the load %d (+ %d batches, %d probe jobs); %d followed over subscriptions (%d subscribed again)",
		len(jobs), states, accepted, batches, probeJobs, l.followed, l.resubs)
	c.mu.Lock()
	say(t, "chaos: answers by status: %v", c.answers)
	say(t, "chaos: uploads PUT again after their completion found no bytes (MinIO killed while assembling them): %d", c.putAgain.Load())
	c.mu.Unlock()
	say(t, "chaos: credits charged %d = succeeded jobs' prices %d, reserved at rest %d", charged, succeededPrice, reserved)
	say(t, "chaos: webhook events delivered %d (%d more than once); deliveries retried by hand by their last attempt: %v", events, dupes, manual)
	say(t, "chaos: webhook receiver: %d requests held until the sender gave up, erroring answers by status %v; of %d attempts answered 429, %d rescheduled sooner than Retry-After",
		held, errored, throttled, early)
	say(t, "chaos: bucket: %d objects, %d artifacts, %d artifacts of lost attempts left because their job ended while storage was down", len(objects), artifacts, leftByDesign)
	if f.uploadHits == 0 {
		t.Errorf("no kill landed in the middle of an artifact upload (%d aimed)", f.uploadKills)
	}
	if held == 0 || errored[500] == 0 || errored[429] == 0 {
		t.Errorf("the slow and erroring receivers met too few deliveries: %d held, erroring answers %v", held, errored)
	}
	if len(f.late) > 0 {
		t.Errorf("answers were wrong more than 1 s after PostgreSQL came back: %v", f.late)
	}
	if len(left) > 0 {
		t.Errorf("processes left behind: %v", left)
	}
	if !t.Failed() {
		say(t, "chaos: every invariant held")
	}
}

// lastOutcome names how a delivery's last attempt went, for the count of deliveries
// retried by hand.
func lastOutcome(code int, lastErr string) string {
	switch {
	case code != 0:
		return fmt.Sprint(code)
	case strings.Contains(lastErr, "no answer within"):
		return "timed out"
	case lastErr == "":
		return "none"
	}
	return "no connection"
}
