package jobs

import (
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/robfig/cron/v3"
	"github.com/stretchr/testify/require"
)

// Every worker process must compute the same firing times, whenever it started.
func TestPeriodicNextIsAlignedToTheClock(t *testing.T) {
	t.Parallel()
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339Nano, s)
		require.NoError(t, err)
		return v
	}
	for _, tc := range []struct{ spec, now, want string }{
		{"@every 1m", "2026-11-22T10:03:17.5Z", "2026-11-22T10:04:00Z"},
		{"@every 1m", "2026-11-22T10:04:00Z", "2026-11-22T10:05:00Z"},
		{"@every 5m", "2026-11-22T10:03:17Z", "2026-11-22T10:05:00Z"},
		{"@every 1s", "2026-11-22T10:03:17.999Z", "2026-11-22T10:03:18Z"},
		{"*/10 * * * *", "2026-11-22T10:03:17Z", "2026-11-22T10:10:00Z"},
		{"@hourly", "2026-11-22T10:03:17Z", "2026-11-22T11:00:00Z"},
	} {
		t.Run(tc.spec+"@"+tc.now, func(t *testing.T) {
			sched, err := cron.ParseStandard(tc.spec)
			require.NoError(t, err)
			e := &periodicEntry{spec: tc.spec, sched: sched, task: asynq.NewTask("t", nil)}
			require.Equal(t, at(tc.want), e.next(at(tc.now)))
		})
	}
}
