package domain

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
)

// Error codes of the /v1 contract (interface.md section 7). The REST door maps each to
// its HTTP status in one table; GraphQL carries the same code in extensions.code.
const (
	CodeInvalidRequest       = "invalid_request"
	CodeUnsupportedFile      = "unsupported_file"
	CodeFileTooLarge         = "file_too_large"
	CodeCorruptedFile        = "corrupted_file"
	CodeEncryptedFile        = "encrypted_file"
	CodeUnsupportedOperation = "unsupported_operation"

	CodeMissingCredentials = "missing_credentials"
	CodeInvalidAPIKey      = "invalid_api_key"
	CodeExpiredAPIKey      = "expired_api_key"
	CodeRevokedAPIKey      = "revoked_api_key"
	CodeAPIKeyInQuery      = "api_key_in_query"

	CodePaymentRequired = "payment_required"

	CodeInsufficientScope     = "insufficient_scope"
	CodeIPNotAllowed          = "ip_not_allowed"
	CodeOperationNotAllowed   = "operation_not_allowed"
	CodeEnvironmentMismatch   = "environment_mismatch"
	CodeOrganizationSuspended = "organization_suspended"
	CodeForbidden             = "forbidden"
	CodeKeyRestricted         = "key_restricted"

	CodeNotFound = "not_found"

	CodeIdempotencyConflict   = "idempotency_conflict"
	CodeUploadSessionConsumed = "upload_session_consumed"
	CodeConflict              = "conflict"

	CodePayloadTooLarge = "payload_too_large"

	CodeMalwareDetected        = "malware_detected"
	CodePolicyViolation        = "policy_violation"
	CodeValidationFailed       = "validation_failed"
	CodeOutputValidationFailed = "output_validation_failed"
	CodeUnsupportedInput       = "unsupported_input"

	CodeKeySpendLimit       = "key_spend_limit"
	CodeRateLimited         = "rate_limited"
	CodeConcurrencyLimit    = "concurrency_limit"
	CodeCreditsExhausted    = "credits_exhausted"
	CodeAnonymousDailyLimit = "anonymous_daily_limit"

	CodeInternal              = "internal_error"
	CodeProcessingUnavailable = "processing_unavailable"
	CodeDependencyUnavailable = "dependency_unavailable"
	CodeTimeout               = "timeout"
	// CodeResourceLimitExceeded: a job's engine needed more memory or scratch disk than
	// one job may use (Config.JobMemory, Config.JobDiskLimit). Not a code of section 7:
	// it only ever appears on a failed job, never as an answer's status.
	CodeResourceLimitExceeded = "resource_limit_exceeded"

	// CodeNotImplemented marks an endpoint of the contract whose capability is not
	// built yet. It is not a code of section 7; the REST door answers 501.
	CodeNotImplemented = "not_implemented"

	// CodeRequestTimeout: a request's body stopped arriving (the listeners' body rule);
	// answered 408 by the listener, before any door. Not a code of section 7.
	CodeRequestTimeout = "request_timeout"

	// CodeResponseTooLarge: a GraphQL answer over the door's byte bound, replaced by
	// this error. Not a code of section 7: REST answers have bounds of their own.
	CodeResponseTooLarge = "response_too_large"

	// The console's sign-in codes (GraphQL only; not codes of section 7).
	// CodeInvalidCredentials: a sign-in whose email or password is wrong — one answer
	// for both, so it tells nothing about which emails have accounts (401).
	CodeInvalidCredentials = "invalid_credentials"
	// CodeSignInLocked: too many failed sign-ins for one email; it is locked for a while,
	// whether or not an account has it (429).
	CodeSignInLocked = "sign_in_locked"
	// CodeInvalidSession: a session cookie that is unknown, signed out, expired, or sent
	// without its CSRF token (401).
	CodeInvalidSession = "invalid_session"
)

// Codes lists every code of the contract, for tests and the error table.
var Codes = []string{
	CodeInvalidRequest, CodeUnsupportedFile, CodeFileTooLarge, CodeCorruptedFile, CodeEncryptedFile,
	CodeUnsupportedOperation, CodeMissingCredentials, CodeInvalidAPIKey, CodeExpiredAPIKey,
	CodeRevokedAPIKey, CodeAPIKeyInQuery, CodePaymentRequired, CodeInsufficientScope,
	CodeIPNotAllowed, CodeOperationNotAllowed, CodeEnvironmentMismatch, CodeOrganizationSuspended,
	CodeForbidden, CodeKeyRestricted, CodeNotFound, CodeIdempotencyConflict,
	CodeUploadSessionConsumed, CodeConflict, CodePayloadTooLarge, CodeMalwareDetected,
	CodePolicyViolation, CodeValidationFailed, CodeOutputValidationFailed, CodeUnsupportedInput,
	CodeKeySpendLimit, CodeRateLimited, CodeConcurrencyLimit, CodeCreditsExhausted,
	CodeAnonymousDailyLimit, CodeInternal, CodeProcessingUnavailable, CodeDependencyUnavailable,
	CodeTimeout, CodeResourceLimitExceeded,
}

// Error is an error a client can act on: a contract code, a human sentence, the
// offending parameter when there is one, and extra details.
type Error struct {
	Code    string
	Message string
	Param   string
	Details map[string]any
	// RetryAfter, in seconds, for the 429 and 503 codes that know when to come back.
	RetryAfter int
	// Cause is what went wrong underneath (a parser's or a tool's own words), for the
	// logs: Error includes it, Message never does, and no door shows it to a client.
	Cause error
}

func (e *Error) Error() string {
	s := e.Code + ": " + e.Message
	if e.Param != "" {
		s = fmt.Sprintf("%s: %s (param %s)", e.Code, e.Message, e.Param)
	}
	if e.Cause != nil {
		s += " (" + e.Cause.Error() + ")"
	}
	return s
}

// Unavailable is the dependency_unavailable error: message is the plain sentence a
// client sees, cause the details for the log. It is marked ErrUnavailable.
func Unavailable(message string, cause error) *Error {
	if cause == nil {
		cause = ErrUnavailable
	} else if !errors.Is(cause, ErrUnavailable) {
		cause = fmt.Errorf("%w: %w", ErrUnavailable, cause)
	}
	return &Error{Code: CodeDependencyUnavailable, Message: message, Cause: cause}
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Cause }

// Errorf returns an *Error with the given code and formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// InvalidParam returns an invalid_request error naming the offending parameter.
func InvalidParam(param, format string, args ...any) *Error {
	return &Error{Code: CodeInvalidRequest, Message: fmt.Sprintf(format, args...), Param: param}
}

// NotFound is the answer for a missing resource and for one of another organization.
func NotFound(kind string) *Error {
	return &Error{Code: CodeNotFound, Message: "no such " + kind}
}

// The limits of ResourceLimit.
const (
	LimitMemory = "memory"
	LimitDisk   = "disk"
)

// ResourceLimit is the failure of a job that needed more of limit (LimitMemory,
// LimitDisk) than its bound, in bytes. The message names both: it is what the failed
// job shows.
func ResourceLimit(limit string, bound int64) *Error {
	what := "memory"
	if limit == LimitDisk {
		what = "scratch disk"
	}
	return &Error{Code: CodeResourceLimitExceeded, Message: fmt.Sprintf("the job needed more %s than the %s one job may use (limit: %s, bound: %d bytes)",
		what, FormatBytes(bound), limit, bound), Details: map[string]any{"limit": limit, "bound_bytes": bound}}
}

// FormatBytes writes n bytes in binary units, as "512 MiB".
func FormatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d bytes", n)
	}
	v, i := float64(n), -1
	for v >= unit && i < 3 {
		v /= unit
		i++
	}
	s := fmt.Sprintf("%.1f", v)
	s = strings.TrimSuffix(s, ".0")
	return s + " " + []string{"KiB", "MiB", "GiB", "TiB"}[i]
}

// ErrNotFound is returned by stores for a missing row; services turn it into NotFound.
var ErrNotFound = errors.New("not found")

// ErrorCode returns the contract code of err, falling back to internal_error.
func ErrorCode(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	if errors.Is(err, ErrNotFound) {
		return CodeNotFound
	}
	return CodeInternal
}

// AsError returns err as an *Error, or nil when it carries no contract code.
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return nil
}

// Store sentinels for conditional ledger movements.
var (
	ErrInsufficientCredits = errors.New("insufficient credits")
	// ErrConcurrencyLimit and ErrSpendLimit report an admission refused by a limit its
	// write enforced against everything admitted before it.
	ErrConcurrencyLimit = errors.New("project concurrency limit reached")
	ErrSpendLimit       = errors.New("key spend limit reached")
	ErrLedgerMismatch   = errors.New("ledger movement exceeds reservation")
	// ErrStaleJob reports a job transition refused because the job is no longer where it
	// was moved from (another worker or a cancel moved it first); nothing was written.
	ErrStaleJob  = errors.New("job moved since it was read")
	ErrDuplicate = errors.New("duplicate")
	// ErrNotRun marks an attempt at a job that ended without running it, for a reason of
	// the moment: the store could not be reached, or another worker's claim on the job
	// still holds. The queue tries again later and the attempt does not count.
	ErrNotRun = errors.New("the job did not run")
	// ErrUnavailable marks a failure to reach a dependency (the store, the queue,
	// storage, the work directory): nothing was done, and the same call may succeed later.
	ErrUnavailable = errors.New("dependency unavailable")
)

// IsUnreachable reports whether err says a server could not be reached or went away
// mid-call: marked ErrUnavailable (as db/ and storage/ mark what their drivers report),
// or a network error (a system call's error number, a refused or reset connection among
// them, is one too). It reads the error only; it does not ask the server.
func IsUnreachable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrUnavailable) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne)
}

// UnavailableError marks a failure to reach a dependency deep in the package that speaks
// to it (the database driver, the S3 client, Redis), where no sentence for a client is
// known yet: it is ErrUnavailable (errors.Is), unwraps to the failure, and is no *Error,
// so the code above it decides what it means (a worker: the job did not run; a door:
// dependency_unavailable, through ErrorOf).
type UnavailableError struct {
	Dependency string // "database", "storage", "redis"
	Err        error
}

func (e *UnavailableError) Error() string { return e.Dependency + " unavailable: " + e.Err.Error() }

// Unwrap returns the failure.
func (e *UnavailableError) Unwrap() error { return e.Err }

// Is makes an UnavailableError match ErrUnavailable.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

// MarkUnavailable marks err as a failure to reach dependency; nil stays nil, and an error
// already marked is returned as it is.
func MarkUnavailable(dependency string, err error) error {
	if err == nil || errors.Is(err, ErrUnavailable) {
		return err
	}
	return &UnavailableError{Dependency: dependency, Err: err}
}

// UnavailableRetryAfter is the wait, in seconds, a client is told after
// dependency_unavailable: about how long a restarting database or store takes to answer
// again; every retry costs us only a failed dial.
const UnavailableRetryAfter = 2

// ErrorOf returns the contract error a door shows for err: err's own *Error (with a
// Retry-After when it is dependency_unavailable without one); not_found for a missing
// row; dependency_unavailable when a dependency could not be reached; timeout when the
// request ran out of its time. Anything else is nil: the door logs it and shows a plain
// internal_error. Both doors map errors through it.
func ErrorOf(err error) *Error {
	if e := AsError(err); e != nil {
		if e.Code == CodeDependencyUnavailable && e.RetryAfter == 0 {
			c := *e
			c.RetryAfter = UnavailableRetryAfter
			return &c
		}
		return e
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrNotFound):
		return NotFound("resource")
	case errors.Is(err, ErrUnavailable):
		what := "a service this request needs"
		var ue *UnavailableError
		if errors.As(err, &ue) && ue.Dependency != "" {
			what = "the " + ue.Dependency
		}
		return &Error{Code: CodeDependencyUnavailable, RetryAfter: UnavailableRetryAfter,
			Message: what + " cannot be reached right now; retry shortly"}
	case errors.Is(err, context.DeadlineExceeded):
		return &Error{Code: CodeTimeout, Message: "the request took longer than its deadline"}
	}
	return nil
}
