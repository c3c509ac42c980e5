package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/filemill/filemill/client/api"
)

// Client talks to one filemill deployment with one API key. It is safe for concurrent
// use; make one and share it.
type Client struct {
	baseURL   string
	apiKey    string
	userAgent string
	hc        *http.Client
	doer      *retryDoer
	api       *api.Client
	wait      waitConfig
}

// defaultHTTPClient is the one a Client uses unless given its own: Go's default
// transport keeps 2 idle connections per host, so a client with more requests in
// flight than that (parts of an upload, a run's jobs) would dial again for most.
var defaultHTTPClient = func() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 64
	return &http.Client{Transport: t}
}()

// Option adjusts a Client made by New.
type Option func(*Client)

// WithHTTPClient sends every request (API calls, uploads to the storage host, the
// websocket of WaitJob excepted) through hc. Its Timeout, if any, bounds each attempt;
// a context bounds a whole call with its retries.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.hc = hc } }

// WithRetryPolicy replaces DefaultRetryPolicy. A zero MaxRetries turns retries off.
func WithRetryPolicy(p RetryPolicy) Option { return func(c *Client) { c.doer.policy = p } }

// WithUserAgent names the program in the User-Agent header.
func WithUserAgent(ua string) Option { return func(c *Client) { c.userAgent = ua } }

// New returns a client of the deployment at baseURL (scheme, host and port, such as
// http://127.0.0.1:8080) using apiKey (fm_live_… or fm_test_…).
func New(baseURL, apiKey string, opts ...Option) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("filemill: base URL %q: want http(s)://host[:port]", baseURL)
	}
	if apiKey == "" {
		return nil, errors.New("filemill: an API key is required")
	}
	c := &Client{baseURL: strings.TrimSuffix(baseURL, "/"), apiKey: apiKey, userAgent: "filemill-go",
		hc: defaultHTTPClient, doer: &retryDoer{policy: DefaultRetryPolicy()}, wait: defaultWaitConfig()}
	for _, o := range opts {
		o(c)
	}
	c.doer.hc = c.hc
	c.api, err = api.NewClient(c.baseURL, api.WithHTTPClient(c.doer), api.WithRequestEditorFn(c.authorize))
	if err != nil {
		return nil, fmt.Errorf("filemill: %w", err)
	}
	return c, nil
}

// API returns the generated client, sending through the same retries and key: for a
// call this package does not wrap. A POST made through it needs its own
// Idempotency-Key (NewIdempotencyKey).
func (c *Client) API() *api.Client { return c.api }

// authorize adds the key to API requests; uploads to the storage host never carry it.
func (c *Client) authorize(_ context.Context, req *http.Request) error {
	req.Header.Set("Authorization", "Bearer "+c.apiKey)
	req.Header.Set("User-Agent", c.userAgent)
	return nil
}

type idempotencyKeyCtx struct{}

// WithIdempotencyKey makes the next POST made with ctx use key instead of a fresh one:
// for a program that must not repeat a call across its own restarts (keep the key
// with the work it stands for). The server keeps a key 24 hours.
func WithIdempotencyKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, idempotencyKeyCtx{}, key)
}

// NewIdempotencyKey returns a fresh random key.
func NewIdempotencyKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "fm-" + hex.EncodeToString(b[:])
}

// idempotencyKey is the key of one logical POST: made once, before its first attempt,
// and kept by every retry (the retries resend the same request).
func idempotencyKey(ctx context.Context) string {
	if k, ok := ctx.Value(idempotencyKeyCtx{}).(string); ok && k != "" {
		return k
	}
	return NewIdempotencyKey()
}

// Decode reads the answer of a call made through API(): a 2xx answer's JSON into T
// (json.RawMessage keeps it as the API wrote it), any other answer into an *APIError.
func Decode[T any](resp *http.Response, err error) (*T, error) { return decode[T](resp, err) }

// decode turns an answer into T, or a non-2xx answer into an *APIError.
func decode[T any](resp *http.Response, err error) (*T, error) {
	if err != nil {
		return nil, fmt.Errorf("filemill: %w", err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, newAPIError(resp)
	}
	defer resp.Body.Close()
	v := new(T)
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return nil, fmt.Errorf("filemill: decode the answer of %s %s: %w", resp.Request.Method, resp.Request.URL.Path, err)
	}
	return v, nil
}

// noContent checks an answer without a body.
func noContent(resp *http.Response, err error) error {
	if err != nil {
		return fmt.Errorf("filemill: %w", err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return newAPIError(resp)
	}
	resp.Body.Close()
	return nil
}

// Ptr returns a pointer to v, for the optional fields of the api request types.
func Ptr[T any](v T) *T { return &v }

// terminal reports whether a job state is final.
func terminal(s api.JobState) bool {
	return s == api.JobStateSucceeded || s == api.JobStateFailed || s == api.JobStateCancelled
}
