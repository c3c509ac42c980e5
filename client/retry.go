package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"time"
)

// RetryPolicy says how a request that met a passing failure is tried again: a
// connection error, 429, 502, 503, 504, or 409 idempotency_conflict while the first
// request with the same key is still running. Waits grow exponentially with jitter,
// and a Retry-After the answer carries is honoured. The request's context bounds it all:
// no wait runs past its deadline.
type RetryPolicy struct {
	// MaxRetries is how many times a request is tried again after the first attempt.
	MaxRetries int
	// BaseDelay is the first wait; each retry doubles it, up to MaxDelay. The wait is
	// drawn between half of it and all of it.
	BaseDelay, MaxDelay time.Duration
	// MaxRetryAfter bounds an answer's Retry-After: a longer wait (a spent credit
	// balance, a spend limit) is not waited for; the answer goes back to the caller.
	MaxRetryAfter time.Duration
	// OnRetry, when set, is told of every retry before its wait.
	OnRetry func(Retry)
}

// Retry describes one retry, for RetryPolicy.OnRetry.
type Retry struct {
	// Attempt is the attempt that failed, from 1.
	Attempt int
	Method  string
	URL     string
	// Status is the failed attempt's status; zero when it got no answer (Err).
	Status int
	Err    error
	// Wait is how long the client waits before the next attempt.
	Wait time.Duration
}

// DefaultRetryPolicy returns the policy New uses: 4 retries, waits from 0.5 s to 8 s,
// Retry-After honoured up to a minute.
func DefaultRetryPolicy() RetryPolicy {
	return RetryPolicy{MaxRetries: 4, BaseDelay: 500 * time.Millisecond, MaxDelay: 8 * time.Second,
		MaxRetryAfter: time.Minute}
}

// retryDoer sends requests with the policy's retries. It serves the generated client
// (api.HttpRequestDoer) and the uploads' PUTs to the storage host alike. A request
// with a body is retried only when GetBody can give the body again.
type retryDoer struct {
	hc     *http.Client
	policy RetryPolicy
}

func (d *retryDoer) Do(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	for attempt := 1; ; attempt++ {
		r := req
		if attempt > 1 && req.Body != nil {
			r = req.Clone(ctx)
			body, err := req.GetBody()
			if err != nil {
				return nil, err
			}
			r.Body = body
		}
		resp, err := d.hc.Do(r)
		wait, again := d.decide(ctx, req, attempt, resp, err)
		if !again {
			return resp, err
		}
		if d.policy.OnRetry != nil {
			info := Retry{Attempt: attempt, Method: req.Method, URL: redactURL(req), Err: err, Wait: wait}
			if resp != nil {
				info.Status = resp.StatusCode
			}
			d.policy.OnRetry(info)
		}
		if resp != nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, errorBodyLimit))
			resp.Body.Close()
		}
		if err := sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
}

// decide says whether an attempt's outcome is worth another try, and after what wait.
// An answer it reads to decide (a 409) is left readable for the caller.
func (d *retryDoer) decide(ctx context.Context, req *http.Request, attempt int, resp *http.Response, err error) (time.Duration, bool) {
	if attempt > d.policy.MaxRetries || ctx.Err() != nil {
		return 0, false
	}
	if req.Body != nil && req.GetBody == nil {
		return 0, false // the body cannot be sent again
	}
	var hint time.Duration
	if err != nil {
		if !retryableError(err) {
			return 0, false
		}
	} else {
		switch resp.StatusCode {
		case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		case http.StatusConflict:
			if !stillInProgress(resp) {
				return 0, false
			}
		default:
			return 0, false
		}
		hint = retryAfter(resp.Header)
		if hint > d.policy.MaxRetryAfter {
			return 0, false
		}
	}
	wait := max(hint, d.backoff(attempt))
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < wait {
		return 0, false // the caller would rather have the answer than a wait cut short
	}
	return wait, true
}

// backoff is the wait after the attempt-th failed attempt: exponential, with jitter.
func (d *retryDoer) backoff(attempt int) time.Duration {
	b := d.policy.BaseDelay
	for i := 1; i < attempt && b < d.policy.MaxDelay; i++ {
		b *= 2
	}
	b = min(b, d.policy.MaxDelay)
	if b <= 0 {
		return 0
	}
	return b/2 + rand.N(b/2+1)
}

// retryableError says whether a transport error is a passing one: anything but a
// cancelled context and a certificate the client will never trust.
func retryableError(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var unknownAuthority x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	var verify *tls.CertificateVerificationError
	return !errors.As(err, &unknownAuthority) && !errors.As(err, &hostname) &&
		!errors.As(err, &invalid) && !errors.As(err, &verify)
}

// stillInProgress reports whether a 409 is idempotency_conflict with
// details.in_progress: the first request with this key has not finished, and a retry
// will get its answer. The body is put back for the caller.
func stillInProgress(resp *http.Response) bool {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, errorBodyLimit))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(raw))
	var body struct {
		Error struct {
			Code    string `json:"code"`
			Details struct {
				InProgress bool `json:"in_progress"`
			} `json:"details"`
		} `json:"error"`
	}
	return json.Unmarshal(raw, &body) == nil && body.Error.Code == string(CodeIdempotencyConflict) &&
		body.Error.Details.InProgress
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// redactURL is the request's URL without its query: a pre-signed URL's signature
// stays out of logs.
func redactURL(req *http.Request) string {
	u := *req.URL
	u.RawQuery = ""
	return u.String()
}
