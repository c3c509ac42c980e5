package rest

import (
	"net/http"

	"github.com/filemill/filemill/domain"
)

type createUploadRequest struct {
	Filename   string             `json:"filename"`
	ByteSize   *int64             `json:"byte_size"`
	FromURL    string             `json:"from_url"`
	MIMEType   string             `json:"mime_type"`
	Multipart  bool               `json:"multipart"`
	ProjectID  string             `json:"project_id"`
	Validation *validationRequest `json:"validation"`
}

type validationRequest struct {
	Formats  []string `json:"formats"`
	MaxBytes *int64   `json:"max_bytes"`
	MinBytes *int64   `json:"min_bytes"`
	Scan     bool     `json:"scan"`
}

func (s *Server) createUpload(w http.ResponseWriter, r *http.Request, p *domain.Principal) {
	var req createUploadRequest
	if !decodeRequest(w, r, &req, false) {
		return
	}
	nu := domain.NewUpload{Filename: req.Filename, FromURL: req.FromURL, MIMEType: req.MIMEType,
		Multipart: req.Multipart, ProjectID: req.ProjectID}
	var err error
	if nu.ByteSize, err = domain.OptionalPositive("byte_size", req.ByteSize); err != nil {
		writeError(w, r, err)
		return
	}
	if v := req.Validation; v != nil {
		nu.Validation = &domain.Validation{Formats: v.Formats, Scan: v.Scan}
		if nu.Validation.MaxBytes, err = domain.OptionalPositive("validation.max_bytes", v.MaxBytes); err != nil {
			writeError(w, r, err)
			return
		}
		if nu.Validation.MinBytes, err = domain.OptionalPositive("validation.min_bytes", v.MinBytes); err != nil {
			writeError(w, r, err)
			return
		}
	}
	t, err := s.svc.Uploads.CreateUpload(r.Context(), p, nu)
	if err != nil {
		writeError(w, r, err)
		return
	}
	if req.FromURL != "" {
		writeJSON(w, http.StatusOK, t.File.View())
		return
	}
	writeJSON(w, http.StatusCreated, t.View())
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
	t, err := s.svc.Uploads.RemintParts(r.Context(), p, r.PathValue("upload_id"))
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, t.View())
}

type completePartsRequest struct {
	Parts []struct {
		PartNumber *int    `json:"part_number"`
		ETag       *string `json:"etag"`
	} `json:"parts"`
}

func (s *Server) completeParts(w http.ResponseWriter, r *http.Request, p *domain.Principal) {
	var req completePartsRequest
	if !decodeRequest(w, r, &req, false) {
		return
	}
	// A missing number or etag reads as 0 or "", which the domain refuses by name.
	parts := make([]domain.PartETag, 0, len(req.Parts))
	for _, pt := range req.Parts {
		var part domain.PartETag
		if pt.PartNumber != nil {
			part.PartNumber = *pt.PartNumber
		}
		if pt.ETag != nil {
			part.ETag = *pt.ETag
		}
		parts = append(parts, part)
	}
	f, err := s.svc.Uploads.CompleteParts(r.Context(), p, r.PathValue("upload_id"), parts)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, f.View())
}

func (s *Server) abortUpload(w http.ResponseWriter, r *http.Request, p *domain.Principal) {
	if !decodeRequest(w, r, &struct{}{}, true) {
		return
	}
	if err := s.svc.Uploads.AbortUpload(r.Context(), p, r.PathValue("upload_id")); err != nil {
		writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) completeFile(w http.ResponseWriter, r *http.Request, p *domain.Principal) {
	if !decodeRequest(w, r, &struct{}{}, true) {
		return
	}
	f, err := s.svc.Files.CompleteFile(r.Context(), p, r.PathValue("file_id"))
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, f.View())
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
	expires := 0
	if req.ExpiresIn != nil {
		if *req.ExpiresIn == 0 {
			writeError(w, r, domain.InvalidParam("expires_in", "expires_in must be between %d and %d seconds", domain.MinDownloadTTL, domain.MaxDownloadTTL))
			return
		}
		expires = *req.ExpiresIn
	}
	d, err := s.svc.Files.MintDownloadURL(r.Context(), p, r.PathValue("file_id"), req.ArtifactID, expires)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, d.View())
}
