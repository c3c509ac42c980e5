package jobs

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/jobs/ops/runner"
)

// Metrics are the Prometheus figures of jobs, credits and webhook deliveries: where a
// job's time went (a histogram per phase, operation and outcome), credits reserved and
// charged, deliveries by outcome and latency. It implements domain.Observer. Every label
// is from a bounded set (operation names, phases, outcomes): never an id.
type Metrics struct {
	phases   *prometheus.HistogramVec
	reserved prometheus.Counter
	charged  prometheus.Counter
	webhooks *prometheus.HistogramVec
}

var _ domain.Observer = (*Metrics)(nil)

// jobBuckets span an inspect of a few milliseconds to a LibreOffice conversion of
// minutes.
var jobBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}

// NewMetrics registers the metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		phases: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "filemill_job_phase_duration_seconds",
			Help:    "Time of job attempts per phase: queue (admitted to first claimed), download (inputs copied to the worker), engine (the steps' engine runs), upload (artifacts stored); by operation and the attempt's outcome (succeeded, failed, retry, not_run, skipped).",
			Buckets: jobBuckets,
		}, []string{"operation", "outcome", "phase"}),
		reserved: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "filemill_credits_reserved_total", Help: "Credits reserved by admitted jobs.",
		}),
		charged: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "filemill_credits_charged_total", Help: "Credits charged for succeeded jobs.",
		}),
		webhooks: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "filemill_webhook_delivery_duration_seconds",
			Help:    "Webhook delivery attempts by outcome (delivered: a 2xx answer; rejected: another status; error: no answer), and how long each took.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 15},
		}, []string{"outcome"}),
	}
	reg.MustRegister(m.phases, m.reserved, m.charged, m.webhooks)
	return m
}

// JobPhases implements domain.Observer.
func (m *Metrics) JobPhases(operation, outcome string, phases map[string]time.Duration) {
	for phase, d := range phases {
		m.phases.WithLabelValues(operation, outcome, phase).Observe(d.Seconds())
	}
}

// CreditsReserved implements domain.Observer.
func (m *Metrics) CreditsReserved(n int64) { m.reserved.Add(float64(max(n, 0))) }

// CreditsCharged implements domain.Observer.
func (m *Metrics) CreditsCharged(n int64) { m.charged.Add(float64(max(n, 0))) }

// WebhookDelivery implements domain.Observer.
func (m *Metrics) WebhookDelivery(outcome string, d time.Duration) {
	m.webhooks.WithLabelValues(outcome).Observe(d.Seconds())
}

// ObserveSender wraps a webhook sender so each attempt is a span (a trace of its own,
// linked to the span that committed its event: the delivery runs long after it) and is
// counted by outcome. The request sent carries no trace headers: a receiver is not ours to trust
// with them.
func ObserveSender(next domain.WebhookSender, obs domain.Observer) domain.WebhookSender {
	return observedSender{next: next, obs: obs}
}

type observedSender struct {
	next domain.WebhookSender
	obs  domain.Observer
}

func (s observedSender) Send(ctx context.Context, r *domain.WebhookRequest) *domain.WebhookResponse {
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient)}
	if r.Event.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: r.Event}))
	}
	ctx, span := domain.Tracer.Start(ctx, "webhook delivery attempt", opts...)
	res := s.next.Send(ctx, r)
	outcome := "rejected"
	switch {
	case res.Err != "":
		outcome = "error"
	case res.StatusCode >= 200 && res.StatusCode < 300:
		outcome = "delivered"
	}
	s.obs.WebhookDelivery(outcome, res.Duration)
	if span.IsRecording() {
		span.SetAttributes(attribute.String("filemill.outcome", outcome), attribute.Int("http.response.status_code", res.StatusCode))
	}
	span.End()
	return res
}

// queueCollector reads each queue's depth and latency from asynq at scrape time.
type queueCollector struct {
	insp           *asynq.Inspector
	depth, latency *prometheus.Desc
}

// NewQueueCollector returns the collector of filemill_queue_depth (tasks not finished:
// pending, active, scheduled, retrying) and filemill_queue_latency_seconds (the age of
// the oldest pending task), per queue.
func NewQueueCollector(insp *asynq.Inspector) prometheus.Collector {
	return &queueCollector{insp: insp,
		depth:   prometheus.NewDesc("filemill_queue_depth", "Tasks waiting or running per queue.", []string{"queue"}, nil),
		latency: prometheus.NewDesc("filemill_queue_latency_seconds", "Age of the oldest task waiting per queue; 0 when none waits.", []string{"queue"}, nil)}
}

func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.depth; ch <- c.latency }

func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	queues, err := c.insp.Queues()
	if err != nil {
		return
	}
	for _, q := range queues {
		info, err := c.insp.GetQueueInfo(q)
		if err != nil {
			continue
		}
		ch <- prometheus.MustNewConstMetric(c.depth, prometheus.GaugeValue, float64(info.Pending+info.Active+info.Scheduled+info.Retry), q)
		ch <- prometheus.MustNewConstMetric(c.latency, prometheus.GaugeValue, info.Latency.Seconds(), q)
	}
}

// poolStats counts the attempts running in each of a worker's pools (engine families).
// Its maps are filled once, before the server starts.
type poolStats struct {
	byQueue map[string]string // queue -> pool
	busy    map[string]*atomic.Int64
}

// instanced is an engine that keeps instances of a tool (LibreOffice): their states and
// restarts are shown per engine.
type instanced interface {
	Instances() []runner.InstanceState
}

// poolCollector shows each engine pool's size, busy and waiting, and the instances and
// restarts of the engines that keep instances.
type poolCollector struct {
	s                                        *Server
	engines                                  map[string]domain.Engine
	size, busy, waiting, instances, restarts *prometheus.Desc
}

// PoolCollector returns the collector of the worker's engine pools:
// filemill_engine_pool_size (jobs it runs at once), filemill_engine_pool_busy (running
// now), filemill_engine_pool_waiting (tasks pending in its queues), per pool (engine
// family); and for engines that keep instances of a tool, filemill_engine_instances by
// state and filemill_engine_restarts_total.
func (s *Server) PoolCollector(engines map[string]domain.Engine) prometheus.Collector {
	return &poolCollector{s: s, engines: engines,
		size:      prometheus.NewDesc("filemill_engine_pool_size", "Jobs an engine pool runs at once.", []string{"pool"}, nil),
		busy:      prometheus.NewDesc("filemill_engine_pool_busy", "Jobs an engine pool runs now.", []string{"pool"}, nil),
		waiting:   prometheus.NewDesc("filemill_engine_pool_waiting", "Jobs pending in an engine pool's queues.", []string{"pool"}, nil),
		instances: prometheus.NewDesc("filemill_engine_instances", "Tool instances an engine keeps, by state (idle, busy, stopped).", []string{"engine", "state"}, nil),
		restarts:  prometheus.NewDesc("filemill_engine_restarts_total", "Tool instances an engine replaced (crashed, worn out, timed out).", []string{"engine"}, nil),
	}
}

func (c *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.size, c.busy, c.waiting, c.instances, c.restarts} {
		ch <- d
	}
}

func (c *poolCollector) Collect(ch chan<- prometheus.Metric) {
	for _, p := range c.s.cfg.Pools {
		ch <- prometheus.MustNewConstMetric(c.size, prometheus.GaugeValue, float64(p.Concurrency), p.Name)
		ch <- prometheus.MustNewConstMetric(c.busy, prometheus.GaugeValue, float64(c.s.pool.running(p.Name)), p.Name)
		pending := 0
		for q := range p.Queues {
			if info, err := c.s.inspector.GetQueueInfo(q); err == nil {
				pending += info.Pending + info.Scheduled + info.Retry
			}
		}
		ch <- prometheus.MustNewConstMetric(c.waiting, prometheus.GaugeValue, float64(pending), p.Name)
	}
	for name, e := range c.engines {
		ie, ok := e.(instanced)
		if !ok {
			continue
		}
		states := map[string]int{"idle": 0, "busy": 0, "stopped": 0}
		restarts := 0
		for _, st := range ie.Instances() {
			switch {
			case st.Busy:
				states["busy"]++
			case st.Running:
				states["idle"]++
			default:
				states["stopped"]++
			}
			restarts += st.Restarts
		}
		for state, n := range states {
			ch <- prometheus.MustNewConstMetric(c.instances, prometheus.GaugeValue, float64(n), name, state)
		}
		ch <- prometheus.MustNewConstMetric(c.restarts, prometheus.CounterValue, float64(restarts), name)
	}
}

func newPoolStats(pools []Pool) *poolStats {
	ps := &poolStats{byQueue: map[string]string{}, busy: map[string]*atomic.Int64{}}
	for _, p := range pools {
		ps.busy[p.Name] = new(atomic.Int64)
		for q := range p.Queues {
			ps.byQueue[q] = p.Name
		}
	}
	return ps
}

// track is asynq middleware counting the attempts running in each pool.
func (ps *poolStats) track(h asynq.Handler) asynq.Handler {
	return asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
		q, _ := asynq.GetQueueName(ctx)
		n := ps.busy[ps.byQueue[q]]
		if n == nil {
			return h.ProcessTask(ctx, t)
		}
		n.Add(1)
		defer n.Add(-1)
		return h.ProcessTask(ctx, t)
	})
}

func (ps *poolStats) running(pool string) int64 {
	n := ps.busy[pool]
	if n == nil {
		return 0
	}
	return n.Load()
}
