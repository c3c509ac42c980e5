// Package catalog is the list of what this deployment can do: the operations every
// engine package declares, and the presets, pipelines of those operations with fixed
// options. Every process builds the same registry from it, whatever engines it runs.
package catalog

import (
	"context"
	"fmt"
	"slices"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/jobs/ops/aiready"
	"github.com/filemill/filemill/jobs/ops/image"
	"github.com/filemill/filemill/jobs/ops/inspect"
	"github.com/filemill/filemill/jobs/ops/ocr"
	"github.com/filemill/filemill/jobs/ops/office"
	"github.com/filemill/filemill/jobs/ops/pdf"
	"github.com/filemill/filemill/jobs/ops/probe"
	"github.com/filemill/filemill/jobs/ops/render"
	"github.com/filemill/filemill/jobs/ops/scan"
)

// Operations are every engine package's declarations.
func Operations() [][]domain.OperationSpec {
	return [][]domain.OperationSpec{
		inspect.Specs(),
		pdf.Specs(),
		render.Specs(),
		office.Specs(),
		ocr.Specs(),
		image.Specs(),
		scan.Specs(),
		aiready.Specs(),
	}
}

// Presets are the presets of the contract.
func Presets() []domain.PresetSpec {
	return append(image.Presets(), document(), inspectPreset(), aiReady())
}

// aiReady reads a document for LLM pipelines: office documents are converted to a PDF
// first (their structure is read from the file itself, their pages and boxes from the
// PDF) unless the file carries its pages itself (a DOCX Word saved: the conversion,
// made only to learn each element's page, is left out), images recognised into a
// searchable PDF; HTML, Markdown, CSV and text are read as they are; then the text,
// structure and chunks are extracted.
func aiReady() domain.PresetSpec {
	var convertible []string
	for _, f := range office.InputFormats {
		if f != "pdf" && f != "image/*" && !slices.Contains(aiready.InputFormats, f) && f != "md" {
			convertible = append(convertible, f)
		}
	}
	var images []string
	for _, f := range ocr.InputFormats {
		if f != "pdf" {
			images = append(images, f)
		}
	}
	return aiready.Preset(
		domain.StepSpec{Name: "convert", Operation: "convert", Options: `{"format":"pdf"}`, When: convertible, Intermediate: true,
			Skip: aiready.PagedByItself},
		domain.StepSpec{Name: "ocr", Operation: "ocr", Options: `{"outputs":["pdf"]}`, When: images, Intermediate: true},
	)
}

// inspectPreset reports on a file and scans it, both reading the file itself.
func inspectPreset() domain.PresetSpec {
	return domain.PresetSpec{Name: "inspect", InputFormats: []string{"*"},
		Description: "The inspect report and a malware scan of the file.",
		Steps: []domain.StepSpec{
			{Name: "inspect", Operation: "inspect", FromFile: true},
			{Name: "scan", Operation: "scan", FromFile: true},
		}}
}

// document makes a compact PDF of any document: what is not a PDF yet is converted
// first, then compressed.
func document() domain.PresetSpec {
	var toPDF []string
	for _, f := range office.InputFormats {
		if f != "pdf" {
			toPDF = append(toPDF, f)
		}
	}
	return domain.PresetSpec{Name: "document", InputFormats: office.InputFormats,
		Description: "A compact PDF of any document: office documents, HTML, Markdown, text and images are converted to PDF, then compressed (pdf.compress, medium).",
		Steps: []domain.StepSpec{
			{Name: "convert", Operation: "convert", Options: `{"format":"pdf"}`, When: toPDF, Intermediate: true},
			{Name: "compress", Operation: "pdf.compress", Options: `{"level":"medium"}`},
		}}
}

// Registry returns the registry of every operation and preset.
func Registry() (*domain.Registry, error) {
	reg := domain.NewRegistry()
	for _, specs := range Operations() {
		if err := reg.AddOperations(specs...); err != nil {
			return nil, err
		}
	}
	for _, p := range Presets() {
		if err := reg.AddPreset(p); err != nil {
			return nil, err
		}
	}
	return reg, nil
}

// Prober counts pages at completion (PDFs, and office documents whose count is cheap
// to read) and verifies engine outputs: with the image engine's decoder for what Go
// cannot decode (AVIF, animated WebP) where the process runs it.
func Prober(engines map[string]domain.Engine) *probe.Prober {
	p := probe.New(probe.DefaultConfig())
	if img, ok := engines["image"].(*image.Engine); ok {
		p.VerifyWith("image/avif", img.Verify)
		p.VerifyWith("image/webp", img.Verify)
	}
	for _, ext := range []string{"docx", "pptx", "odt", "odp"} {
		p.CountWith(ext, func(_ context.Context, path string) (int, error) {
			n, ok := office.CountPages(path, domain.Format{Extension: ext})
			if !ok {
				return 0, fmt.Errorf("no page count in this %s", ext)
			}
			return n, nil
		})
	}
	return p
}
