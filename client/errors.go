package client

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/filemill/filemill/client/api"
)

// APIError is a non-2xx answer of the API (or of the storage host an upload went to).
// Match it with errors.As:
//
//	var apiErr *client.APIError
//	if errors.As(err, &apiErr) && apiErr.Code == client.CodeNotFound { ... }
type APIError struct {
	// Status is the HTTP status.
	Status int
	// Code is the contract's error code (not_found, validation_failed, ...); empty when
	// the answer carried none (a storage host's own refusal).
	Code api.ErrorCode
	// Message is a human sentence; do not parse it.
	Message string
	// Param names the offending field, query parameter or header, when there is one.
	Param string
	// RequestID is the request's id (X-Request-Id): quote it when asking for support.
	RequestID string
	// RetryAfter is the wait the answer asked for (Retry-After), zero when none.
	RetryAfter time.Duration
	// Details carries the code's extras: findings of a rejected file, the state of a job
	// that could not be cancelled, in_progress of an idempotency conflict.
	Details *ErrorDetails
}

// ErrorDetails are the extras of an error answer; which fields are set depends on the code.
type ErrorDetails struct {
	Findings   []api.Finding `json:"findings,omitempty"`
	State      string        `json:"state,omitempty"`
	Status     string        `json:"status,omitempty"`
	InProgress bool          `json:"in_progress,omitempty"`
	FileID     string        `json:"file_id,omitempty"`
}

// The codes a program most often tells apart; every code is an api.ErrorCode constant.
const (
	CodeInvalidRequest      = api.ErrorCodeInvalidRequest
	CodeNotFound            = api.ErrorCodeNotFound
	CodeConflict            = api.ErrorCodeConflict
	CodeIdempotencyConflict = api.ErrorCodeIdempotencyConflict
	CodeValidationFailed    = api.ErrorCodeValidationFailed
	CodeRateLimited         = api.ErrorCodeRateLimited
)

func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "filemill: %d", e.Status)
	if e.Code != "" {
		fmt.Fprintf(&b, " %s", e.Code)
	}
	if e.Message != "" {
		fmt.Fprintf(&b, ": %s", e.Message)
	}
	if e.Param != "" {
		fmt.Fprintf(&b, " (param %s)", e.Param)
	}
	if e.RequestID != "" {
		fmt.Fprintf(&b, " [request %s]", e.RequestID)
	}
	return b.String()
}

// errorBodyLimit bounds how much of an error answer is read: the API's are small, a
// storage host's could be anything.
const errorBodyLimit = 64 << 10

// newAPIError reads an error answer (and closes its body) into an APIError.
func newAPIError(resp *http.Response) *APIError {
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, errorBodyLimit))
	return parseAPIError(resp, raw)
}

func parseAPIError(resp *http.Response, raw []byte) *APIError {
	e := &APIError{Status: resp.StatusCode, RequestID: resp.Header.Get("X-Request-Id"),
		RetryAfter: retryAfter(resp.Header)}
	var body struct {
		Error struct {
			Code      api.ErrorCode `json:"code"`
			Message   string        `json:"message"`
			Param     string        `json:"param"`
			RequestID string        `json:"request_id"`
			Details   *ErrorDetails `json:"details"`
		} `json:"error"`
	}
	if json.Unmarshal(raw, &body) == nil && body.Error.Code != "" {
		e.Code, e.Message, e.Param, e.Details = body.Error.Code, body.Error.Message, body.Error.Param, body.Error.Details
		if body.Error.RequestID != "" {
			e.RequestID = body.Error.RequestID
		}
		return e
	}
	// Not the API's shape (an S3 store's XML, a proxy's page): keep the start of it.
	e.Message = strings.TrimSpace(string(raw))
	if len(e.Message) > 512 {
		e.Message = e.Message[:512]
	}
	if e.Message == "" {
		e.Message = http.StatusText(resp.StatusCode)
	}
	return e
}

// retryAfter reads Retry-After in seconds (the API's form); zero when absent or
// malformed.
func retryAfter(h http.Header) time.Duration {
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n > 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := time.Until(t); d > 0 {
			return d
		}
	}
	return 0
}
