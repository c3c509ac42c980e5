package rest

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/domain/door"
)

// Checker reports whether one dependency is reachable, for /readyz.
type Checker struct {
	Name  string
	Check func(ctx context.Context) error
}

// Config holds the settings of the REST door.
type Config struct {
	// RequestTimeout bounds a request's handling; slow work belongs in jobs.
	RequestTimeout time.Duration
	// ReadinessChecks are run by /readyz, in order.
	ReadinessChecks []Checker
	// QueueDepth feeds the queue-depth gauge of the metrics; nil leaves it out.
	QueueDepth func(ctx context.Context) (map[string]int, error)
	// Metrics is the registry /metrics serves, which the HTTP metrics join: the
	// process's, shared with what its other parts measure (jobs, queues, webhooks); nil,
	// one of the server's own.
	Metrics *prometheus.Registry
	// Authenticators find who a request acts for, in order (package door); nil: API
	// keys alone.
	Authenticators []door.Authenticator
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config { return Config{RequestTimeout: 30 * time.Second} }

// Server is the REST door over the domain services.
type Server struct {
	cfg     Config
	svc     *domain.Services
	log     *slog.Logger
	metrics *metrics
	mux     *http.ServeMux
	door    *door.Door
}

// NewServer builds the door over the services (whose RateLimits every API process
// shares through Redis).
func NewServer(cfg Config, svc *domain.Services, log *slog.Logger) *Server {
	if log == nil {
		log = slog.Default()
	}
	s := &Server{cfg: cfg, svc: svc, log: log, metrics: newMetrics(cfg.Metrics, cfg.QueueDepth), mux: http.NewServeMux()}
	auth := cfg.Authenticators
	if auth == nil {
		auth = []door.Authenticator{door.APIKeys{Keys: svc.Keys}}
	}
	s.door = door.New(door.Config{Limits: svc.RateLimits, Authenticators: auth, Refuse: writeError, Log: log})
	s.routes()
	return s
}

// Handler returns the root handler: /v1, health and readiness. The metrics are not
// among them (see MetricsHandler).
func (s *Server) Handler() http.Handler {
	return s.door.Mount(s.withRecover(s.mux))
}

// MetricsHandler serves the Prometheus metrics at GET /metrics. They span every tenant
// (queue depths, routes), and ask for no key, so they are served on a listener of
// their own, for the operator's network only — never beside the API.
func (s *Server) MetricsHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", s.metrics.handler())
	return mux
}

func (s *Server) routes() {
	s.mux.HandleFunc("GET /healthz", s.healthz)
	s.mux.HandleFunc("GET /readyz", s.readyz)
	doc, err := OpenAPIDocument(s.svc.Jobs.Registry)
	if err != nil {
		panic("rest: openapi document: " + err.Error()) // the embedded document and the registry are fixed at build time
	}
	s.mux.Handle("GET /v1/openapi.json", s.door.Public(OpenAPIHandler(doc)))
	// The API's index, at /v1 and /v1/ alike: what a person trying the API finds first.
	index := s.door.Public(http.HandlerFunc(s.apiIndex))
	s.mux.Handle("GET /v1", index)
	s.mux.Handle("GET /v1/{$}", index)

	// Uploads and files.
	s.api("POST /v1/uploads", s.createUpload)
	s.api("GET /v1/uploads/{upload_id}", s.getUpload)
	s.api("POST /v1/uploads/{upload_id}/parts", s.remintParts)
	s.api("POST /v1/uploads/{upload_id}/complete-parts", s.completeParts)
	s.api("POST /v1/uploads/{upload_id}/abort", s.abortUpload)
	s.api("POST /v1/files/{file_id}/complete", s.completeFile)
	s.api("GET /v1/files", s.listFiles)
	s.api("GET /v1/files/{file_id}", s.getFile)
	s.api("DELETE /v1/files/{file_id}", s.deleteFile)
	s.api("GET /v1/files/{file_id}/history", s.fileHistory)
	s.api("POST /v1/files/{file_id}/download-url", s.downloadURL)

	// Jobs and batches.
	s.api("POST /v1/jobs", s.createJob)
	s.api("GET /v1/jobs", s.listJobs)
	s.api("GET /v1/jobs/{job_id}", s.getJob)
	s.api("GET /v1/jobs/{job_id}/artifacts", s.listJobArtifacts)
	s.api("POST /v1/jobs/{job_id}/cancel", s.cancelJob)
	s.api("POST /v1/batches", s.createBatch)
	s.api("GET /v1/batches/{batch_id}", s.getBatch)
	s.api("GET /v1/operations", s.listOperations)
	s.api("GET /v1/usage", s.getUsage)

	// Webhook endpoints.
	s.api("GET /v1/webhook-endpoints", s.listWebhookEndpoints)
	s.api("POST /v1/webhook-endpoints", s.createWebhookEndpoint)
	s.api("DELETE /v1/webhook-endpoints/{webhook_endpoint_id}", s.deleteWebhookEndpoint)
	s.api("GET /v1/webhook-endpoints/{webhook_endpoint_id}", s.getWebhookEndpoint)
	s.api("POST /v1/webhook-endpoints/{webhook_endpoint_id}/test", s.testWebhookEndpoint)
	s.api("POST /v1/webhook-endpoints/{webhook_endpoint_id}/rotate-secret", s.rotateWebhookSecret)
	s.api("GET /v1/webhook-endpoints/{webhook_endpoint_id}/deliveries", s.listWebhookDeliveries)
	s.api("POST /v1/webhook-endpoints/{webhook_endpoint_id}/deliveries/{delivery_id}/retry", s.retryWebhookDelivery)
	s.api("GET /v1/events", s.listEvents)
	s.api("GET /v1/events/{event_id}", s.getEvent)

	// Anything else under /v1 is a 404 in the contract's error shape, with the headers
	// (never a redirect from /v1 to /v1/).
	noRoute := s.door.Public(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, r, domain.Errorf(domain.CodeNotFound, "no route %s %s", r.Method, r.URL.Path))
	}))
	s.mux.Handle("/v1/", noRoute)
	s.mux.Handle("/v1", noRoute)
}

// apiHandler is a /v1 handler that runs for an authenticated principal.
type apiHandler func(w http.ResponseWriter, r *http.Request, p *domain.Principal)

// api registers an authenticated /v1 route. What the principal may do — its scopes
// among the rest — is decided by the domain call the handler makes, as it is for the
// GraphQL door; a POST's Idempotency-Key is checked by the domain too (Services.Do).
func (s *Server) api(pattern string, h apiHandler) {
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h(w, r, door.Principal(r.Context()))
	})
	s.mux.Handle(pattern, s.withMetrics(pattern, s.withTimeout(s.door.Authenticate(handler))))
}

// apiIndexView is the answer of GET /v1: the version and where to go next.
type apiIndexView struct {
	Object  string            `json:"object"`
	Version string            `json:"version"`
	Links   map[string]string `json:"links"`
}

func (s *Server) apiIndex(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, apiIndexView{Object: "api", Version: APIVersion(), Links: map[string]string{
		"openapi":    "/v1/openapi.json",
		"docs":       DocsURL,
		"operations": "/v1/operations",
		"graphql":    "/graphql",
	}})
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
	defer cancel()
	status, code := "ok", http.StatusOK
	checks := map[string]string{}
	for _, c := range s.cfg.ReadinessChecks {
		if err := c.Check(ctx); err != nil {
			checks[c.Name] = err.Error()
			status, code = "unavailable", http.StatusServiceUnavailable
		} else {
			checks[c.Name] = "ok"
		}
	}
	writeJSON(w, code, map[string]any{"status": status, "checks": checks})
}
