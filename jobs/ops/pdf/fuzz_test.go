package pdf_test

import (
	"bytes"
	"compress/zlib"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/internal/hostile"
	"github.com/filemill/filemill/jobs/ops/pdf"
	"github.com/filemill/filemill/jobs/ops/pdf/pdftest"
)

// countSeeds are PDFs whose page trees are ordinary, damaged or hostile.
func countSeeds() [][]byte {
	seeds := [][]byte{pdftest.Numbered("", 3), pdftest.TextPages("a", "b"), loopPDF(), lyingCountPDF(),
		pdftest.Objects("<</Type/Catalog/Pages 2 0 R>>", "<</Type/Pages/Kids[]/Count 0>>"),
		pdftest.Objects("<</Type/Catalog>>"),
		pdftest.Objects("<</Type/Catalog/Pages 2 0 R>>", "<</Type/Pages/Kids 3 0 R/Count 1>>", "[4 0 R 4 0 R]", "<</Type/Page>>"),
		pdftest.Objects("<</Type/Catalog/Pages 2 0 R>>", "<</Kids[3 0 R]>>", "<</Kids[4 0 R]>>", "<<>>"),
		[]byte("%PDF-1.7\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\ntrailer<</Root 1 0 R/Size 99999999>>\n%%EOF"),
		[]byte("%PDF-1.4\nxref\n0 999999999\ntrailer<</Size 3/Root 1 0 R>>\nstartxref\n9\n%%EOF"),
	}
	// An object stream holding the page tree, and a compressed stream of zeros.
	var objStm bytes.Buffer
	zw := zlib.NewWriter(&objStm)
	fmt.Fprint(zw, "2 0 3 40 <</Type/Pages/Kids[3 0 R]/Count 1>>            <</Type/Page/Parent 2 0 R>>")
	zw.Close()
	var w pdftest.Writer
	w.Add("<</Type/Catalog/Pages 2 0 R>>")
	w.AddStream("/Type/ObjStm/N 2/First 8/Filter/FlateDecode", objStm.Bytes())
	seeds = append(seeds, w.Bytes(1))
	var zeros bytes.Buffer
	zw = zlib.NewWriter(&zeros)
	zw.Write(make([]byte, 1<<20))
	zw.Close()
	var z pdftest.Writer
	z.Add("<</Type/Catalog/Pages 2 0 R>>")
	z.Add("<</Type/Pages/Kids[3 0 R]/Count 1>>")
	z.AddStream("/Type/Page/Parent 2 0 R/Filter/FlateDecode", zeros.Bytes())
	seeds = append(seeds, z.Bytes(1))
	seeds = append(seeds, inObjectStream("/N 1/First 4/Filter/FlateDecode", deflated("3 0 <</Type/Pages/Kids[]/Count 0>>", " ", 100)),
		inObjectStream("/N 1/First 4", []byte("3 0 <</Type/Pages/Kids[1 0 R]/Count 1>>")))
	deep := []string{"<</Type/Catalog/Pages 2 0 R>>"}
	for i := 2; i < 80; i++ {
		deep = append(deep, fmt.Sprintf("<</Type/Pages/Kids[%d 0 R]>>", i+1))
	}
	deep = append(deep, "<</Type/Page>>")
	return append(seeds, pdftest.Objects(deep...), []byte(strings.Replace(string(pdftest.Numbered("", 2)), "/Pages", "/Pag#65s", 1)))
}

// FuzzCountPages: the page count the API takes at completion is a count from 0 to
// MaxCountPages, or a refusal with the code of what is wrong with the PDF
// (corrupted_file, encrypted_file, unsupported_input); no input panics it, runs it
// past its deadline or makes it allocate out of proportion to the file.
func FuzzCountPages(f *testing.F) {
	for _, s := range countSeeds() {
		f.Add(s)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "in.pdf")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		// Generous: far beyond any input of the fuzzer, it only tells a hang.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var n int
		var err error
		alloc := hostile.Allocated(func() { n, err = pdf.CountPages(ctx, path) })
		if limit := uint64(hostile.Slack + 256*len(data)); alloc > limit {
			t.Fatalf("counting the pages of %d bytes allocated %d bytes", len(data), alloc)
		}
		if errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("counting the pages of %d bytes took over a minute", len(data))
		}
		if err != nil {
			switch domain.ErrorCode(err) {
			case domain.CodeCorruptedFile, domain.CodeEncryptedFile, domain.CodeUnsupportedInput:
			default:
				t.Fatalf("refusal %#v has no code of a PDF's own", err)
			}
			return
		}
		if n < 0 || n > pdf.MaxCountPages {
			t.Fatalf("counted %d pages", n)
		}
	})
}
