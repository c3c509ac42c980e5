package scan_test

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/internal/hostile"
	"github.com/filemill/filemill/jobs/ops/pdf/pdftest"
	"github.com/filemill/filemill/jobs/ops/scan"
	"github.com/filemill/filemill/jobs/ops/scan/clamdtest"
)

// setup starts a clamd for the test and returns an engine on it.
func setup(t *testing.T, mutate ...func(*scan.Config)) (*scan.Engine, *clamdtest.Clamd) {
	t.Helper()
	c := clamdtest.Start(t)
	return setupOn(t, c, mutate...), c
}

// setupOn returns an engine on the clamd c.
func setupOn(t *testing.T, c *clamdtest.Clamd, mutate ...func(*scan.Config)) *scan.Engine {
	t.Helper()
	cfg := scan.DefaultConfig()
	cfg.ClamdAddress = c.Address
	cfg.MaxStreamBytes = 200 << 20
	for _, m := range mutate {
		m(&cfg)
	}
	e, err := scan.New(cfg)
	require.NoError(t, err)
	require.NoError(t, e.Check(context.Background()))
	return e
}

func scanBytes(t *testing.T, e *scan.Engine, name, declared string, data []byte) (scan.Verdict, []scan.Finding) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "input")
	require.NoError(t, os.WriteFile(p, data, 0o600))
	v, fs, err := e.Scan(context.Background(), p, name, declared)
	require.NoError(t, err)
	return v, fs
}

func rules(fs []scan.Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Rule)
	}
	return out
}

func findRule(t *testing.T, fs []scan.Finding, rule string) scan.Finding {
	t.Helper()
	for _, f := range fs {
		if f.Rule == rule {
			return f
		}
	}
	t.Fatalf("no %s finding in %+v", rule, fs)
	return scan.Finding{}
}

// ---- generated inputs ----

func pngImage(t *testing.T) []byte {
	im := image.NewNRGBA(image.Rect(0, 0, 64, 48))
	for i := range im.Pix {
		im.Pix[i] = byte(i * 7)
	}
	im.Set(3, 3, color.White)
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, im))
	return b.Bytes()
}

type zipEntry struct {
	name string
	data []byte
}

func zipOf(t *testing.T, entries ...zipEntry) []byte {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, e := range entries {
		w, err := zw.Create(e.name)
		require.NoError(t, err)
		_, err = w.Write(e.data)
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	return b.Bytes()
}

// nestedZip is a text file in n zips, each inside the next.
func nestedZip(t *testing.T, n int) []byte {
	data := []byte("the innermost file")
	name := "core.txt"
	for i := 0; i < n; i++ {
		data = zipOf(t, zipEntry{name, data})
		name = fmt.Sprintf("layer%d.zip", i)
	}
	return data
}

// pdfOf builds a PDF from object bodies (object i+1 is objs[i]); object 1 is the
// catalog.
func pdfOf(objs ...string) []byte { return pdftest.Objects(objs...) }

const (
	pages = "<< /Type /Pages /Kids [3 0 R] /Count 1 >>"
	page  = "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] >>"
)

func cleanPDF() []byte {
	return pdfOf("<< /Type /Catalog /Pages 2 0 R /OpenAction [3 0 R /Fit] >>", pages, page)
}

func deflate(t *testing.T, data []byte) []byte {
	var b bytes.Buffer
	zw := zlib.NewWriter(&b)
	_, err := zw.Write(data)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return b.Bytes()
}

// elfBinary is a real executable of this machine.
func elfBinary(t *testing.T) []byte {
	b, err := os.ReadFile("/bin/true")
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(b, []byte("\x7fELF")))
	return b
}

// peBinary is the header of a Windows executable: a DOS stub pointing at a PE header.
func peBinary() []byte {
	b := make([]byte, 1024)
	copy(b, "MZ")
	binary.LittleEndian.PutUint32(b[0x3c:], 0x80)
	copy(b[0x80:], "PE\x00\x00\x4c\x01")
	copy(b[0x40:], "This program cannot be run in DOS mode.")
	return b
}

// cfbWithStorages builds a compound file whose directory holds the given entries (at
// most 7; name, type: 1 storage, 2 stream) under its root: the structure of .doc/.xls
// files.
func cfbWithStorages(entries ...struct {
	name string
	typ  byte
}) []byte {
	le := binary.LittleEndian
	const ss = 512
	// Header, then sector 0 (FAT) and sectors 1–2 (the directory: a chain of two).
	data := make([]byte, ss*4)
	h := data[:ss]
	copy(h, "\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1")
	le.PutUint16(h[0x18:], 0x3e)
	le.PutUint16(h[0x1a:], 3)
	le.PutUint16(h[0x1c:], 0xfffe)
	le.PutUint16(h[0x1e:], 9)
	le.PutUint16(h[0x20:], 6)
	le.PutUint32(h[0x2c:], 1)          // one FAT sector
	le.PutUint32(h[0x30:], 1)          // directory at sector 1
	le.PutUint32(h[0x38:], 4096)       // mini stream cutoff
	le.PutUint32(h[0x3c:], 0xfffffffe) // no mini FAT
	le.PutUint32(h[0x44:], 0xfffffffe) // no DIFAT sectors
	for i := 0; i < 109; i++ {
		le.PutUint32(h[0x4c+4*i:], 0xffffffff)
	}
	le.PutUint32(h[0x4c:], 0) // FAT at sector 0
	fat := data[ss : 2*ss]
	for i := 0; i < ss/4; i++ {
		le.PutUint32(fat[4*i:], 0xffffffff)
	}
	le.PutUint32(fat[0:], 0xfffffffd) // sector 0: FAT
	le.PutUint32(fat[4:], 2)          // sector 1: directory, continues in 2
	le.PutUint32(fat[8:], 0xfffffffe) // sector 2: end of chain
	dir := data[2*ss:]
	put := func(i int, name string, typ byte) {
		e := dir[128*i : 128*(i+1)]
		u := utf16.Encode([]rune(name))
		for k, c := range u {
			le.PutUint16(e[2*k:], c)
		}
		le.PutUint16(e[0x40:], uint16(2*len(u)+2))
		e[0x42] = typ
		le.PutUint32(e[0x44:], 0xffffffff)
		le.PutUint32(e[0x48:], 0xffffffff)
		le.PutUint32(e[0x4c:], 0xffffffff)
	}
	put(0, "Root Entry", 5)
	for i, e := range entries {
		put(i+1, e.name, e.typ)
	}
	return data
}

type cfbEntry = struct {
	name string
	typ  byte
}

// ---- tests ----

func TestSpecs(t *testing.T) {
	reg := domain.NewRegistry()
	require.NoError(t, reg.AddOperations(scan.Specs()...))
	canon, err := reg.Operation("scan").ValidateOptions(nil)
	require.NoError(t, err)
	require.JSONEq(t, `{}`, string(canon))
	specs := scan.Specs()
	require.Len(t, specs, 1)
	require.Equal(t, "scan", specs[0].Name)
	require.Equal(t, "scan", specs[0].Engine)
	require.Equal(t, []string{"*"}, specs[0].InputFormats)
	require.Equal(t, domain.Price{Credits: 1, Per: "file"}, specs[0].Price)
}

func TestCleanFilesPass(t *testing.T) {
	e, _ := setup(t)
	docx := zipOf(t,
		zipEntry{"[Content_Types].xml", []byte(`<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>`)},
		zipEntry{"word/document.xml", []byte(`<?xml version="1.0"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body/></w:document>`)})
	cases := []struct {
		name, declared string
		data           []byte
	}{
		{"photo.png", "image/png", pngImage(t)},
		{"notes.txt", "text/plain", []byte("nothing to see here\nat all\n")},
		{"data.csv", "text/csv", []byte("a,b\n1,2\n")},
		{"report.pdf", "application/pdf", cleanPDF()},
		{"letter.docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document", docx},
		{"bundle.zip", "application/zip", zipOf(t, zipEntry{"a.txt", []byte("hello")}, zipEntry{"b.png", pngImage(t)})},
		{"blob", "", []byte{0, 1, 2, 3, 4, 5, 250, 251}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v, fs := scanBytes(t, e, tc.name, tc.declared, tc.data)
			require.Equal(t, scan.Clean, v, "%+v", fs)
			require.Empty(t, fs)
		})
	}
}

func TestEICAR(t *testing.T) {
	e, _ := setup(t)
	v, fs := scanBytes(t, e, "eicar.com", "", []byte(clamdtest.EICAR))
	require.Equal(t, scan.Malicious, v)
	require.Contains(t, findRule(t, fs, "clamav").Message, clamdtest.EICARSignature, "found by clamd")
	require.Equal(t, scan.SeverityHigh, findRule(t, fs, "eicar").Severity, "and by the built-in rule")

	// The built-in rule alone finds it inside an archive too; clamd looks into the zip.
	v, fs = scanBytes(t, e, "files.zip", "application/zip", zipOf(t, zipEntry{"readme.txt", []byte("hi")}, zipEntry{"test/eicar.txt", []byte(clamdtest.EICAR + "\r\n")}))
	require.Equal(t, scan.Malicious, v)
	require.Contains(t, findRule(t, fs, "eicar").Message, `"test/eicar.txt" in the file "files.zip"`)
	require.Contains(t, findRule(t, fs, "clamav").Message, clamdtest.EICARSignature)
}

// TestClamdSignatures shows the clamd layer on its own: files no built-in rule
// flags, caught by the test database's body and hash signatures.
func TestClamdSignatures(t *testing.T) {
	e, _ := setup(t)
	v, fs := scanBytes(t, e, "notes.txt", "text/plain", []byte("harmless text "+clamdtest.Marker+" more text\n"))
	require.Equal(t, scan.Malicious, v)
	require.Equal(t, []string{"clamav"}, rules(fs))
	require.Contains(t, fs[0].Message, clamdtest.MarkerSignature)

	v, fs = scanBytes(t, e, "sample.txt", "text/plain", clamdtest.MarkerFile)
	require.Equal(t, scan.Malicious, v)
	require.Equal(t, []string{"clamav"}, rules(fs))
	require.Contains(t, fs[0].Message, clamdtest.MarkerMD5Signature)
}

// TestClamdTransfers scans through each way of handing clamd the bytes: the
// descriptor (a unix socket's default), INSTREAM on the unix socket, INSTREAM over TCP.
func TestClamdTransfers(t *testing.T) {
	c := clamdtest.Start(t)
	for name, cfg := range map[string]scan.Config{
		"UnixDescriptor": {ClamdAddress: c.Address},
		"UnixInstream":   {ClamdAddress: c.Address, ClamdInstream: true},
		"TCPInstream":    {ClamdAddress: c.TCPAddress},
	} {
		t.Run(name, func(t *testing.T) {
			e, err := scan.New(cfg)
			require.NoError(t, err)
			require.NoError(t, e.Check(context.Background()))
			require.Contains(t, e.Version(), "ClamAV 1.")
			v, fs := scanBytes(t, e, "x.txt", "", []byte("text "+clamdtest.Marker+" text"))
			require.Equal(t, scan.Malicious, v)
			require.Contains(t, findRule(t, fs, "clamav").Message, clamdtest.MarkerSignature)
			v, fs = scanBytes(t, e, "eicar.com", "", []byte(clamdtest.EICAR))
			require.Equal(t, scan.Malicious, v)
			require.Contains(t, findRule(t, fs, "clamav").Message, clamdtest.EICARSignature)
			v, fs = scanBytes(t, e, "ok.txt", "", []byte("nothing here"))
			require.Equal(t, scan.Clean, v, "%+v", fs)
		})
	}
}

func TestMissingClamdIsNeverAPass(t *testing.T) {
	cfg := scan.DefaultConfig()
	cfg.ClamdAddress = "unix:" + filepath.Join(t.TempDir(), "no-clamd.sock")
	e, err := scan.New(cfg)
	require.NoError(t, err)
	require.Error(t, e.Check(context.Background()), "unavailable through Check")
	p := filepath.Join(t.TempDir(), "f.txt")
	require.NoError(t, os.WriteFile(p, []byte("plain text"), 0o600))
	_, _, err = e.Scan(context.Background(), p, "f.txt", "text/plain")
	require.Equal(t, domain.CodeDependencyUnavailable, domain.ErrorCode(err), "%v", err)
	_, err = e.Run(context.Background(), domain.EngineInput{Operation: "scan", Path: p, Filename: "f.txt", WorkDir: t.TempDir()})
	require.Equal(t, domain.CodeDependencyUnavailable, domain.ErrorCode(err))

	_, err = scan.New(scan.Config{ClamdAddress: "unix:relative/path"})
	require.ErrorContains(t, err, "ClamdAddress")
	_, err = scan.New(scan.Config{ClamdAddress: "tcp://no-port"})
	require.ErrorContains(t, err, "ClamdAddress")
}

func TestPDFRules(t *testing.T) {
	e, _ := setup(t)
	t.Run("JavaScriptOnOpen", func(t *testing.T) {
		pdf := pdfOf("<< /Type /Catalog /Pages 2 0 R /OpenAction 4 0 R >>", pages, page,
			"<< /Type /Action /S /JavaScript /JS (app.alert\\('hi'\\);) >>")
		v, fs := scanBytes(t, e, "invoice.pdf", "application/pdf", pdf)
		require.Equal(t, scan.Suspicious, v, "%+v", fs)
		require.ElementsMatch(t, []string{"pdf.javascript", "pdf.open_action"}, rules(fs))
		require.Contains(t, findRule(t, fs, "pdf.open_action").Message, "JavaScript action when opened")
	})
	t.Run("EscapedNames", func(t *testing.T) {
		pdf := pdfOf("<< /Type /Catalog /Pages 2 0 R /Open#41ction << /S /J#61vaScript /J#53 (x) >> >>", pages, page)
		_, fs := scanBytes(t, e, "a.pdf", "", pdf)
		require.Contains(t, rules(fs), "pdf.javascript")
		require.Contains(t, rules(fs), "pdf.open_action")
	})
	t.Run("InsideObjectStream", func(t *testing.T) {
		// The action dictionary sits in a compressed object stream: no plain byte
		// search sees /JavaScript.
		inner := "4 0 << /S /JavaScript /JS (this.print\\(\\)) >>"
		body := deflate(t, []byte(inner))
		objstm := fmt.Sprintf("<< /Type /ObjStm /N 1 /First 4 /Filter /FlateDecode /Length %d >>\nstream\n%s\nendstream", len(body), body)
		pdf := pdfOf("<< /Type /Catalog /Pages 2 0 R /OpenAction 4 0 R >>", pages, page, objstm)
		require.NotContains(t, string(pdf), "JavaScript")
		v, fs := scanBytes(t, e, "a.pdf", "", pdf)
		require.Equal(t, scan.Suspicious, v)
		require.ElementsMatch(t, []string{"pdf.javascript", "pdf.open_action"}, rules(fs))
	})
	t.Run("Launch", func(t *testing.T) {
		pdf := pdfOf("<< /Type /Catalog /Pages 2 0 R /OpenAction << /S /Launch /F (cmd.exe) >> >>", pages, page)
		v, fs := scanBytes(t, e, "a.pdf", "", pdf)
		require.Equal(t, scan.Malicious, v)
		require.Contains(t, rules(fs), "pdf.launch")
	})
	t.Run("EmbeddedFiles", func(t *testing.T) {
		note := "just a note"
		pdf := pdfOf("<< /Type /Catalog /Pages 2 0 R /Names << /EmbeddedFiles << /Names [(note.txt) 4 0 R] >> >> >>", pages, page,
			"<< /Type /Filespec /F (note.txt) /EF << /F 5 0 R >> >>",
			fmt.Sprintf("<< /Type /EmbeddedFile /Length %d >>\nstream\n%s\nendstream", len(note), note))
		v, fs := scanBytes(t, e, "a.pdf", "", pdf)
		require.Equal(t, scan.Clean, v, "an embedded text file is a note, not a threat")
		require.Equal(t, []string{"pdf.embedded_file"}, rules(fs))

		exe := deflate(t, peBinary())
		pdf = pdfOf("<< /Type /Catalog /Pages 2 0 R /Names << /EmbeddedFiles << /Names [(doc) 4 0 R] >> >> >>", pages, page,
			"<< /Type /Filespec /F (readme.txt) /EF << /F 5 0 R >> >>",
			fmt.Sprintf("<< /Type /EmbeddedFile /Filter /FlateDecode /Length %d >>\nstream\n%s\nendstream", len(exe), exe))
		v, fs = scanBytes(t, e, "a.pdf", "", pdf)
		require.Equal(t, scan.Malicious, v)
		require.Contains(t, findRule(t, fs, "pdf.embedded_executable").Message, "Windows (PE) executable")

		pdf = pdfOf("<< /Type /Catalog /Pages 2 0 R /Names << /EmbeddedFiles << /Names [(x) 4 0 R] >> >> >>", pages, page,
			"<< /Type /Filespec /F (invoice.scr) /UF (invoice.scr) >>")
		_, fs = scanBytes(t, e, "a.pdf", "", pdf)
		require.Contains(t, findRule(t, fs, "pdf.embedded_executable").Message, `"invoice.scr"`)
	})
	t.Run("DestinationOpenActionIsFine", func(t *testing.T) {
		pdf := pdfOf("<< /Type /Catalog /Pages 2 0 R /OpenAction 4 0 R >>", pages, page, "[3 0 R /XYZ 0 200 0]")
		v, fs := scanBytes(t, e, "a.pdf", "", pdf)
		require.Equal(t, scan.Clean, v, "%+v", fs)
	})
}

func TestOfficeMacros(t *testing.T) {
	e, _ := setup(t)
	vba := cfbWithStorages(cfbEntry{"VBA", 1}, cfbEntry{"_VBA_PROJECT", 2}, cfbEntry{"PROJECT", 2})
	docm := zipOf(t,
		zipEntry{"[Content_Types].xml", []byte(`<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Override PartName="/word/vbaProject.bin" ContentType="application/vnd.ms-office.vbaProject"/></Types>`)},
		zipEntry{"word/document.xml", []byte(`<?xml version="1.0"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body/></w:document>`)},
		zipEntry{"word/vbaProject.bin", vba})
	v, fs := scanBytes(t, e, "report.docm", "application/vnd.ms-word.document.macroEnabled.12", docm)
	require.Equal(t, scan.Suspicious, v, "%+v", fs)
	require.Equal(t, []string{"office.macro"}, rules(fs))
	require.Contains(t, fs[0].Message, "word/vbaProject.bin")

	doc := cfbWithStorages(cfbEntry{"WordDocument", 2}, cfbEntry{"Macros", 1}, cfbEntry{"VBA", 1}, cfbEntry{"_VBA_PROJECT", 2})
	v, fs = scanBytes(t, e, "old.doc", "application/msword", doc)
	require.Equal(t, scan.Suspicious, v, "%+v", fs)
	require.Equal(t, []string{"office.macro"}, rules(fs))

	plain := cfbWithStorages(cfbEntry{"WordDocument", 2}, cfbEntry{"1Table", 2})
	v, fs = scanBytes(t, e, "plain.doc", "application/msword", plain)
	require.Equal(t, scan.Clean, v, "%+v", fs)

	odt := zipOf(t, zipEntry{"mimetype", []byte("application/vnd.oasis.opendocument.text")},
		zipEntry{"content.xml", []byte("<office:document-content/>")},
		zipEntry{"Basic/Standard/Module1.xml", []byte("<script:module>Sub Main\nEnd Sub</script:module>")})
	v, fs = scanBytes(t, e, "a.odt", "", odt)
	require.Equal(t, scan.Suspicious, v)
	require.Contains(t, findRule(t, fs, "office.macro").Message, "Basic/Standard/Module1.xml")
}

func TestExecutables(t *testing.T) {
	e, _ := setup(t)
	elf := elfBinary(t)
	t.Run("ELFRenamedJPG", func(t *testing.T) {
		v, fs := scanBytes(t, e, "holiday.jpg", "image/jpeg", elf)
		require.Equal(t, scan.Malicious, v)
		f := findRule(t, fs, "executable.disguised")
		require.Contains(t, f.Message, `"holiday.jpg" declared as image/jpeg is a ELF executable`)
	})
	t.Run("HonestExecutable", func(t *testing.T) {
		v, fs := scanBytes(t, e, "tool", "application/octet-stream", elf)
		require.Equal(t, scan.Clean, v)
		require.Equal(t, []string{"executable"}, rules(fs))
		require.Equal(t, scan.SeverityLow, fs[0].Severity)
	})
	t.Run("InsideArchive", func(t *testing.T) {
		v, fs := scanBytes(t, e, "tools.zip", "", zipOf(t, zipEntry{"bin/setup.exe", peBinary()}))
		require.Equal(t, scan.Suspicious, v)
		require.Contains(t, findRule(t, fs, "executable.in_archive").Message, `"bin/setup.exe" in the file "tools.zip"`)

		v, fs = scanBytes(t, e, "docs.zip", "", zipOf(t, zipEntry{"invoice.pdf", peBinary()}))
		require.Equal(t, scan.Malicious, v)
		require.Contains(t, findRule(t, fs, "executable.disguised").Message, `"invoice.pdf" in the file "docs.zip"`)

		v, fs = scanBytes(t, e, "docs.zip", "", zipOf(t, zipEntry{"invoice.pdf.exe", peBinary()}))
		require.Equal(t, scan.Malicious, v)
		require.Contains(t, findRule(t, fs, "executable.disguised").Message, "double extension")
	})
	t.Run("InsideTarGz", func(t *testing.T) {
		var tb bytes.Buffer
		tw := tar.NewWriter(&tb)
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: "pkg/readme.txt", Mode: 0o644, Size: 5}))
		_, _ = tw.Write([]byte("hello"))
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: "pkg/logo.png", Mode: 0o755, Size: int64(len(elf))}))
		_, _ = tw.Write(elf)
		require.NoError(t, tw.Close())
		var gz bytes.Buffer
		zw := gzip.NewWriter(&gz)
		_, _ = zw.Write(tb.Bytes())
		require.NoError(t, zw.Close())
		v, fs := scanBytes(t, e, "pkg.tar.gz", "application/gzip", gz.Bytes())
		require.Equal(t, scan.Malicious, v)
		require.Contains(t, findRule(t, fs, "executable.disguised").Message, `"pkg/logo.png"`)
	})
}

// measuredScan scans data as scanBytes does, and checks the scan took at most the
// stated time and resident memory in this process (the rules; clamd is another).
func measuredScan(t *testing.T, e *scan.Engine, name string, data []byte, maxPeak int64) (v scan.Verdict, fs []scan.Finding) {
	t.Helper()
	m := hostile.Run(func() { v, fs = scanBytes(t, e, name, "", data) })
	m.Within(t, fmt.Sprintf("%s (%s): %s %v", name, hostile.Size(len(data)), v, rules(fs)), 2*time.Minute, maxPeak)
	return v, fs
}

// TestArchiveBombs: each bomb is flagged malicious, within the time and memory stated.
// Not parallel: the figures are this test's.
func TestArchiveBombs(t *testing.T) {
	e, _ := setup(t, func(c *scan.Config) { c.MaxEntries = 500 })
	zeros := make([]byte, 1<<20)
	t.Run("Ratio", func(t *testing.T) {
		// 200 MiB of zeros in a zip of about 200 KiB.
		var b bytes.Buffer
		zw := zip.NewWriter(&b)
		zw.RegisterCompressor(zip.Deflate, func(w io.Writer) (io.WriteCloser, error) { return flate.NewWriter(w, flate.BestCompression) })
		w, err := zw.Create("zeros.bin")
		require.NoError(t, err)
		for i := 0; i < 200; i++ {
			_, _ = w.Write(zeros)
		}
		require.NoError(t, zw.Close())
		require.Less(t, b.Len(), 1<<20)
		v, fs := measuredScan(t, e, "bomb.zip", b.Bytes(), 64<<20)
		require.Equal(t, scan.Malicious, v)
		require.Contains(t, findRule(t, fs, "archive.ratio").Message, "bomb.zip")
	})
	t.Run("GzipRatio", func(t *testing.T) {
		var b bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
		for i := 0; i < 200; i++ {
			_, _ = zw.Write(zeros)
		}
		require.NoError(t, zw.Close())
		v, fs := measuredScan(t, e, "logs.gz", b.Bytes(), 64<<20)
		require.Equal(t, scan.Malicious, v)
		require.Contains(t, rules(fs), "archive.ratio")
	})
	t.Run("Nesting", func(t *testing.T) {
		v, fs := measuredScan(t, e, "nested.zip", nestedZip(t, 8), 64<<20)
		require.Equal(t, scan.Malicious, v)
		require.Contains(t, findRule(t, fs, "archive.nesting").Message, "more than 5 deep")
	})
	t.Run("NestingPastClamdsRecursionLimit", func(t *testing.T) {
		// 20 zips deep, about 2 KB: clamd stops at its MaxRecursion (17 by default)
		// and says so (Heuristics.Limits.Exceeded.MaxRecursion); the file is a bomb by
		// its nesting, not too large to scan. A fresh clamd: one that saw the inner
		// layers already would find them in its cache of clean files and stop short.
		e, _ := setup(t, func(c *scan.Config) { c.MaxDepth = 30 })
		data := nestedZip(t, 20)
		require.Less(t, len(data), 4<<10)
		for _, c := range []struct {
			name string
			e    *scan.Engine
		}{{"ClamdAlone", e}, {"WithTheRules", setupOn(t, clamdtest.Start(t))}} {
			t.Run(c.name, func(t *testing.T) {
				v, fs := scanBytes(t, c.e, "nested.zip", "", data)
				require.Equal(t, scan.Malicious, v, "%+v", fs)
				f := findRule(t, fs, "archive.nesting")
				require.Equal(t, scan.SeverityHigh, f.Severity)
				require.NotContains(t, f.Message, "larger")
				if c.name == "ClamdAlone" {
					require.Contains(t, f.Message, "recursion limit")
				}
			})
		}
	})
	t.Run("Entries", func(t *testing.T) {
		var entries []zipEntry
		for i := 0; i < 600; i++ {
			entries = append(entries, zipEntry{fmt.Sprintf("f%04d.txt", i), nil})
		}
		v, fs := measuredScan(t, e, "many.zip", zipOf(t, entries...), 64<<20)
		require.Equal(t, scan.Malicious, v)
		require.Contains(t, findRule(t, fs, "archive.entries").Message, "more than 500")
	})
	t.Run("EntriesPastTheDirectoryLimit", func(t *testing.T) {
		// 200,000 entries (18 MB, a zip64 directory): counted from the end record, never
		// parsed entry by entry.
		v, fs := measuredScan(t, e, "many.zip", hostile.ManyEntries(200_000), 64<<20)
		require.Equal(t, scan.Malicious, v)
		require.Contains(t, findRule(t, fs, "archive.entries").Message, "more than 500")
	})
	t.Run("OrdinaryCompressionIsFine", func(t *testing.T) {
		text := bytes.Repeat([]byte("filemill compresses ordinary text about ten to one. "), 20000)
		v, fs := scanBytes(t, e, "text.zip", "", zipOf(t, zipEntry{"a.txt", text}))
		require.Equal(t, scan.Clean, v, "%+v", fs)
	})
}

func TestTypeMismatch(t *testing.T) {
	e, _ := setup(t)
	v, fs := scanBytes(t, e, "scan.pdf", "application/pdf", pngImage(t))
	require.Equal(t, scan.Clean, v, "a misnamed picture is a note")
	f := findRule(t, fs, "type.mismatch")
	require.Equal(t, scan.SeverityLow, f.Severity)
	require.Contains(t, f.Message, "named .pdf but its content is image/png")

	html := []byte("<!DOCTYPE html><html><body><script>document.location='http://x'</script></body></html>")
	v, fs = scanBytes(t, e, "cat.jpg", "image/jpeg", html)
	require.Equal(t, scan.Suspicious, v, "%+v", fs)
	require.Equal(t, scan.SeverityMedium, findRule(t, fs, "type.mismatch").Severity)

	v, fs = scanBytes(t, e, "page.html", "text/html", html)
	require.Equal(t, scan.Clean, v, "%+v", fs)
	v, fs = scanBytes(t, e, "data.json", "application/json", []byte(`{"a": [1, 2, 3]}`))
	require.Equal(t, scan.Clean, v, "%+v", fs)
}

func TestRun(t *testing.T) {
	e, _ := setup(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "input")
	work := filepath.Join(dir, "work")
	require.NoError(t, os.Mkdir(work, 0o700))

	require.NoError(t, os.WriteFile(in, pngImage(t), 0o600))
	out, err := e.Run(context.Background(), domain.EngineInput{Operation: "scan", Path: in, Filename: "p.png", WorkDir: work})
	require.NoError(t, err)
	require.Len(t, out.Artifacts, 1)
	a := out.Artifacts[0]
	require.Equal(t, "scan.json", a.Name)
	require.Equal(t, "application/json", a.MIMEType)
	b, err := os.ReadFile(a.Path)
	require.NoError(t, err)
	var rep map[string]any
	require.NoError(t, json.Unmarshal(b, &rep))
	require.Equal(t, "clean", rep["verdict"])
	require.Equal(t, []any{}, rep["findings"])
	require.EqualValues(t, len(pngImage(t)), rep["scanned_bytes"])
	require.Contains(t, rep["engines"].(map[string]any)["clamav"], "ClamAV")

	require.NoError(t, os.WriteFile(in, []byte(clamdtest.EICAR), 0o600))
	work2 := filepath.Join(dir, "work2")
	require.NoError(t, os.Mkdir(work2, 0o700))
	out, err = e.Run(context.Background(), domain.EngineInput{Operation: "scan", Path: in, Filename: "e.txt", WorkDir: work2})
	require.Nil(t, out)
	de := domain.AsError(err)
	require.NotNil(t, de, "%v", err)
	require.Equal(t, domain.CodeMalwareDetected, de.Code)
	require.Equal(t, "malicious", de.Details["verdict"])
	fs := de.Details["findings"].([]scan.Finding)
	require.Contains(t, rules(fs), "clamav")
	require.Contains(t, rules(fs), "eicar")
	entries, _ := os.ReadDir(work2)
	require.Empty(t, entries, "no report for a malicious file")
	// The details render as JSON the way a client sees them.
	raw, err := json.Marshal(de.Details)
	require.NoError(t, err)
	require.Contains(t, string(raw), `"rule":"eicar","severity":"high"`)
}

func TestLimits(t *testing.T) {
	e, _ := setup(t, func(c *scan.Config) { c.MaxStreamBytes = 1000 })
	p := filepath.Join(t.TempDir(), "big.txt")
	require.NoError(t, os.WriteFile(p, bytes.Repeat([]byte("a"), 2000), 0o600))
	_, _, err := e.Scan(context.Background(), p, "big.txt", "")
	require.Equal(t, domain.CodeUnsupportedInput, domain.ErrorCode(err))

	// clamd's own limits, when the configuration does not know them: refused, not
	// passed — by descriptor (MaxFileSize) and by stream (StreamMaxLength).
	c := clamdtest.StartWith(t, clamdtest.Options{StreamMaxLength: 1 << 20, MaxFileSize: 1 << 20})
	p = filepath.Join(t.TempDir(), "big.bin")
	require.NoError(t, os.WriteFile(p, bytes.Repeat([]byte("ab"), 1<<20), 0o600))
	for _, instream := range []bool{false, true} {
		cfg := scan.DefaultConfig()
		cfg.ClamdAddress = c.Address
		cfg.MaxStreamBytes = 4 << 20
		cfg.ClamdInstream = instream
		e3, err := scan.New(cfg)
		require.NoError(t, err)
		_, _, err = e3.Scan(context.Background(), p, "big.bin", "")
		require.Equal(t, domain.CodeUnsupportedInput, domain.ErrorCode(err), "instream %v: %v", instream, err)
	}
}

func TestCancelled(t *testing.T) {
	e, _ := setup(t)
	p := filepath.Join(t.TempDir(), "f.txt")
	require.NoError(t, os.WriteFile(p, []byte("text"), 0o600))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err := e.Scan(ctx, p, "f.txt", "")
	require.ErrorIs(t, err, context.Canceled)
}
