package rest

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics is a registry per server, so tests can build many servers in one process.
type metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

// newMetrics registers the HTTP metrics, the Go runtime's and the process's with reg
// (a registry of its own when nil).
func newMetrics(reg *prometheus.Registry, queueDepth func(ctx context.Context) (map[string]int, error)) *metrics {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m := &metrics{reg: reg}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "filemill_http_requests_total", Help: "HTTP requests by route and status.",
	}, []string{"route", "status"})
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "filemill_http_request_duration_seconds", Help: "HTTP request latency by route.",
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
	}, []string{"route"})
	m.reg.MustRegister(m.requests, m.latency, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if queueDepth != nil {
		m.reg.MustRegister(&queueCollector{depth: queueDepth,
			desc: prometheus.NewDesc("filemill_queue_depth", "Tasks waiting or running per queue.", []string{"queue"}, nil)})
	}
	return m
}

func (m *metrics) observe(route string, status int, d time.Duration) {
	m.requests.WithLabelValues(route, strconv.Itoa(status)).Inc()
	m.latency.WithLabelValues(route).Observe(d.Seconds())
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// queueCollector reads queue depth at scrape time instead of polling.
type queueCollector struct {
	depth func(ctx context.Context) (map[string]int, error)
	desc  *prometheus.Desc
}

func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	depth, err := c.depth(ctx)
	if err != nil {
		return
	}
	for q, n := range depth {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), q)
	}
}
