package rest_test

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/domain"
	imageop "github.com/filemill/filemill/jobs/ops/image"
	"github.com/filemill/filemill/jobs/ops/ocr"
	"github.com/filemill/filemill/jobs/ops/ocr/ocrtest"
	"github.com/filemill/filemill/jobs/ops/office/officetest"
	"github.com/filemill/filemill/jobs/ops/pdf/pdftest"
	"github.com/filemill/filemill/jobs/ops/pdfium"
	"github.com/filemill/filemill/jobs/ops/render"
)

// These tests hold jobs to their memory and scratch disk bounds through real engines:
// the job past a bound fails resource_limit_exceeded at its first attempt, uncharged,
// and the same worker runs the next job to success.

// flatPNG is a w×h PNG of one colour: a few kilobytes that decode to w×h×3 bytes.
func flatPNG(t *testing.T, w, h int) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for i := 0; i < len(img.Pix); i += 4 {
		copy(img.Pix[i:], []byte{200, 120, 40, 255})
	}
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, img))
	return buf.Bytes()
}

// requireLimitFailure checks job id failed resource_limit_exceeded for limit, at its
// first attempt, and returns the job.
func requireLimitFailure(t *testing.T, b *bundle, id, limit string) map[string]any {
	t.Helper()
	j := requireLimitCode(t, b, id, limit)
	require.EqualValues(t, 1, j["attempts"], "a resource limit is met again: not retried")
	return j
}

// requireLimitCode checks job id failed resource_limit_exceeded for limit, uncharged.
func requireLimitCode(t *testing.T, b *bundle, id, limit string) map[string]any {
	t.Helper()
	j := b.waitJob(b.liveA, id)
	require.Equal(t, "failed", j["state"], "%v", j)
	e := j["error"].(map[string]any)
	require.Equal(t, domain.CodeResourceLimitExceeded, e["code"], "%v", e)
	require.Contains(t, e["message"], "limit: "+limit)
	require.EqualValues(t, 0, j["credits_charged"])
	return j
}

// runJob creates a job and returns its id.
func runJob(t *testing.T, b *bundle, body map[string]any) string {
	t.Helper()
	r := b.createJob(b.liveA, body)
	require.Equal(t, 202, r.status, string(r.body))
	return r.json(t)["id"].(string)
}

func requireSucceeded(t *testing.T, b *bundle, id string) {
	t.Helper()
	j := b.waitJob(b.liveA, id)
	require.Equal(t, "succeeded", j["state"], "%v", j)
}

func limitsImageSetup(t *testing.T, cfg func(*domain.Config)) *bundle {
	t.Helper()
	img, err := imageop.New(imageop.DefaultConfig())
	require.NoError(t, err)
	return setup(t, setupOpts{worker: true, engines: map[string]domain.Engine{"image": img}, cfg: cfg})
}

// A rotation makes the image whole in libvips' memory: 2000×2000 pixels do not fit an
// 8 MiB bound, and the job fails before the pixels are allocated; a small conversion
// on the same worker then succeeds.
func TestImageJobPastItsMemoryBoundFails(t *testing.T) {
	t.Parallel()
	b := limitsImageSetup(t, func(c *domain.Config) { c.JobMemory = 8 << 20 })
	before := b.account(b.orgA.Organization.ID)
	big := b.readyFile(b.liveA, "big.png", flatPNG(t, 2000, 2000))
	id := runJob(t, b, map[string]any{"file_id": big, "operation": "image.convert", "options": map[string]any{"format": "png", "rotate": 90}})
	requireLimitFailure(t, b, id, domain.LimitMemory)

	small := b.readyFile(b.liveA, "small.png", flatPNG(t, 64, 64))
	requireSucceeded(t, b, runJob(t, b, map[string]any{"file_id": small, "operation": "image.convert", "options": map[string]any{"format": "jpeg", "rotate": 90}}))
	after := b.account(b.orgA.Organization.ID)
	require.Zero(t, after.Reserved, "the failed job's reservation is released")
	require.Equal(t, before.Used+1, after.Used, "only the job that succeeded is charged")
}

// An uncompressed PNG of 2000×2000 pixels is 12 MB from a few kilobytes of input: past
// a 1 MiB scratch bound the job fails, and the next one, small, succeeds.
func TestImageJobPastItsDiskBoundFails(t *testing.T) {
	t.Parallel()
	b := limitsImageSetup(t, func(c *domain.Config) { c.JobDisk = 1 << 20 })
	big := b.readyFile(b.liveA, "big.png", flatPNG(t, 2000, 2000))
	id := runJob(t, b, map[string]any{"file_id": big, "operation": "image.convert", "options": map[string]any{"format": "png", "effort": 0}})
	requireLimitFailure(t, b, id, domain.LimitDisk)
	requireSucceeded(t, b, runJob(t, b, map[string]any{"file_id": big, "operation": "image.convert", "options": map[string]any{"format": "jpeg", "width": 100}}))
}

// A page rendered at 600 dpi needs a 4960×7016 bitmap (139 MB), more than a PDFium
// instance of 96 MiB holds; the same page at 72 dpi renders on the same instance.
func TestRenderPastPDFiumMemoryFails(t *testing.T) {
	t.Parallel()
	pc := pdfium.DefaultConfig()
	pc.Instances, pc.MaxMemoryBytes = 1, 96<<20
	pool, err := pdfium.New(pc)
	require.NoError(t, err)
	t.Cleanup(func() { _ = pool.Close() })
	rc := render.DefaultConfig()
	rc.Pool = pool
	eng, err := render.New(rc)
	require.NoError(t, err)
	b := setup(t, setupOpts{worker: true, engines: map[string]domain.Engine{"render": eng}})
	_, err = b.svc.Credits.Grant(context.Background(), b.orgA.Organization.ID, domain.EnvLive, 1000, "test")
	require.NoError(t, err)
	doc := b.readyFile(b.liveA, "a4.pdf", pdftest.TextPages("one page"))
	id := runJob(t, b, map[string]any{"file_id": doc, "operation": "pdf.render", "options": map[string]any{"dpi": 600}})
	requireLimitFailure(t, b, id, domain.LimitMemory)
	requireSucceeded(t, b, runJob(t, b, map[string]any{"file_id": doc, "operation": "pdf.render", "options": map[string]any{"dpi": 72}}))
}

// A document converted to PDF by LibreOffice writes more than its input: with the
// scratch bound a little above the input, the conversion fails; its text, a few
// bytes, then converts on the same instance.
func TestOfficeJobPastItsDiskBoundFails(t *testing.T) {
	t.Parallel()
	docx := officetest.DOCX(t, [][]string{{"The harbour opened in spring"}})
	engines, _ := documentEngines(t)
	b := setup(t, setupOpts{worker: true, engines: engines, cfg: func(c *domain.Config) { c.JobDisk = int64(len(docx)) + 2048 }})
	doc := b.readyFile(b.liveA, "report.docx", docx)
	id := runJob(t, b, map[string]any{"file_id": doc, "operation": "convert", "options": map[string]any{"format": "pdf"}})
	// Not the attempts: on a loaded machine an attempt may end first in a LibreOffice
	// instance slow to start (retried), before the one that meets the bound.
	requireLimitCode(t, b, id, domain.LimitDisk)
	requireSucceeded(t, b, runJob(t, b, map[string]any{"file_id": doc, "operation": "convert", "options": map[string]any{"format": "txt"}}))
}

// A page's recognition is bounded by the kernel in its helper's memory cgroup: a page
// of noise (every speck a blob, some 100 MiB to read) against a bound of 32 MiB fails
// at its first attempt, uncharged, and a small page then reads on the same worker.
func TestOCRPagePastItsMemoryBoundFails(t *testing.T) {
	t.Parallel()
	occ := ocr.DefaultConfig()
	occ.Parallel = 1
	eng, err := ocr.New(occ)
	require.NoError(t, err)
	t.Cleanup(func() { _ = eng.Close() })
	b := setup(t, setupOpts{worker: true, engines: map[string]domain.Engine{"ocr": eng}, cfg: func(c *domain.Config) { c.JobMemory = 32 << 20 }})
	_, err = b.svc.Credits.Grant(context.Background(), b.orgA.Organization.ID, domain.EnvLive, 1000, "test")
	require.NoError(t, err)
	require.True(t, eng.Isolated(), "CI has a memory cgroup: pages run in helpers")
	var noise bytes.Buffer
	require.NoError(t, png.Encode(&noise, ocrtest.Noise(3000, 3000)))
	big := b.readyFile(b.liveA, "noise.png", noise.Bytes())
	requireLimitFailure(t, b, runJob(t, b, map[string]any{"file_id": big, "operation": "ocr"}), domain.LimitMemory)

	var page bytes.Buffer
	// 1200×600 at 300 dpi: 11 MiB estimated.
	require.NoError(t, png.Encode(&page, ocrtest.Draw(t, []string{"The harbour opened in spring"}, 1200, 600, 300)))
	small := b.readyFile(b.liveA, "page.png", page.Bytes())
	requireSucceeded(t, b, runJob(t, b, map[string]any{"file_id": small, "operation": "ocr"}))
}
