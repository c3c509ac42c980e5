package rest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/jpeg"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/jobs/ops/image"
	"github.com/filemill/filemill/jobs/ops/ocr"
	"github.com/filemill/filemill/jobs/ops/ocr/ocrtest"
	"github.com/filemill/filemill/jobs/ops/office/officetest"
	"github.com/filemill/filemill/jobs/ops/pdf"
	"github.com/filemill/filemill/jobs/ops/pdf/pdftest"
	"github.com/filemill/filemill/jobs/ops/render"
)

// What a job is admitted with, what it costs and what it produces, through the API
// with the real engines behind a worker: what cannot run is refused at creation with
// nothing reserved, and the catalogue's price, the reservation and the charge agree.

func admissionSetup(t *testing.T) *bundle {
	t.Helper()
	engines, pool := documentEngines(t)
	rc := render.DefaultConfig()
	rc.Pool = pool
	renderEngine, err := render.New(rc)
	require.NoError(t, err)
	occ := ocr.DefaultConfig()
	occ.Parallel, occ.RenderBitmap, occ.CountPDFPages = 1, ocr.PDFiumRenderer(pool), pdf.CountPages
	ocrEngine, err := ocr.New(occ)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ocrEngine.Close() })
	engines["render"], engines["ocr"] = renderEngine, ocrEngine
	b := setup(t, setupOpts{worker: true, engines: engines})
	_, err = b.svc.Credits.Grant(context.Background(), b.orgA.Organization.ID, domain.EnvLive, 10000, "test")
	require.NoError(t, err)
	return b
}

// checkRefused checks an answer refused what cannot run: the code, the option named,
// and nothing created or reserved. It goes on after a failure, so that every case of a
// test shows its own; the error it returns is empty when there was none.
func (b *bundle) checkRefused(t *testing.T, r response, status int, code, param string, before *domain.CreditAccount, jobsBefore int) map[string]any {
	t.Helper()
	e, _ := r.json(t)["error"].(map[string]any)
	if !assert.Equal(t, status, r.status, string(r.body)) || e == nil {
		return map[string]any{"details": map[string]any{}}
	}
	assert.Equal(t, code, e["code"], "%v", e)
	assert.Equal(t, param, e["param"], "%v", e)
	after := b.account(b.orgA.Organization.ID)
	assert.Equal(t, before.Balance, after.Balance, "nothing reserved")
	assert.Equal(t, before.Reserved, after.Reserved, "nothing reserved")
	assert.Len(t, b.do(req{method: "GET", path: "/v1/jobs?limit=100", key: b.liveA}).json(t)["data"], jobsBefore, "no job created")
	if e["details"] == nil {
		e["details"] = map[string]any{}
	}
	return e
}

func TestAdmissionRefusesWhatCannotRun(t *testing.T) {
	t.Parallel()
	b := admissionSetup(t)
	three := b.readyFile(b.liveA, "three.pdf", pdftest.TextPages("one", "two", "three"))
	before := b.account(b.orgA.Organization.ID)
	// Cases run in order on one server (real engines are costly to start); the bundle's
	// helpers fail the test itself, so they are not subtests.
	refused := func(body map[string]any, status int, code, param string) map[string]any {
		t.Helper()
		return b.checkRefused(t, b.createJob(b.liveA, body), status, code, param, before, 0)
	}

	// A page the document does not have.
	e := refused(map[string]any{"file_id": three, "operation": "pdf.pages", "options": map[string]any{"pages": "7"}},
		422, domain.CodeValidationFailed, "options.pages")
	assert.Contains(t, e["message"], "3 pages")
	assert.NotEmpty(t, e["details"].(map[string]any)["findings"], "the reason is a finding")

	// A part past the end.
	refused(map[string]any{"file_id": three, "operation": "pdf.split", "options": map[string]any{"ranges": []string{"1-2", "4-"}}},
		422, domain.CodeValidationFailed, "options.ranges[1]")

	// A page to render past the end.
	refused(map[string]any{"file_id": three, "operation": "pdf.render", "options": map[string]any{"pages": "2,9"}},
		422, domain.CodeValidationFailed, "options.pages")

	// A language no OCR worker has.
	e = refused(map[string]any{"file_id": three, "operation": "ocr", "options": map[string]any{"languages": []string{"eng", "xyz"}}},
		422, domain.CodeValidationFailed, "options.languages[1]")
	assert.Contains(t, e["message"], `"xyz"`)
	assert.Contains(t, e["message"], "eng", "it says which languages there are")

	// A conversion convert does not make from the file's kind.
	e = refused(map[string]any{"file_id": three, "operation": "convert", "options": map[string]any{"format": "md"}},
		422, domain.CodeValidationFailed, "options.format")
	assert.Equal(t, "convert cannot turn a PDF into md", e["message"])
	photo := b.readyFile(b.liveA, "photo.png", pngBytes(t, 8, 8))
	refused(map[string]any{"file_id": photo, "operation": "convert", "options": map[string]any{"format": "txt"}},
		422, domain.CodeValidationFailed, "options.format")
	refused(map[string]any{"file_id": photo, "operation": "convert", "options": map[string]any{"format": "webp"}},
		422, domain.CodeValidationFailed, "options.format")

	// More documents than a job may hold.
	long := b.readyFile(b.liveA, "long.pdf", pagesPDF(1001))
	refused(map[string]any{"file_id": long, "operation": "pdf.split", "options": map[string]any{"every": 1}},
		422, domain.CodeValidationFailed, "options.every")
	refused(map[string]any{"file_id": long, "operation": "pdf.render"}, 422, domain.CodeValidationFailed, "options.pages")

	// Longer than the engine reads.
	longer := b.readyFile(b.liveA, "longer.pdf", pagesPDF(2001))
	e = b.checkRefused(t, b.createJob(b.liveA, map[string]any{"file_id": longer, "preset": "ai-ready"}),
		422, domain.CodeUnsupportedInput, "file_id", before, 0)
	assert.EqualValues(t, 2000, e["details"].(map[string]any)["max_pages"])
}

// checkPriced checks a succeeded job was charged what it reserved, and that its
// pricing shows how: one line per step that ran. It goes on after a failure, as
// checkRefused does.
func checkPriced(t *testing.T, j map[string]any, credits int, lines ...string) {
	t.Helper()
	assert.Equal(t, "succeeded", j["state"], "%v", j["error"])
	assert.EqualValues(t, credits, j["credits_reserved"])
	assert.EqualValues(t, credits, j["credits_charged"], "the charge agrees with the reservation")
	p, ok := j["pricing"].(map[string]any)
	if !assert.True(t, ok, "the job shows how it was priced: %v", j["pricing"]) {
		return
	}
	assert.EqualValues(t, credits, p["credits"])
	var got []string
	for _, l := range p["lines"].([]any) {
		l := l.(map[string]any)
		price := l["price"].(map[string]any)
		got = append(got, fmt.Sprintf("%s %v×%v/%v=%v", l["operation"], l["units"], price["credits"], price["per"], l["credits"]))
	}
	assert.Equal(t, lines, got)
}

func TestPricesAgree(t *testing.T) {
	t.Parallel()
	b := admissionSetup(t)
	three := b.readyFile(b.liveA, "three.pdf", pdftest.TextPages("alpha bravo charlie", "delta echo foxtrot", "golf hotel india"))
	// Cases run in order on one server, as above.
	run := func(body map[string]any) map[string]any {
		t.Helper()
		r := b.createJob(b.liveA, body)
		require.Equal(t, 202, r.status, string(r.body))
		return b.waitJob(b.liveA, r.json(t)["id"].(string))
	}

	// One page rendered is one page priced.
	j := run(map[string]any{"file_id": three, "operation": "pdf.render", "options": map[string]any{"pages": "2"}})
	checkPriced(t, j, 1, "pdf.render 1×1/page=1")
	assert.EqualValues(t, 1, j["artifact_count"])

	// A split is priced per part, each with a name of its own.
	j = run(map[string]any{"file_id": three, "operation": "pdf.split", "options": map[string]any{"every": 1}})
	checkPriced(t, j, 3, "pdf.split 3×1/output=3")
	names := map[string]bool{}
	for _, a := range j["artifacts"].([]any) {
		names[a.(map[string]any)["name"].(string)] = true
	}
	assert.Len(t, names, 3, "each part has a name of its own")

	// ai-ready on a PDF: the extraction alone, per page.
	j = run(map[string]any{"file_id": three, "preset": "ai-ready"})
	checkPriced(t, j, 3, "ai.extract 3×1/page=3")
	if p, ok := j["pricing"].(map[string]any); assert.True(t, ok) {
		assert.Equal(t, "ai.extract: 1 credit per page read", p["rule"])
	}

	// ai-ready on an image: one page, recognised then read.
	page := ocrtest.Page(t, []string{"The harbour opened in spring", "Ships came from the south"})
	var buf bytes.Buffer
	require.NoError(t, jpeg.Encode(&buf, page, &jpeg.Options{Quality: 95}))
	require.Greater(t, buf.Len(), 64<<10, "larger than a page of the size estimate")
	img := b.readyFile(b.liveA, "scan.jpg", buf.Bytes())
	j = run(map[string]any{"file_id": img, "preset": "ai-ready"})
	checkPriced(t, j, 3, "ocr 1×2/page=2", "ai.extract 1×1/page=1")

	// ai-ready on an office document: converted, then read.
	doc := b.readyFile(b.liveA, "note.docx", officetest.DOCX(t, [][]string{{"The harbour opened in spring"}}))
	j = run(map[string]any{"file_id": doc, "preset": "ai-ready"})
	checkPriced(t, j, 6, "convert 1×5/file=5", "ai.extract 1×1/page=1")

	// The catalogue states each rule, and a preset the price of each step with the
	// formats it runs for.
	ops := map[string]map[string]any{}
	for _, o := range b.do(req{method: "GET", path: "/v1/operations", key: b.liveA}).json(t)["data"].([]any) {
		ops[o.(map[string]any)["name"].(string)] = o.(map[string]any)
	}
	assert.Equal(t, map[string]any{"credits": 1.0, "per": "output"}, ops["pdf.split"]["price"])
	assert.Equal(t, "1 credit per document made", ops["pdf.split"]["price_rule"])
	assert.Equal(t, "1 credit per page read", ops["pdf.render"]["price_rule"])
	ai := ops["ai-ready"]
	assert.Nil(t, ai["price"], "a preset costs the steps that run for the file")
	for _, want := range []string{"convert: 5 credits per file (for ", "ocr: 2 credits per page read (for ", "ai.extract: 1 credit per page read"} {
		assert.Contains(t, ai["price_rule"], want)
	}
	for _, st := range ai["steps"].([]any) {
		assert.NotNil(t, st.(map[string]any)["price"])
	}
}

// TestJobArtifactsArePaged: a job carries its first artifacts, their count and a link;
// the link pages all of them in the order the job made them; events stay small.
func TestJobArtifactsArePaged(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	file := b.readyFile(b.liveA, "a.pdf", []byte(minimalPDF))
	r := b.createJob(b.liveA, map[string]any{"file_id": file, "operation": "inspect"})
	require.Equal(t, 202, r.status, string(r.body))
	id := r.json(t)["id"].(string)
	// A worker's settlement of 25 parts.
	j, err := b.svc.Jobs.ClaimJob(ctx, id)
	require.NoError(t, err)
	var arts []*domain.Artifact
	for i := range 25 {
		arts = append(arts, &domain.Artifact{ID: domain.NewID(domain.PrefixArtifact), OrganizationID: j.OrganizationID, FileID: file,
			JobID: id, Name: fmt.Sprintf("part-%02d.pdf", i+1), MIMEType: "application/pdf", ByteSize: 10, SHA256: strings.Repeat("0", 64),
			StorageKey: "x/" + id, CreatedAt: j.CreatedAt})
	}
	require.NoError(t, b.svc.Jobs.SettleJob(ctx, j, arts, 1))

	got := b.do(req{method: "GET", path: "/v1/jobs/" + id, key: b.liveA}).json(t)
	require.Len(t, got["artifacts"], 10, "the first ten")
	require.EqualValues(t, 25, got["artifact_count"])
	require.Equal(t, "/v1/jobs/"+id+"/artifacts", got["artifacts_url"])
	require.Equal(t, "part-01.pdf", got["artifacts"].([]any)[0].(map[string]any)["name"])
	listed := b.do(req{method: "GET", path: "/v1/jobs?limit=1", key: b.liveA}).json(t)["data"].([]any)[0].(map[string]any)
	require.Len(t, listed["artifacts"], 10)

	var names []string
	cursor := ""
	for range 10 {
		path := got["artifacts_url"].(string) + "?limit=7"
		if cursor != "" {
			path += "&starting_after=" + cursor
		}
		page := b.do(req{method: "GET", path: path, key: b.liveA})
		require.Equal(t, 200, page.status, string(page.body))
		for _, a := range page.json(t)["data"].([]any) {
			names = append(names, a.(map[string]any)["name"].(string))
		}
		if !page.json(t)["has_more"].(bool) {
			break
		}
		cursor = page.json(t)["next_cursor"].(string)
	}
	require.Len(t, names, 25)
	for i, n := range names {
		require.Equal(t, fmt.Sprintf("part-%02d.pdf", i+1), n, "in the order the job made them")
	}

	// The events carry the job as GET shows it.
	events := b.do(req{method: "GET", path: "/v1/events?type=job.succeeded", key: b.liveA}).json(t)["data"].([]any)
	require.NotEmpty(t, events)
	obj := events[0].(map[string]any)["data"].(map[string]any)["object"].(map[string]any)
	require.Len(t, obj["artifacts"], 10)
	require.EqualValues(t, 25, obj["artifact_count"])

	// Another organization's key, and a cursor of another job, find nothing.
	require.Equal(t, 404, b.do(req{method: "GET", path: "/v1/jobs/" + id + "/artifacts", key: b.keyB}).status)
	other := b.createJob(b.liveA, map[string]any{"file_id": file, "operation": "inspect"}).json(t)["id"].(string)
	bad := b.do(req{method: "GET", path: "/v1/jobs/" + other + "/artifacts?starting_after=" + arts[0].ID, key: b.liveA})
	require.Equal(t, 400, bad.status, string(bad.body))
	require.Equal(t, "starting_after", bad.json(t)["error"].(map[string]any)["param"])
}

// TestPresetNeedsEveryStepAllowed: a key allowed some operations runs a preset only when
// each of its steps is among them, whatever the preset's name.
func TestPresetNeedsEveryStepAllowed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	file := b.readyFile(b.liveA, "a.pdf", []byte(minimalPDF))
	onlyInspect := b.newKey(func(k *domain.NewKey) { k.AllowedOperations = []string{"inspect"} })
	r := b.createJob(onlyInspect, map[string]any{"file_id": file, "preset": "inspect"})
	require.Equal(t, 403, r.status, string(r.body))
	e := r.json(t)["error"].(map[string]any)
	require.Equal(t, domain.CodeOperationNotAllowed, e["code"])
	require.Contains(t, e["message"], "scan", "it names the step it may not run")
	r = b.createJob(onlyInspect, map[string]any{"file_id": file, "operation": "inspect"})
	require.Equal(t, 202, r.status, string(r.body))

	both := b.newKey(func(k *domain.NewKey) { k.AllowedOperations = []string{"inspect", "scan"} })
	r = b.createJob(both, map[string]any{"file_id": file, "preset": "inspect"})
	require.NotEqual(t, 403, r.status, "every step allowed: %s", r.body)
}

// TestListJobsByFileAndBatch: a file's runs, and a batch's members, listed alone.
func TestListJobsByFileAndBatch(t *testing.T) {
	t.Parallel()
	b := setup(t)
	f1 := b.readyFile(b.liveA, "a.pdf", []byte(minimalPDF))
	f2 := b.readyFile(b.liveA, "b.png", pngBytes(t, 4, 4))
	var first []string
	for range 3 {
		first = append(first, b.createJob(b.liveA, map[string]any{"file_id": f1, "operation": "inspect"}).json(t)["id"].(string))
	}
	b.createJob(b.liveA, map[string]any{"file_id": f2, "operation": "inspect"})
	bt := b.do(req{method: "POST", path: "/v1/batches", key: b.liveA, idem: idem(),
		body: map[string]any{"file_ids": []string{f1, f2}, "operation": "inspect"}})
	require.Equal(t, 202, bt.status, string(bt.body))
	batch := bt.json(t)

	ids := func(path string) []string {
		t.Helper()
		r := b.do(req{method: "GET", path: path, key: b.liveA})
		require.Equal(t, 200, r.status, string(r.body))
		var out []string
		for _, j := range r.json(t)["data"].([]any) {
			out = append(out, j.(map[string]any)["id"].(string))
		}
		return out
	}
	byFile := ids("/v1/jobs?file_id=" + f1)
	require.Len(t, byFile, 4, "three runs and a batch member")
	require.Equal(t, []string{first[2], first[1], first[0]}, byFile[1:], "newest first")
	var members []string
	for _, it := range batch["items"].([]any) {
		members = append(members, it.(map[string]any)["job_id"].(string))
	}
	require.ElementsMatch(t, members, ids("/v1/jobs?batch_id="+batch["id"].(string)))
	require.Equal(t, []string{members[0]}, ids("/v1/jobs?batch_id="+batch["id"].(string)+"&file_id="+f1), "the filters combine")
	require.Empty(t, ids("/v1/jobs?file_id="+domain.NewID(domain.PrefixFile)))

	r := b.do(req{method: "GET", path: "/v1/jobs?file_id=nope", key: b.liveA})
	require.Equal(t, 400, r.status)
	require.Equal(t, "file_id", r.json(t)["error"].(map[string]any)["param"])
	r = b.do(req{method: "GET", path: "/v1/jobs?batch_id=" + f1, key: b.liveA})
	require.Equal(t, 400, r.status)
	require.Equal(t, "batch_id", r.json(t)["error"].(map[string]any)["param"])
}

// TestAPIIndex: /v1 and /v1/ answer the API's index, not a redirect to a 404.
func TestAPIIndex(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, path := range []string{"/v1", "/v1/"} {
		r := b.do(req{method: "GET", path: path})
		require.Equal(t, 200, r.status, "%s: %s", path, r.body)
		idx := r.json(t)
		require.Equal(t, "api", idx["object"])
		require.Equal(t, "1.0.0", idx["version"])
		links := idx["links"].(map[string]any)
		require.Equal(t, "/v1/openapi.json", links["openapi"])
		require.NotEmpty(t, links["docs"])
		require.Equal(t, 200, b.do(req{method: "GET", path: links["openapi"].(string)}).status)
	}
	// Another method is no route of the document (so not checked against it): a 404 in
	// the error shape, never a redirect.
	resp, err := http.Post(b.srv.URL+"/v1", "application/json", nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, 404, resp.StatusCode)
	var body map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	require.Equal(t, domain.CodeNotFound, body["error"].(map[string]any)["code"])
}

// TestMessagesAreSentences: what a client reads says what is wrong in plain words.
func TestMessagesAreSentences(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{worker: true})
	file := b.readyFile(b.liveA, "a.pdf", []byte(minimalPDF))
	message := func(r response) string {
		t.Helper()
		require.GreaterOrEqual(t, r.status, 400, string(r.body))
		return r.json(t)["error"].(map[string]any)["message"].(string)
	}

	m := message(b.createJob(b.liveA, map[string]any{"file_id": file, "operation": "pdf.merge", "options": map[string]any{"file_ids": []string{"nope"}}}))
	require.NotContains(t, m, "file_ id")
	require.Contains(t, m, `"nope" is not a file id`)
	require.NotContains(t, message(b.createJob(b.liveA, map[string]any{"file_id": "nope", "operation": "inspect"})), "file_ id")

	u := b.openUpload(b.liveA, "big.bin", 20<<20, map[string]any{"multipart": true})
	m = message(b.do(req{method: "POST", path: "/v1/uploads/" + u["id"].(string) + "/complete-parts", key: b.liveA, idem: idem(),
		body: map[string]any{"parts": []map[string]any{{"part_number": 1, "etag": "x"}}}}))
	require.NotContains(t, m, "1 were")
	require.Contains(t, m, "2 parts")
	require.Contains(t, m, "1 part")

	r := b.createJob(b.liveA, map[string]any{"file_id": file, "operation": "inspect"})
	j := b.waitJob(b.liveA, r.json(t)["id"].(string))
	require.Equal(t, "succeeded", j["state"])
	m = message(b.do(req{method: "POST", path: "/v1/jobs/" + j["id"].(string) + "/cancel", key: b.liveA, idem: idem()}))
	require.NotContains(t, m, "is succeeded")
	require.Contains(t, m, "has succeeded")
}

// TestImagePresetsNameArtifactsApart: the two WebPs of the image and avatar presets are
// named by their size, so saving a job's artifacts by name never overwrites one.
func TestImagePresetsNameArtifactsApart(t *testing.T) {
	t.Parallel()
	img, err := image.New(image.DefaultConfig())
	require.NoError(t, err)
	b := setup(t, setupOpts{worker: true, engines: map[string]domain.Engine{"image": img}})
	file := b.readyFile(b.liveA, "photo.png", pngBytes(t, 300, 200))
	for preset, want := range map[string][]string{
		"image":  {"photo-2048.webp", "photo-256.webp"},
		"avatar": {"photo-512.webp", "photo-128.webp"},
	} {
		r := b.createJob(b.liveA, map[string]any{"file_id": file, "preset": preset})
		require.Equal(t, 202, r.status, string(r.body))
		j := b.waitJob(b.liveA, r.json(t)["id"].(string))
		require.Equal(t, "succeeded", j["state"], "%v", j["error"])
		var names []string
		for _, a := range j["artifacts"].([]any) {
			names = append(names, a.(map[string]any)["name"].(string))
		}
		require.Equal(t, want, names, preset)
	}
}

// A page tesseract gives up on the same way every time (1 pt wide and 14,400 pt long:
// 4×60,000 pixels at 300 dpi, longer than its layout analysis takes) fails ocr with
// unsupported_input after one attempt, never internal_error after three.
func TestOCROnAPageTooLongFailsOnce(t *testing.T) {
	t.Parallel()
	b := admissionSetup(t)
	var w pdftest.Writer
	strip := w.Document([]pdftest.Page{{Width: 1, Height: 14400, Content: "0 0 1 14400 re f\n"}})
	file := b.readyFile(b.liveA, "strip.pdf", strip)
	r := b.createJob(b.liveA, map[string]any{"file_id": file, "operation": "ocr"})
	require.Equal(t, 202, r.status, string(r.body))
	j := b.waitJob(b.liveA, r.json(t)["id"].(string))
	require.Equal(t, "failed", j["state"])
	e := j["error"].(map[string]any)
	require.Equal(t, domain.CodeUnsupportedInput, e["code"], "%v", e)
	require.Contains(t, e["message"], "at most 32767 on a side")
	require.EqualValues(t, 1, j["attempts"])
}

// Slides convert to Markdown through the API: one section per slide, in order.
func TestConvertSlidesToMarkdown(t *testing.T) {
	t.Parallel()
	b := engineSetup(t)
	deck := b.readyFile(b.liveA, "deck.pptx", officetest.PPTX(t, []string{"Harbour opening", "Ships from the south"}))
	r := b.createJob(b.liveA, map[string]any{"file_id": deck, "operation": "convert", "options": map[string]any{"format": "md"}})
	require.Equal(t, 202, r.status, string(r.body))
	j := b.waitJob(b.liveA, r.json(t)["id"].(string))
	require.Equal(t, "succeeded", j["state"], "%v", j["error"])
	arts := j["artifacts"].([]any)
	require.Len(t, arts, 1)
	require.Equal(t, "deck.md", arts[0].(map[string]any)["name"])
	md := string(b.artifactBody(b.liveA, j, 0))
	first, second := strings.Index(md, "Harbour opening"), strings.Index(md, "Ships from the south")
	require.True(t, first >= 0 && second > first, "both slides, in order:\n%s", md)
}
