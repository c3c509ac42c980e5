package bench

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
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
			collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "application/x-protobuf")
			}))
			exp, err = otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(collector.URL+"/v1/traces"))
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
