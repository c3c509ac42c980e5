package bench

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"
	"go.opentelemetry.io/otel/trace/noop"
)

// FILEMILL_BENCH_TRACES turns tracing on for the benchmarks, as a process started with
// OTEL_TRACES_EXPORTER does: every span recorded and batched by the SDK.
//
//   - on (or otlp): exported over OTLP/HTTP, as a deployment sends them to its collector.
//     The collector here is a handler in this process that reads each batch and drops
//     it, so its reading is counted against filemill, never its storing.
//   - console: encoded as JSON by the SDK's stdout exporter, into io.Discard.
//
// Unset, the process keeps OpenTelemetry's no-op provider, as the service does by
// default. Compare the runs for the cost of tracing.
var tracingOnce sync.Once

func benchTracing() {
	mode := os.Getenv("FILEMILL_BENCH_TRACES")
	if mode == "" || mode == "off" {
		return
	}
	tracingOnce.Do(func() {
		var exp sdktrace.SpanExporter
		var err error
		switch mode {
		case "console":
			exp, err = stdouttrace.New(stdouttrace.WithWriter(io.Discard))
		case "on", "otlp":
			exp, _, err = discardingCollector()
		default:
			panic("FILEMILL_BENCH_TRACES=" + mode + ": must be on, otlp, console or off")
		}
		if err != nil {
			panic(err)
		}
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp))
		otel.SetTracerProvider(tp)
		otel.SetTextMapPropagator(propagation.TraceContext{})
	})
}

// discardingCollector is an OTLP/HTTP exporter to a collector in this process that
// reads each batch and drops it: its reading counts against filemill, never its storing.
func discardingCollector() (sdktrace.SpanExporter, func(), error) {
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(collector.URL+"/v1/traces"))
	if err != nil {
		collector.Close()
		return nil, nil, err
	}
	return exp, collector.Close, nil
}

// switchedTracing is a tracer provider whose spans are recorded by sdk while on is
// set and no-op ones otherwise, as the service makes with tracing off: one process
// measures tracing on and off in turns, so that what drifts on a shared machine falls
// on both alike (separate runs here differ by more than tracing costs).
type switchedTracing struct {
	embedded.TracerProvider
	on  atomic.Bool
	sdk trace.TracerProvider
}

func (p *switchedTracing) Tracer(name string, opts ...trace.TracerOption) trace.Tracer {
	return &switchedTracer{on: &p.on, sdk: p.sdk.Tracer(name, opts...), off: noop.NewTracerProvider().Tracer(name)}
}

type switchedTracer struct {
	embedded.Tracer
	on       *atomic.Bool
	sdk, off trace.Tracer
}

func (t *switchedTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if t.on.Load() {
		return t.sdk.Start(ctx, name, opts...)
	}
	return t.off.Start(ctx, name, opts...)
}

// switchTracing installs a switched provider whose recording side exports over
// OTLP/HTTP to a collector in this process that reads and drops each batch, as
// FILEMILL_BENCH_TRACES=on does.
func switchTracing(b *testing.B) *switchedTracing {
	if mode := os.Getenv("FILEMILL_BENCH_TRACES"); mode != "" && mode != "off" {
		b.Fatalf("FILEMILL_BENCH_TRACES=%s: this benchmark turns tracing on and off itself; unset it", mode)
	}
	exp, closeCollector, err := discardingCollector()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(closeCollector)
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp, sdktrace.WithBatchTimeout(2*time.Second)))
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	sw := &switchedTracing{sdk: tp}
	otel.SetTracerProvider(sw)
	otel.SetTextMapPropagator(propagation.TraceContext{})
	return sw
}

// BenchmarkCreateJobTracing measures what tracing costs POST /v1/jobs with a worker
// running (BenchmarkCreateJob's load): turns of BENCH_TRACING_TURN (default 5 s) with
// tracing on and off, BENCH_TRACING_PAIRS pairs (default 8), which of the two goes
// first alternating. It reports the medians of each pair's ratio, on over off, of the
// process's CPU per request and of requests a second. Goal: within 5 %.
func BenchmarkCreateJobTracing(b *testing.B) {
	sw := switchTracing(b)
	pairs, turn := 8, 5*time.Second
	if v := os.Getenv("BENCH_TRACING_PAIRS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("BENCH_TRACING_PAIRS: %q", v)
		}
		pairs = n
	}
	if v := os.Getenv("BENCH_TRACING_TURN"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			b.Fatalf("BENCH_TRACING_TURN: %q", v)
		}
		turn = d
	}
	l := newCreateJobLoad(b)
	defer l.close()
	run := func(on bool) LoadResult {
		sw.on.Store(on)
		return Drive(context.Background(), loadWorkers, turn, l.api)
	}
	run(true)
	run(false)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var cpu, rps []float64
		var ons, offs []LoadResult
		for p := range pairs {
			var on, off LoadResult
			if p%2 == 0 {
				on = run(true)
				off = run(false)
			} else {
				off = run(false)
				on = run(true)
			}
			ons, offs = append(ons, on), append(offs, off)
			cpu = append(cpu, on.ProcCPUPerRequest()/off.ProcCPUPerRequest())
			rps = append(rps, on.RPS()/off.RPS())
			b.Logf("pair %d: on %.0f req/s %.0f µs/req, off %.0f req/s %.0f µs/req", p, on.RPS(), on.ProcCPUPerRequest(), off.RPS(), off.ProcCPUPerRequest())
		}
		on, off := Merge(ons), Merge(offs)
		b.ReportMetric(on.RPS(), "on-req/s")
		b.ReportMetric(off.RPS(), "off-req/s")
		b.ReportMetric(on.ProcCPUPerRequest(), "on-proc-cpu-µs/req")
		b.ReportMetric(off.ProcCPUPerRequest(), "off-proc-cpu-µs/req")
		b.ReportMetric(100*(median(cpu)-1), "cpu/req-on-vs-off-%")
		b.ReportMetric(100*(median(rps)-1), "req/s-on-vs-off-%")
		b.ReportMetric(float64(on.Errors+off.Errors), "errors")
		b.ReportMetric(0, "ns/op")
	}
}
