package rest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/filemill/filemill/domain"
)

// staleInProgress is how long an unfinished idempotent request holds its key: after a
// crash the key is freed again once no request could still be running under it.
const staleInProgress = 5 * time.Minute

// replayHeaders are the response headers stored with an idempotent answer.
var replayHeaders = []string{"Content-Type", "Location", "Retry-After"}

// withIdempotency requires Idempotency-Key on a POST and makes a retried request with
// the same key and body get the stored answer and cause no new effect.
func (s *Server) withIdempotency(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("Idempotency-Key")
		if err := validIdempotencyKey(key); err != nil {
			writeError(w, r, err)
			return
		}
		body, err := readBody(r)
		if err != nil {
			writeError(w, r, err)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		p := principalFrom(r.Context())
		now := s.svc.Clock.Now()
		rec := &domain.IdempotencyRecord{
			ID: domain.NewID("idem_"), OrganizationID: p.Organization.ID, Endpoint: r.Pattern, Key: key,
			Fingerprint: fingerprint(r, body), State: domain.IdempotencyInProgress,
			CreatedAt: now, ExpiresAt: now.Add(s.svc.Config.IdempotencyTTL),
		}
		existing, err := s.svc.Store.ClaimIdempotencyKey(r.Context(), rec)
		if err == nil && existing != nil && existing.State == domain.IdempotencyInProgress &&
			existing.CreatedAt.Before(now.Add(-staleInProgress)) {
			if err = s.svc.Store.ReleaseIdempotencyKey(r.Context(), existing.ID); err == nil {
				existing, err = s.svc.Store.ClaimIdempotencyKey(r.Context(), rec)
			}
		}
		if err != nil {
			writeError(w, r, err)
			return
		}
		if existing != nil {
			replay(w, r, existing, rec.Fingerprint)
			return
		}
		ir := &idempotentRequest{rec: rec}
		r = r.WithContext(context.WithValue(r.Context(), ctxIdempotency, ir))
		buf := &bufferedResponse{header: http.Header{}, status: 0}
		completed := false
		defer func() {
			if !completed {
				// A panic or an abort: free the key so the client can retry.
				_ = detached(r, func(ctx context.Context) error { return s.svc.Store.ReleaseIdempotencyKey(ctx, rec.ID) })
			}
		}()
		next.ServeHTTP(buf, r)
		if buf.status == 0 {
			buf.status = http.StatusOK
		}
		switch {
		case ir.answer != nil && buf.status == ir.answer.ResponseStatus:
			// Stored by the write of the effect itself (see answer).
		case buf.status >= 500:
			// 5xx answers are not stored: the same key may be retried.
			_ = detached(r, func(ctx context.Context) error { return s.svc.Store.ReleaseIdempotencyKey(ctx, rec.ID) })
		default:
			rec.State = domain.IdempotencyDone
			rec.ResponseStatus = buf.status
			rec.ResponseBody = buf.body.Bytes()
			rec.ResponseHeaders = map[string]string{}
			for _, h := range replayHeaders {
				if v := buf.header.Get(h); v != "" {
					rec.ResponseHeaders[h] = v
				}
			}
			if err := detached(r, func(ctx context.Context) error { return s.svc.Store.FinishIdempotencyKey(ctx, rec) }); err != nil {
				logger(r.Context()).Error("store idempotent response", "error", err.Error())
			}
		}
		completed = true
		for k, v := range buf.header {
			w.Header()[k] = v
		}
		w.WriteHeader(buf.status)
		_, _ = w.Write(buf.body.Bytes())
	})
}

func replay(w http.ResponseWriter, r *http.Request, rec *domain.IdempotencyRecord, fp string) {
	if rec.Fingerprint != fp {
		writeError(w, r, &domain.Error{Code: domain.CodeIdempotencyConflict, Param: "Idempotency-Key",
			Message: "this Idempotency-Key was used with a different request; use a new key for a new request"})
		return
	}
	if rec.State != domain.IdempotencyDone {
		writeError(w, r, &domain.Error{Code: domain.CodeIdempotencyConflict, Param: "Idempotency-Key",
			Message: "a request with this Idempotency-Key is still being processed", Details: map[string]any{"in_progress": true}})
		return
	}
	for k, v := range rec.ResponseHeaders {
		w.Header().Set(k, v)
	}
	w.Header().Set("Idempotent-Replayed", "true")
	writeRecord(w, rec)
}

// writeRecord sends a stored answer.
func writeRecord(w http.ResponseWriter, rec *domain.IdempotencyRecord) {
	for k, v := range rec.ResponseHeaders {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(rec.ResponseBody)))
	w.WriteHeader(rec.ResponseStatus)
	_, _ = w.Write(rec.ResponseBody)
}

// idempotentRequest is the idempotency state of a request, in its context.
type idempotentRequest struct {
	rec    *domain.IdempotencyRecord
	answer *domain.IdempotencyRecord // the answer a handler had stored by its effect's write
}

// answer renders v as the request's answer with status, byte for byte as writeJSON sends
// it, for a domain write to store together with the effect it answers (JobRequest.Answer):
// then no crash between the effect and its answer can leave the key free for a retry to
// repeat the effect. Outside the idempotency layer it returns nil: nothing to store.
func answer(r *http.Request, status int, v any) (*domain.IdempotencyRecord, error) {
	ir, _ := r.Context().Value(ctxIdempotency).(*idempotentRequest)
	if ir == nil {
		return nil, nil
	}
	body, err := jsonBody(v)
	if err != nil {
		return nil, err
	}
	rec := *ir.rec
	rec.State, rec.ResponseStatus = domain.IdempotencyDone, status
	rec.ResponseHeaders = map[string]string{"Content-Type": jsonContentType}
	rec.ResponseBody = body
	ir.answer = &rec
	return &rec, nil
}

// writeAnswer sends v with status: the answer stored with the effect when the handler
// made one, so the first response and every replay are the same bytes.
func writeAnswer(w http.ResponseWriter, r *http.Request, status int, v any) {
	if ir, _ := r.Context().Value(ctxIdempotency).(*idempotentRequest); ir != nil && ir.answer != nil && ir.answer.ResponseStatus == status {
		writeRecord(w, ir.answer)
		return
	}
	writeJSON(w, status, v)
}

func validIdempotencyKey(key string) error {
	if key == "" {
		return domain.InvalidParam("Idempotency-Key", "the Idempotency-Key header is required on every POST")
	}
	if len(key) > 255 {
		return domain.InvalidParam("Idempotency-Key", "Idempotency-Key must be at most 255 characters")
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x20 || key[i] > 0x7e {
			return domain.InvalidParam("Idempotency-Key", "Idempotency-Key must be printable ASCII")
		}
	}
	return nil
}

// fingerprint identifies a request by method, path and canonical JSON body, so that key
// order and white space do not make a retry look different.
func fingerprint(r *http.Request, body []byte) string {
	h := sha256.New()
	h.Write([]byte(r.Method + " " + r.URL.Path + "\n"))
	var v any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if len(bytes.TrimSpace(body)) > 0 && dec.Decode(&v) == nil {
		canon, _ := json.Marshal(v)
		h.Write(canon)
	} else {
		h.Write(body)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// bufferedResponse holds a handler's answer until it has been stored.
type bufferedResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (b *bufferedResponse) Header() http.Header { return b.header }
func (b *bufferedResponse) WriteHeader(code int) {
	if b.status == 0 {
		b.status = code
	}
}
func (b *bufferedResponse) Write(p []byte) (int, error) {
	if b.status == 0 {
		b.status = http.StatusOK
	}
	return b.body.Write(p)
}
