package logging_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/domain/eventually"
	"github.com/filemill/filemill/domain/logging"
)

// lines is a JSON log sink safe for concurrent use.
type lines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lines) all(t *testing.T) []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, s := range strings.Split(strings.TrimSpace(l.buf.String()), "\n") {
		if s == "" {
			continue
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(s), &m), s)
		out = append(out, m)
	}
	return out
}

func TestRepeated(t *testing.T) {
	t.Parallel()
	sink := &lines{}
	const interval = 200 * time.Millisecond
	r := logging.NewRepeated(slog.New(slog.NewJSONHandler(sink, nil)), interval)
	ctx := context.Background()

	start := time.Now()
	const n = 1000
	for i := range n {
		r.Log(ctx, slog.LevelWarn, "redis", "redis unreachable", "attempt", i)
	}
	elapsed := time.Since(start)
	first := sink.all(t)[0]
	require.Equal(t, "redis unreachable", first["msg"])
	require.EqualValues(t, 1, first["count"], "the first occurrence is logged at once")
	require.EqualValues(t, 0, first["attempt"])

	count := func() (lines, total int) {
		for _, l := range sink.all(t) {
			total += int(l["count"].(float64))
		}
		return len(sink.all(t)), total
	}
	eventually.True(t, "every occurrence is counted in a line by the end of its interval", func() bool { _, total := count(); return total == n })
	got, _ := count()
	require.LessOrEqual(t, got, 2+int(elapsed/interval), "one line per interval, not one per occurrence")
	last := sink.all(t)[got-1]
	require.EqualValues(t, n-1, last["attempt"], "the summary carries the last occurrence's attributes")
	require.Equal(t, interval.String(), last["interval"])

	// Another key is its own.
	r.Log(ctx, slog.LevelWarn, "postgres", "postgres unreachable")
	require.Equal(t, "postgres unreachable", sink.all(t)[got]["msg"])
}

func TestPrinterSendsDriverLinesThroughSlog(t *testing.T) {
	t.Parallel()
	sink := &lines{}
	p := logging.Printer{R: logging.NewRepeated(slog.New(slog.NewJSONHandler(sink, nil)), time.Hour),
		Level: slog.LevelWarn, Component: "redis"}
	p.Printf(context.Background(), "redis: %s:%d: connection pool: failed to dial: %v", "pool.go", 10, "refused")
	p.Printf(context.Background(), "redis: %s:%d: connection pool: failed to dial: %v", "pool.go", 10, "refused")
	logging.PlainPrinter{Printer: p}.Printf("bun: %s", "warning")
	got := sink.all(t)
	require.Len(t, got, 2, "the same format within the interval is counted, not repeated")
	require.Equal(t, "redis: pool.go:10: connection pool: failed to dial: refused", got[0]["msg"])
	require.Equal(t, "redis", got[0]["component"])
	require.Equal(t, "WARN", got[0]["level"])
	require.Equal(t, "bun: warning", got[1]["msg"])
}
