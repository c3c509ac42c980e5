package cli

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/filemill/filemill/client"
)

// The exit codes of every filemill command.
const (
	ExitOK               = 0
	ExitFailed           = 1
	ExitUsage            = 2
	ExitNotAuthenticated = 3
	ExitNotFound         = 4
)

// UsageError is a command line that cannot run as given (exit code 2).
type UsageError string

func (u UsageError) Error() string { return string(u) }

// usagef is a UsageError that points at the command's help.
func usagef(cmdPath, format string, args ...any) error {
	return UsageError(fmt.Sprintf(format, args...) + "\nRun '" + cmdPath + " --help' for usage.")
}

// notAuthenticatedError is a command that has no key to send.
type notAuthenticatedError struct{ msg string }

func (e *notAuthenticatedError) Error() string { return e.msg }

// jobsFailedError is a run or a download whose jobs did not all succeed; each was
// reported as it ended.
type jobsFailedError struct{ failed, total int }

func (e *jobsFailedError) Error() string {
	return fmt.Sprintf("%d of %d jobs did not succeed", e.failed, e.total)
}

// ExitCode is the exit code for err: 0 for nil, 2 for a UsageError, 3 when no key was
// found or the API answered 401, 4 when it answered 404, 1 otherwise (a failed job, any
// other failed request).
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var ue UsageError
	var na *notAuthenticatedError
	var ae *client.APIError
	switch {
	case errors.As(err, &ue):
		return ExitUsage
	case errors.As(err, &na):
		return ExitNotAuthenticated
	case errors.As(err, &ae) && ae.Status == http.StatusUnauthorized:
		return ExitNotAuthenticated
	case errors.As(err, &ae) && ae.Status == http.StatusNotFound:
		return ExitNotFound
	}
	return ExitFailed
}

// ReportError prints err to w, as one line naming the error code and the request id
// when the API answered it, and answers its exit code.
func ReportError(w io.Writer, err error) int {
	var ue UsageError
	if errors.As(err, &ue) {
		fmt.Fprintln(w, strings.TrimRight(string(ue), "\n"))
		return ExitUsage
	}
	fmt.Fprintln(w, errorLine(err))
	return ExitCode(err)
}

// errorLine is err for a person: the API's code, message, parameter and request id
// spelled out ("filemill: not_found: No such file. (status 404, request req_…)").
func errorLine(err error) string {
	var ae *client.APIError
	if errors.As(err, &ae) {
		var b strings.Builder
		b.WriteString("filemill: ")
		// What the command was doing when the API answered (a wrapped error's context).
		if ctx, _, ok := strings.Cut(err.Error(), ae.Error()); ok && ctx != "" {
			b.WriteString(strings.TrimSuffix(strings.TrimPrefix(ctx, "filemill: "), ": ") + ": ")
		}
		if ae.Code != "" {
			b.WriteString(string(ae.Code) + ": ")
		}
		b.WriteString(ae.Message)
		if ae.Param != "" {
			b.WriteString(" (param " + ae.Param + ")")
		}
		fmt.Fprintf(&b, " (status %d", ae.Status)
		if ae.RequestID != "" {
			b.WriteString(", request " + ae.RequestID)
		}
		b.WriteString(")")
		return b.String()
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "filemill") {
		msg = "filemill: " + msg
	}
	return msg
}
