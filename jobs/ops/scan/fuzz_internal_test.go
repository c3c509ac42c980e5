package scan

import (
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"testing"

	"github.com/filemill/filemill/internal/hostile"
)

// FuzzInspect feeds the built-in rules (the archive walker among them) damaged and
// hostile variants of the structures they read: they neither panic nor hang, never
// decompress past their budget or allocate out of proportion to it, and report
// findings of a known severity with a message.
func FuzzInspect(f *testing.F) {
	var z bytes.Buffer
	zw := zip.NewWriter(&z)
	w, _ := zw.Create("word/vbaProject.bin")
	w.Write([]byte("\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"))
	w, _ = zw.Create("a.pdf")
	w.Write([]byte("%PDF-1.4\n1 0 obj << /OpenAction 2 0 R >> endobj 2 0 obj << /S /JavaScript /JS (x) >> endobj"))
	zw.Close()
	var g bytes.Buffer
	gw := gzip.NewWriter(&g)
	gw.Write(z.Bytes())
	gw.Close()
	f.Add(z.Bytes())
	f.Add(g.Bytes())
	f.Add([]byte("%PDF-1.7\n4 0 obj << /Type /ObjStm /Filter /FlateDecode >>\nstream\n\x78\x9c\x03\x00\x00\x00\x00\x01\nendstream /Open#41ction [1 0 R] /EmbeddedFile stream\nMZ"))
	cfb := make([]byte, 2048)
	copy(cfb, "\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1")
	cfb[0x1e] = 9
	f.Add(cfb)
	f.Add([]byte("PK\x05\x06\x00\x00\x00\x00\xff\xff\xff\xff\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"))
	cfg := DefaultConfig().withDefaults()
	cfg.MaxInspectBytes = 8 << 20
	cfg.MaxEntryBytes = 1 << 20
	f.Fuzz(func(t *testing.T, data []byte) {
		s := newInspector(context.Background(), cfg)
		alloc := hostile.Allocated(func() { s.inspect(data, "fuzz.bin", "", 0, "") })
		if limit := uint64(hostile.Slack+64*len(data)) + 4*uint64(cfg.MaxInspectBytes); alloc > limit {
			t.Fatalf("inspecting %d bytes allocated %d bytes", len(data), alloc)
		}
		if s.budget < 0 {
			t.Fatalf("decompressed %d bytes past the budget", -s.budget)
		}
		for _, fd := range s.findings {
			if (fd.Severity != SeverityLow && fd.Severity != SeverityMedium && fd.Severity != SeverityHigh) || fd.Rule == "" || fd.Message == "" {
				t.Fatalf("finding %+v", fd)
			}
		}
	})
}
