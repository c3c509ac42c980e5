package rest

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/domain/door"
)

// statusOf is the one table from contract code to HTTP status (interface.md section 7).
var statusOf = map[string]int{
	domain.CodeInvalidRequest:       http.StatusBadRequest,
	domain.CodeUnsupportedFile:      http.StatusBadRequest,
	domain.CodeFileTooLarge:         http.StatusBadRequest,
	domain.CodeCorruptedFile:        http.StatusBadRequest,
	domain.CodeEncryptedFile:        http.StatusBadRequest,
	domain.CodeUnsupportedOperation: http.StatusBadRequest,

	domain.CodeMissingCredentials: http.StatusUnauthorized,
	domain.CodeInvalidAPIKey:      http.StatusUnauthorized,
	domain.CodeExpiredAPIKey:      http.StatusUnauthorized,
	domain.CodeRevokedAPIKey:      http.StatusUnauthorized,
	domain.CodeAPIKeyInQuery:      http.StatusUnauthorized,

	domain.CodePaymentRequired: http.StatusPaymentRequired,

	domain.CodeInsufficientScope:     http.StatusForbidden,
	domain.CodeIPNotAllowed:          http.StatusForbidden,
	domain.CodeOperationNotAllowed:   http.StatusForbidden,
	domain.CodeEnvironmentMismatch:   http.StatusForbidden,
	domain.CodeOrganizationSuspended: http.StatusForbidden,
	domain.CodeForbidden:             http.StatusForbidden,
	domain.CodeKeyRestricted:         http.StatusForbidden,

	domain.CodeNotFound: http.StatusNotFound,

	domain.CodeIdempotencyConflict:   http.StatusConflict,
	domain.CodeUploadSessionConsumed: http.StatusConflict,
	domain.CodeConflict:              http.StatusConflict,

	domain.CodePayloadTooLarge: http.StatusRequestEntityTooLarge,

	domain.CodeMalwareDetected:        http.StatusUnprocessableEntity,
	domain.CodePolicyViolation:        http.StatusUnprocessableEntity,
	domain.CodeValidationFailed:       http.StatusUnprocessableEntity,
	domain.CodeOutputValidationFailed: http.StatusUnprocessableEntity,
	domain.CodeUnsupportedInput:       http.StatusUnprocessableEntity,
	// Only ever a failed job's code; the status is for completeness of the table.
	domain.CodeResourceLimitExceeded: http.StatusUnprocessableEntity,

	domain.CodeKeySpendLimit:       http.StatusTooManyRequests,
	domain.CodeRateLimited:         http.StatusTooManyRequests,
	domain.CodeConcurrencyLimit:    http.StatusTooManyRequests,
	domain.CodeCreditsExhausted:    http.StatusTooManyRequests,
	domain.CodeAnonymousDailyLimit: http.StatusTooManyRequests,

	domain.CodeInternal:              http.StatusInternalServerError,
	domain.CodeProcessingUnavailable: http.StatusServiceUnavailable,
	domain.CodeDependencyUnavailable: http.StatusServiceUnavailable,
	domain.CodeTimeout:               http.StatusGatewayTimeout,

	domain.CodeNotImplemented: http.StatusNotImplemented,
	domain.CodeRequestTimeout: http.StatusRequestTimeout,

	// The console's sign-in codes: GraphQL answers them with these statuses.
	domain.CodeInvalidCredentials: http.StatusUnauthorized,
	domain.CodeSignInLocked:       http.StatusTooManyRequests,
	domain.CodeInvalidSession:     http.StatusUnauthorized,
}

// StatusOf returns the HTTP status of a contract code.
func StatusOf(code string) int {
	if s, ok := statusOf[code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code      string `json:"code"`
	Message   string `json:"message"`
	Param     string `json:"param,omitempty"`
	RequestID string `json:"request_id"`
	// Details is a map, or a stored answer's JSON; nil when there are none.
	Details any `json:"details,omitempty"`
}

// writeError answers with the one error shape. Errors without a contract code are
// logged with the request id and shown as a plain internal error. A dependency that
// cannot be reached is dependency_unavailable (domain.ErrorOf) and is not logged per
// request: while it lasts every request would say the same.
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	derr := domain.ErrorOf(err)
	if derr == nil {
		door.Logger(r.Context()).Error("internal error", "error", err.Error())
		derr = &domain.Error{Code: domain.CodeInternal, Message: "internal error"}
	}
	d := errorDetail{Code: derr.Code, Message: derr.Message, Param: derr.Param, RequestID: door.RequestID(r.Context())}
	if len(derr.Details) > 0 {
		d.Details = derr.Details
	}
	writeErrorDetail(w, StatusOf(derr.Code), derr.RetryAfter, d)
}

// writeErrorDetail sends an error with its status: with Retry-After when the error
// says when to come back (always on a 429), and the Bearer challenge on every 401.
func writeErrorDetail(w http.ResponseWriter, status, retryAfter int, d errorDetail) {
	switch {
	case retryAfter > 0:
		w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
	case status == http.StatusTooManyRequests:
		w.Header().Set("Retry-After", "1")
	}
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", "Bearer")
	}
	writeJSON(w, status, errorBody{Error: d})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := jsonBody(v)
	if err != nil {
		slog.Error("encode response", "error", err)
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"code":"internal_error","message":"internal error","request_id":""}}` + "\n")
	}
	w.Header().Set("Content-Type", jsonContentType)
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// jsonContentType is the Content-Type of every JSON answer.
const jsonContentType = "application/json"

// jsonBody is the body of a JSON answer: v, then a newline.
func jsonBody(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
