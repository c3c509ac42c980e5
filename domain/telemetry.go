package domain

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Tracer is the tracer of filemill's own spans. It is the process's global provider's:
// a no-op one unless the process was started with OTEL_TRACES_EXPORTER set (see
// cmd/filemill), so an untraced process pays a check per span and nothing more.
var Tracer = otel.Tracer("github.com/filemill/filemill")

// StartSpan starts a child span of ctx's span named name.
func StartSpan(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	return Tracer.Start(ctx, name, trace.WithAttributes(attrs...))
}

// EndSpan ends span, marking it failed with err when err is not nil. A contract error
// records its code, never the message's details.
func EndSpan(span trace.Span, err error) {
	if err != nil && span.IsRecording() {
		span.SetStatus(codes.Error, ErrorCode(err))
		span.SetAttributes(attribute.String("filemill.error_code", ErrorCode(err)))
	}
	span.End()
}

// TraceID is the trace id of ctx's span, 32 hex digits; "" when there is none (tracing
// off, or a context outside a request).
func TraceID(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.TraceID().IsValid() {
		return ""
	}
	return sc.TraceID().String()
}

// Job phases: where a job's time went. queue is from its admission to its first claim;
// download, engine and upload are summed over an attempt's inputs, steps and artifacts.
const (
	PhaseQueue    = "queue"
	PhaseDownload = "download"
	PhaseEngine   = "engine"
	PhaseUpload   = "upload"
)

// Attempt outcomes, as the metrics label them: the job succeeded or failed, will be
// retried, did not run (the store unreachable, the job claimed elsewhere), or another
// attempt recorded the outcome.
const (
	OutcomeSucceeded = "succeeded"
	OutcomeFailed    = "failed"
	OutcomeRetry     = "retry"
	OutcomeNotRun    = "not_run"
	OutcomeSkipped   = "skipped"
)

// Observer receives the figures the domain measures, for the process's metrics. Its
// labels are bounded: operation names of the registry, outcomes and phases above.
type Observer interface {
	// JobPhases reports an attempt's time per phase (only the phases it went through).
	JobPhases(operation, outcome string, phases map[string]time.Duration)
	// CreditsReserved reports credits reserved by admitted work.
	CreditsReserved(n int64)
	// CreditsCharged reports credits charged for finished work.
	CreditsCharged(n int64)
	// WebhookDelivery reports one delivery attempt: delivered, failed or gone (the
	// endpoint disabled or removed meanwhile), and how long it took.
	WebhookDelivery(outcome string, d time.Duration)
}

// NopObserver measures nothing.
type NopObserver struct{}

func (NopObserver) JobPhases(string, string, map[string]time.Duration) {}
func (NopObserver) CreditsReserved(int64)                              {}
func (NopObserver) CreditsCharged(int64)                               {}
func (NopObserver) WebhookDelivery(string, time.Duration)              {}

// PhaseClock sums an attempt's time per phase; it rides in the attempt's context so
// the places that spend the time (a download, an engine run, an upload) add to it.
type PhaseClock struct {
	mu  sync.Mutex
	d   map[string]time.Duration
	job *Job // the job the attempt claimed; nil when it claimed none
}

type phaseClockKey struct{}

// WithPhaseClock starts the phase clock of an attempt, in the context it returns.
func WithPhaseClock(ctx context.Context) (context.Context, *PhaseClock) {
	c := &PhaseClock{d: map[string]time.Duration{}}
	return context.WithValue(ctx, phaseClockKey{}, c), c
}

// AddPhase adds the time since start to ctx's attempt's phase; nothing outside one.
func AddPhase(ctx context.Context, phase string, start time.Time) {
	c, _ := ctx.Value(phaseClockKey{}).(*PhaseClock)
	if c == nil {
		return
	}
	c.mu.Lock()
	c.d[phase] += time.Since(start)
	c.mu.Unlock()
}

// Snapshot is the time spent so far, by phase.
func (c *PhaseClock) Snapshot() map[string]time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]time.Duration, len(c.d))
	for k, v := range c.d {
		out[k] = v
	}
	return out
}

// MetricOperation is the operation label of a job: its operation, or its preset's name
// when it is one of the registry's (a bounded set); "preset" otherwise.
func (s *Jobs) MetricOperation(j *Job) string {
	if j.Operation != "" {
		return j.Operation
	}
	if s.Registry != nil && s.Registry.Find("", j.Preset) != nil {
		return j.Preset
	}
	return "preset"
}

// Observed is the Observer, or one that measures nothing.
func (s *Jobs) Observed() Observer {
	if s.Observer == nil {
		return NopObserver{}
	}
	return s.Observer
}

// Job is the job the attempt claimed; nil when it claimed none.
func (c *PhaseClock) Job() *Job {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.job
}

// Claimed notes the job an attempt claimed; its first claim ends its time in the queue.
func (c *PhaseClock) Claimed(j *Job) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.job = j
	if j.Attempts == 1 && j.StartedAt != nil {
		c.d[PhaseQueue] = j.StartedAt.Sub(j.CreatedAt)
	}
}

// AttemptOutcome is how an attempt of j ended, from ProcessJob's answer and the state
// it left j in.
func AttemptOutcome(j *Job, err error) string {
	switch {
	case errors.Is(err, ErrNotRun):
		return OutcomeNotRun
	case errors.Is(err, ErrJobSkipped):
		return OutcomeSkipped
	case err != nil:
		return OutcomeRetry
	case j.State == JobSucceeded:
		return OutcomeSucceeded
	case j.State == JobFailed:
		return OutcomeFailed
	}
	return OutcomeSkipped
}

// RunEngine runs one pipeline step's engine in a span of its own (its family and
// operation as attributes), its time counted in the engine phase. It is the one place
// engines are measured, whatever engine runs.
func (s *Jobs) RunEngine(ctx context.Context, op *Operation, eng Engine, in EngineInput) (*EngineOutput, error) {
	ctx, span := Tracer.Start(ctx, "engine "+op.Engine, trace.WithAttributes(
		attribute.String("filemill.engine", op.Engine), attribute.String("filemill.operation", op.Name)))
	start := time.Now()
	out, err := eng.Run(ctx, in)
	AddPhase(ctx, PhaseEngine, start)
	if err == nil && out != nil && span.IsRecording() {
		span.SetAttributes(attribute.Int("filemill.units", out.Units), attribute.Int("filemill.outputs", len(out.Artifacts)))
	}
	EndSpan(span, err)
	return out, err
}

// traceParent is ctx's span as a W3C traceparent, "" when there is none.
func traceParent(ctx context.Context) string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	return c["traceparent"]
}

// SpanOf is the span a W3C traceparent names; not valid for "" or a malformed one.
func SpanOf(traceparent string) trace.SpanContext {
	if traceparent == "" {
		return trace.SpanContext{}
	}
	ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": traceparent})
	return trace.SpanContextFromContext(ctx)
}
