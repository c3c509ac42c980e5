package pdf_test

import (
	"bytes"
	"compress/zlib"
	"context"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/internal/hostile"
	"github.com/filemill/filemill/jobs/ops/pdf"
	"github.com/filemill/filemill/jobs/ops/pdf/pdftest"
)

// deflated is head followed by fill repeated to size bytes, zlib-compressed.
func deflated(head string, fill string, size int) []byte {
	var b bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&b, zlib.BestCompression)
	zw.Write([]byte(head))
	chunk := bytes.Repeat([]byte(fill), (64<<10)/len(fill))
	for left := size; left > 0; left -= len(chunk) {
		zw.Write(chunk[:min(left, len(chunk))])
	}
	zw.Close()
	return b.Bytes()
}

type pdfBomb struct {
	name    string
	data    []byte
	maxPeak int64 // bound on the resident peak while it is read
}

// Decoding a stream takes up to seven times what it yields at its peak (pdfcpu's
// buffers grow by doubling and are copied once): the bombs that make the count decode
// up to its limits (16 MiB a stream, 64 MiB in all) stay within 256 MiB.

// inObjectStream is a PDF whose page tree root, object 3, is the first object of an
// object stream (object 2) of the given dictionary entries and data, found through a
// cross-reference stream.
func inObjectStream(dict string, data []byte) []byte {
	var b bytes.Buffer
	b.WriteString("%PDF-1.7\n")
	off1 := b.Len()
	b.WriteString("1 0 obj <</Type/Catalog/Pages 3 0 R>> endobj\n")
	off2 := b.Len()
	fmt.Fprintf(&b, "2 0 obj <</Type/ObjStm%s/Length %d>>\nstream\n", dict, len(data))
	b.Write(data)
	b.WriteString("\nendstream endobj\n")
	off4 := b.Len()
	entry := func(typ byte, field2 int, field3 uint16) []byte {
		e := []byte{typ}
		e = binary.BigEndian.AppendUint32(e, uint32(field2))
		return binary.BigEndian.AppendUint16(e, field3)
	}
	var xref []byte
	xref = append(xref, entry(0, 0, 0xffff)...)
	xref = append(xref, entry(1, off1, 0)...)
	xref = append(xref, entry(1, off2, 0)...)
	xref = append(xref, entry(2, 2, 0)...)
	xref = append(xref, entry(1, off4, 0)...)
	fmt.Fprintf(&b, "4 0 obj <</Type/XRef/Size 5/W[1 4 2]/Root 1 0 R/Length %d>>\nstream\n", len(xref))
	b.Write(xref)
	fmt.Fprintf(&b, "\nendstream endobj\nstartxref\n%d\n%%%%EOF\n", off4)
	return b.Bytes()
}

// manyObjectStreams is a PDF of n pages, each page alone in an object stream padded to
// fill decoded bytes, all found through a cross-reference stream.
func manyObjectStreams(n, fill int) []byte {
	var b bytes.Buffer
	b.WriteString("%PDF-1.7\n")
	type entry struct {
		typ      byte
		off, idx int
	}
	entries := []entry{{0, 0, 0xffff}}
	entries = append(entries, entry{1, b.Len(), 0})
	b.WriteString("1 0 obj <</Type/Catalog/Pages 2 0 R>> endobj\n")
	entries = append(entries, entry{1, b.Len(), 0})
	var kids strings.Builder
	for i := range n {
		fmt.Fprintf(&kids, "%d 0 R ", 3+2*i)
	}
	fmt.Fprintf(&b, "2 0 obj <</Type/Pages/Kids[%s]/Count %d>> endobj\n", kids.String(), n)
	for i := range n {
		page, stream := 3+2*i, 4+2*i
		head := fmt.Sprintf("%d 0 ", page)
		data := deflated(head+"<</Type/Page/Parent 2 0 R/MediaBox[0 0 10 10]>>", " ", fill)
		entries = append(entries, entry{2, stream, 0}, entry{1, b.Len(), 0})
		fmt.Fprintf(&b, "%d 0 obj <</Type/ObjStm/N 1/First %d/Filter/FlateDecode/Length %d>>\nstream\n", stream, len(head), len(data))
		b.Write(data)
		b.WriteString("\nendstream endobj\n")
	}
	xrefAt := b.Len()
	entries = append(entries, entry{1, xrefAt, 0})
	var xref []byte
	for _, e := range entries {
		xref = append(xref, e.typ)
		xref = binary.BigEndian.AppendUint32(xref, uint32(e.off))
		xref = binary.BigEndian.AppendUint16(xref, uint16(e.idx))
	}
	fmt.Fprintf(&b, "%d 0 obj <</Type/XRef/Size %d/W[1 4 2]/Root 1 0 R/Length %d>>\nstream\n", len(entries)-1, len(entries), len(xref))
	b.Write(xref)
	fmt.Fprintf(&b, "\nendstream endobj\nstartxref\n%d\n%%%%EOF\n", xrefAt)
	return b.Bytes()
}

// pdfBombs are PDFs built to exhaust what reads them.
func pdfBombs() []pdfBomb {
	var bombs []pdfBomb

	// A page tree 10,000 levels deep.
	deep := []string{"<</Type/Catalog/Pages 2 0 R>>"}
	for i := 2; i < 10_000; i++ {
		deep = append(deep, fmt.Sprintf("<</Type/Pages/Kids[%d 0 R]/Count 1>>", i+1))
	}
	bombs = append(bombs, pdfBomb{"DeepPageTree", pdftest.Objects(append(deep, "<</Type/Page/MediaBox[0 0 10 10]>>")...), 64 << 20})

	// A page tree with one node listing itself 1,000,000 times.
	var kids bytes.Buffer
	for range 1_000_000 {
		kids.WriteString("2 0 R ")
	}
	// Reading an array of a million references takes what a 6 MB file of them takes.
	bombs = append(bombs, pdfBomb{"WidePageTreeLoop", pdftest.Objects("<</Type/Catalog/Pages 2 0 R>>", "<</Type/Pages/Kids["+kids.String()+"]/Count 1000000>>"), 256 << 20})

	// An object stream whose 256 MiB of decoded bytes hold the page tree (260 KB).
	bombs = append(bombs, pdfBomb{"ObjectStreamFlateBomb",
		inObjectStream("/N 1/First 4/Filter/FlateDecode", deflated("3 0 <</Type/Pages/Kids[]/Count 0>>", " ", 256<<20)), 256 << 20})
	// An object stream declaring 100,000,000 objects, its offsets 16 MB from its start.
	bombs = append(bombs, pdfBomb{"ObjectStreamHugeCount",
		inObjectStream("/N 100000000/First 16000000/Filter/FlateDecode", deflated("3 0 ", " ", 16_000_100)), 128 << 20})

	// 40 pages, each in an object stream of 15 MiB (600 MiB decoded, 600 KB compressed).
	bombs = append(bombs, pdfBomb{"ManyObjectStreams", manyObjectStreams(40, 15<<20), 256 << 20})

	// A cross-reference stream of 9,000,000 entries (63 MB decoded, 60 KB compressed).
	const entries = 9_000_000
	xref := deflated("", "\x00", entries*7)
	var x bytes.Buffer
	x.WriteString("%PDF-1.7\n")
	x.WriteString("1 0 obj <</Type/Catalog/Pages 2 0 R>> endobj\n")
	x.WriteString("2 0 obj <</Type/Pages/Kids[]/Count 0>> endobj\n")
	start := x.Len()
	fmt.Fprintf(&x, "3 0 obj <</Type/XRef/Size %d/W[1 4 2]/Index[0 %d]/Root 1 0 R/Filter/FlateDecode/Length %d>>\nstream\n", entries, entries, len(xref))
	x.Write(xref)
	fmt.Fprintf(&x, "\nendstream endobj\nstartxref\n%d\n%%%%EOF\n", start)
	bombs = append(bombs, pdfBomb{"XRefStreamHuge", x.Bytes(), 256 << 20})

	// A classic cross-reference section announcing 99,999,999 entries and holding none.
	bombs = append(bombs, pdfBomb{"XRefTableHuge",
		[]byte("%PDF-1.4\n1 0 obj <</Type/Catalog/Pages 2 0 R>> endobj\nxref\n0 99999999\ntrailer <</Size 99999999/Root 1 0 R>>\nstartxref\n51\n%%EOF\n"), 64 << 20})
	return bombs
}

// TestCountPagesRefusesBombs: the page count the API takes at completion refuses PDFs
// built to exhaust it, with the code of what is wrong, within the memory and time
// stated. Not parallel: the figures are this test's.
func TestCountPagesRefusesBombs(t *testing.T) {
	dir := t.TempDir()
	for _, b := range pdfBombs() {
		t.Run(b.name, func(t *testing.T) {
			path := pdftest.WriteFile(filepath.Join(dir, b.name+".pdf"), b.data)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var n int
			var err error
			m := hostile.Run(func() { n, err = pdf.CountPages(ctx, path) })
			outcome := "counted no page"
			switch {
			case err == nil && n == 0:
				// Read past what it declares, the tree holds no page: nothing is counted.
			case domain.ErrorCode(err) == domain.CodeCorruptedFile, domain.ErrorCode(err) == domain.CodeUnsupportedInput:
				outcome = err.Error()
			default:
				t.Fatalf("counted %d pages: %v", n, err)
			}
			m.Within(t, b.name+" ("+hostile.Size(len(b.data))+"): "+outcome, 30*time.Second, b.maxPeak)
		})
	}
}
