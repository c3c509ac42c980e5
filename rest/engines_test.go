package rest_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/domain/eventually"
	"github.com/filemill/filemill/jobs/ops/aiready"
	"github.com/filemill/filemill/jobs/ops/office"
	"github.com/filemill/filemill/jobs/ops/office/officetest"
	"github.com/filemill/filemill/jobs/ops/pdf"
	"github.com/filemill/filemill/jobs/ops/pdf/pdftest"
	"github.com/filemill/filemill/jobs/ops/pdfium"
)

// These tests run real engines behind the API and a worker: what a user gets from the
// PDF and office operations and the presets made of them.

func engineSetup(t *testing.T) *bundle {
	t.Helper()
	engines, _ := documentEngines(t)
	return setup(t, setupOpts{worker: true, engines: engines})
}

// documentEngines are the real pdf, office and ai engines, and the PDFium pool the ai
// engine reads with, for engines added beside them to share.
func documentEngines(t *testing.T) (map[string]domain.Engine, *pdfium.Pool) {
	t.Helper()
	pdfEngine, err := pdf.New(pdf.DefaultConfig())
	require.NoError(t, err)
	oc := office.DefaultConfig()
	oc.Instances = 1
	officeEngine, err := office.New(oc)
	require.NoError(t, err)
	t.Cleanup(func() { _ = officeEngine.Close() })
	pc := pdfium.DefaultConfig()
	pc.Instances = 1
	pool, err := pdfium.New(pc)
	require.NoError(t, err)
	t.Cleanup(func() { _ = pool.Close() })
	ac := aiready.DefaultConfig()
	ac.Pool = pool
	aiEngine, err := aiready.New(ac)
	require.NoError(t, err)
	return map[string]domain.Engine{"pdf": pdfEngine, "office": officeEngine, "ai": aiEngine}, pool
}

// pdfText is what pdftotext, an independent reader, finds in a PDF.
func pdfText(t *testing.T, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "in.pdf")
	require.NoError(t, os.WriteFile(path, data, 0o600))
	out, err := exec.Command("pdftotext", "-layout", path, "-").CombinedOutput()
	require.NoError(t, err, "pdftotext (poppler-utils) must be installed: %s", out)
	return string(out)
}

func TestMergeThroughTheAPI(t *testing.T) {
	t.Parallel()
	b := engineSetup(t)
	first := b.readyFile(b.liveA, "a.pdf", pdftest.TextPages("alpha-1", "alpha-2"))
	second := b.readyFile(b.liveA, "b.pdf", pdftest.TextPages("bravo-1"))
	third := b.readyFile(b.liveA, "c.pdf", pdftest.TextPages("charlie-1", "charlie-2", "charlie-3"))
	theirs := b.readyFile(b.keyB, "d.pdf", pdftest.TextPages("delta-1"))

	jobsBefore := len(b.do(req{method: "GET", path: "/v1/jobs?limit=100", key: b.liveA}).json(t)["data"].([]any))
	r := b.createJob(b.liveA, map[string]any{"file_id": first, "operation": "pdf.merge", "options": map[string]any{"file_ids": []string{second, theirs}}})
	require.Equal(t, 404, r.status, string(r.body))
	require.Equal(t, "options.file_ids[1]", r.json(t)["error"].(map[string]any)["param"])
	require.Len(t, b.do(req{method: "GET", path: "/v1/jobs?limit=100", key: b.liveA}).json(t)["data"], jobsBefore, "nothing created")

	r = b.createJob(b.liveA, map[string]any{"file_id": first, "operation": "pdf.merge", "options": map[string]any{"file_ids": []string{third, second}}})
	require.Equal(t, 202, r.status, string(r.body))
	j := b.waitJob(b.liveA, r.json(t)["id"].(string))
	require.Equal(t, "succeeded", j["state"], "%v", j)
	text := pdfText(t, b.artifactBody(b.liveA, j, 0))
	var order []int
	for _, label := range []string{"alpha-1", "alpha-2", "charlie-1", "charlie-2", "charlie-3", "bravo-1"} {
		i := strings.Index(text, label)
		require.GreaterOrEqual(t, i, 0, "%s is in the merged PDF", label)
		order = append(order, i)
	}
	require.IsIncreasing(t, order, "the job's file, then file_ids in order")
	require.Equal(t, 6, strings.Count(text, "\f"), "six pages")
}

func TestDamagedInputsFailUncharged(t *testing.T) {
	t.Parallel()
	b := engineSetup(t)
	good := pdftest.TextPages("one", "two")
	before := b.account(b.orgA.Organization.ID)
	truncated := b.readyFile(b.liveA, "cut.pdf", good[:len(good)/2])
	fine := b.readyFile(b.liveA, "fine.pdf", good)

	r := b.createJob(b.liveA, map[string]any{"file_id": truncated, "operation": "pdf.split", "options": map[string]any{"every": 1}})
	require.Equal(t, 202, r.status, string(r.body))
	j := b.waitJob(b.liveA, r.json(t)["id"].(string))
	require.Equal(t, "failed", j["state"])
	e := j["error"].(map[string]any)
	require.Equal(t, domain.CodeCorruptedFile, e["code"])
	require.NotContains(t, e["message"], "pdfcpu", "a parser's words never reach the client")

	// A batch with a damaged member completes, the member failing on its own.
	r = b.do(req{method: "POST", path: "/v1/batches", key: b.liveA, idem: idem(),
		body: map[string]any{"file_ids": []string{fine, truncated}, "operation": "pdf.compress"}})
	require.Equal(t, 202, r.status, string(r.body))
	var bt map[string]any
	eventually.True(t, "the condition to hold", func() bool {
		bt = b.do(req{method: "GET", path: "/v1/batches/" + r.json(t)["id"].(string), key: b.liveA}).json(t)
		return bt["state"] == "completed"
	})
	items := bt["items"].([]any)
	require.Equal(t, "succeeded", items[0].(map[string]any)["state"])
	require.Equal(t, "failed", items[1].(map[string]any)["state"])
	require.Equal(t, domain.CodeCorruptedFile, items[1].(map[string]any)["error"].(map[string]any)["code"])
	after := b.account(b.orgA.Organization.ID)
	require.Equal(t, before.Used+1, after.Used, "only the compressed member is charged")
	require.Zero(t, after.Reserved)
}

func TestDocumentPresetMakesACompressedPDF(t *testing.T) {
	t.Parallel()
	b := engineSetup(t)
	doc := officetest.DOCX(t, [][]string{{"Quarterly figures for the northern region"}, {"Second page of the report"}})
	file := b.readyFile(b.liveA, "report.docx", doc)
	r := b.createJob(b.liveA, map[string]any{"file_id": file, "preset": "document"})
	require.Equal(t, 202, r.status, string(r.body))
	require.EqualValues(t, 5+1, r.json(t)["credits_reserved"], "convert then compress")
	j := b.waitJob(b.liveA, r.json(t)["id"].(string))
	require.Equal(t, "succeeded", j["state"], "%v", j)
	var pdfIndex = -1
	for i, a := range j["artifacts"].([]any) {
		a := a.(map[string]any)
		require.Equal(t, "compress", a["step"], "the converted PDF is intermediate; only the compressed one is kept")
		if a["mime_type"] == "application/pdf" {
			pdfIndex = i
		}
	}
	require.GreaterOrEqual(t, pdfIndex, 0, "a PDF came out: %v", j["artifacts"])
	text := pdfText(t, b.artifactBody(b.liveA, j, pdfIndex))
	require.Contains(t, text, "Quarterly figures for the northern region", "the compress step read the convert step's PDF")
	require.Contains(t, text, "Second page of the report")

	// A PDF skips the conversion and costs only the compression.
	pdfFile := b.readyFile(b.liveA, "already.pdf", pdftest.TextPages("already a PDF"))
	r = b.createJob(b.liveA, map[string]any{"file_id": pdfFile, "preset": "document"})
	require.Equal(t, 202, r.status, string(r.body))
	require.EqualValues(t, 1, r.json(t)["credits_reserved"])
	j = b.waitJob(b.liveA, r.json(t)["id"].(string))
	require.Equal(t, "succeeded", j["state"], "%v", j)
	var report map[string]any
	for i, a := range j["artifacts"].([]any) {
		if a.(map[string]any)["mime_type"] == "application/json" {
			require.NoError(t, json.Unmarshal(b.artifactBody(b.liveA, j, i), &report))
		}
	}
	require.Contains(t, report, "bytes_before")
}

func TestAIReadyPresetReadsAnOfficeDocument(t *testing.T) {
	t.Parallel()
	b := engineSetup(t)
	doc := officetest.DOCX(t, [][]string{{"The harbour opened in spring", "Ships came from the south with salt and cloth"}})
	file := b.readyFile(b.liveA, "harbour.docx", doc)
	r := b.createJob(b.liveA, map[string]any{"file_id": file, "preset": "ai-ready", "options": map[string]any{"chunk_size": 500}})
	require.Equal(t, 202, r.status, string(r.body))
	j := b.waitJob(b.liveA, r.json(t)["id"].(string))
	require.Equal(t, "succeeded", j["state"], "%v", j)
	got := map[string]string{}
	for i, a := range j["artifacts"].([]any) {
		a := a.(map[string]any)
		require.Equal(t, "extract", a["step"], "the converted PDF is intermediate")
		got[a["name"].(string)] = string(b.artifactBody(b.liveA, j, i))
	}
	require.Contains(t, got["document.md"], "The harbour opened in spring")
	require.Contains(t, got["document.txt"], "Ships came from the south with salt and cloth")
	var chunks struct {
		ChunkSize int `json:"chunk_size"`
		MaxTokens int `json:"max_tokens"`
		Chunks    []struct {
			Text       string
			Pages      []int
			PageSource string `json:"page_source"`
			Tokens     int
			Boxes      []struct{ Page int }
		}
	}
	require.NoError(t, json.Unmarshal([]byte(got["chunks.json"]), &chunks))
	require.Equal(t, 500, chunks.ChunkSize, "the preset's option reached the extraction")
	require.Equal(t, 512, chunks.MaxTokens)
	require.NotEmpty(t, chunks.Chunks)
	require.Equal(t, []int{1}, chunks.Chunks[0].Pages, "pages from the converted PDF")
	require.NotEmpty(t, chunks.Chunks[0].Boxes)
	require.Equal(t, "layout", chunks.Chunks[0].PageSource, "a DOCX without rendered breaks is converted")
	require.Positive(t, chunks.Chunks[0].Tokens)

	// An HTML page is read as it is: its headings and table, no conversion step.
	page := b.readyFile(b.liveA, "page.html", []byte(`<html><body><h1>Tide tables</h1><table><tr><th>Port</th><th>High</th></tr>`+
		`<tr><td>Dover</td><td>06:10</td></tr></table></body></html>`))
	r = b.createJob(b.liveA, map[string]any{"file_id": page, "preset": "ai-ready", "options": map[string]any{"max_tokens": 128}})
	require.Equal(t, 202, r.status, string(r.body))
	j = b.waitJob(b.liveA, r.json(t)["id"].(string))
	require.Equal(t, "succeeded", j["state"], "%v", j)
	for i, a := range j["artifacts"].([]any) {
		if a.(map[string]any)["name"] == "document.md" {
			require.Equal(t, "# Tide tables\n\n| Port | High |\n| --- | --- |\n| Dover | 06:10 |\n", string(b.artifactBody(b.liveA, j, i)))
		}
	}
}

// A DOCX as Word saves it carries its pages (rendered page breaks as many as the pages
// it records): ai-ready leaves out the conversion, charges the extraction only, and
// its chunks have pages from those breaks (page_source hints) and no boxes.
func TestAIReadyPresetPagesAWordDocumentByItsSavedBreaks(t *testing.T) {
	t.Parallel()
	b := engineSetup(t)
	doc := officetest.WordDOCX(t, [][]string{{"The harbour opened in spring"}, {"Ships came from the south with salt and cloth"}})
	file := b.readyFile(b.liveA, "harbour.docx", doc)
	r := b.createJob(b.liveA, map[string]any{"file_id": file, "preset": "ai-ready"})
	require.Equal(t, 202, r.status, string(r.body))
	require.EqualValues(t, 7, r.json(t)["credits_reserved"], "planned with the conversion: only the file's content tells it is not needed")
	j := b.waitJob(b.liveA, r.json(t)["id"].(string))
	require.Equal(t, "succeeded", j["state"], "%v", j)
	require.EqualValues(t, 2, j["credits_charged"], "the extraction of 2 pages, no conversion")
	var raw []byte
	for i, a := range j["artifacts"].([]any) {
		if a.(map[string]any)["name"] == "chunks.json" {
			raw = b.artifactBody(b.liveA, j, i)
		}
	}
	var chunks struct {
		Pages  int
		Chunks []struct {
			Text       string
			Pages      []int
			PageSource string `json:"page_source"`
			Boxes      []any
		}
	}
	require.NoError(t, json.Unmarshal(raw, &chunks))
	require.Equal(t, 2, chunks.Pages)
	var pages []int
	for _, c := range chunks.Chunks {
		pages = append(pages, c.Pages...)
		require.Equal(t, "hints", c.PageSource)
		require.Empty(t, c.Boxes)
	}
	require.Equal(t, []int{1, 2}, pages, "%s", raw)
}

// A PDF without text is read in full: ai-ready succeeds with an empty document.md and
// document.txt and no chunks, priced by its pages. A page that is a scan, on a worker
// that cannot recognise text, is refused with unsupported_input saying so.
func TestAIReadyOnAPDFWithoutText(t *testing.T) {
	t.Parallel()
	b := engineSetup(t)
	blank := b.readyFile(b.liveA, "blank.pdf", []byte(minimalPDF))
	r := b.createJob(b.liveA, map[string]any{"file_id": blank, "preset": "ai-ready"})
	require.Equal(t, 202, r.status, string(r.body))
	j := b.waitJob(b.liveA, r.json(t)["id"].(string))
	require.Equal(t, "succeeded", j["state"], "%v", j["error"])
	require.EqualValues(t, 1, j["credits_charged"], "one page read")
	got := map[string]string{}
	for i, a := range j["artifacts"].([]any) {
		got[a.(map[string]any)["name"].(string)] = string(b.artifactBody(b.liveA, j, i))
	}
	require.Equal(t, "", got["document.md"])
	require.Equal(t, "", got["document.txt"])
	var chunks struct{ Chunks []any }
	require.NoError(t, json.Unmarshal([]byte(got["chunks.json"]), &chunks))
	require.Empty(t, chunks.Chunks)

	var w pdftest.Writer
	img := w.AddJPEG(pdftest.JPEG(pdftest.Photo(300, 400, 1), 80), 300, 400)
	scan := w.Document([]pdftest.Page{{Width: pdftest.LetterWidth, Height: pdftest.LetterHeight,
		Content: "q 540 0 0 720 36 36 cm /Im1 Do Q\n", Images: map[string]int{"Im1": img}}})
	file := b.readyFile(b.liveA, "scan.pdf", scan)
	r = b.createJob(b.liveA, map[string]any{"file_id": file, "preset": "ai-ready"})
	require.Equal(t, 202, r.status, string(r.body))
	j = b.waitJob(b.liveA, r.json(t)["id"].(string))
	require.Equal(t, "failed", j["state"])
	e := j["error"].(map[string]any)
	require.Equal(t, domain.CodeUnsupportedInput, e["code"])
	require.Contains(t, e["message"], "page 1 has no text layer and text recognition is not available here")
	require.EqualValues(t, 1, j["attempts"])
}
