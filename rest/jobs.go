package rest

import (
	"encoding/json"
	"net/http"

	"github.com/filemill/filemill/domain"
)

type createJobRequest struct {
	FileID    string          `json:"file_id"`
	Operation string          `json:"operation"`
	Preset    string          `json:"preset"`
	Options   json.RawMessage `json:"options"`
}

// optionsObject refuses options that are not a JSON object before the domain looks at them.
func optionsObject(raw json.RawMessage) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return domain.InvalidParam("options", "options must be a JSON object")
	}
	return nil
}

func (s *Server) createJob(w http.ResponseWriter, r *http.Request, p *domain.Principal) {
	var req createJobRequest
	if !decodeRequest(w, r, &req, false) {
		return
	}
	if err := optionsObject(req.Options); err != nil {
		writeError(w, r, err)
		return
	}
	j, err := s.svc.Jobs.CreateJob(r.Context(), p, domain.JobRequest{FileID: req.FileID, Operation: req.Operation, Preset: req.Preset, Options: req.Options,
		Answer: func(j *domain.Job) (*domain.IdempotencyRecord, error) {
			return answer(r, http.StatusAccepted, j.View())
		}})
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeAnswer(w, r, http.StatusAccepted, j.View())
}

func (s *Server) cancelJob(w http.ResponseWriter, r *http.Request, p *domain.Principal) {
	if !decodeRequest(w, r, &struct{}{}, true) {
		return
	}
	j, err := s.svc.Jobs.CancelJob(r.Context(), p, r.PathValue("job_id"))
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, j.View())
}

type createBatchRequest struct {
	FileIDs   []string        `json:"file_ids"`
	Operation string          `json:"operation"`
	Preset    string          `json:"preset"`
	Options   json.RawMessage `json:"options"`
}

func (s *Server) createBatch(w http.ResponseWriter, r *http.Request, p *domain.Principal) {
	var req createBatchRequest
	if !decodeRequest(w, r, &req, false) {
		return
	}
	if err := optionsObject(req.Options); err != nil {
		writeError(w, r, err)
		return
	}
	b, jobs, err := s.svc.Jobs.CreateBatch(r.Context(), p, domain.BatchRequest{FileIDs: req.FileIDs, Operation: req.Operation, Preset: req.Preset, Options: req.Options,
		Answer: func(b *domain.Batch, jobs []*domain.Job) (*domain.IdempotencyRecord, error) {
			return answer(r, http.StatusAccepted, domain.NewBatchView(b, jobs))
		}})
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeAnswer(w, r, http.StatusAccepted, domain.NewBatchView(b, jobs))
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
