package rest

import (
	"net/http"

	"github.com/filemill/filemill/domain"
)

func (s *Server) createJob(w http.ResponseWriter, r *http.Request, p *domain.Principal) {
	var req domain.JobRequest
	if !decodeRequest(w, r, &req, false) {
		return
	}
	s.do(w, r, p, req)
}

func (s *Server) cancelJob(w http.ResponseWriter, r *http.Request, p *domain.Principal) {
	if !decodeRequest(w, r, &struct{}{}, true) {
		return
	}
	s.do(w, r, p, domain.CancelJobRequest{JobID: r.PathValue("job_id")})
}

func (s *Server) createBatch(w http.ResponseWriter, r *http.Request, p *domain.Principal) {
	var req domain.BatchRequest
	if !decodeRequest(w, r, &req, false) {
		return
	}
	s.do(w, r, p, req)
}

func (s *Server) getBatch(w http.ResponseWriter, r *http.Request, p *domain.Principal) {
	b, jobs, err := s.svc.Jobs.FindBatch(r.Context(), p, r.PathValue("batch_id"))
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, b.View(jobs))
}

func (s *Server) listOperations(w http.ResponseWriter, r *http.Request, p *domain.Principal) {
	ops, err := s.svc.Jobs.ListOperations(r.Context(), p)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, listBody[domain.OperationView]{Object: "list", Data: ops})
}

func (s *Server) getUsage(w http.ResponseWriter, r *http.Request, p *domain.Principal) {
	u, err := s.svc.Usage.GetUsage(r.Context(), p, r.URL.Query().Get("project_id"))
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, u)
}
