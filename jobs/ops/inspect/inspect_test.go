package inspect_test

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"image"
	"image/color"
	"image/color/palette"
	"image/gif"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pdfcpu/pdfcpu/pkg/api"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/stretchr/testify/require"
	"golang.org/x/image/bmp"
	"golang.org/x/image/tiff"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/jobs/ops/inspect"
)

func TestMain(m *testing.M) {
	// pdfcpu's fixture helpers would otherwise install a config directory in $HOME.
	api.DisableConfigDir()
	os.Exit(m.Run())
}

// run writes data as an uploaded file, detects its format as the pipeline does, runs
// the engine and returns the decoded report and the raw JSON object.
func run(t *testing.T, eng *inspect.Engine, name string, data []byte) (*inspect.Report, map[string]any) {
	t.Helper()
	rep, raw, err := runErr(t, eng, name, data, "")
	require.NoError(t, err)
	return rep, raw
}

func runErr(t *testing.T, eng *inspect.Engine, name string, data []byte, sha string) (*inspect.Report, map[string]any, error) {
	t.Helper()
	dir := t.TempDir()
	in := filepath.Join(dir, "input")
	require.NoError(t, os.WriteFile(in, data, 0o600))
	work := filepath.Join(dir, "work")
	require.NoError(t, os.Mkdir(work, 0o700))
	head := data[:min(len(data), domain.DetectSniffBytes)]
	out, err := eng.Run(context.Background(), domain.EngineInput{
		Operation: "inspect", Path: in, Filename: name, Format: domain.Detect(head),
		ByteSize: int64(len(data)), SHA256: sha, WorkDir: work,
	})
	if err != nil {
		require.Nil(t, out)
		return nil, nil, err
	}
	require.Len(t, out.Artifacts, 1)
	a := out.Artifacts[0]
	require.Equal(t, "inspect.json", a.Name)
	require.Equal(t, "application/json", a.MIMEType)
	require.Equal(t, work, filepath.Dir(a.Path))
	require.Zero(t, out.Units)
	b, err := os.ReadFile(a.Path)
	require.NoError(t, err)
	var rep inspect.Report
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&rep))
	var raw map[string]any
	require.NoError(t, json.Unmarshal(b, &raw))
	return &rep, raw, nil
}

func requireCode(t *testing.T, err error, code string, msgAndArgs ...any) {
	t.Helper()
	require.Error(t, err, msgAndArgs...)
	require.Equal(t, code, domain.ErrorCode(err), "error: %v", err)
	if code == domain.CodeCorruptedFile {
		// A person reads it: one of our sentences, never the parser's words.
		msg := domain.AsError(err).Message
		ours := strings.Contains(msg, "entries; at most")
		for _, m := range inspect.CorruptedMessages {
			ours = ours || msg == m
		}
		require.True(t, ours, "corrupted_file message %q is not one of ours", msg)
	}
}

func ptr[T any](v T) *T { return &v }

// section returns one per-format object of the raw report.
func section(t *testing.T, raw map[string]any, name string) map[string]any {
	t.Helper()
	s, ok := raw[name].(map[string]any)
	require.True(t, ok, "report has no %q section: %v", name, raw)
	return s
}

func TestCommonFields(t *testing.T) {
	t.Parallel()
	eng := newEngine(t, inspect.DefaultConfig())

	t.Run("WithHash", func(t *testing.T) {
		data := []byte("PK\x03\x04 not really a zip, just bytes \x00\x01\x02")
		rep, raw, err := runErr(t, eng, "blob.bin", data, "ab12")
		require.NoError(t, err)
		require.Equal(t, &inspect.Report{Filename: "blob.bin", Format: domain.Detect(data),
			ByteSize: int64(len(data)), SHA256: ptr("ab12")}, rep)
		require.ElementsMatch(t, []string{"filename", "format", "byte_size", "sha256"}, keys(raw))
		require.Equal(t, map[string]any{"extension": rep.Format.Extension, "mime_type": rep.Format.MIMEType}, raw["format"])
	})

	t.Run("HashOutsideWindowIsNull", func(t *testing.T) {
		_, raw := run(t, eng, "x.bin", []byte{0, 1, 2, 3, 0, 0, 0})
		v, ok := raw["sha256"]
		require.True(t, ok)
		require.Nil(t, v)
	})

	t.Run("OtherImageTypesGetCommonFieldsOnly", func(t *testing.T) {
		svg := []byte(`<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"></svg>`)
		rep, raw := run(t, eng, "a.svg", svg)
		require.Equal(t, "image/svg+xml", rep.Format.MIMEType)
		require.ElementsMatch(t, []string{"filename", "format", "byte_size", "sha256"}, keys(raw))
	})
}

func keys(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

func TestContextCancelled(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	in := filepath.Join(dir, "in.txt")
	require.NoError(t, os.WriteFile(in, []byte("hello\n"), 0o600))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := newEngine(t, inspect.Config{}).Run(ctx, domain.EngineInput{Path: in, WorkDir: dir,
		Format: domain.Format{Extension: "txt", MIMEType: "text/plain"}})
	require.ErrorIs(t, err, context.Canceled)
	require.Nil(t, domain.AsError(err), "a cancellation is not the file's fault")
}

func TestConfig(t *testing.T) {
	t.Parallel()
	require.NoError(t, inspect.DefaultConfig().Validate())
	require.NoError(t, inspect.Config{}.Validate(), "zero values take the defaults")
	require.ErrorContains(t, inspect.Config{MaxXMLBytes: -1}.Validate(), "MaxXMLBytes")
	require.Equal(t, inspect.Config{MaxPixels: 100_000_000, MaxPages: 10_000, MaxXMLBytes: 16 << 20,
		MaxZipEntries: 10_000}, inspect.DefaultConfig())
}

// ---- PDF ----

// pdfPage is one page of a hand-written PDF.
type pdfPage struct {
	content  string
	mediaBox string // "" inherits the Pages node's
	rotate   int
	font     bool   // the page's resources define /F1 (Helvetica)
	form     string // content of a Form XObject /Fm1, whose own resources define /F1
}

type pdfDoc struct {
	version  string
	mediaBox string // on the Pages node, inherited
	pages    []pdfPage
	info     string // the information dictionary's entries, e.g. "/Title (T)"
}

// bytes writes the document with a correct cross-reference table.
func (d pdfDoc) bytes() []byte {
	var objs []string
	add := func(s string) int { objs = append(objs, s); return len(objs) }
	stream := func(dict, data string) string {
		return fmt.Sprintf("<< %s /Length %d >>\nstream\n%s\nendstream", dict, len(data), data)
	}
	catalog, pages := add(""), add("")
	font := add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
	var kids []string
	for _, p := range d.pages {
		content := add(stream("", p.content))
		res := ""
		if p.font {
			res += fmt.Sprintf(" /Font << /F1 %d 0 R >>", font)
		}
		if p.form != "" {
			form := add(stream(fmt.Sprintf("/Type /XObject /Subtype /Form /BBox [0 0 300 300] /Resources << /Font << /F1 %d 0 R >> >>", font), p.form))
			res += fmt.Sprintf(" /XObject << /Fm1 %d 0 R >>", form)
		}
		extra := ""
		if p.mediaBox != "" {
			extra += " /MediaBox " + p.mediaBox
		}
		if p.rotate != 0 {
			extra += fmt.Sprintf(" /Rotate %d", p.rotate)
		}
		page := add(fmt.Sprintf("<< /Type /Page /Parent %d 0 R /Resources <<%s >> /Contents %d 0 R%s >>", pages, res, content, extra))
		kids = append(kids, fmt.Sprintf("%d 0 R", page))
	}
	objs[catalog-1] = fmt.Sprintf("<< /Type /Catalog /Pages %d 0 R >>", pages)
	mb := ""
	if d.mediaBox != "" {
		mb = " /MediaBox " + d.mediaBox
	}
	objs[pages-1] = fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d%s >>", strings.Join(kids, " "), len(kids), mb)
	info := 0
	if d.info != "" {
		info = add("<< " + d.info + " >>")
	}

	var b bytes.Buffer
	fmt.Fprintf(&b, "%%PDF-%s\n%%\xe2\xe3\xcf\xd3\n", d.version)
	offsets := make([]int, len(objs))
	for i, o := range objs {
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root %d 0 R", len(objs)+1, catalog)
	if info != 0 {
		fmt.Fprintf(&b, " /Info %d 0 R", info)
	}
	fmt.Fprintf(&b, " /ID [<0123456789abcdef0123456789abcdef> <0123456789abcdef0123456789abcdef>] >>\nstartxref\n%d\n%%%%EOF\n", xref)
	return b.Bytes()
}

const (
	a4       = "[0 0 595.276 841.89]"
	drawing  = "0.5 g 10 10 200 200 re f"
	showText = "BT /F1 24 Tf 72 720 Td (Hello, filemill) Tj ET"
)

// reportDoc is a two-page report: a drawing, then text.
var reportDoc = pdfDoc{
	version: "1.7", mediaBox: a4,
	pages: []pdfPage{{content: drawing}, {content: showText, font: true}},
	info:  "/Title (Quarterly Report) /Author (Ada Lovelace) /Producer (filemill tests)",
}

func TestPDF(t *testing.T) {
	t.Parallel()
	eng := newEngine(t, inspect.DefaultConfig())
	pdfFormat := domain.Format{Extension: "pdf", MIMEType: "application/pdf"}

	t.Run("TextLayerAndMetadata", func(t *testing.T) {
		data := reportDoc.bytes()
		rep, raw := run(t, eng, "report.pdf", data)
		require.Equal(t, &inspect.Report{Filename: "report.pdf", Format: pdfFormat, ByteSize: int64(len(data)),
			PDF: &inspect.PDFReport{PageCount: ptr(2), Version: "1.7", TextLayer: ptr(true),
				PageSize: &inspect.PageSize{Width: 595.276, Height: 841.89},
				Title:    "Quarterly Report", Author: "Ada Lovelace", Producer: "filemill tests"}}, rep)
		pdf := section(t, raw, "pdf")
		require.Equal(t, false, pdf["encrypted"])
		require.Equal(t, map[string]any{"width": 595.276, "height": 841.89}, pdf["page_size"])
	})

	t.Run("NoTextLayer", func(t *testing.T) {
		// Empty text objects, text shown in an undefined font, text outside BT/ET, an
		// empty string, and a string that only looks like an operator: none is text.
		doc := pdfDoc{version: "1.4", pages: []pdfPage{
			{content: drawing + " BT ET", mediaBox: "[0 0 612 792]"},
			{content: "BT /F9 12 Tf (ghost) Tj ET", mediaBox: "[0 0 612 792]", font: true},
			{content: "/F1 12 Tf (outside) Tj BT () Tj [] TJ ET", mediaBox: "[0 0 612 792]", font: true},
			{content: "q 100 0 0 100 0 0 cm BI /W 2 /H 1 /BPC 8 /CS /G ID \x28\x29 EI Q BT (x) ET", mediaBox: "[0 0 612 792]", font: true},
		}}
		rep, _ := run(t, eng, "scan.pdf", doc.bytes())
		require.Equal(t, &inspect.PDFReport{PageCount: ptr(4), Version: "1.4", TextLayer: ptr(false),
			PageSize: &inspect.PageSize{Width: 612, Height: 792}}, rep.PDF)
	})

	t.Run("TextInsideFormXObject", func(t *testing.T) {
		doc := pdfDoc{version: "1.6", mediaBox: a4, pages: []pdfPage{
			{content: "q 1 0 0 1 50 50 cm /Fm1 Do Q", form: "BT /F1 10 Tf [(Hel) -20 (lo)] TJ ET"},
		}}
		rep, _ := run(t, eng, "form.pdf", doc.bytes())
		require.Equal(t, ptr(true), rep.PDF.TextLayer)
	})

	t.Run("RotatedPageSize", func(t *testing.T) {
		doc := pdfDoc{version: "1.5", pages: []pdfPage{{content: showText, font: true, mediaBox: "[0 0 612 792]", rotate: 90}}}
		rep, _ := run(t, eng, "landscape.pdf", doc.bytes())
		require.Equal(t, &inspect.PageSize{Width: 792, Height: 612}, rep.PDF.PageSize)
	})

	t.Run("TextBeyondPageLimitIsUnknown", func(t *testing.T) {
		doc := pdfDoc{version: "1.7", mediaBox: a4, pages: []pdfPage{{content: drawing}, {content: drawing}, {content: showText, font: true}}}
		rep, raw := run(t, newEngine(t, inspect.Config{MaxPages: 2}), "long.pdf", doc.bytes())
		require.Equal(t, ptr(3), rep.PDF.PageCount)
		require.True(t, rep.PDF.ExceedsPageLimit)
		v, ok := section(t, raw, "pdf")["text_layer"]
		require.True(t, ok)
		require.Nil(t, v, "no text in the pages scanned, so unknown")
	})

	t.Run("PdfcpuImageOnly", func(t *testing.T) {
		dir := t.TempDir()
		img := filepath.Join(dir, "scan.png")
		require.NoError(t, os.WriteFile(img, pngBytes(t, rgbaImage(40, 20)), 0o600))
		out := filepath.Join(dir, "scan.pdf")
		require.NoError(t, api.ImportImagesFile([]string{img}, out, nil, model.NewDefaultConfiguration()))
		data, err := os.ReadFile(out)
		require.NoError(t, err)
		rep, _ := run(t, eng, "scan.pdf", data)
		require.Equal(t, ptr(1), rep.PDF.PageCount)
		require.Equal(t, ptr(false), rep.PDF.TextLayer)
		require.False(t, rep.PDF.Encrypted)
		require.Contains(t, rep.PDF.Producer, "pdfcpu")
		require.NotNil(t, rep.PDF.PageSize)
	})

	t.Run("PdfcpuCreatedText", func(t *testing.T) {
		spec := `{"paper": "A5P", "pages": {"1": {"content": {"text": [
			{"value": "Invoice 42", "pos": [50, 400], "font": {"name": "Helvetica", "size": 20}}]}}}}`
		var b bytes.Buffer
		require.NoError(t, api.Create(nil, strings.NewReader(spec), &b, model.NewDefaultConfiguration()))
		rep, _ := run(t, eng, "invoice.pdf", b.Bytes())
		require.Equal(t, ptr(1), rep.PDF.PageCount)
		require.Equal(t, ptr(true), rep.PDF.TextLayer)
		require.Equal(t, &inspect.PageSize{Width: 420, Height: 595}, rep.PDF.PageSize) // pdfcpu's A5 portrait
	})

	t.Run("EncryptedOwnerPasswordOnly", func(t *testing.T) {
		conf := model.NewAESConfiguration("", "owner-secret", 256)
		data := encryptPDF(t, reportDoc.bytes(), conf)
		rep, _ := run(t, eng, "locked.pdf", data)
		// Opens without a password, so everything is readable.
		require.Equal(t, &inspect.PDFReport{PageCount: ptr(2), Version: "1.7", Encrypted: true, TextLayer: ptr(true),
			PageSize: &inspect.PageSize{Width: 595.276, Height: 841.89},
			Title:    "Quarterly Report", Author: "Ada Lovelace", Producer: rep.PDF.Producer}, rep.PDF)
	})

	t.Run("EncryptedUserPassword", func(t *testing.T) {
		// reportDoc has a classic cross-reference table and no object streams, so its
		// page tree's numbers stay in the clear: only strings and streams are encrypted.
		for name, conf := range map[string]*model.Configuration{
			"AES256": model.NewAESConfiguration("user-secret", "owner-secret", 256),
			"AES128": model.NewAESConfiguration("user-secret", "owner-secret", 128),
			"RC4":    model.NewRC4Configuration("user-secret", "owner-secret", 128),
		} {
			rep, raw := run(t, eng, "locked.pdf", encryptPDF(t, reportDoc.bytes(), conf))
			require.Equal(t, &inspect.PDFReport{PageCount: ptr(2), Version: "1.7", Encrypted: true, RequiresPassword: true,
				PageSize: &inspect.PageSize{Width: 595.276, Height: 841.89}}, rep.PDF, name)
			v, ok := section(t, raw, "pdf")["text_layer"]
			require.True(t, ok)
			require.Nil(t, v, "content streams are encrypted")
		}
	})

	t.Run("EncryptedUserPasswordObjectStreams", func(t *testing.T) {
		// pdfcpu writes new documents with object streams: the page tree is inside an
		// encrypted stream, so nothing but the encryption and version can be told.
		var plain bytes.Buffer
		require.NoError(t, api.Create(nil, strings.NewReader(`{"pages": {"1": {"content": {"text": [
			{"value": "Secret", "pos": [50, 400], "font": {"name": "Helvetica", "size": 20}}]}}}}`), &plain, model.NewDefaultConfiguration()))
		require.Contains(t, plain.String(), "/ObjStm")
		data := encryptPDF(t, plain.Bytes(), model.NewAESConfiguration("user-secret", "owner-secret", 256))
		rep, raw := run(t, eng, "locked.pdf", data)
		require.Equal(t, &inspect.PDFReport{Version: "1.7", Encrypted: true, RequiresPassword: true}, rep.PDF)
		pdf := section(t, raw, "pdf")
		for _, k := range []string{"page_count", "text_layer", "page_size"} {
			v, ok := pdf[k]
			require.True(t, ok, k)
			require.Nil(t, v, k)
		}
	})

	t.Run("CorruptIsCorruptedFile", func(t *testing.T) {
		full := reportDoc.bytes()
		for name, data := range map[string][]byte{
			"garbage":   []byte("%PDF-1.7\n" + strings.Repeat("this is not a pdf body ", 50)),
			"header":    []byte("%PDF-1.4\n%%EOF\n"),
			"truncated": full[:len(full)/3],
		} {
			_, _, err := runErr(t, eng, name+".pdf", data, "")
			requireCode(t, err, domain.CodeCorruptedFile, name)
			require.False(t, domain.Retryable(err))
		}
	})
}

func encryptPDF(t *testing.T, plain []byte, conf *model.Configuration) []byte {
	t.Helper()
	var out bytes.Buffer
	require.NoError(t, api.Encrypt(bytes.NewReader(plain), &out, conf))
	return out.Bytes()
}

// ---- images ----

func rgbaImage(w, h int) *image.RGBA {
	m := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			m.Set(x, y, color.RGBA{uint8(x * 7), uint8(y * 5), 128, 255})
		}
	}
	return m
}

func grayImage(w, h int) *image.Gray {
	m := image.NewGray(image.Rect(0, 0, w, h))
	for i := range m.Pix {
		m.Pix[i] = uint8(i)
	}
	return m
}

func pngBytes(t *testing.T, m image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, m))
	return b.Bytes()
}

func jpegBytes(t *testing.T, m image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, jpeg.Encode(&b, m, &jpeg.Options{Quality: 90}))
	return b.Bytes()
}

// exifTIFF is a TIFF structure with one IFD holding the Orientation tag.
func exifTIFF(order binary.ByteOrder, orientation uint16) []byte {
	b := make([]byte, 8+2+12+4)
	if order == binary.LittleEndian {
		copy(b, "II*\x00")
	} else {
		copy(b, "MM\x00*")
	}
	order.PutUint32(b[4:], 8)
	order.PutUint16(b[8:], 1)
	e := b[10:22]
	order.PutUint16(e[0:], 0x0112)
	order.PutUint16(e[2:], 3) // SHORT
	order.PutUint32(e[4:], 1)
	order.PutUint16(e[8:], orientation)
	return b
}

// withExif inserts an APP1 Exif segment right after the JPEG's SOI marker.
func withExif(jpg, tiffData []byte) []byte {
	payload := append([]byte("Exif\x00\x00"), tiffData...)
	seg := []byte{0xFF, 0xE1, 0, 0}
	binary.BigEndian.PutUint16(seg[2:], uint16(len(payload)+2))
	out := append([]byte{}, jpg[:2]...)
	out = append(out, seg...)
	out = append(out, payload...)
	return append(out, jpg[2:]...)
}

func pngChunk(typ string, data []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(data)))
	b = append(b, typ...)
	b = append(b, data...)
	return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(append([]byte(typ), data...)))
}

// hugePNG is a PNG header declaring w×h pixels with no image data: headers only.
func hugePNG(w, h uint32) []byte {
	ihdr := binary.BigEndian.AppendUint32(nil, w)
	ihdr = binary.BigEndian.AppendUint32(ihdr, h)
	ihdr = append(ihdr, 8, 2, 0, 0, 0) // 8-bit truecolor
	b := []byte("\x89PNG\r\n\x1a\n")
	b = append(b, pngChunk("IHDR", ihdr)...)
	return append(b, pngChunk("IEND", nil)...)
}

// riffChunk is one WebP chunk, padded to an even size.
func riffChunk(id string, data []byte) []byte {
	b := append([]byte(id), binary.LittleEndian.AppendUint32(nil, uint32(len(data)))...)
	b = append(b, data...)
	if len(data)%2 == 1 {
		b = append(b, 0)
	}
	return b
}

func webpFile(chunks ...[]byte) []byte {
	body := []byte("WEBP")
	for _, c := range chunks {
		body = append(body, c...)
	}
	return append(append([]byte("RIFF"), binary.LittleEndian.AppendUint32(nil, uint32(len(body)))...), body...)
}

// vp8lHeader is a lossless WebP bitstream header for w×h; decoders need no more to
// know the size.
func vp8lHeader(w, h int) []byte {
	v := uint32(w-1) | uint32(h-1)<<14
	return append([]byte{0x2f}, binary.LittleEndian.AppendUint32(nil, v)...)
}

func vp8xChunk(flags byte, w, h int) []byte {
	d := make([]byte, 10)
	d[0] = flags
	d[4], d[5], d[6] = byte(w-1), byte((w-1)>>8), byte((w-1)>>16)
	d[7], d[8], d[9] = byte(h-1), byte((h-1)>>8), byte((h-1)>>16)
	return riffChunk("VP8X", d)
}

// tiffGray is an uncompressed 8-bit grayscale TIFF, big-endian, with an Orientation.
func tiffGray(w, h int, orientation uint16) []byte {
	order := binary.BigEndian
	const nTags = 10
	ifdOff := 8
	dataOff := ifdOff + 2 + nTags*12 + 4
	b := make([]byte, dataOff+w*h)
	copy(b, "MM\x00*")
	order.PutUint32(b[4:], uint32(ifdOff))
	order.PutUint16(b[ifdOff:], nTags)
	tags := [][3]uint32{ // tag, type, value (SHORT=3, LONG=4)
		{256, 4, uint32(w)}, {257, 4, uint32(h)}, {258, 3, 8}, {259, 3, 1}, {262, 3, 1},
		{273, 4, uint32(dataOff)}, {274, 3, uint32(orientation)}, {277, 3, 1}, {278, 4, uint32(h)}, {279, 4, uint32(w * h)},
	}
	for i, tg := range tags {
		e := b[ifdOff+2+12*i:]
		order.PutUint16(e[0:], uint16(tg[0]))
		order.PutUint16(e[2:], uint16(tg[1]))
		order.PutUint32(e[4:], 1)
		if tg[1] == 3 {
			order.PutUint16(e[8:], uint16(tg[2]))
		} else {
			order.PutUint32(e[8:], tg[2])
		}
	}
	return b
}

func TestImage(t *testing.T) {
	t.Parallel()
	eng := newEngine(t, inspect.DefaultConfig())

	pal := image.NewPaletted(image.Rect(0, 0, 10, 10), color.Palette{color.Black, color.White, color.RGBA{255, 0, 0, 255}, color.RGBA{0, 0, 255, 255}})
	gray16 := image.NewGray16(image.Rect(0, 0, 7, 3))
	gray16.SetGray16(1, 1, color.Gray16{Y: 40000})
	var tiffRGBA, bmpRGBA, bmpGray bytes.Buffer
	require.NoError(t, tiff.Encode(&tiffRGBA, rgbaImage(33, 17), nil))
	require.NoError(t, bmp.Encode(&bmpRGBA, rgbaImage(12, 9)))
	require.NoError(t, bmp.Encode(&bmpGray, grayImage(8, 6)))

	frame := func(c uint8) *image.Paletted {
		m := image.NewPaletted(image.Rect(0, 0, 16, 8), palette.Plan9[:4])
		for i := range m.Pix {
			m.Pix[i] = c
		}
		return m
	}
	var anim bytes.Buffer
	require.NoError(t, gif.EncodeAll(&anim, &gif.GIF{
		Image: []*image.Paletted{frame(0), frame(1), frame(2)}, Delay: []int{10, 10, 10},
		Config: image.Config{ColorModel: color.Palette(palette.Plan9[:4]), Width: 16, Height: 8},
	}))
	var still bytes.Buffer
	require.NoError(t, gif.Encode(&still, frame(3), nil))

	// Variants the standard decoders refuse, made by editing headers: the report comes
	// from the headers instead.
	jpeg12 := jpegBytes(t, rgbaImage(50, 40))
	sof := bytes.Index(jpeg12, []byte{0xFF, 0xC0})
	jpeg12[sof+4] = 12
	arithmetic := jpegBytes(t, grayImage(24, 16))
	arithmetic[bytes.Index(arithmetic, []byte{0xFF, 0xC0})+1] = 0xC9
	rle := bytes.Clone(bmpGray.Bytes())
	binary.LittleEndian.PutUint32(rle[30:], 1) // BI_RLE8
	for _, err := range []error{
		func() error { _, err := jpeg.DecodeConfig(bytes.NewReader(jpeg12)); return err }(),
		func() error { _, err := jpeg.DecodeConfig(bytes.NewReader(arithmetic)); return err }(),
		func() error { _, err := bmp.DecodeConfig(bytes.NewReader(rle)); return err }(),
	} {
		require.Error(t, err, "the fixture must need the header fallback")
	}

	exifOrientation8 := append([]byte("Exif\x00\x00"), exifTIFF(binary.LittleEndian, 8)...)

	for _, tc := range []struct {
		name string
		data []byte
		mime string
		want inspect.ImageReport
	}{
		{"PNGRGBA", pngBytes(t, rgbaImage(64, 48)), "image/png",
			inspect.ImageReport{Width: 64, Height: 48, StoredWidth: 64, StoredHeight: 48, Megapixels: 0.003072, Orientation: 1, ColorSpace: "srgb", BitDepth: 8}},
		{"PNGGray", pngBytes(t, grayImage(30, 20)), "image/png",
			inspect.ImageReport{Width: 30, Height: 20, StoredWidth: 30, StoredHeight: 20, Megapixels: 0.0006, Orientation: 1, ColorSpace: "gray", BitDepth: 8}},
		{"PNGGray16", pngBytes(t, gray16), "image/png",
			inspect.ImageReport{Width: 7, Height: 3, StoredWidth: 7, StoredHeight: 3, Megapixels: 0.000021, Orientation: 1, ColorSpace: "gray", BitDepth: 16}},
		{"PNGPaletted", pngBytes(t, pal), "image/png",
			inspect.ImageReport{Width: 10, Height: 10, StoredWidth: 10, StoredHeight: 10, Megapixels: 0.0001, Orientation: 1, ColorSpace: "paletted", BitDepth: 2}},
		{"JPEGColour", jpegBytes(t, rgbaImage(50, 40)), "image/jpeg",
			inspect.ImageReport{Width: 50, Height: 40, StoredWidth: 50, StoredHeight: 40, Megapixels: 0.002, Orientation: 1, ColorSpace: "ycbcr", BitDepth: 8}},
		{"JPEGGray", jpegBytes(t, grayImage(16, 16)), "image/jpeg",
			inspect.ImageReport{Width: 16, Height: 16, StoredWidth: 16, StoredHeight: 16, Megapixels: 0.000256, Orientation: 1, ColorSpace: "gray", BitDepth: 8}},
		{"JPEGExifOrientation", withExif(jpegBytes(t, rgbaImage(40, 30)), exifTIFF(binary.BigEndian, 6)), "image/jpeg",
			inspect.ImageReport{Width: 30, Height: 40, StoredWidth: 40, StoredHeight: 30, Megapixels: 0.0012, Orientation: 6, ColorSpace: "ycbcr", BitDepth: 8}},
		{"JPEGExifLittleEndian", withExif(jpegBytes(t, grayImage(8, 8)), exifTIFF(binary.LittleEndian, 3)), "image/jpeg",
			inspect.ImageReport{Width: 8, Height: 8, StoredWidth: 8, StoredHeight: 8, Megapixels: 0.000064, Orientation: 3, ColorSpace: "gray", BitDepth: 8}},
		{"JPEG12BitFromHeaders", jpeg12, "image/jpeg",
			inspect.ImageReport{Width: 50, Height: 40, StoredWidth: 50, StoredHeight: 40, Megapixels: 0.002, Orientation: 1, ColorSpace: "ycbcr", BitDepth: 12}},
		{"JPEGArithmeticFromHeaders", arithmetic, "image/jpeg",
			inspect.ImageReport{Width: 24, Height: 16, StoredWidth: 24, StoredHeight: 16, Megapixels: 0.000384, Orientation: 1, ColorSpace: "gray", BitDepth: 8}},
		{"BMPRLEFromHeaders", rle, "image/bmp",
			inspect.ImageReport{Width: 8, Height: 6, StoredWidth: 8, StoredHeight: 6, Megapixels: 0.000048, Orientation: 1, ColorSpace: "paletted", BitDepth: 8}},
		{"GIFAnimated", anim.Bytes(), "image/gif",
			inspect.ImageReport{Width: 16, Height: 8, StoredWidth: 16, StoredHeight: 8, Megapixels: 0.000128, Orientation: 1, ColorSpace: "paletted", BitDepth: 2, Frames: 3}},
		{"GIFStill", still.Bytes(), "image/gif",
			inspect.ImageReport{Width: 16, Height: 8, StoredWidth: 16, StoredHeight: 8, Megapixels: 0.000128, Orientation: 1, ColorSpace: "paletted", BitDepth: 2, Frames: 1}},
		{"TIFFRGBA", tiffRGBA.Bytes(), "image/tiff",
			inspect.ImageReport{Width: 33, Height: 17, StoredWidth: 33, StoredHeight: 17, Megapixels: 0.000561, Orientation: 1, ColorSpace: "srgb", BitDepth: 8}},
		{"TIFFGrayOrientation", tiffGray(5, 4, 5), "image/tiff",
			inspect.ImageReport{Width: 4, Height: 5, StoredWidth: 5, StoredHeight: 4, Megapixels: 0.00002, Orientation: 5, ColorSpace: "gray", BitDepth: 8}},
		{"BMPRGBA", bmpRGBA.Bytes(), "image/bmp",
			inspect.ImageReport{Width: 12, Height: 9, StoredWidth: 12, StoredHeight: 9, Megapixels: 0.000108, Orientation: 1, ColorSpace: "srgb", BitDepth: 8}},
		{"BMPGray", bmpGray.Bytes(), "image/bmp",
			inspect.ImageReport{Width: 8, Height: 6, StoredWidth: 8, StoredHeight: 6, Megapixels: 0.000048, Orientation: 1, ColorSpace: "paletted", BitDepth: 8}},
		{"WebPLossless", webpFile(riffChunk("VP8L", vp8lHeader(300, 200))), "image/webp",
			inspect.ImageReport{Width: 300, Height: 200, StoredWidth: 300, StoredHeight: 200, Megapixels: 0.06, Orientation: 1, ColorSpace: "srgb", Frames: 1}},
		{"WebPAnimatedWithExif", webpFile(vp8xChunk(0x02|0x08, 120, 90), riffChunk("ANIM", make([]byte, 6)),
			riffChunk("ANMF", make([]byte, 17)), riffChunk("ANMF", make([]byte, 17)), riffChunk("EXIF", exifOrientation8)), "image/webp",
			inspect.ImageReport{Width: 90, Height: 120, StoredWidth: 120, StoredHeight: 90, Megapixels: 0.0108, Orientation: 8, ColorSpace: "ycbcr", Frames: 2}},
		{"HugeDimensionsFlaggedNotRefused", hugePNG(20000, 15000), "image/png",
			inspect.ImageReport{Width: 20000, Height: 15000, StoredWidth: 20000, StoredHeight: 15000, Megapixels: 300, ExceedsPixelLimit: true, Orientation: 1, ColorSpace: "srgb", BitDepth: 8}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, raw := run(t, eng, "img", tc.data)
			require.Equal(t, tc.mime, rep.Format.MIMEType)
			require.Equal(t, &tc.want, rep.Image)
			require.Nil(t, rep.PDF)
			img := section(t, raw, "image")
			require.Contains(t, img, "exceeds_pixel_limit")
			require.Contains(t, img, "orientation")
		})
	}

	t.Run("PixelLimitIsConfigurable", func(t *testing.T) {
		rep, _ := run(t, newEngine(t, inspect.Config{MaxPixels: 1000}), "img.png", pngBytes(t, rgbaImage(40, 30)))
		require.True(t, rep.Image.ExceedsPixelLimit)
	})

	t.Run("CorruptHeaderIsCorruptedFile", func(t *testing.T) {
		jpg := jpegBytes(t, rgbaImage(8, 8))
		for name, data := range map[string][]byte{
			"png":  append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{0x42}, 64)...),
			"jpeg": jpg[:20],
			"gif":  []byte("GIF89a\x01"),
			"webp": webpFile(riffChunk("VP8L", []byte{0x00, 1, 2, 3, 4})),
			"bmp":  bmpRGBA.Bytes()[:20],
		} {
			_, _, err := runErr(t, eng, name, data, "")
			requireCode(t, err, domain.CodeCorruptedFile, name)
		}
	})
}

// ---- office ----

type zipPart struct {
	name, body string
	store      bool // stored, not deflated (ODF's first entry must be)
}

func zipBytes(t *testing.T, parts ...zipPart) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, p := range parts {
		method := zip.Deflate
		if p.store {
			method = zip.Store
		}
		w, err := zw.CreateHeader(&zip.FileHeader{Name: p.name, Method: method})
		require.NoError(t, err)
		_, err = w.Write([]byte(p.body))
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	return b.Bytes()
}

const contentTypes = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="xml" ContentType="application/xml"/></Types>`

func rootRels(main string) string {
	return `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">
<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="` + main + `"/>
<Relationship Id="rId2" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/extended-properties" Target="docProps/app.xml"/>
</Relationships>`
}

func appXML(inner string) string {
	return `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Properties xmlns="http://schemas.openxmlformats.org/officeDocument/2006/extended-properties" xmlns:vt="http://schemas.openxmlformats.org/officeDocument/2006/docPropsVTypes">` +
		inner + `</Properties>`
}

func workbook(sheets int) string {
	var s strings.Builder
	s.WriteString(`<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><bookViews><workbookView/></bookViews><sheets>`)
	for i := 1; i <= sheets; i++ {
		fmt.Fprintf(&s, `<sheet name="Sheet%d" sheetId="%d" r:id="rId%d"/>`, i, i, i)
	}
	s.WriteString(`</sheets><definedNames><definedName name="sheet">x</definedName></definedNames></workbook>`)
	return s.String()
}

const odfMeta = `<?xml version="1.0" encoding="UTF-8"?>
<office:document-meta xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:meta="urn:oasis:names:tc:opendocument:xmlns:meta:1.0" office:version="1.3">
<office:meta><meta:generator>LibreOffice/7.4.7.2$Linux_X86_64 LibreOffice_project/40$Build-2</meta:generator>
<meta:document-statistic meta:table-count="%d" meta:page-count="%d" meta:word-count="%d"/></office:meta></office:document-meta>`

const odfNS = `xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"`

func odfContent(body string) string {
	return `<?xml version="1.0" encoding="UTF-8"?><office:document-content ` + odfNS + `><office:body>` + body + `</office:body></office:document-content>`
}

func docx(t *testing.T) []byte {
	return zipBytes(t,
		zipPart{name: "[Content_Types].xml", body: contentTypes},
		zipPart{name: "_rels/.rels", body: rootRels("word/document.xml")},
		zipPart{name: "word/document.xml", body: `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r><w:t>Hello</w:t></w:r></w:p></w:body></w:document>`},
		zipPart{name: "docProps/app.xml", body: appXML(`<Template>Normal.dotm</Template><TotalTime>3</TotalTime><Pages>3</Pages><Words>250</Words><Characters>1400</Characters><Application>Microsoft Office Word</Application>`)},
	)
}

func TestOffice(t *testing.T) {
	t.Parallel()
	eng := newEngine(t, inspect.DefaultConfig())

	odt := zipBytes(t,
		zipPart{name: "mimetype", body: "application/vnd.oasis.opendocument.text", store: true},
		zipPart{name: "meta.xml", body: fmt.Sprintf(odfMeta, 0, 2, 42)},
		zipPart{name: "content.xml", body: odfContent(`<office:text><text:p>Hi</text:p></office:text>`)},
	)
	ods := zipBytes(t,
		zipPart{name: "mimetype", body: "application/vnd.oasis.opendocument.spreadsheet", store: true},
		zipPart{name: "meta.xml", body: fmt.Sprintf(odfMeta, 2, 0, 0)},
		zipPart{name: "content.xml", body: odfContent(`<office:spreadsheet><table:table table:name="A"><table:table-row/></table:table><table:table table:name="B"/></office:spreadsheet>`)},
	)
	odp := zipBytes(t,
		zipPart{name: "mimetype", body: "application/vnd.oasis.opendocument.presentation", store: true},
		zipPart{name: "meta.xml", body: fmt.Sprintf(odfMeta, 0, 0, 7)},
		zipPart{name: "content.xml", body: odfContent(`<office:presentation><draw:page draw:name="1"/><draw:page draw:name="2"/><draw:page draw:name="3"/></office:presentation>`)},
	)
	xlsx := zipBytes(t,
		zipPart{name: "[Content_Types].xml", body: contentTypes},
		zipPart{name: "_rels/.rels", body: rootRels("xl/workbook.xml")},
		zipPart{name: "xl/workbook.xml", body: workbook(3)},
		zipPart{name: "xl/worksheets/sheet1.xml", body: `<worksheet/>`},
		zipPart{name: "docProps/app.xml", body: appXML(`<Application>Microsoft Excel</Application><DocSecurity>0</DocSecurity>`)},
	)
	pptxParts := []zipPart{
		{name: "[Content_Types].xml", body: contentTypes},
		{name: "_rels/.rels", body: rootRels("ppt/presentation.xml")},
		{name: "ppt/presentation.xml", body: `<p:presentation xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main"/>`},
		{name: "docProps/app.xml", body: appXML(`<Application>Microsoft Office PowerPoint</Application><Slides>4</Slides>`)},
		{name: "ppt/slides/_rels/slide1.xml.rels", body: `<Relationships/>`},
		{name: "ppt/slideLayouts/slideLayout1.xml", body: `<p:sldLayout xmlns:p="x"/>`},
	}
	for i := 1; i <= 4; i++ {
		pptxParts = append(pptxParts, zipPart{name: fmt.Sprintf("ppt/slides/slide%d.xml", i), body: `<p:sld xmlns:p="x"/>`})
	}
	pptx := zipBytes(t, pptxParts...)

	for _, tc := range []struct {
		name string
		data []byte
		ext  string
		want inspect.OfficeReport
	}{
		{"DOCX", docx(t), "docx", inspect.OfficeReport{DocumentType: "word_processing", Application: "Microsoft Office Word", Pages: ptr(3), Words: ptr(250)}},
		{"XLSX", xlsx, "xlsx", inspect.OfficeReport{DocumentType: "spreadsheet", Application: "Microsoft Excel", Sheets: ptr(3)}},
		{"PPTX", pptx, "pptx", inspect.OfficeReport{DocumentType: "presentation", Application: "Microsoft Office PowerPoint", Slides: ptr(4)}},
		{"ODT", odt, "odt", inspect.OfficeReport{DocumentType: "word_processing", Application: "LibreOffice/7.4.7.2$Linux_X86_64 LibreOffice_project/40$Build-2", Pages: ptr(2), Words: ptr(42)}},
		{"ODS", ods, "ods", inspect.OfficeReport{DocumentType: "spreadsheet", Application: "LibreOffice/7.4.7.2$Linux_X86_64 LibreOffice_project/40$Build-2", Sheets: ptr(2)}},
		{"ODP", odp, "odp", inspect.OfficeReport{DocumentType: "presentation", Application: "LibreOffice/7.4.7.2$Linux_X86_64 LibreOffice_project/40$Build-2", Slides: ptr(3)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, raw := run(t, eng, "doc."+tc.ext, tc.data)
			require.Equal(t, tc.ext, rep.Format.Extension)
			require.Equal(t, &tc.want, rep.Office)
			require.Equal(t, false, section(t, raw, "office")["encrypted"])
		})
	}

	t.Run("PartDeclaringHugeSizeIsSkippedUnread", func(t *testing.T) {
		// A workbook whose header claims a terabyte: it must be skipped on its
		// declaration, without inflating anything.
		var b bytes.Buffer
		zw := zip.NewWriter(&b)
		for _, p := range []zipPart{{name: "[Content_Types].xml", body: contentTypes}, {name: "_rels/.rels", body: rootRels("xl/workbook.xml")}} {
			w, err := zw.Create(p.name)
			require.NoError(t, err)
			_, _ = w.Write([]byte(p.body))
		}
		var compressed bytes.Buffer
		fw, _ := flate.NewWriter(&compressed, flate.BestCompression)
		_, _ = fw.Write([]byte(workbook(2)))
		require.NoError(t, fw.Close())
		w, err := zw.CreateRaw(&zip.FileHeader{Name: "xl/workbook.xml", Method: zip.Deflate,
			CompressedSize64: uint64(compressed.Len()), UncompressedSize64: 1 << 40, CRC32: 0})
		require.NoError(t, err)
		_, _ = w.Write(compressed.Bytes())
		require.NoError(t, zw.Close())

		rep, _ := run(t, eng, "bomb.xlsx", b.Bytes())
		require.Equal(t, &inspect.OfficeReport{DocumentType: "spreadsheet", SkippedParts: []string{"xl/workbook.xml"}}, rep.Office)
	})

	t.Run("PartOverXMLLimitIsSkipped", func(t *testing.T) {
		// 4 MiB of XML that deflates to a few kilobytes, against a 1 MiB limit.
		big := odfContent(`<office:spreadsheet><table:table/>` + strings.Repeat("<table:table-row/>", 4<<20/18) + `</office:spreadsheet>`)
		data := zipBytes(t,
			zipPart{name: "mimetype", body: "application/vnd.oasis.opendocument.spreadsheet", store: true},
			zipPart{name: "meta.xml", body: fmt.Sprintf(odfMeta, 5, 0, 0)},
			zipPart{name: "content.xml", body: big},
		)
		require.Less(t, len(data), 1<<20)
		rep, _ := run(t, newEngine(t, inspect.Config{MaxXMLBytes: 1 << 20}), "big.ods", data)
		// The sheet count falls back to the statistics in meta.xml.
		require.Equal(t, ptr(5), rep.Office.Sheets)
		require.Equal(t, []string{"content.xml"}, rep.Office.SkippedParts)
	})

	t.Run("SizeLyingPartIsCorrupted", func(t *testing.T) {
		// Declares 100 bytes, inflates to 1 MiB: archive/zip stops at the declared size.
		var b bytes.Buffer
		zw := zip.NewWriter(&b)
		w, _ := zw.Create("[Content_Types].xml")
		_, _ = w.Write([]byte(contentTypes))
		var compressed bytes.Buffer
		fw, _ := flate.NewWriter(&compressed, flate.BestCompression)
		body := workbook(1) + strings.Repeat(" ", 1<<20)
		_, _ = fw.Write([]byte(body))
		require.NoError(t, fw.Close())
		w, err := zw.CreateRaw(&zip.FileHeader{Name: "xl/workbook.xml", Method: zip.Deflate,
			CompressedSize64: uint64(compressed.Len()), UncompressedSize64: 100, CRC32: crc32.ChecksumIEEE([]byte(body))})
		require.NoError(t, err)
		_, _ = w.Write(compressed.Bytes())
		require.NoError(t, zw.Close())
		_, _, err = runErr(t, eng, "liar.xlsx", b.Bytes(), "")
		requireCode(t, err, domain.CodeCorruptedFile)
	})

	t.Run("TooManyEntriesIsCorrupted", func(t *testing.T) {
		parts := []zipPart{{name: "[Content_Types].xml", body: contentTypes}, {name: "word/document.xml", body: "<w:document xmlns:w='x'/>"}}
		for i := range 10_000 {
			parts = append(parts, zipPart{name: fmt.Sprintf("word/media/f%d.xml", i), store: true})
		}
		_, _, err := runErr(t, eng, "many.docx", zipBytes(t, parts...), "")
		requireCode(t, err, domain.CodeCorruptedFile)
		require.Contains(t, err.Error(), "holds 10002 entries")

		_, _, err = runErr(t, newEngine(t, inspect.Config{MaxZipEntries: 3}), "small.docx", docx(t), "")
		requireCode(t, err, domain.CodeCorruptedFile)
	})

	t.Run("MalformedXMLIsCorrupted", func(t *testing.T) {
		data := zipBytes(t,
			zipPart{name: "[Content_Types].xml", body: contentTypes},
			zipPart{name: "xl/workbook.xml", body: `<workbook><sheets><sheet name="a"`},
		)
		_, _, err := runErr(t, eng, "broken.xlsx", data, "")
		requireCode(t, err, domain.CodeCorruptedFile)
	})

	t.Run("TruncatedZipIsCorrupted", func(t *testing.T) {
		full := docx(t)
		_, _, err := runErr(t, eng, "cut.docx", full[:len(full)-30], "")
		requireCode(t, err, domain.CodeCorruptedFile)
	})

	t.Run("PasswordProtectedOOXML", func(t *testing.T) {
		rep, raw := run(t, eng, "secret.docx", encryptedOOXML())
		require.Equal(t, "application/x-ole-storage", rep.Format.MIMEType)
		require.Equal(t, &inspect.OfficeReport{Encrypted: true}, rep.Office)
		require.Equal(t, map[string]any{"encrypted": true}, raw["office"])
	})

	t.Run("PlainCompoundFileHasNoOfficeSection", func(t *testing.T) {
		rep, _ := run(t, eng, "thing.bin", compoundFile("Contents"))
		require.Equal(t, "application/x-ole-storage", rep.Format.MIMEType)
		require.Nil(t, rep.Office)
	})
}

// compoundFile is a minimal CFB (version 3, 512-byte sectors) holding one stream
// called streamName besides "EncryptionInfo": header, one FAT sector, one directory
// sector, one data sector.
func compoundFile(streamName string) []byte {
	const sector = 512
	b := make([]byte, 4*sector)
	le := binary.LittleEndian
	copy(b, []byte{0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1})
	le.PutUint16(b[0x18:], 0x3E)
	le.PutUint16(b[0x1A:], 3)
	le.PutUint16(b[0x1C:], 0xFFFE)
	le.PutUint16(b[0x1E:], 9)
	le.PutUint16(b[0x20:], 6)
	le.PutUint32(b[0x2C:], 1)          // FAT sectors
	le.PutUint32(b[0x30:], 1)          // first directory sector
	le.PutUint32(b[0x38:], 4096)       // mini stream cutoff
	le.PutUint32(b[0x3C:], 0xFFFFFFFE) // no mini FAT
	le.PutUint32(b[0x44:], 0xFFFFFFFE) // no DIFAT sectors
	le.PutUint32(b[0x4C:], 0)          // the FAT is sector 0
	for i := 0x50; i < sector; i += 4 {
		le.PutUint32(b[i:], 0xFFFFFFFF)
	}
	fat := b[sector : 2*sector]
	for i := range sector / 4 {
		le.PutUint32(fat[4*i:], 0xFFFFFFFF)
	}
	le.PutUint32(fat[0:], 0xFFFFFFFD) // sector 0: FAT
	le.PutUint32(fat[4:], 0xFFFFFFFE) // sector 1: directory, end of chain
	le.PutUint32(fat[8:], 0xFFFFFFFE) // sector 2: the stream's data
	entry := func(i int, name string, typ byte, start, size uint32, child uint32) {
		e := b[2*sector+128*i : 2*sector+128*(i+1)]
		for j, c := range name {
			le.PutUint16(e[2*j:], uint16(c))
		}
		le.PutUint16(e[64:], uint16(2*len(name)+2))
		e[66], e[67] = typ, 1
		le.PutUint32(e[68:], 0xFFFFFFFF) // left sibling
		le.PutUint32(e[72:], 0xFFFFFFFF) // right sibling
		le.PutUint32(e[76:], child)
		le.PutUint32(e[116:], start)
		le.PutUint32(e[120:], size)
	}
	entry(0, "Root Entry", 5, 0xFFFFFFFE, 0, 1)
	entry(1, "EncryptionInfo", 2, 0xFFFFFFFE, 0, 0xFFFFFFFF)
	le.PutUint32(b[2*sector+128+72:], 2) // EncryptionInfo's right sibling
	entry(2, streamName, 2, 2, sector, 0xFFFFFFFF)
	copy(b[3*sector:], bytes.Repeat([]byte{0x5A, 0xA5}, sector/2))
	return b
}

func encryptedOOXML() []byte { return compoundFile("EncryptedPackage") }

// ---- text ----

func TestText(t *testing.T) {
	t.Parallel()
	eng := newEngine(t, inspect.DefaultConfig())
	utf16le := func(s string, bom bool) []byte {
		var b []byte
		if bom {
			b = []byte{0xFF, 0xFE}
		}
		for _, r := range s {
			if r > 0xFFFF {
				r -= 0x10000
				b = binary.LittleEndian.AppendUint16(b, uint16(0xD800+(r>>10)))
				b = binary.LittleEndian.AppendUint16(b, uint16(0xDC00+(r&0x3FF)))
				continue
			}
			b = binary.LittleEndian.AppendUint16(b, uint16(r))
		}
		return b
	}
	// Multi-byte characters straddle every 64 KiB read boundary somewhere in here.
	long := strings.Repeat("añ€😀\n", 50_000)

	for _, tc := range []struct {
		name string
		data []byte
		mime string
		want inspect.TextReport
	}{
		{"MixedLineEnds", []byte("héllo\nworld\r\nthird\rlast"), "text/plain", inspect.TextReport{Encoding: "utf-8", LineCount: 4, CharCount: 23}},
		{"TrailingNewline", []byte("one\ntwo\n"), "text/plain", inspect.TextReport{Encoding: "utf-8", LineCount: 2, CharCount: 8}},
		{"Empty", []byte{}, "text/plain", inspect.TextReport{Encoding: "utf-8", LineCount: 0, CharCount: 0}},
		{"BlankLines", []byte("\n\n\n"), "text/plain", inspect.TextReport{Encoding: "utf-8", LineCount: 3, CharCount: 3}},
		{"CSV", []byte("name,city\nZoë,Köln\nLi,北京\n"), "text/csv", inspect.TextReport{Encoding: "utf-8", LineCount: 3, CharCount: 25}},
		{"UTF8BOM", []byte("\xEF\xBB\xBFa\nb"), "text/plain", inspect.TextReport{Encoding: "utf-8", LineCount: 2, CharCount: 3}},
		{"UTF16LE", utf16le("hi 😀\r\nthere\n", true), "text/plain", inspect.TextReport{Encoding: "utf-16le", LineCount: 2, CharCount: 12}},
		{"Latin1IsUnknown", []byte("caf\xe9\ncr\xe8me\n"), "text/plain", inspect.TextReport{Encoding: "unknown", LineCount: 2, CharCount: 11}},
		{"LongMultiByte", []byte(long), "text/plain", inspect.TextReport{Encoding: "utf-8", LineCount: 50_000, CharCount: 250_000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, _ := run(t, eng, "notes.txt", tc.data)
			require.Equal(t, tc.mime, rep.Format.MIMEType)
			require.Equal(t, &tc.want, rep.Text)
			require.Equal(t, int64(len(tc.data)), rep.ByteSize)
		})
	}
}

// TestTextReportsProgress: counting a long text tells how far it is, up to 100.
func TestTextReportsProgress(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	data := []byte(strings.Repeat("the quick brown fox\n", 100_000)) // 2 MB: about 30 reads
	in := filepath.Join(dir, "input")
	require.NoError(t, os.WriteFile(in, data, 0o600))
	var seen []int
	_, err := newEngine(t, inspect.DefaultConfig()).Run(context.Background(), domain.EngineInput{
		Operation: "inspect", Path: in, Filename: "a.txt", Format: domain.Detect(data[:domain.DetectSniffBytes]),
		ByteSize: int64(len(data)), WorkDir: dir, Progress: func(p int) { seen = append(seen, p) },
	})
	require.NoError(t, err)
	require.Greater(t, len(seen), 5, "progress along the way: %v", seen)
	require.Equal(t, 100, seen[len(seen)-1])
	require.IsIncreasing(t, seen)
}

func newEngine(t *testing.T, cfg inspect.Config) *inspect.Engine {
	t.Helper()
	e, err := inspect.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}
