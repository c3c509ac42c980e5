package rest

import (
	"net/http"
	"strconv"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/domain/door"
)

// The REST door's side of a mutating request: it decodes the body, hands the request to
// domain.Services.Do — which authorizes it, runs the idempotency protocol and the
// effect — and renders the door-neutral answer, the first time and on every replay alike.

// call is what the door knows of a mutating request beyond its body.
func call(r *http.Request) domain.Call {
	return domain.Call{IdempotencyKey: r.Header.Get("Idempotency-Key"), RequestID: door.RequestID(r.Context())}
}

// do runs a mutating request for p and answers it.
func (s *Server) do(w http.ResponseWriter, r *http.Request, p *domain.Principal, req domain.Request) {
	a, err := s.svc.Do(r.Context(), p, call(r), req)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeAnswer(w, r, a)
}

// resultStatus is the status of each kind of result.
var resultStatus = map[string]int{
	domain.ResultOK:       http.StatusOK,
	domain.ResultCreated:  http.StatusCreated,
	domain.ResultAccepted: http.StatusAccepted,
	domain.ResultEmpty:    http.StatusNoContent,
}

// writeAnswer renders an answer: a refusal in the one error shape with the id of the
// request that first got it, a resource as JSON with the status of its result kind. A
// stored answer given again says so in Idempotent-Replayed.
func writeAnswer(w http.ResponseWriter, r *http.Request, a *domain.Answer) {
	if a.Replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	if e := a.Error; e != nil {
		d := errorDetail{Code: e.Code, Message: e.Message, Param: e.Param, RequestID: e.RequestID}
		if len(e.Details) > 0 {
			d.Details = e.Details
		}
		writeErrorDetail(w, StatusOf(e.Code), e.RetryAfter, d)
		return
	}
	status, ok := resultStatus[a.Result]
	if !ok {
		writeError(w, r, errUnknownResult(a.Result))
		return
	}
	if status == http.StatusNoContent {
		w.WriteHeader(status)
		return
	}
	body := make([]byte, 0, len(a.Object)+1)
	body = append(append(body, a.Object...), '\n')
	w.Header().Set("Content-Type", jsonContentType)
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

type errUnknownResult string

func (e errUnknownResult) Error() string {
	return "answer of unknown result " + strconv.Quote(string(e))
}
