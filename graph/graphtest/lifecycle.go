package graphtest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Drain reads a subscription to its end and returns what it sent in field.
func Drain(t testing.TB, ch <-chan Result, field string) []map[string]any {
	t.Helper()
	var out []map[string]any
	timeout := time.After(2 * time.Minute)
	for {
		select {
		case r, ok := <-ch:
			if !ok {
				return out
			}
			require.Empty(t, r.Errors, "subscription error: %v", r.Errors)
			out = append(out, r.Data[field].(map[string]any))
		case <-timeout:
			t.Fatalf("the subscription did not complete within 2 minutes; so far: %v", out)
		}
	}
}

// CheckLifecycle checks what a jobUpdated subscription sent: the state at subscription
// first (queued), running with progress along the way, succeeded last with one
// artifact; never a step back.
func CheckLifecycle(t testing.TB, who string, states []map[string]any) {
	t.Helper()
	require.NotEmpty(t, states, who)
	require.Equal(t, "queued", states[0]["state"], "%s: the state at subscription first: %v", who, states)
	last := states[len(states)-1]
	require.Equal(t, "succeeded", last["state"], "%s: ends with the terminal state: %v", who, states)
	require.Len(t, last["artifacts"], 1, who)
	rank := map[string]int{"queued": 0, "running": 1, "succeeded": 2}
	progressed := false
	for i := 1; i < len(states); i++ {
		a, b := states[i-1], states[i]
		require.GreaterOrEqual(t, rank[b["state"].(string)], rank[a["state"].(string)], "%s: a step back: %v", who, states)
		if b["state"] == "running" {
			p := b["progress"].(float64)
			if a["state"] == "running" {
				require.Greater(t, p, a["progress"].(float64), "%s: progress only grows: %v", who, states)
			}
			progressed = progressed || (p > 0 && p < 100)
		}
	}
	require.True(t, progressed, "%s: running with progress between 0 and 100: %v", who, states)
}
