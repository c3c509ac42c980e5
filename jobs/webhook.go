package jobs

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/domain/logging"
	"github.com/filemill/filemill/domain/netguard"
)

// Webhook delivery: attempts are asynq tasks on their own queue, served by a pool of
// their own (so slow endpoints never take the goroutines jobs run on); the HTTP request
// goes through the SSRF guard on every connection.

const (
	// TypeWebhookDeliver makes one attempt of a webhook delivery.
	TypeWebhookDeliver = "webhook:deliver"
	// TypeSweepDeliveries schedules again delivery attempts whose task went missing.
	TypeSweepDeliveries = "sweep:deliveries"
	// TypeSweepEvents deletes events past their retention.
	TypeSweepEvents = "sweep:events"
	// WebhookQueueName is the asynq queue of delivery attempts.
	WebhookQueueName = "webhooks"
)

// WebhookPayload is the payload of a TypeWebhookDeliver task.
type WebhookPayload struct {
	DeliveryID string `json:"delivery_id"`
	EndpointID string `json:"endpoint_id"`
	Attempt    int    `json:"attempt"` // attempts made before this one
	Manual     bool   `json:"manual,omitempty"`
}

// WebhookQueue schedules delivery attempts through asynq. It implements
// domain.DeliveryQueue.
type WebhookQueue struct {
	rdb    redis.UniversalClient
	client *asynq.Client
	// MaxRetry retries an attempt that could not run (the database was down, say);
	// an attempt that ran is never retried by asynq, the schedule is the domain's.
	MaxRetry int
}

var _ domain.DeliveryQueue = (*WebhookQueue)(nil)

// NewWebhookQueue returns a queue on Redis.
func NewWebhookQueue(opt asynq.RedisConnOpt) *WebhookQueue {
	rdb := newRedisClient(opt)
	return &WebhookQueue{rdb: rdb, client: asynq.NewClientFromRedisClient(rdb), MaxRetry: 5}
}

// EnqueueDelivery schedules an attempt. Its task id is the delivery's id and attempt
// number, so the relay, the retry schedule and the due-delivery sweep never queue the
// same attempt twice; a manual retry gets an id of its own and runs beside any.
func (q *WebhookQueue) EnqueueDelivery(ctx context.Context, t domain.DeliveryTask) error {
	id := t.DeliveryID + ":" + strconv.Itoa(t.Attempt)
	if t.Manual {
		id += ":m" + randomHex(6)
	}
	return q.enqueue(ctx, WebhookPayload{DeliveryID: t.DeliveryID, EndpointID: t.EndpointID, Attempt: t.Attempt, Manual: t.Manual}, id, t.At)
}

func (q *WebhookQueue) enqueue(ctx context.Context, p WebhookPayload, id string, at time.Time) error {
	payload, err := json.Marshal(p)
	if err != nil {
		return err
	}
	opts := []asynq.Option{asynq.TaskID(id), asynq.Queue(WebhookQueueName), asynq.MaxRetry(q.MaxRetry),
		// The request's own 15 s plus the bookkeeping around it.
		asynq.Timeout(time.Minute)}
	if !at.IsZero() && time.Until(at) > 0 {
		opts = append(opts, asynq.ProcessAt(at))
	}
	_, err = q.client.EnqueueContext(ctx, asynq.NewTask(TypeWebhookDeliver, payload), opts...)
	if err != nil && !errors.Is(err, asynq.ErrTaskIDConflict) {
		return fmt.Errorf("enqueue delivery %s: %w", p.DeliveryID, err)
	}
	return nil
}

// Close releases the connections.
func (q *WebhookQueue) Close() error { return q.rdb.Close() }

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// SenderConfig sets how webhook requests are made.
type SenderConfig struct {
	// Guard vets every connection's address (FILEMILL_OUTBOUND_ALLOW_CIDRS opens it).
	Guard *netguard.Guard
	// Timeout bounds one request, connection to last header byte and the body
	// snippet read (the contract's 15 s).
	Timeout time.Duration
	// RootCAs verifies endpoints' certificates; nil is the system pool.
	RootCAs *x509.CertPool
	// IdleConnsPerHost is how many kept-alive connections to one endpoint host stay open.
	IdleConnsPerHost int
	// UserAgent is sent with every request.
	UserAgent string
}

// DefaultSenderConfig returns the defaults.
func DefaultSenderConfig() SenderConfig {
	return SenderConfig{Guard: &netguard.Guard{}, Timeout: 15 * time.Second, IdleConnsPerHost: 16,
		UserAgent: "filemill-webhooks/1 (+https://github.com/filemill/filemill)"}
}

// HTTPSender makes webhook requests over kept-alive connections. It implements
// domain.WebhookSender.
type HTTPSender struct {
	cfg    SenderConfig
	client *http.Client
}

var _ domain.WebhookSender = (*HTTPSender)(nil)

// NewHTTPSender returns a sender; zero settings take DefaultSenderConfig's.
func NewHTTPSender(cfg SenderConfig) *HTTPSender {
	def := DefaultSenderConfig()
	if cfg.Guard == nil {
		cfg.Guard = def.Guard
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = def.Timeout
	}
	if cfg.IdleConnsPerHost <= 0 {
		cfg.IdleConnsPerHost = def.IdleConnsPerHost
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = def.UserAgent
	}
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second, Control: cfg.Guard.Control}
	tr := &http.Transport{
		Proxy:                 nil, // HTTPS_PROXY must not route deliveries elsewhere
		DialContext:           dialer.DialContext,
		TLSClientConfig:       &tls.Config{RootCAs: cfg.RootCAs, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:   10 * time.Second,
		MaxIdleConns:          1024,
		MaxIdleConnsPerHost:   cfg.IdleConnsPerHost,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: cfg.Timeout,
		DisableCompression:    true,
	}
	return &HTTPSender{cfg: cfg, client: &http.Client{Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// Close closes the kept-alive connections.
func (s *HTTPSender) Close() { s.client.CloseIdleConnections() }

const (
	snippetBytes = 1024
	drainBytes   = 64 << 10 // read past the snippet so the connection can be reused
)

// Send POSTs the request. The URL is vetted again here (an IP literal), and the
// dialler vets every address it connects to, so a name whose DNS answer changed to a
// private address since creation reaches nothing.
func (s *HTTPSender) Send(ctx context.Context, r *domain.WebhookRequest) *domain.WebhookResponse {
	start := time.Now()
	res := &domain.WebhookResponse{}
	defer func() { res.Duration = time.Since(start) }()
	if _, err := s.cfg.Guard.ParseURL(r.URL); err != nil {
		res.Err = "the url " + err.Error()
		return res
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.URL, strings.NewReader(string(r.Body)))
	if err != nil {
		res.Err = "the url is not valid"
		return res
	}
	for k, v := range r.Header {
		req.Header.Set(k, v)
	}
	req.Header.Set("User-Agent", s.cfg.UserAgent)
	resp, err := s.client.Do(req)
	if err != nil {
		res.Err = describeSendError(ctx, err, s.cfg.Timeout)
		return res
	}
	defer resp.Body.Close()
	res.StatusCode = resp.StatusCode
	res.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, snippetBytes))
	res.Snippet = string(snippet)
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, drainBytes))
	return res
}

// parseRetryAfter reads seconds or an HTTP date; 0 for none or nonsense.
func parseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
		if n <= 0 {
			return 0
		}
		return time.Duration(min(n, 7*24*3600)) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// describeSendError says why no answer came, naming no address the endpoint's owner
// did not give.
func describeSendError(ctx context.Context, err error, timeout time.Duration) string {
	var re *netguard.RefusedError
	var hostErr x509.HostnameError
	var unknownCA x509.UnknownAuthorityError
	var invalid x509.CertificateInvalidError
	var dnsErr *net.DNSError
	switch {
	case errors.As(err, &re):
		return "the url's host " + re.Reason
	case errors.Is(ctx.Err(), context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Sprintf("no answer within %s", timeout)
	case errors.As(err, &dnsErr):
		return "the host does not resolve"
	case errors.As(err, &hostErr):
		return "the TLS certificate is not valid for the host"
	case errors.As(err, &unknownCA):
		return "the TLS certificate is not signed by a trusted authority"
	case errors.As(err, &invalid):
		return "the TLS certificate is invalid"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "the connection was refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "the connection was reset"
	case errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.EHOSTUNREACH):
		return "the host is unreachable"
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return fmt.Sprintf("no answer within %s", timeout)
	}
	return "the request failed"
}

// endpointGate bounds the attempts to one endpoint running at once in this process, so
// a slow endpoint holds at most that many of the delivery goroutines, and as many more
// waiting a moment for their turn; the rest come back later.
type endpointGate struct {
	mu    sync.Mutex
	limit int
	wait  time.Duration
	slots map[string]*endpointSlots
}

type endpointSlots struct {
	sem     chan struct{}
	waiting int
}

func newEndpointGate(limit int, wait time.Duration) *endpointGate {
	return &endpointGate{limit: limit, wait: wait, slots: map[string]*endpointSlots{}}
}

// acquire takes a slot of the endpoint, waiting up to the gate's wait when all are
// taken and fewer than limit others wait already; false when it got none.
func (g *endpointGate) acquire(ctx context.Context, id string) bool {
	g.mu.Lock()
	s := g.slots[id]
	if s == nil {
		s = &endpointSlots{sem: make(chan struct{}, g.limit)}
		g.slots[id] = s
	}
	select {
	case s.sem <- struct{}{}:
		g.mu.Unlock()
		return true
	default:
	}
	if s.waiting >= g.limit {
		g.mu.Unlock()
		return false
	}
	s.waiting++
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		s.waiting--
		g.mu.Unlock()
	}()
	t := time.NewTimer(g.wait)
	defer t.Stop()
	select {
	case s.sem <- struct{}{}:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

func (g *endpointGate) release(id string) {
	g.mu.Lock()
	s := g.slots[id]
	g.mu.Unlock()
	<-s.sem
}

// WebhookConfig sets how a process relays events and delivers webhooks.
type WebhookConfig struct {
	// PerEndpoint is how many attempts to one endpoint run at once in this process; as
	// many more may wait up to a second for a turn, the rest come back a second later.
	PerEndpoint int
	// RelayBatch is how many events one relay transaction claims.
	RelayBatch int
	// RelayPoll is how often the relay looks at the outbox without a nudge: the safety
	// net for a lost nudge and for writers that do not nudge.
	RelayPoll time.Duration
	// Nudges wakes the relay after commits that wrote events; nil polls only.
	Nudges <-chan struct{}
}

// DefaultWebhookConfig returns the defaults.
func DefaultWebhookConfig() WebhookConfig {
	return WebhookConfig{PerEndpoint: 8, RelayBatch: domain.RelayBatch, RelayPoll: time.Second}
}

// WebhookPool is the pool of a worker server that makes delivery attempts: a queue
// and goroutines of its own, so endpoints slow to answer never take the slots jobs run
// in.
func WebhookPool(concurrency int) Pool {
	return Pool{Name: "webhooks", Queues: map[string]int{WebhookQueueName: 1}, Concurrency: concurrency}
}

// RegisterWebhookTasks wires delivery attempts, the outbox relay and the event sweeps
// into a worker server whose pools include WebhookPool. q schedules the attempts that
// come back because their endpoint was busy.
func RegisterWebhookTasks(w *Server, svc *domain.Services, q *WebhookQueue, cfg WebhookConfig, log *slog.Logger) {
	def := DefaultWebhookConfig()
	if cfg.PerEndpoint <= 0 {
		cfg.PerEndpoint = def.PerEndpoint
	}
	if cfg.RelayBatch <= 0 {
		cfg.RelayBatch = def.RelayBatch
	}
	if cfg.RelayPoll <= 0 {
		cfg.RelayPoll = def.RelayPoll
	}
	gate := newEndpointGate(cfg.PerEndpoint, time.Second)
	w.Handle(TypeWebhookDeliver, asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
		var p WebhookPayload
		if err := json.Unmarshal(t.Payload(), &p); err != nil {
			return fmt.Errorf("%w: bad payload: %v", asynq.SkipRetry, err)
		}
		if !gate.acquire(ctx, p.EndpointID) {
			// Busy: come back shortly, under an id of its own, without counting an attempt.
			id := p.DeliveryID + ":" + strconv.Itoa(p.Attempt) + ":b" + randomHex(6)
			return q.enqueue(ctx, p, id, time.Now().Add(time.Second))
		}
		defer gate.release(p.EndpointID)
		return svc.Webhooks.Attempt(ctx, domain.DeliveryTask{DeliveryID: p.DeliveryID, EndpointID: p.EndpointID,
			Attempt: p.Attempt, Manual: p.Manual})
	}))
	task := func(name string, run func(ctx context.Context) (int, error)) asynq.Handler {
		return asynq.HandlerFunc(func(ctx context.Context, _ *asynq.Task) error {
			n, err := run(ctx)
			if n > 0 {
				log.Info("sweep", "sweep", name, "count", n)
			}
			return err
		})
	}
	w.Handle(TypeSweepDeliveries, task("deliveries", func(ctx context.Context) (int, error) {
		return svc.Webhooks.RequeueDueDeliveries(ctx, time.Minute, 1000)
	}))
	w.Handle(TypeSweepEvents, task("events", func(ctx context.Context) (int, error) {
		total := 0
		for {
			n, err := svc.Webhooks.SweepEvents(ctx, 1000)
			total += n
			if err != nil || n < 1000 || ctx.Err() != nil {
				return total, err
			}
		}
	}))
	w.Periodic("@every 1m", asynq.NewTask(TypeSweepDeliveries, nil))
	w.Periodic("@hourly", asynq.NewTask(TypeSweepEvents, nil))
	// The relay runs for as long as the server: Locally calls it once, at Start.
	w.Locally(time.Hour, func(ctx context.Context) { RunRelay(ctx, svc.Webhooks, cfg, log) })
}

// RunRelay relays the outbox until ctx ends: at once on every nudge, and every
// cfg.RelayPoll whatever happens. Several relays may run, in one process or many.
func RunRelay(ctx context.Context, w *domain.Webhooks, cfg WebhookConfig, log *slog.Logger) {
	batch := cfg.RelayBatch
	if batch <= 0 {
		batch = domain.RelayBatch
	}
	poll := cfg.RelayPoll
	if poll <= 0 {
		poll = time.Second
	}
	tick := time.NewTicker(poll)
	defer tick.Stop()
	// While the database or Redis is down every round fails alike: one line per interval.
	repeated := logging.NewRepeated(log, 10*time.Second)
	for {
		for ctx.Err() == nil {
			n, err := w.Relay(ctx, batch)
			if err != nil && ctx.Err() == nil {
				repeated.Log(ctx, slog.LevelWarn, "relay", "relay failed", "error", err.Error(), "relayed", n)
			}
			if n < batch || (err != nil && n == 0) {
				break
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-cfg.Nudges:
		case <-tick.C:
		}
	}
}
