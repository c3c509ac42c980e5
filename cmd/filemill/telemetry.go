package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
)

// setupTracing installs the process's tracer provider from the standard OpenTelemetry
// variables, and nothing else:
//
//   - OTEL_TRACES_EXPORTER: unset or none leaves the global no-op provider (no span is
//     recorded, each costs a check); console writes each span as one JSON object per
//     line on standard output; otlp sends them over OTLP/HTTP.
//   - OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, _HEADERS,
//     _TIMEOUT, …: read by the OTLP exporter itself.
//   - OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES: the resource (default service name:
//     filemill-<role>).
//   - OTEL_TRACES_SAMPLER, OTEL_TRACES_SAMPLER_ARG: read by the SDK (default
//     parentbased_always_on).
//   - OTEL_BSP_SCHEDULE_DELAY, _EXPORT_TIMEOUT, _MAX_QUEUE_SIZE, _MAX_EXPORT_BATCH_SIZE:
//     read by the SDK's batch span processor (the delay is 2 s here when unset).
//
// The W3C trace context is the propagator: what an incoming request's traceparent
// says is honoured, and the enqueue carries it to the worker in the task's headers. The
// shutdown returned flushes what is buffered.
func setupTracing(ctx context.Context, role string, stdout io.Writer) (shutdown func(context.Context) error, err error) {
	none := func(context.Context) error { return nil }
	var exp sdktrace.SpanExporter
	switch v := strings.TrimSpace(os.Getenv("OTEL_TRACES_EXPORTER")); v {
	case "", "none":
		return none, nil
	case "console":
		// One JSON object per line: the SDK's stdout exporter, without pretty print.
		if exp, err = stdouttrace.New(stdouttrace.WithWriter(stdout)); err != nil {
			return none, fmt.Errorf("OTEL_TRACES_EXPORTER=console: %w", err)
		}
	case "otlp":
		if p := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"); p == "" {
			p = os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
			if p != "" && p != "http/protobuf" {
				return none, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%s: only http/protobuf is supported", p)
			}
		} else if p != "http/protobuf" {
			return none, fmt.Errorf("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=%s: only http/protobuf is supported", p)
		}
		if exp, err = otlptracehttp.New(ctx); err != nil {
			return none, fmt.Errorf("OTEL_TRACES_EXPORTER=otlp: %w", err)
		}
	default:
		return none, fmt.Errorf("OTEL_TRACES_EXPORTER=%s: must be otlp, console or none", v)
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(semconv.ServiceName(serviceName(role))))
	if err != nil {
		return none, fmt.Errorf("trace resource: %w", err)
	}
	// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win over the default name.
	if env, err := resource.New(ctx, resource.WithFromEnv()); err == nil {
		if merged, err := resource.Merge(res, env); err == nil {
			res = merged
		}
	}
	var opts []sdktrace.TracerProviderOption
	opts = append(opts, sdktrace.WithResource(res))
	if _, console := exp.(*stdouttrace.Exporter); console {
		// Each span is written as it ends, so a reader (or a test) sees it at once.
		opts = append(opts, sdktrace.WithSyncer(exp))
	} else {
		// A trace reaches its store within 2 s of its job, unless OTEL_BSP_SCHEDULE_DELAY
		// says otherwise (the SDK lets an option override the variable).
		var batch []sdktrace.BatchSpanProcessorOption
		if os.Getenv("OTEL_BSP_SCHEDULE_DELAY") == "" {
			batch = append(batch, sdktrace.WithBatchTimeout(2*time.Second))
		}
		opts = append(opts, sdktrace.WithBatcher(exp, batch...))
	}
	tp := sdktrace.NewTracerProvider(opts...)
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.TraceContext{})
	return tp.Shutdown, nil
}

// serviceName is the default service name of a process of the given role.
func serviceName(role string) string { return "filemill-" + role }
