// Package openapitest checks HTTP answers against the OpenAPI document of the /v1
// contract (rest.OpenAPIJSON). REST tests route their client through a Validator, so
// every answer of the real server is held to the document: an undocumented route or
// status, a missing required header, or a body that does not match its schema fails
// the test.
//
// OpenAPI 3.1: the document is validated as 3.1 by kin-openapi itself, not converted
// to 3.0. kin-openapi v0.152.0 detects `openapi: 3.1.x` and then validates schemas as
// JSON Schema 2020-12 (type arrays with "null", const, if/then, $ref siblings): through
// santhosh-tekuri/jsonschema for schemas that use 2020-12-only keywords, through its own
// validator (which reads `type: [X, "null"]` as a type set) for the rest. The tests of
// package rest (openapi_test.go) prove both paths reject what they must.
//
// Only answers are validated, never requests: the REST tests send malformed requests
// on purpose to check the server refuses them.
package openapitest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/filemill/filemill/rest"
)

// Validator checks answers against the OpenAPI document.
type Validator struct {
	t      testing.TB
	doc    *openapi3.T
	router routers.Router
}

// served is the document of rest.OpenAPIJSON, loaded and validated once per test
// binary: every REST test builds a Validator, and validation only reads the document
// (the tests of package rest run it concurrently under the race detector).
var served = sync.OnceValues(func() (*Validator, error) { return Load(rest.OpenAPIJSON()) })

// New returns a Validator of the document of rest.OpenAPIJSON that reports to t; a
// document that does not load or validate fails the test at once.
func New(t testing.TB) *Validator {
	t.Helper()
	v, err := served()
	if err != nil {
		t.Fatalf("openapitest: %v", err)
	}
	return &Validator{t: t, doc: v.doc, router: v.router}
}

// Load builds a Validator from an OpenAPI document (JSON or YAML) without a test to
// report to: use its ValidateResponse (its Transport then reports nothing).
func Load(document []byte) (*Validator, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(document)
	if err != nil {
		return nil, fmt.Errorf("load the OpenAPI document: %w", err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		return nil, fmt.Errorf("the OpenAPI document is invalid: %w", err)
	}
	// Routes are matched on the path alone: the test server's address is not a server
	// of the document (and the document declares none, which means "this host").
	doc.Servers = nil
	router, err := legacy.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("route the OpenAPI document: %w", err)
	}
	return &Validator{doc: doc, router: router}, nil
}

// Doc returns the loaded document, for tests that inspect it. It may be shared with
// other Validators: do not modify it.
func (v *Validator) Doc() *openapi3.T { return v.doc }

// Client returns a client whose every answer is validated; see Transport.
func (v *Validator) Client(base http.RoundTripper) *http.Client {
	return &http.Client{Transport: v.Transport(base)}
}

// Transport wraps base (http.DefaultTransport when nil) so that every answer is
// validated against the document; a failure is reported with t.Errorf, naming the
// method, path and status, and the answer is still returned, body intact, so the test
// goes on to its own checks.
func (v *Validator) Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := base.RoundTrip(req)
		if err != nil {
			return resp, err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("openapitest: read the answer of %s %s: %w", req.Method, req.URL.Path, err)
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		if err := v.ValidateResponse(req, resp, body); err != nil && v.t != nil {
			v.t.Helper()
			v.t.Errorf("openapi: %s %s answered %d, which the document does not allow: %v\nbody: %s",
				req.Method, req.URL.Path, resp.StatusCode, err, truncate(body, 2000))
		}
		return resp, nil
	})
}

// ValidateResponse checks one answer: the request must match an operation of the
// document, and the status, the headers declared required and the body must match
// that operation's response. body is the answer's body (resp.Body is not read).
func (v *Validator) ValidateResponse(req *http.Request, resp *http.Response, body []byte) error {
	route, pathParams, err := v.router.FindRoute(req)
	if err != nil {
		var rerr *routers.RouteError
		if errors.As(err, &rerr) {
			return fmt.Errorf("no operation %s %s in the document: %s", req.Method, req.URL.Path, rerr.Reason)
		}
		return fmt.Errorf("route %s %s: %w", req.Method, req.URL.Path, err)
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request: req, PathParams: pathParams, Route: route,
		},
		Status: resp.StatusCode,
		Header: resp.Header,
		// An undocumented status is a failure, not a pass (kin-openapi's default).
		Options: &openapi3filter.Options{IncludeResponseStatus: true},
	}
	in.SetBodyBytes(body)
	// The request's context may be over once its answer is read.
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		return err
	}
	// kin-openapi skips the body of a response declared without content (204); a body
	// there is undocumented all the same.
	if r := route.Operation.Responses.Status(resp.StatusCode); r != nil && r.Value != nil &&
		len(r.Value.Content) == 0 && len(bytes.TrimSpace(body)) > 0 {
		return fmt.Errorf("status %d is documented without a body, got %d bytes", resp.StatusCode, len(body))
	}
	return nil
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func truncate(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "…"
}
