package bench

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// BENCH_PHASE_TABLE=1 records every span of a run in memory and prints, for the jobs a
// benchmark followed, where each millisecond between the request and the client seeing
// the outcome went: the segments between the spans of the request (admission write,
// enqueue) and of the worker's attempt (claim, download, engine, verify and upload,
// settle). Tracing is then on, so the benchmark's own figures are those of a traced
// process.
var phaseRecorder struct {
	once sync.Once
	rec  *tracetest.SpanRecorder
}

func phaseTableOn() *tracetest.SpanRecorder {
	if os.Getenv("BENCH_PHASE_TABLE") != "1" {
		return nil
	}
	phaseRecorder.once.Do(func() {
		phaseRecorder.rec = tracetest.NewSpanRecorder()
		otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(phaseRecorder.rec)))
		otel.SetTextMapPropagator(propagation.TraceContext{})
	})
	phaseRecorder.rec.Reset()
	return phaseRecorder.rec
}

// followedJob is a job a benchmark followed, and when its client saw the outcome.
type followedJob struct {
	id   string
	seen time.Time
}

// phaseTable prints, per segment of a job's way, its median and mean over jobs, and the
// mean of every segment summing to the mean of the whole.
func phaseTable(b *testing.B, rec *tracetest.SpanRecorder, followed []followedJob) {
	type spans map[string][]sdktrace.ReadOnlySpan
	byTrace := map[trace.TraceID]spans{}
	requestOf, attemptOf := map[string]trace.TraceID{}, map[string]trace.TraceID{}
	for _, s := range rec.Ended() {
		t := s.SpanContext().TraceID()
		if byTrace[t] == nil {
			byTrace[t] = spans{}
		}
		byTrace[t][s.Name()] = append(byTrace[t][s.Name()], s)
		for _, a := range s.Attributes() {
			if a.Key != "filemill.job_id" {
				continue
			}
			switch s.Name() {
			case "enqueue job":
				requestOf[a.Value.AsString()] = t
			case "job attempt":
				attemptOf[a.Value.AsString()] = t
			}
		}
	}
	first := func(ss spans, name string) (sdktrace.ReadOnlySpan, bool) {
		if len(ss[name]) == 0 {
			return nil, false
		}
		return ss[name][0], true
	}
	// A segment is the time between two instants of a job's way, named by what runs in it.
	segments := []string{
		"request: auth, limits, idempotency, admission reads",
		"admission write (created_at is taken at its start)",
		"enqueue (Redis)",
		"queue: enqueue → the worker's attempt starts",
		"claim (job read, claim write, file read)",
		"scratch directory, plan",
		"download input",
		"engine",
		"verify output",
		"upload artifact",
		"attempt's bookkeeping before the settle",
		"settle write (finished_at is taken at its start)",
		"client sees it (its next poll)",
	}
	var rows [][]time.Duration
	for _, j := range followed {
		req, att := byTrace[requestOf[j.id]], byTrace[attemptOf[j.id]]
		srv, ok1 := first(req, "POST /v1/jobs")
		admit, ok2 := first(req, "admit jobs")
		enq, ok3 := first(req, "enqueue job")
		attempt, ok4 := first(att, "job attempt")
		claim, ok5 := first(att, "claim job")
		dl, ok6 := first(att, "download input")
		settle, ok7 := first(att, "settle job")
		if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6 && ok7) {
			continue
		}
		var engStart, engEnd time.Time
		var verify, upload time.Duration
		for name, ss := range att {
			for _, s := range ss {
				switch {
				case strings.HasPrefix(name, "engine "):
					if engStart.IsZero() || s.StartTime().Before(engStart) {
						engStart = s.StartTime()
					}
					if s.EndTime().After(engEnd) {
						engEnd = s.EndTime()
					}
				case name == "verify output":
					verify += s.EndTime().Sub(s.StartTime())
				case name == "upload artifact":
					upload += s.EndTime().Sub(s.StartTime())
				}
			}
		}
		if engStart.IsZero() || upload == 0 {
			continue
		}
		instants := []time.Time{srv.StartTime(), admit.StartTime(), admit.EndTime(), enq.EndTime(), attempt.StartTime(),
			claim.EndTime(), dl.StartTime(), dl.EndTime(), engEnd}
		// The engine segment starts where the download ends: what lies between is the
		// engine's own set-up, timed with it.
		var row []time.Duration
		for k := 1; k < len(instants); k++ {
			row = append(row, instants[k].Sub(instants[k-1]))
		}
		row = append(row, verify, upload, settle.StartTime().Sub(engEnd)-verify-upload,
			settle.EndTime().Sub(settle.StartTime()), j.seen.Sub(settle.EndTime()))
		rows = append(rows, row)
	}
	if len(rows) == 0 {
		b.Log("phase table: no job had all its spans")
		return
	}
	var out strings.Builder
	fmt.Fprintf(&out, "where a job's time goes, %d jobs (ms):\n%-55s %8s %8s\n", len(rows), "segment", "p50", "mean")
	var total time.Duration
	for k, name := range segments {
		col := make([]time.Duration, len(rows))
		var sum time.Duration
		for i, r := range rows {
			col[i] = r[k]
			sum += r[k]
		}
		sort.Slice(col, func(a, c int) bool { return col[a] < col[c] })
		mean := sum / time.Duration(len(rows))
		total += mean
		fmt.Fprintf(&out, "%-55s %8.2f %8.2f\n", name, ms(col[len(col)/2]), ms(mean))
	}
	fmt.Fprintf(&out, "%-55s %8s %8.2f\n", "request to client seeing the outcome", "", ms(total))
	b.Log(out.String())
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
