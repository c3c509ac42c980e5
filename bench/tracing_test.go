package bench

import (
	"io"
	"os"
	"sync"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// FILEMILL_BENCH_TRACES=on runs the benchmarks with tracing on, as a process started
// with OTEL_TRACES_EXPORTER does: every span recorded, batched and encoded by the SDK's
// stdout exporter (into io.Discard, so no terminal or collector is measured). Unset,
// the process keeps OpenTelemetry's no-op provider, as the service does by default.
// Compare the two runs for the cost of tracing.
var tracingOnce sync.Once

func benchTracing() {
	if os.Getenv("FILEMILL_BENCH_TRACES") != "on" {
		return
	}
	tracingOnce.Do(func() {
		exp, err := stdouttrace.New(stdouttrace.WithWriter(io.Discard))
		if err != nil {
			panic(err)
		}
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp))
		otel.SetTracerProvider(tp)
		otel.SetTextMapPropagator(propagation.TraceContext{})
	})
}
