package rest_test

import (
	"archive/zip"
	"bytes"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/jobs/ops/scan"
	"github.com/filemill/filemill/jobs/ops/scan/clamdtest"
)

// newScanner is the scan engine, in its default configuration, on a clamd of its own.
func newScanner(t *testing.T) *scan.Engine {
	t.Helper()
	c := scan.DefaultConfig()
	c.ClamdAddress = clamdtest.Start(t).Address
	scanner, err := scan.New(c)
	require.NoError(t, err)
	return scanner
}

// TestValidationScan: an upload whose policy asks for a scan is scanned at completion by
// a real clamd and the built-in rules; an infected file is rejected with its findings,
// a clean one passes, and the inspect preset scans what it inspects.
func TestValidationScan(t *testing.T) {
	t.Parallel()
	scanner := newScanner(t)
	b := setup(t, setupOpts{worker: true, scanner: scanner, engines: map[string]domain.Engine{"scan": scanner}})
	policy := map[string]any{"validation": map[string]any{"scan": true}}

	r := b.uploadFile(b.liveA, "hello.txt", []byte(clamdtest.EICAR), policy)
	require.Equal(t, 422, r.status, string(r.body))
	e := r.json(t)["error"].(map[string]any)
	require.Equal(t, domain.CodeMalwareDetected, e["code"])
	findings := e["details"].(map[string]any)["findings"].([]any)
	rules := map[string]bool{}
	for _, f := range findings {
		f := f.(map[string]any)
		require.Equal(t, domain.CodeMalwareDetected, f["code"])
		rules[f["rule"].(string)] = true
	}
	require.True(t, rules["eicar"], "the built-in rule: %v", findings)
	require.True(t, rules["clamav"], "clamd: %v", findings)
	fileID := e["details"].(map[string]any)["file_id"].(string)
	file := b.do(req{method: "GET", path: "/v1/files/" + fileID, key: b.liveA}).json(t)
	require.Equal(t, "rejected", file["status"])
	require.NotEmpty(t, file["findings"])
	history := b.do(req{method: "GET", path: "/v1/files/" + fileID + "/history", key: b.liveA}).json(t)["data"].([]any)
	require.Equal(t, "file.rejected", history[len(history)-1].(map[string]any)["type"], "the rejection is in the file's history")

	r = b.uploadFile(b.liveA, "clean.txt", []byte("nothing to see here\n"), policy)
	require.Equal(t, 200, r.status, string(r.body))
	require.Equal(t, "ready", r.json(t)["status"])

	// The inspect preset reports on the file and scans it, both steps reading the file.
	r = b.createJob(b.liveA, map[string]any{"file_id": r.json(t)["id"], "preset": "inspect"})
	require.Equal(t, 202, r.status, string(r.body))
	require.EqualValues(t, 2, r.json(t)["credits_reserved"])
	j := b.waitJob(b.liveA, r.json(t)["id"].(string))
	require.Equal(t, "succeeded", j["state"], "%v", j)
	steps := map[string]string{}
	for _, a := range j["artifacts"].([]any) {
		a := a.(map[string]any)
		steps[a["step"].(string)] = a["name"].(string)
	}
	require.Equal(t, map[string]string{"inspect": "inspect.json", "scan": "scan.json"}, steps)

	// Without the policy, the same bytes are stored; a scan job then fails with the
	// verdict and is charged nothing.
	before := b.account(b.orgA.Organization.ID)
	infected := b.readyFile(b.liveA, "later.txt", []byte(clamdtest.EICAR))
	r = b.createJob(b.liveA, map[string]any{"file_id": infected, "operation": "scan"})
	require.Equal(t, 202, r.status, string(r.body))
	j = b.waitJob(b.liveA, r.json(t)["id"].(string))
	require.Equal(t, "failed", j["state"])
	require.Equal(t, domain.CodeMalwareDetected, j["error"].(map[string]any)["code"])
	require.Equal(t, before.Balance, b.account(b.orgA.Organization.ID).Balance, "a malicious verdict is charged nothing")
}

// TestValidationScanNeedsAScanner: a deployment without a scanner refuses the policy
// when the session is created, not after the bytes were sent.
func TestValidationScanNeedsAScanner(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.do(req{method: "POST", path: "/v1/uploads", key: b.liveA, idem: idem(),
		body: map[string]any{"filename": "a.txt", "byte_size": 3, "validation": map[string]any{"scan": true}}})
	require.Equal(t, 503, r.status, string(r.body))
	require.Equal(t, domain.CodeProcessingUnavailable, r.errorCode(t))
}

// TestDeeplyNestedArchiveIsRejectedForItsNesting: a 2 KB file of 20 zips, each in the
// next, goes past clamd's recursion limit; the upload is rejected for its nesting, not
// refused as too large to scan.
func TestDeeplyNestedArchiveIsRejectedForItsNesting(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{scanner: newScanner(t)})

	data, name := []byte("the innermost file"), "core.txt"
	for i := range 20 {
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		w, err := zw.Create(name)
		require.NoError(t, err)
		_, err = w.Write(data)
		require.NoError(t, err)
		require.NoError(t, zw.Close())
		data, name = buf.Bytes(), fmt.Sprintf("layer%d.zip", i)
	}
	r := b.uploadFile(b.liveA, "nested.zip", data, map[string]any{"validation": map[string]any{"scan": true}})
	require.Equal(t, 422, r.status, string(r.body))
	e := r.json(t)["error"].(map[string]any)
	require.Equal(t, domain.CodeMalwareDetected, e["code"])
	require.NotContains(t, e["message"], "larger")
	var nesting []string
	for _, f := range e["details"].(map[string]any)["findings"].([]any) {
		if f := f.(map[string]any); f["rule"] == "archive.nesting" {
			nesting = append(nesting, f["message"].(string))
		}
	}
	require.Len(t, nesting, 1, "%v", e)
	require.Contains(t, nesting[0], "nests archives")
}

// TestValidationScanWhileTheScannerIsDown: a scanner that does not answer refuses the
// policy when the session is created, before the bytes are sent, rather than leaving
// the file awaiting an upload that can never complete.
func TestValidationScanWhileTheScannerIsDown(t *testing.T) {
	t.Parallel()
	c := scan.DefaultConfig()
	c.ClamdAddress = "tcp://127.0.0.1:1" // nothing listens there
	scanner, err := scan.New(c)
	require.NoError(t, err)
	b := setup(t, setupOpts{scanner: scanner})
	r := b.do(req{method: "POST", path: "/v1/uploads", key: b.liveA, idem: idem(),
		body: map[string]any{"filename": "a.txt", "byte_size": 3, "validation": map[string]any{"scan": true}}})
	require.Equal(t, 503, r.status, string(r.body))
	require.Equal(t, domain.CodeProcessingUnavailable, r.errorCode(t))
	require.Equal(t, "validation.scan", r.json(t)["error"].(map[string]any)["param"])
	require.NotEmpty(t, r.header.Get("Retry-After"))
	require.Empty(t, b.do(req{method: "GET", path: "/v1/files", key: b.liveA}).json(t)["data"], "no file awaits an upload")
}
