package rest

import (
	"net/http"

	"github.com/filemill/filemill/domain"
)

func (s *Server) listJobs(w http.ResponseWriter, r *http.Request, p *domain.Principal) {
	page, err := pageFrom(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	q := r.URL.Query()
	list, err := s.svc.Jobs.ListJobs(r.Context(), p, domain.JobQuery{ProjectID: q.Get("project_id"), State: q.Get("state"),
		FileID: q.Get("file_id"), BatchID: q.Get("batch_id"), Page: page})
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, newList(list, (*domain.Job).View, func(j *domain.Job) string { return j.ID }))
}

func (s *Server) getJob(w http.ResponseWriter, r *http.Request, p *domain.Principal) {
	j, err := s.svc.Jobs.FindJob(r.Context(), p, r.PathValue("job_id"))
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, j.View())
}

func (s *Server) listJobArtifacts(w http.ResponseWriter, r *http.Request, p *domain.Principal) {
	page, err := pageFrom(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	list, err := s.svc.Jobs.ListJobArtifacts(r.Context(), p, r.PathValue("job_id"), page)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, newList(list, (*domain.Artifact).View, func(a *domain.Artifact) string { return a.ID }))
}

func (s *Server) listWebhookEndpoints(w http.ResponseWriter, r *http.Request, p *domain.Principal) {
	page, err := pageFrom(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	list, err := s.svc.Webhooks.ListEndpoints(r.Context(), p, r.URL.Query().Get("project_id"), page)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, newList(list, (*domain.WebhookEndpoint).View, func(e *domain.WebhookEndpoint) string { return e.ID }))
}

func (s *Server) createWebhookEndpoint(w http.ResponseWriter, r *http.Request, p *domain.Principal) {
	var req domain.NewWebhookEndpoint
	if !decodeRequest(w, r, &req, false) {
		return
	}
	s.do(w, r, p, req)
}

func (s *Server) deleteWebhookEndpoint(w http.ResponseWriter, r *http.Request, p *domain.Principal) {
	if err := s.svc.Webhooks.DeleteEndpoint(r.Context(), p, r.PathValue("webhook_endpoint_id")); err != nil {
		writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// decodeRequest reads and strictly decodes the body, answering 400 itself on failure.
func decodeRequest(w http.ResponseWriter, r *http.Request, v any, optional bool) bool {
	body, err := readBody(r)
	if err == nil {
		err = checkContentType(r, body)
	}
	if err == nil {
		err = decodeStrict(body, v, optional)
	}
	if err != nil {
		writeError(w, r, err)
		return false
	}
	return true
}

func (s *Server) getWebhookEndpoint(w http.ResponseWriter, r *http.Request, p *domain.Principal) {
	ep, err := s.svc.Webhooks.FindEndpoint(r.Context(), p, r.PathValue("webhook_endpoint_id"))
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, ep.View())
}

func (s *Server) testWebhookEndpoint(w http.ResponseWriter, r *http.Request, p *domain.Principal) {
	s.do(w, r, p, domain.WebhookTestRequest{EndpointID: r.PathValue("webhook_endpoint_id")})
}

func (s *Server) rotateWebhookSecret(w http.ResponseWriter, r *http.Request, p *domain.Principal) {
	s.do(w, r, p, domain.RotateSecretRequest{EndpointID: r.PathValue("webhook_endpoint_id")})
}

func (s *Server) listWebhookDeliveries(w http.ResponseWriter, r *http.Request, p *domain.Principal) {
	page, err := pageFrom(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	list, err := s.svc.Webhooks.ListDeliveries(r.Context(), p, r.PathValue("webhook_endpoint_id"), page)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, newList(list, (*domain.Delivery).View, func(d *domain.Delivery) string { return d.ID }))
}

func (s *Server) retryWebhookDelivery(w http.ResponseWriter, r *http.Request, p *domain.Principal) {
	s.do(w, r, p, domain.RetryDeliveryRequest{EndpointID: r.PathValue("webhook_endpoint_id"), DeliveryID: r.PathValue("delivery_id")})
}

func (s *Server) listEvents(w http.ResponseWriter, r *http.Request, p *domain.Principal) {
	page, err := pageFrom(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	q := r.URL.Query()
	list, err := s.svc.Webhooks.ListEvents(r.Context(), p, domain.EventQuery{ProjectID: q.Get("project_id"), Type: q.Get("type"), Page: page})
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, newList(list, (*domain.Event).View, func(e *domain.Event) string { return e.ID }))
}

func (s *Server) getEvent(w http.ResponseWriter, r *http.Request, p *domain.Principal) {
	e, err := s.svc.Webhooks.FindEvent(r.Context(), p, r.PathValue("event_id"))
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, e.View())
}
