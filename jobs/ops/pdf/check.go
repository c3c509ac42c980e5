package pdf

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/filemill/filemill/domain"
)

// checkPDF is a two-page PDF for Check.
var checkPDF = []byte("%PDF-1.4\n" +
	"1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n" +
	"2 0 obj<</Type/Pages/Kids[3 0 R 4 0 R]/Count 2>>endobj\n" +
	"3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 200 100]>>endobj\n" +
	"4 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 200 100]>>endobj\n" +
	"trailer<</Root 1 0 R>>\n%%EOF\n")

// checkRoundTrip selects page 2 of the built-in PDF and verifies the result.
func checkRoundTrip(ctx context.Context, e *Engine) error {
	dir, err := os.MkdirTemp("", "filemill-pdf-check-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	in := filepath.Join(dir, "in.pdf")
	if err := os.WriteFile(in, checkPDF, 0o600); err != nil {
		return err
	}
	work := filepath.Join(dir, "out")
	if err := os.Mkdir(work, 0o700); err != nil {
		return err
	}
	out, err := e.Run(ctx, domain.EngineInput{Operation: "pdf.pages", Options: PagesOptions{Pages: "2"}, Path: in, WorkDir: work})
	if err != nil {
		return fmt.Errorf("pdf: check: %w", err)
	}
	if n, err := CountPages(ctx, out.Artifacts[0].Path); err != nil || n != 1 {
		return fmt.Errorf("pdf: check: %d pages, %v", n, err)
	}
	return nil
}
