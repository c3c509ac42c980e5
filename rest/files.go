package rest

import (
	"net/http"

	"github.com/filemill/filemill/domain"
)

func (s *Server) createUpload(w http.ResponseWriter, r *http.Request, p *domain.Principal) {
	var req domain.UploadRequest
	if !decodeRequest(w, r, &req, false) {
		return
	}
	s.do(w, r, p, req)
}

func (s *Server) getUpload(w http.ResponseWriter, r *http.Request, p *domain.Principal) {
	t, err := s.svc.Uploads.GetUpload(r.Context(), p, r.PathValue("upload_id"))
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, t.View())
}

func (s *Server) remintParts(w http.ResponseWriter, r *http.Request, p *domain.Principal) {
	if !decodeRequest(w, r, &struct{}{}, true) {
		return
	}
	s.do(w, r, p, domain.RemintPartsRequest{UploadID: r.PathValue("upload_id")})
}

func (s *Server) completeParts(w http.ResponseWriter, r *http.Request, p *domain.Principal) {
	var req struct {
		Parts []domain.PartRequest `json:"parts"`
	}
	if !decodeRequest(w, r, &req, false) {
		return
	}
	s.do(w, r, p, domain.CompletePartsRequest{UploadID: r.PathValue("upload_id"), Parts: req.Parts})
}

func (s *Server) abortUpload(w http.ResponseWriter, r *http.Request, p *domain.Principal) {
	if !decodeRequest(w, r, &struct{}{}, true) {
		return
	}
	s.do(w, r, p, domain.AbortUploadRequest{UploadID: r.PathValue("upload_id")})
}

func (s *Server) completeFile(w http.ResponseWriter, r *http.Request, p *domain.Principal) {
	if !decodeRequest(w, r, &struct{}{}, true) {
		return
	}
	s.do(w, r, p, domain.CompleteFileRequest{FileID: r.PathValue("file_id")})
}

func (s *Server) listFiles(w http.ResponseWriter, r *http.Request, p *domain.Principal) {
	page, err := pageFrom(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	list, err := s.svc.Files.ListFiles(r.Context(), p, r.URL.Query().Get("project_id"), page)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, newList(list, (*domain.File).View, func(f *domain.File) string { return f.ID }))
}

func (s *Server) getFile(w http.ResponseWriter, r *http.Request, p *domain.Principal) {
	f, err := s.svc.Files.GetFile(r.Context(), p, r.PathValue("file_id"))
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, f.View())
}

func (s *Server) deleteFile(w http.ResponseWriter, r *http.Request, p *domain.Principal) {
	if err := s.svc.Files.DeleteFile(r.Context(), p, r.PathValue("file_id")); err != nil {
		writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) fileHistory(w http.ResponseWriter, r *http.Request, p *domain.Principal) {
	events, err := s.svc.Files.History(r.Context(), p, r.PathValue("file_id"))
	if err != nil {
		writeError(w, r, err)
		return
	}
	out := listBody[domain.HistoryEntryView]{Object: "list", Data: make([]domain.HistoryEntryView, 0, len(events))}
	for _, e := range events {
		out.Data = append(out.Data, e.HistoryView())
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) downloadURL(w http.ResponseWriter, r *http.Request, p *domain.Principal) {
	var req struct {
		ArtifactID string `json:"artifact_id"`
		ExpiresIn  *int   `json:"expires_in"`
	}
	if !decodeRequest(w, r, &req, true) {
		return
	}
	s.do(w, r, p, domain.DownloadURLRequest{FileID: r.PathValue("file_id"), ArtifactID: req.ArtifactID, ExpiresIn: req.ExpiresIn})
}
