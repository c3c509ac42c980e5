package rest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/jobs/ops/catalog"
	"github.com/filemill/filemill/rest"
	"github.com/filemill/filemill/rest/openapitest"
)

// contractOperations are the operations of interface.md section 4 and our additions
// (contract.md), as "METHOD path".
var contractOperations = []string{
	"POST /v1/uploads",
	"GET /v1/uploads/{upload_id}",
	"POST /v1/uploads/{upload_id}/parts",
	"POST /v1/uploads/{upload_id}/complete-parts",
	"POST /v1/uploads/{upload_id}/abort",
	"POST /v1/files/{file_id}/complete",
	"GET /v1/files",
	"GET /v1/files/{file_id}",
	"DELETE /v1/files/{file_id}",
	"GET /v1/files/{file_id}/history",
	"POST /v1/files/{file_id}/download-url",
	"POST /v1/jobs",
	"GET /v1/jobs",
	"GET /v1/jobs/{job_id}",
	"POST /v1/jobs/{job_id}/cancel",
	"POST /v1/batches",
	"GET /v1/batches/{batch_id}",
	"GET /v1/webhook-endpoints",
	"POST /v1/webhook-endpoints",
	"DELETE /v1/webhook-endpoints/{webhook_endpoint_id}",
	"POST /v1/webhook-endpoints/{webhook_endpoint_id}/test",
	// Our additions.
	"GET /v1/webhook-endpoints/{webhook_endpoint_id}",
	"POST /v1/webhook-endpoints/{webhook_endpoint_id}/rotate-secret",
	"GET /v1/webhook-endpoints/{webhook_endpoint_id}/deliveries",
	"POST /v1/webhook-endpoints/{webhook_endpoint_id}/deliveries/{delivery_id}/retry",
	"GET /v1/events",
	"GET /v1/events/{event_id}",
	"GET /v1/usage",
	"GET /v1/operations",
	"GET /v1/jobs/{job_id}/artifacts",
	"GET /v1",
	"GET /v1/",
	"GET /v1/openapi.json",
	"GET /healthz",
	"GET /readyz",
}

// unauthenticated operations need no key, hence no 401/403.
var unauthenticated = map[string]bool{"GET /v1/openapi.json": true, "GET /v1": true, "GET /v1/": true, "GET /healthz": true, "GET /readyz": true}

var (
	docOnce sync.Once
	docVal  *openapitest.Validator
	docErr  error
)

// validator loads the document once for the unit tests of this file.
func validator(t *testing.T) *openapitest.Validator {
	t.Helper()
	docOnce.Do(func() { docVal, docErr = openapitest.Load(rest.OpenAPIJSON()) })
	require.NoError(t, docErr)
	return docVal
}

func TestOpenAPIDocumentLoadsAndValidates(t *testing.T) {
	t.Parallel()
	raw := rest.OpenAPIJSON()
	require.True(t, json.Valid(raw))

	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(raw)
	require.NoError(t, err)
	require.NoError(t, doc.Validate(loader.Context))
	require.Equal(t, "3.1.0", doc.OpenAPI)
	require.True(t, doc.IsOpenAPI31OrLater())
	require.Equal(t, "1.0.0", doc.Info.Version)
	require.Equal(t, "http", doc.Components.SecuritySchemes["bearerAuth"].Value.Type)
	require.Equal(t, "bearer", doc.Components.SecuritySchemes["bearerAuth"].Value.Scheme)

	// The JSON keeps the YAML's order: paths come out as written, uploads first.
	require.Less(t, bytes.Index(raw, []byte(`"/v1/uploads"`)), bytes.Index(raw, []byte(`"/healthz"`)))
	// Each call hands out its own copy.
	raw[0] = 'x'
	require.Equal(t, byte('{'), rest.OpenAPIJSON()[0])
}

func TestOpenAPIDocumentCoversTheContract(t *testing.T) {
	t.Parallel()
	doc := validator(t).Doc()

	var documented []string
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			documented = append(documented, method+" "+path)
		}
	}
	sort.Strings(documented)
	want := slices.Clone(contractOperations)
	sort.Strings(want)
	require.Equal(t, want, documented, "the document holds exactly the operations of the contract")

	// Request bodies, per interface.md: JSON objects that refuse unknown fields.
	bodies := map[string]string{
		"POST /v1/uploads": "CreateUploadRequest",
		"POST /v1/uploads/{upload_id}/complete-parts": "CompletePartsRequest",
		"POST /v1/files/{file_id}/download-url":       "DownloadUrlRequest",
		"POST /v1/jobs":                               "CreateJobRequest",
		"POST /v1/batches":                            "CreateBatchRequest",
		"POST /v1/webhook-endpoints":                  "CreateWebhookEndpointRequest",
	}
	for name, schema := range bodies {
		method, path, _ := strings.Cut(name, " ")
		rb := doc.Paths.Value(path).GetOperation(method).RequestBody
		require.NotNil(t, rb, name)
		s := rb.Value.Content.Get("application/json").Schema
		require.Equal(t, "#/components/schemas/"+schema, s.Ref, name)
		require.NotNil(t, s.Value.AdditionalProperties.Has, name)
		require.False(t, *s.Value.AdditionalProperties.Has, "%s refuses unknown fields", name)
		require.Equal(t, name != "POST /v1/files/{file_id}/download-url", rb.Value.Required, "%s: only the download-url body is optional", name)
	}

	ids := map[string]bool{}
	for _, name := range contractOperations {
		method, path, _ := strings.Cut(name, " ")
		op := doc.Paths.Value(path).GetOperation(method)
		t.Run(strings.NewReplacer("/", "_", " ", "_").Replace(name), func(t *testing.T) {
			require.NotEmpty(t, op.OperationID)
			require.False(t, ids[op.OperationID], "operationId %s is used twice", op.OperationID)
			ids[op.OperationID] = true

			if bodies[name] == "" {
				require.Nil(t, op.RequestBody, "%s takes no body", name)
			}
			v1 := strings.HasPrefix(path, "/v1/")
			if unauthenticated[name] {
				require.NotNil(t, op.Security, "%s needs no key", name)
				require.Empty(t, *op.Security)
			} else {
				require.Nil(t, op.Security, "%s uses the document's bearerAuth", name)
			}

			codes := statusesOf(op)
			need := []string{}
			if v1 {
				need = append(need, "429", "500", "503", "504")
			}
			if v1 && !unauthenticated[name] {
				need = append(need, "401", "403", "501")
			}
			if strings.Contains(path, "{") {
				need = append(need, "404")
			}
			if method == http.MethodPost {
				need = append(need, "400", "409", "413")
				p := op.Parameters.GetByInAndName("header", "Idempotency-Key")
				require.NotNil(t, p, "POST takes Idempotency-Key")
				require.True(t, p.Required)
				require.EqualValues(t, 1, p.Schema.Value.MinLength)
				require.EqualValues(t, 255, *p.Schema.Value.MaxLength)
			} else {
				require.Nil(t, op.Parameters.GetByInAndName("header", "Idempotency-Key"))
			}
			if len(op.Parameters) > 0 && method == http.MethodGet {
				need = append(need, "400")
			}
			for _, c := range need {
				require.Contains(t, codes, c, "%s must document %s", name, c)
			}

			for _, code := range codes {
				resp := op.Responses.Value(code).Value
				headers := []string{"X-Request-Id"}
				// The listener answers 408 before any handler: no rate limit was
				// charged, nothing is stored to replay.
				listener := code == "408"
				if v1 && !listener {
					headers = append(headers, "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset")
				}
				if code == "429" {
					headers = append(headers, "Retry-After")
				}
				for _, h := range headers {
					require.Contains(t, resp.Headers, h, "%s %s", name, code)
					require.True(t, resp.Headers[h].Value.Required, "%s %s: %s is required", name, code, h)
				}
				if code == "503" && v1 {
					require.Contains(t, resp.Headers, "Retry-After")
				}
				if method == http.MethodPost && !listener {
					require.Contains(t, resp.Headers, "Idempotent-Replayed", "%s %s", name, code)
					require.False(t, resp.Headers["Idempotent-Replayed"].Value.Required)
				}
				if n, _ := strconv.Atoi(code); n >= 400 && v1 {
					ref := resp.Content.Get("application/json").Schema.Ref
					require.True(t, ref == "#/components/schemas/Error"+code || (name == "POST /v1/jobs/{job_id}/cancel" && code == "409"),
						"%s %s answers the Error%s schema, not %s", name, code, code, ref)
				}
			}
		})
	}
}

func statusesOf(op *openapi3.Operation) []string {
	var out []string
	for code := range op.Responses.Map() {
		out = append(out, code)
	}
	sort.Strings(out)
	return out
}

// The document's codes are domain.Codes (plus not_implemented and request_timeout), and each status lists
// its own, every code under exactly one status.
func TestOpenAPIErrorCodes(t *testing.T) {
	t.Parallel()
	schemas := validator(t).Doc().Components.Schemas

	want := append(slices.Clone(domain.Codes), domain.CodeNotImplemented, domain.CodeRequestTimeout)
	require.ElementsMatch(t, want, enumOf(t, schemas["ErrorCode"].Value))

	owner := map[string]string{}
	for name, s := range schemas {
		status, ok := strings.CutPrefix(name, "Error")
		if _, err := strconv.Atoi(status); !ok || err != nil {
			continue
		}
		code := s.Value.AllOf[1].Value.Properties["error"].Value.Properties["code"].Value
		for _, c := range enumOf(t, code) {
			require.Contains(t, want, c, "%s lists an unknown code", name)
			require.Empty(t, owner[c], "%s is listed under %s and %s", c, owner[c], status)
			owner[c] = status
		}
	}
	for _, c := range want {
		require.NotEmpty(t, owner[c], "code %s belongs to no status", c)
	}
	require.Equal(t, "501", owner[domain.CodeNotImplemented])
	require.Equal(t, "408", owner[domain.CodeRequestTimeout])
	require.Equal(t, "422", owner[domain.CodeValidationFailed])
	require.Equal(t, "409", owner[domain.CodeIdempotencyConflict])
}

func enumOf(t *testing.T, s *openapi3.Schema) []string {
	t.Helper()
	var out []string
	for _, e := range s.Enum {
		out = append(out, e.(string))
	}
	require.NotEmpty(t, out)
	return out
}

func TestOpenAPIHandler(t *testing.T) {
	t.Parallel()
	reg, err := catalog.Registry()
	require.NoError(t, err)
	served, err := rest.OpenAPIDocument(reg)
	require.NoError(t, err)
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		rec := httptest.NewRecorder()
		rest.OpenAPIHandler(served).ServeHTTP(rec, httptest.NewRequest(method, "/v1/openapi.json", nil))
		require.Equal(t, http.StatusOK, rec.Code)
		require.Equal(t, "application/json", rec.Header().Get("Content-Type"))
		require.Equal(t, strconv.Itoa(len(served)), rec.Header().Get("Content-Length"))
		if method == http.MethodGet {
			require.Equal(t, served, rec.Body.Bytes())
			var doc map[string]any
			require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &doc))
			require.Equal(t, "3.1.0", doc["openapi"])
		}
	}
}

// TestOpenAPIOperationOptions: the served document carries every operation's options
// schema, generated from the same declaration GET /v1/operations shows and requests
// are checked against, and it still loads as a valid OpenAPI document.
func TestOpenAPIOperationOptions(t *testing.T) {
	t.Parallel()
	reg, err := catalog.Registry()
	require.NoError(t, err)
	served, err := rest.OpenAPIDocument(reg)
	require.NoError(t, err)
	_, err = openapitest.Load(served)
	require.NoError(t, err)
	var doc struct {
		Components struct {
			Schemas map[string]json.RawMessage `json:"schemas"`
		} `json:"components"`
	}
	require.NoError(t, json.Unmarshal(served, &doc))
	var gen struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	require.NoError(t, json.Unmarshal(doc.Components.Schemas["OperationOptions"], &gen))
	require.NotEmpty(t, reg.List())
	for _, op := range reg.List() {
		key := op.Name
		if op.Kind == domain.KindPreset {
			key = "preset:" + op.Name
		}
		want, err := json.Marshal(op.OptionsSchema())
		require.NoError(t, err)
		require.JSONEq(t, string(want), string(gen.Properties[key]), key)
	}
	require.Len(t, gen.Properties, len(reg.List()))
}

// fixture holds representations built by the domain's own view functions, so the
// tests check the document against what the server really writes.
type fixture struct {
	now                             time.Time
	projectID, fileID, jobID, uplID string
	file, pending, rejected         domain.FileView
	single, multipart               domain.UploadView
	job, failedJob                  domain.JobView
	batch                           domain.BatchView
	endpoint                        domain.WebhookEndpointView
	history                         []domain.HistoryEntryView
	download                        domain.DownloadURLView
	event                           domain.EventView
	operations                      []domain.OperationView
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	now := time.Now().UTC()
	fx := fixture{now: now, projectID: domain.NewID(domain.PrefixProject), fileID: domain.NewID(domain.PrefixFile),
		jobID: domain.NewID(domain.PrefixJob), uplID: domain.NewID(domain.PrefixUpload)}
	sum := strings.Repeat("0123456789abcdef", 4)
	art := &domain.Artifact{ID: domain.NewID(domain.PrefixArtifact), FileID: fx.fileID, JobID: fx.jobID, Name: "report.json",
		MIMEType: "application/json", ByteSize: 321, SHA256: sum, CreatedAt: now}
	expires := now.Add(time.Hour)
	f := &domain.File{ID: fx.fileID, ProjectID: fx.projectID, Filename: "scan.pdf", Status: domain.FileReady, ByteSize: 1234,
		DeclaredMIMEType: "application/pdf", DetectedExt: "pdf", DetectedMIMEType: "application/pdf", SHA256: sum,
		DuplicateOf: domain.NewID(domain.PrefixFile), CreatedAt: now, Artifacts: []*domain.Artifact{art}}
	fx.file = f.View()
	fx.pending = (&domain.File{ID: domain.NewID(domain.PrefixFile), ProjectID: fx.projectID, Filename: "x.bin",
		Status: domain.FileAwaitingUpload, ExpiresAt: &expires, CreatedAt: now}).View()
	fx.rejected = (&domain.File{ID: domain.NewID(domain.PrefixFile), ProjectID: fx.projectID, Filename: "x.exe",
		Status: domain.FileRejected, ByteSize: 10, DetectedExt: "exe", DetectedMIMEType: "application/x-msdownload",
		Findings: []domain.Finding{{Code: "format_not_allowed", Message: "exe is not allowed"}}, CreatedAt: now}).View()

	up := &domain.Upload{ID: fx.uplID, ProjectID: fx.projectID, FileID: fx.fileID, State: domain.UploadOpen, ByteSize: 1234,
		Validation: &domain.Validation{Formats: []string{"pdf"}, MaxBytes: 5000}, ExpiresAt: expires, CreatedAt: now}
	fx.single = (&domain.UploadTicket{Upload: up, File: f, URL: "https://storage.test/put?sig=1",
		Headers: map[string]string{"Content-Length": "1234"}}).View()
	mup := *up
	mup.ID, mup.Multipart, mup.PartSize, mup.ByteSize, mup.Validation = domain.NewID(domain.PrefixUpload), true, 16<<20, 20<<20, nil
	fx.multipart = (&domain.UploadTicket{Upload: &mup, File: &domain.File{Filename: "big.bin"}, Parts: []domain.PartURL{
		{PartNumber: 1, URL: "https://storage.test/p1", ByteOffset: 0, ByteSize: 16 << 20},
		{PartNumber: 2, URL: "https://storage.test/p2", ByteOffset: 16 << 20, ByteSize: 4 << 20}}}).View()

	started := now.Add(-time.Second)
	j := &domain.Job{ID: fx.jobID, ProjectID: fx.projectID, FileID: fx.fileID, Preset: "inspect", State: domain.JobQueued,
		CreditsReserved: 2, CreatedAt: now, Pricing: &domain.Pricing{Rule: "inspect: 1 credit per file; scan: 1 credit per file", Pages: 1, Credits: 2,
			Lines: []domain.PricingLine{{Step: "inspect", Operation: "inspect", Price: domain.Price{Credits: 1, Per: domain.PerFile}, Units: 1, Credits: 1},
				{Step: "scan", Operation: "scan", Price: domain.Price{Credits: 1, Per: domain.PerFile}, Units: 1, Credits: 1}}}}
	fx.job = j.View()
	fj := *j
	fj.ID, fj.Preset, fj.Operation, fj.State, fj.Options = domain.NewID(domain.PrefixJob), "", "ocr", domain.JobFailed, json.RawMessage(`{"language":"eng"}`)
	fj.ErrorCode, fj.ErrorMessage, fj.StartedAt, fj.FinishedAt, fj.Attempts, fj.Progress = domain.CodeCorruptedFile, "broken", &started, &now, 1, 40
	fj.BatchID = domain.NewID(domain.PrefixBatch)
	fx.failedJob = fj.View()
	b := &domain.Batch{ID: fj.BatchID, ProjectID: fx.projectID, Operation: "ocr", CreditsEstimated: 4, CreatedAt: now}
	fx.batch = b.View([]*domain.Job{&fj, {ID: domain.NewID(domain.PrefixJob), FileID: fx.fileID, State: domain.JobRunning}})

	fx.endpoint = (&domain.WebhookEndpoint{ID: domain.NewID(domain.PrefixWebhookEndpoint), ProjectID: fx.projectID,
		URL: "https://hooks.test/in", EnabledEvents: []string{domain.EventJobSucceeded, domain.EventFileReady},
		Status: domain.EndpointEnabled, CreatedAt: now}).View()

	for _, e := range []struct {
		typ string
		obj any
	}{{domain.EventUploadOpened, fx.single}, {domain.EventFileReady, fx.file}, {domain.EventJobQueued, fx.job}} {
		ev, err := domain.NewEvent(context.Background(), e.typ, "org_x", fx.projectID, domain.EnvLive, fx.fileID, e.obj, now)
		require.NoError(t, err)
		fx.history = append(fx.history, ev.HistoryView())
	}
	fx.download = (&domain.DownloadURL{URL: "https://download.test/d?sig=1", ExpiresAt: expires, FileID: fx.fileID,
		ArtifactID: art.ID, CreatedAt: now}).View()
	ev, err := domain.NewEvent(context.Background(), domain.EventWebhookTest, "org_x", fx.projectID, domain.EnvLive, fx.endpoint.ID,
		map[string]any{"id": fx.endpoint.ID, "object": "webhook_endpoint"}, now)
	require.NoError(t, err)
	fx.event = ev.View()
	reg, err := catalog.Registry()
	require.NoError(t, err)
	for _, op := range reg.List() {
		fx.operations = append(fx.operations, op.View(func(engine string) bool { return engine == "inspect" }))
	}
	return fx
}

// object turns a representation into a map a test case can spoil.
func object(t *testing.T, v any) map[string]any {
	t.Helper()
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	return m
}

func list(t *testing.T, items ...any) map[string]any {
	data := make([]any, 0, len(items))
	for _, it := range items {
		data = append(data, object(t, it))
	}
	return map[string]any{"object": "list", "data": data, "has_more": false, "next_cursor": nil}
}

func errorBody(code, message string, mod func(e map[string]any)) map[string]any {
	e := map[string]any{"code": code, "message": message, "request_id": domain.NewID(domain.PrefixRequest)}
	if mod != nil {
		mod(e)
	}
	return map[string]any{"error": e}
}

// with returns a copy of m with the changes applied; the value deleted removes the key.
func with(m map[string]any, changes map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	for k, v := range changes {
		if v == deleted {
			delete(out, k)
			continue
		}
		out[k] = v
	}
	return out
}

type deletedKey struct{}

var deleted any = deletedKey{}

// exchange is one request and the answer to check.
type exchange struct {
	method, path string
	status       int
	body         any // nil: no body; []byte: raw; otherwise JSON
	header       map[string]string
}

func (x exchange) build(t *testing.T) (*http.Request, *http.Response, []byte) {
	t.Helper()
	req := httptest.NewRequest(x.method, "http://api.test"+x.path, nil)
	h := http.Header{}
	var body []byte
	switch b := x.body.(type) {
	case nil:
	case []byte:
		body = b
	default:
		var err error
		body, err = json.Marshal(b)
		require.NoError(t, err)
	}
	if body != nil {
		h.Set("Content-Type", "application/json")
	}
	h.Set("X-Request-Id", domain.NewID(domain.PrefixRequest))
	if !strings.HasPrefix(x.path, "/healthz") && !strings.HasPrefix(x.path, "/readyz") {
		h.Set("X-RateLimit-Limit", "600")
		h.Set("X-RateLimit-Remaining", "599")
		h.Set("X-RateLimit-Reset", "1")
	}
	if x.status == http.StatusTooManyRequests {
		h.Set("Retry-After", "3")
	}
	if x.status == http.StatusUnauthorized {
		h.Set("WWW-Authenticate", "Bearer")
	}
	for k, v := range x.header {
		if v == "" {
			h.Del(k)
		} else {
			h.Set(k, v)
		}
	}
	resp := &http.Response{StatusCode: x.status, Header: h, Body: io.NopCloser(bytes.NewReader(body)), Request: req}
	return req, resp, body
}

func TestOpenAPIValidatorAcceptsTheServersRepresentations(t *testing.T) {
	t.Parallel()
	v := validator(t)
	fx := newFixture(t)
	file := "/v1/files/" + fx.fileID
	cases := map[string]exchange{
		"FileReady":           {"GET", file, 200, fx.file, nil},
		"FileAwaitingUpload":  {"GET", file, 200, fx.pending, nil},
		"FileRejected":        {"GET", file, 200, fx.rejected, nil},
		"FileList":            {"GET", "/v1/files?limit=2", 200, with(list(t, fx.file, fx.pending), map[string]any{"has_more": true, "next_cursor": fx.pending.ID}), nil},
		"UploadSinglePut":     {"POST", "/v1/uploads", 201, fx.single, nil},
		"UploadMultipart":     {"POST", "/v1/uploads", 201, fx.multipart, nil},
		"UploadFromURL":       {"POST", "/v1/uploads", 200, fx.file, nil},
		"UploadGet":           {"GET", "/v1/uploads/" + fx.uplID, 200, fx.single, nil},
		"UploadParts":         {"POST", "/v1/uploads/" + fx.uplID + "/parts", 200, fx.multipart, nil},
		"CompleteParts":       {"POST", "/v1/uploads/" + fx.uplID + "/complete-parts", 200, fx.file, nil},
		"Abort":               {"POST", "/v1/uploads/" + fx.uplID + "/abort", 204, nil, nil},
		"CompleteFile":        {"POST", file + "/complete", 200, fx.file, map[string]string{"Idempotent-Replayed": "true"}},
		"DeleteFile":          {"DELETE", file, 204, nil, nil},
		"History":             {"GET", file + "/history", 200, list(t, fx.history[0], fx.history[1], fx.history[2]), nil},
		"DownloadURL":         {"POST", file + "/download-url", 201, fx.download, nil},
		"JobQueued":           {"POST", "/v1/jobs", 202, fx.job, nil},
		"JobFailed":           {"GET", "/v1/jobs/" + fx.jobID, 200, fx.failedJob, nil},
		"JobList":             {"GET", "/v1/jobs?state=queued", 200, list(t, fx.job, fx.failedJob), nil},
		"JobListByFile":       {"GET", "/v1/jobs?file_id=" + fx.fileID, 200, list(t, fx.job), nil},
		"JobArtifacts":        {"GET", "/v1/jobs/" + fx.jobID + "/artifacts?limit=1", 200, list(t, fx.file.Artifacts[0]), nil},
		"ApiIndex":            {"GET", "/v1", 200, map[string]any{"object": "api", "version": "1.0.0", "links": map[string]any{"openapi": "/v1/openapi.json", "docs": rest.DocsURL, "operations": "/v1/operations", "graphql": "/graphql"}}, nil},
		"JobCancelled":        {"POST", "/v1/jobs/" + fx.jobID + "/cancel", 200, with(object(t, fx.job), map[string]any{"state": "cancelled"}), nil},
		"Batch":               {"POST", "/v1/batches", 202, fx.batch, nil},
		"BatchGet":            {"GET", "/v1/batches/" + fx.batch.ID, 200, fx.batch, nil},
		"WebhookCreated":      {"POST", "/v1/webhook-endpoints", 201, with(object(t, fx.endpoint), map[string]any{"secret": "whsec_c2VjcmV0c2VjcmV0c2VjcmV0"}), nil},
		"WebhookList":         {"GET", "/v1/webhook-endpoints", 200, list(t, fx.endpoint), nil},
		"WebhookDeleted":      {"DELETE", "/v1/webhook-endpoints/" + fx.endpoint.ID, 204, nil, nil},
		"WebhookTest":         {"POST", "/v1/webhook-endpoints/" + fx.endpoint.ID + "/test", 202, fx.event, nil},
		"Operations":          {"GET", "/v1/operations", 200, list(t, anySlice(fx.operations)...), nil},
		"Usage":               {"GET", "/v1/usage", 200, usage(fx), nil},
		"OpenAPI":             {"GET", "/v1/openapi.json", 200, json.RawMessage(rest.OpenAPIJSON()), nil},
		"Healthz":             {"GET", "/healthz", 200, map[string]any{"status": "ok"}, nil},
		"Readyz":              {"GET", "/readyz", 200, map[string]any{"status": "ok", "checks": map[string]any{"database": "ok", "redis": "ok", "storage": "ok"}}, nil},
		"NotReady":            {"GET", "/readyz", 503, map[string]any{"status": "unavailable", "checks": map[string]any{"database": "ok", "redis": "dial tcp: refused"}}, nil},
		"BadRequest":          {"POST", "/v1/jobs", 400, errorBody("invalid_request", "unknown field", func(e map[string]any) { e["param"] = "colour" }), nil},
		"MissingKey":          {"GET", "/v1/jobs", 401, errorBody("missing_credentials", "no key", nil), nil},
		"RateLimited":         {"GET", "/v1/jobs", 429, errorBody("rate_limited", "slow down", nil), nil},
		"NotFound":            {"GET", "/v1/jobs/nonsense", 404, errorBody("not_found", "no such job", nil), nil},
		"ValidationFailed":    {"POST", file + "/complete", 422, errorBody("validation_failed", "failed", func(e map[string]any) { e["details"] = map[string]any{"findings": object(t, fx.rejected)["findings"]} }), nil},
		"CancelClaimed":       {"POST", "/v1/jobs/" + fx.jobID + "/cancel", 409, errorBody("conflict", "running", func(e map[string]any) { e["details"] = map[string]any{"state": "running"} }), nil},
		"SessionConsumed":     {"POST", file + "/complete", 409, errorBody("upload_session_consumed", "completed", func(e map[string]any) { e["details"] = map[string]any{"state": "completed"} }), nil},
		"IdempotencyConflict": {"POST", "/v1/jobs/" + fx.jobID + "/cancel", 409, errorBody("idempotency_conflict", "in progress", func(e map[string]any) { e["details"] = map[string]any{"in_progress": true} }), map[string]string{"Retry-After": "1"}},
		"NotImplemented":      {"POST", "/v1/webhook-endpoints/" + fx.endpoint.ID + "/test", 501, errorBody("not_implemented", "later", nil), nil},
		"Unavailable":         {"GET", "/v1/files", 503, errorBody("dependency_unavailable", "db down", nil), nil},
	}
	for name, x := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			req, resp, body := x.build(t)
			require.NoError(t, v.ValidateResponse(req, resp, body))
		})
	}
}

func TestOpenAPIValidatorRejectsWhatTheDocumentForbids(t *testing.T) {
	t.Parallel()
	v := validator(t)
	fx := newFixture(t)
	file := "/v1/files/" + fx.fileID
	f := object(t, fx.file)
	detected := with(f["detected_format"].(map[string]any), map[string]any{"charset": "utf-8"})
	cases := map[string]struct {
		x    exchange
		want string // a fragment of the error
	}{
		// Bodies.
		"MissingRequiredField":   {exchange{"GET", file, 200, with(f, map[string]any{"sha256": deleted}), nil}, "sha256"},
		"WrongEnumValue":         {exchange{"GET", file, 200, with(f, map[string]any{"status": "done"}), nil}, "status"},
		"ExtraProperty":          {exchange{"GET", file, 200, with(f, map[string]any{"owner": "me"}), nil}, "owner"},
		"ExtraNestedProperty":    {exchange{"GET", file, 200, with(f, map[string]any{"detected_format": detected}), nil}, "charset"},
		"NullWhereNotNullable":   {exchange{"GET", file, 200, with(f, map[string]any{"filename": nil}), nil}, "filename"},
		"WrongTypeWhereNullable": {exchange{"GET", file, 200, with(f, map[string]any{"byte_size": "1234"}), nil}, "byte_size"},
		"WrongConst":             {exchange{"GET", file, 200, with(f, map[string]any{"object": "job"}), nil}, "object"},
		"BadIdPattern":           {exchange{"GET", file, 200, with(f, map[string]any{"id": "file_123"}), nil}, "id"},
		"BadTimestamp":           {exchange{"GET", file, 200, with(f, map[string]any{"created_at": "yesterday"}), nil}, "created_at"},
		"BadNullableReference":   {exchange{"GET", file, 200, with(f, map[string]any{"duplicate_of": "job_01JD8X7A0K2M3N4P5Q6R7S8T9V"}), nil}, "duplicate_of"},
		"ProgressOutOfRange":     {exchange{"GET", "/v1/jobs/" + fx.jobID, 200, with(object(t, fx.job), map[string]any{"progress": 101}), nil}, "progress"},
		"UnknownPreset":          {exchange{"GET", "/v1/jobs/" + fx.jobID, 200, with(object(t, fx.job), map[string]any{"preset": "fast"}), nil}, "preset"},
		"ListItemInvalid":        {exchange{"GET", "/v1/files", 200, list(t, with(f, map[string]any{"status": "done"})), nil}, "status"},
		"ListWithoutCursor":      {exchange{"GET", "/v1/files", 200, with(list(t, fx.file), map[string]any{"next_cursor": deleted}), nil}, "next_cursor"},
		"SecretInList":           {exchange{"GET", "/v1/webhook-endpoints", 200, list(t, with(object(t, fx.endpoint), map[string]any{"secret": "whsec_x"})), nil}, ""},
		"CreatedWithoutSecret":   {exchange{"POST", "/v1/webhook-endpoints", 201, fx.endpoint, nil}, "secret"},
		"EventWithoutObject":     {exchange{"POST", "/v1/webhook-endpoints/" + fx.endpoint.ID + "/test", 202, with(object(t, fx.event), map[string]any{"data": map[string]any{}}), nil}, "object"},
		"RefWithSiblings":        {exchange{"GET", file, 200, with(f, map[string]any{"expires_at": "garbage"}), nil}, "expires_at"},
		"CancelConflictBadState": {exchange{"POST", "/v1/jobs/" + fx.jobID + "/cancel", 409, errorBody("conflict", "running", func(e map[string]any) { e["details"] = map[string]any{"state": "bogus"} }), nil}, "state"},
		"UploadOfWrongShape":     {exchange{"POST", "/v1/uploads", 201, fx.file, nil}, ""},
		// Errors.
		"ErrorWithoutRequestID":      {exchange{"GET", file, 404, errorBody("not_found", "no", func(e map[string]any) { delete(e, "request_id") }), nil}, "request_id"},
		"ErrorCodeOfAnotherStatus":   {exchange{"GET", file, 404, errorBody("rate_limited", "no", nil), nil}, "code"},
		"ErrorCodeUnknown":           {exchange{"GET", file, 404, errorBody("gone", "no", nil), nil}, "code"},
		"ErrorNotWrapped":            {exchange{"GET", file, 404, map[string]any{"code": "not_found", "message": "no"}, nil}, "error"},
		"ValidationFailedNoFindings": {exchange{"POST", file + "/complete", 422, errorBody("validation_failed", "failed", nil), nil}, "details"},
		"CancelConflictNoState":      {exchange{"POST", "/v1/jobs/" + fx.jobID + "/cancel", 409, errorBody("conflict", "running", nil), nil}, "details"},
		// Statuses, routes, headers, content.
		"WrongStatusForRoute":       {exchange{"GET", file, 201, fx.file, nil}, "status"},
		"StatusNotOfThisRoute":      {exchange{"GET", "/v1/operations", 404, errorBody("not_found", "no", nil), nil}, "status"},
		"UnknownRoute":              {exchange{"GET", "/v1/nope", 404, errorBody("not_found", "no", nil), nil}, "no operation"},
		"UnknownMethod":             {exchange{"PUT", file, 200, fx.file, nil}, "no operation"},
		"NoContentWithBody":         {exchange{"DELETE", file, 204, fx.file, nil}, "without a body"},
		"MissingRequestIdHeader":    {exchange{"GET", file, 200, fx.file, map[string]string{"X-Request-Id": ""}}, "X-Request-Id"},
		"MissingRateLimitHeader":    {exchange{"GET", file, 200, fx.file, map[string]string{"X-RateLimit-Remaining": ""}}, "X-RateLimit-Remaining"},
		"RateLimitHeaderNotNumeric": {exchange{"GET", file, 200, fx.file, map[string]string{"X-RateLimit-Reset": "soon"}}, "X-RateLimit-Reset"},
		"RateLimitedNoRetryAfter":   {exchange{"GET", file, 429, errorBody("rate_limited", "slow", nil), map[string]string{"Retry-After": ""}}, "Retry-After"},
		"UnauthorizedNoChallenge":   {exchange{"GET", file, 401, errorBody("invalid_api_key", "no", nil), map[string]string{"WWW-Authenticate": ""}}, "WWW-Authenticate"},
		"WrongContentType":          {exchange{"GET", file, 200, fx.file, map[string]string{"Content-Type": "text/plain"}}, "Content-Type"},
		"MissingBody":               {exchange{"GET", file, 200, nil, nil}, ""},
		"NotJSON":                   {exchange{"GET", file, 200, []byte("<html>"), nil}, ""},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			req, resp, body := c.x.build(t)
			err := v.ValidateResponse(req, resp, body)
			require.Error(t, err, "the document must refuse this answer")
			require.Contains(t, err.Error(), c.want)
			t.Log(err)
		})
	}
}

// recorder is a testing.TB that keeps the failures the validating client reports.
type recorder struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *recorder) Helper() {}

func TestOpenAPIClientReportsInvalidAnswersAndKeepsTheBody(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Request-Id", domain.NewID(domain.PrefixRequest))
		w.Header().Set("X-RateLimit-Limit", "600")
		w.Header().Set("X-RateLimit-Remaining", "599")
		w.Header().Set("X-RateLimit-Reset", "0")
		w.Header().Set("Content-Type", "application/json")
		body := object(t, fx.file)
		if r.URL.Query().Get("bad") != "" {
			body["status"] = "done"
		}
		_ = json.NewEncoder(w).Encode(body)
	}))
	defer srv.Close()

	rec := &recorder{TB: t}
	client := openapitest.New(rec).Client(nil)
	for _, bad := range []bool{false, true} {
		url := srv.URL + "/v1/files/" + fx.fileID
		if bad {
			url += "?bad=1"
		}
		resp, err := client.Get(url)
		require.NoError(t, err)
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		require.Equal(t, fx.fileID, object(t, json.RawMessage(got))["id"], "the caller still reads the body")
	}
	require.Len(t, rec.errs, 1, "only the bad answer is reported: %v", rec.errs)
	require.Contains(t, rec.errs[0], "GET /v1/files/"+fx.fileID+" answered 200")
	require.Contains(t, rec.errs[0], "status")

	rec.errs = nil
	resp, err := client.Get(srv.URL + "/v1/unknown")
	require.NoError(t, err)
	resp.Body.Close()
	require.Len(t, rec.errs, 1)
	require.Contains(t, rec.errs[0], "no operation GET /v1/unknown")
}

func anySlice[T any](in []T) []any {
	out := make([]any, 0, len(in))
	for _, v := range in {
		out = append(out, v)
	}
	return out
}

func usage(fx fixture) map[string]any {
	start := time.Date(fx.now.Year(), fx.now.Month(), 1, 0, 0, 0, 0, time.UTC)
	return map[string]any{"object": "usage", "project_id": fx.projectID,
		"period":  map[string]any{"start": start, "end": start.AddDate(0, 1, 0)},
		"credits": map[string]any{"balance": 97, "reserved": 2, "used": 1},
		"storage": map[string]any{"bytes": 1234, "files": 1},
		"egress":  map[string]any{"bytes": 0}}
}

// The request schemas say what the contract says (interface.md sections 4 and 8); the
// server does not use them, so they are checked here against sample bodies.
func TestOpenAPIRequestSchemas(t *testing.T) {
	t.Parallel()
	schemas := validator(t).Doc().Components.Schemas
	fileID, prj := domain.NewID(domain.PrefixFile), domain.NewID(domain.PrefixProject)
	formats := func(n int) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = "pdf"
		}
		return out
	}
	ids := func(n int) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = domain.NewID(domain.PrefixFile)
		}
		return out
	}
	type sample struct {
		body string
		ok   bool
	}
	cases := map[string][]sample{
		"CreateUploadRequest": {
			{`{"filename":"a.pdf","byte_size":1}`, true},
			{`{"filename":"a.pdf","byte_size":20000000,"multipart":true,"mime_type":"application/pdf","project_id":"` + prj + `","validation":{"formats":["pdf","image/png"],"max_bytes":5,"min_bytes":1}}`, true},
			{`{"from_url":"https://example.com/a.pdf"}`, true},
			{`{"from_url":"https://example.com/a.pdf","filename":"a.pdf","byte_size":1}`, false},
			{`{"from_url":"https://example.com/a.pdf","byte_size":1}`, false},
			{`{}`, false},
			{`{"filename":"a.pdf"}`, false},
			{`{"filename":"a.pdf","byte_size":0}`, false},
			{`{"filename":"` + strings.Repeat("a", 1025) + `","byte_size":1}`, false},
			{`{"filename":"` + strings.Repeat("a", 1024) + `","byte_size":1}`, true},
			{`{"filename":"a.pdf","byte_size":1,"colour":"red"}`, false},
			{`{"filename":"a.pdf","byte_size":1,"project_id":"prj_1"}`, false},
			{`{"from_url":"http://example.com/a.pdf"}`, false},
			{`{"filename":"a.pdf","byte_size":1,"validation":{"formats":[]}}`, false},
			{`{"filename":"a.pdf","byte_size":1,"validation":{"formats":` + mustJSON(t, formats(32)) + `}}`, true},
			{`{"filename":"a.pdf","byte_size":1,"validation":{"formats":` + mustJSON(t, formats(33)) + `}}`, false},
			{`{"filename":"a.pdf","byte_size":1,"validation":{"max_bytes":0}}`, false},
			{`{"filename":"a.pdf","byte_size":1,"validation":{"min_bytes":0}}`, false},
			{`{"filename":"a.pdf","byte_size":1,"validation":{"mime":"x"}}`, false},
		},
		"CompletePartsRequest": {
			{`{"parts":[{"part_number":1,"etag":"\"abc\""}]}`, true},
			{`{"parts":[]}`, false},
			{`{}`, false},
			{`{"parts":[{"part_number":0,"etag":"x"}]}`, false},
			{`{"parts":[{"part_number":1}]}`, false},
			{`{"parts":[{"etag":"x"}]}`, false},
			{`{"parts":[{"part_number":1,"etag":"x","size":3}]}`, false},
			{`{"parts":[{"part_number":1,"etag":"x"}],"upload_id":"x"}`, false},
		},
		"DownloadUrlRequest": {
			{`{}`, true},
			{`{"artifact_id":"` + domain.NewID(domain.PrefixArtifact) + `","expires_in":60}`, true},
			{`{"expires_in":86400}`, true},
			{`{"expires_in":59}`, false},
			{`{"expires_in":86401}`, false},
			{`{"artifact_id":"file_x"}`, false},
			{`{"filename":"x"}`, false},
		},
		"CreateJobRequest": {
			{`{"file_id":"` + fileID + `","operation":"ocr","options":{"language":"eng"}}`, true},
			{`{"file_id":"` + fileID + `","preset":"ai-ready"}`, true},
			{`{"file_id":"` + fileID + `","operation":"ocr","preset":"ai-ready"}`, false},
			{`{"file_id":"` + fileID + `"}`, false},
			{`{"operation":"ocr"}`, false},
			{`{"file_id":"` + fileID + `","preset":"fast"}`, false},
			{`{"file_id":"` + fileID + `","operation":"ocr","options":[1]}`, false},
			{`{"file_id":"job_x","operation":"ocr"}`, false},
			{`{"file_id":"` + fileID + `","operation":"ocr","priority":1}`, false},
		},
		"CreateBatchRequest": {
			{`{"file_ids":` + mustJSON(t, ids(1)) + `,"preset":"image"}`, true},
			{`{"file_ids":` + mustJSON(t, ids(100)) + `,"operation":"inspect"}`, true},
			{`{"file_ids":` + mustJSON(t, ids(101)) + `,"operation":"inspect"}`, false},
			{`{"file_ids":[],"operation":"inspect"}`, false},
			{`{"file_ids":` + mustJSON(t, ids(1)) + `}`, false},
			{`{"file_ids":["x"],"operation":"inspect"}`, false},
			{`{"file_ids":` + mustJSON(t, ids(1)) + `,"operation":"inspect","name":"x"}`, false},
		},
		"CreateWebhookEndpointRequest": {
			{`{"url":"https://example.com/h","enabled_events":["job.succeeded","file.ready"]}`, true},
			{`{"url":"https://example.com/h","enabled_events":["file.expired"],"project_id":"` + prj + `"}`, true},
			{`{"url":"http://example.com/h","enabled_events":["file.ready"]}`, false},
			{`{"url":"https://example.com/h","enabled_events":["job.queued"]}`, false},
			{`{"url":"https://example.com/h"}`, false},
			{`{"enabled_events":["file.ready"]}`, false},
			{`{"url":"https://example.com/h","enabled_events":["file.ready"],"secret":"x"}`, false},
		},
	}
	for name, samples := range cases {
		schema := schemas[name]
		require.NotNil(t, schema, name)
		for i, s := range samples {
			t.Run(fmt.Sprint(name, "/", i), func(t *testing.T) {
				var v any
				require.NoError(t, json.Unmarshal([]byte(s.body), &v))
				err := schema.Value.VisitJSON(v, openapi3.EnableJSONSchema2020())
				if s.ok {
					require.NoError(t, err, s.body)
				} else {
					require.Error(t, err, s.body)
				}
			})
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}
