package rest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/jobs/ops/inspect"
)

// The platform's own behaviour — presets as pipelines, several inputs, pages priced
// from what was counted, outputs verified — is tested here with a small engine of its
// own ("t"), so that what is checked is the platform, whatever real engine runs on it.

type unitsOptions struct {
	Units   int      `json:"units,omitempty" doc:"pages to report as processed (0: the input's)" schema:"min=0"`
	FileIDs []string `json:"file_ids,omitempty" doc:"further inputs" schema:"maxItems=3"`
}

var platformOperations = []domain.OperationSpec{
	{Name: "t.upper", Engine: "t", Description: "upper-cases text", InputFormats: []string{"text/plain"}, Price: domain.Price{Credits: 2, Per: "file"}},
	{Name: "t.read", Engine: "t", Description: "reports what it read", InputFormats: []string{"*"}, Price: domain.Price{Credits: 1, Per: "file"}},
	{Name: "t.pages", Engine: "t", Description: "reports its inputs", InputFormats: []string{"pdf"}, Price: domain.Price{Credits: 3, Per: "page"},
		Options: unitsOptions{}, FileIDsOption: "file_ids"},
	{Name: "t.broken", Engine: "t", Description: "writes a PDF that is not one", InputFormats: []string{"*"}, Price: domain.Price{Credits: 1, Per: "file"}},
}

// platformPreset takes a name of the contract's presets, which the document lists.
var platformPreset = domain.PresetSpec{Name: "document", Description: "upper, then read", InputFormats: []string{"text/plain"},
	Steps: []domain.StepSpec{{Name: "shout", Operation: "t.upper"}, {Name: "report", Operation: "t.read"}}}

// platformEngine runs the "t" operations.
type platformEngine struct{}

func (platformEngine) Run(ctx context.Context, in domain.EngineInput) (*domain.EngineOutput, error) {
	write := func(name, mime string, data []byte) (*domain.EngineOutput, error) {
		path := filepath.Join(in.WorkDir, name)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return nil, err
		}
		return &domain.EngineOutput{Artifacts: []domain.EngineArtifact{{Name: name, MIMEType: mime, Path: path}}}, nil
	}
	src, err := os.ReadFile(in.Path)
	if err != nil {
		return nil, err
	}
	switch in.Operation {
	case "t.upper":
		return write("upper.txt", "text/plain", []byte(strings.ToUpper(string(src))))
	case "t.read":
		report, _ := json.Marshal(map[string]any{"read": string(src), "filename": in.Filename, "format": in.Format})
		return write("read.json", "application/json", report)
	case "t.pages":
		o, err := domain.EngineOptions[unitsOptions](in)
		if err != nil {
			return nil, err
		}
		var inputs []map[string]any
		for _, x := range in.Inputs {
			b, _ := os.ReadFile(x.Path)
			inputs = append(inputs, map[string]any{"file_id": x.FileID, "pages": x.Pages, "bytes": len(b)})
		}
		report, _ := json.Marshal(map[string]any{"pages": in.Pages, "inputs": inputs})
		out, err := write("pages.json", "application/json", report)
		if err != nil {
			return nil, err
		}
		out.Units = in.Pages
		if o.Units > 0 {
			out.Units = o.Units
		}
		return out, nil
	case "t.broken":
		return write("out.pdf", "application/pdf", []byte("%PDF-1.7\nthis is not a PDF at all\n"))
	}
	return nil, fmt.Errorf("unknown operation %s", in.Operation)
}

func platformSetup(t *testing.T) *bundle {
	reg := domain.NewRegistry()
	require.NoError(t, reg.AddOperations(inspect.Specs()...))
	require.NoError(t, reg.AddOperations(platformOperations...))
	require.NoError(t, reg.AddPreset(platformPreset))
	return setup(t, setupOpts{worker: true, registry: reg, engines: map[string]domain.Engine{"t": platformEngine{}}})
}

// pagesPDF is a PDF of n empty Letter pages.
func pagesPDF(n int) []byte {
	var kids, pages strings.Builder
	for i := range n {
		fmt.Fprintf(&kids, "%d 0 R ", 3+i)
		fmt.Fprintf(&pages, "%d 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 612 792]>>endobj\n", 3+i)
	}
	return []byte(fmt.Sprintf("%%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[%s]/Count %d>>endobj\n%strailer<</Root 1 0 R>>\n%%%%EOF\n",
		kids.String(), n, pages.String()))
}

// artifactBody downloads an artifact of a finished job.
func (b *bundle) artifactBody(key string, job map[string]any, i int) []byte {
	b.t.Helper()
	art := job["artifacts"].([]any)[i].(map[string]any)
	r := b.do(req{method: "POST", path: "/v1/files/" + job["file_id"].(string) + "/download-url", key: key, idem: idem(),
		body: map[string]any{"artifact_id": art["id"]}})
	require.Equal(b.t, 201, r.status, string(r.body))
	resp, err := http.Get(r.json(b.t)["url"].(string))
	require.NoError(b.t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(b.t, err)
	return body
}

func TestPresetIsAPipeline(t *testing.T) {
	t.Parallel()
	b := platformSetup(t)
	file := b.readyFile(b.liveA, "note.txt", []byte("quiet words"))
	r := b.createJob(b.liveA, map[string]any{"file_id": file, "preset": "document"})
	require.Equal(t, 202, r.status, string(r.body))
	require.EqualValues(t, 3, r.json(t)["credits_reserved"], "a preset costs the sum of its steps")
	j := b.waitJob(b.liveA, r.json(t)["id"].(string))
	require.Equal(t, "succeeded", j["state"], "%v", j)
	require.EqualValues(t, 3, j["credits_charged"])
	arts := j["artifacts"].([]any)
	require.Len(t, arts, 2)
	steps := map[string]string{}
	for _, a := range arts {
		a := a.(map[string]any)
		steps[a["name"].(string)] = a["step"].(string)
	}
	require.Equal(t, map[string]string{"upper.txt": "shout", "read.json": "report"}, steps, "artifacts name their step")
	for i, a := range arts {
		if a.(map[string]any)["name"] == "read.json" {
			var report map[string]any
			require.NoError(t, json.Unmarshal(b.artifactBody(b.liveA, j, i), &report))
			require.Equal(t, "QUIET WORDS", report["read"], "the second step reads the first step's output, not the file")
			require.Equal(t, "upper.txt", report["filename"])
		}
	}

	ops := b.do(req{method: "GET", path: "/v1/operations", key: b.liveA}).json(t)
	for _, op := range ops["data"].([]any) {
		if op := op.(map[string]any); op["name"] == "document" {
			require.Equal(t, "preset", op["kind"])
			require.Nil(t, op["price"], "a preset has no price of its own")
			require.Len(t, op["steps"], 2)
			var sum float64
			for _, st := range op["steps"].([]any) {
				sum += st.(map[string]any)["price"].(map[string]any)["credits"].(float64)
			}
			require.EqualValues(t, 3, sum, "it costs the sum of its steps")
			require.Contains(t, op["price_rule"], "the sum of the steps that run for the file")
			return
		}
	}
	t.Fatal("the preset is not listed")
}

func TestOutputThatDoesNotVerifyFailsTheJob(t *testing.T) {
	t.Parallel()
	b := platformSetup(t)
	before := b.account(b.orgA.Organization.ID)
	file := b.readyFile(b.liveA, "a.pdf", []byte(minimalPDF))
	r := b.createJob(b.liveA, map[string]any{"file_id": file, "operation": "t.broken"})
	require.Equal(t, 202, r.status, string(r.body))
	j := b.waitJob(b.liveA, r.json(t)["id"].(string))
	require.Equal(t, "failed", j["state"])
	require.Equal(t, domain.CodeOutputValidationFailed, j["error"].(map[string]any)["code"])
	require.EqualValues(t, 1, j["attempts"], "a broken output is not retried")
	require.Empty(t, j["artifacts"], "nothing broken is stored")
	after := b.account(b.orgA.Organization.ID)
	require.Equal(t, before.Balance, after.Balance, "nothing charged")
	require.Zero(t, after.Reserved)
}

func TestPagesArePricedAsCounted(t *testing.T) {
	t.Parallel()
	b := platformSetup(t)
	pdf := b.uploadFile(b.liveA, "seven.pdf", pagesPDF(7), nil)
	require.Equal(t, 200, pdf.status, string(pdf.body))
	require.EqualValues(t, 7, pdf.json(t)["pages"], "pages are counted at completion")
	txt := b.uploadFile(b.liveA, "a.txt", []byte("no pages here"), nil)
	require.Nil(t, txt.json(t)["pages"])

	file := pdf.json(t)["id"].(string)
	r := b.createJob(b.liveA, map[string]any{"file_id": file, "operation": "t.pages"})
	require.Equal(t, 202, r.status, string(r.body))
	require.EqualValues(t, 3*7, r.json(t)["credits_reserved"], "the reservation is exact")
	j := b.waitJob(b.liveA, r.json(t)["id"].(string))
	require.Equal(t, "succeeded", j["state"], "%v", j)
	require.EqualValues(t, 3*7, j["credits_charged"])

	r = b.createJob(b.liveA, map[string]any{"file_id": file, "operation": "t.pages", "options": map[string]any{"units": 2}})
	require.Equal(t, 202, r.status, string(r.body))
	j = b.waitJob(b.liveA, r.json(t)["id"].(string))
	require.EqualValues(t, 3*7, j["credits_reserved"])
	require.EqualValues(t, 3*2, j["credits_charged"], "charged the pages processed, the rest released")
	require.Zero(t, b.account(b.orgA.Organization.ID).Reserved)
}

func TestSeveralInputs(t *testing.T) {
	t.Parallel()
	b := platformSetup(t)
	first := b.readyFile(b.liveA, "one.pdf", pagesPDF(1))
	second := b.readyFile(b.liveA, "two.pdf", pagesPDF(2))
	third := b.readyFile(b.liveA, "three.pdf", pagesPDF(3))
	theirs := b.readyFile(b.keyB, "b.pdf", pagesPDF(1))
	text := b.readyFile(b.liveA, "a.txt", []byte("text"))
	pending := b.openUpload(b.liveA, "p.pdf", 10, nil)["file_id"].(string)

	jobsBefore := len(b.do(req{method: "GET", path: "/v1/jobs?limit=100", key: b.liveA}).json(t)["data"].([]any))
	for name, c := range map[string]struct {
		ids    []string
		status int
		code   string
		param  string
	}{
		"OtherOrganization": {[]string{second, theirs}, 404, domain.CodeNotFound, "options.file_ids[1]"},
		"Unknown":           {[]string{domain.NewID(domain.PrefixFile)}, 404, domain.CodeNotFound, "options.file_ids[0]"},
		"NotAFileID":        {[]string{"job_x"}, 400, domain.CodeInvalidRequest, "options.file_ids[0]"},
		"NotReady":          {[]string{pending}, 409, domain.CodeConflict, "options.file_ids[0]"},
		"WrongFormat":       {[]string{text}, 422, domain.CodeUnsupportedInput, "options.file_ids[0]"},
		"TooMany":           {[]string{second, second, second, second}, 400, domain.CodeInvalidRequest, "options.file_ids"},
	} {
		r := b.createJob(b.liveA, map[string]any{"file_id": first, "operation": "t.pages", "options": map[string]any{"file_ids": c.ids}})
		require.Equal(t, c.status, r.status, "%s: %s", name, r.body)
		e := r.json(t)["error"].(map[string]any)
		require.Equal(t, c.code, e["code"], name)
		require.Equal(t, c.param, e["param"], name)
	}
	require.Len(t, b.do(req{method: "GET", path: "/v1/jobs?limit=100", key: b.liveA}).json(t)["data"], jobsBefore, "nothing was created")

	r := b.createJob(b.liveA, map[string]any{"file_id": first, "operation": "t.pages", "options": map[string]any{"file_ids": []string{third, second}}})
	require.Equal(t, 202, r.status, string(r.body))
	j := b.waitJob(b.liveA, r.json(t)["id"].(string))
	require.Equal(t, "succeeded", j["state"], "%v", j)
	var report struct {
		Pages  int
		Inputs []struct {
			FileID string `json:"file_id"`
			Pages  int
		}
	}
	require.NoError(t, json.Unmarshal(b.artifactBody(b.liveA, j, 0), &report))
	require.Equal(t, 1, report.Pages)
	require.Len(t, report.Inputs, 2)
	require.Equal(t, third, report.Inputs[0].FileID, "the inputs arrive in the order given")
	require.Equal(t, 3, report.Inputs[0].Pages)
	require.Equal(t, second, report.Inputs[1].FileID)
	require.Equal(t, 2, report.Inputs[1].Pages)
}
