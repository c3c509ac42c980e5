package image_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	goimage "image"
	"image/color"
	"image/color/palette"
	"image/gif"
	"image/jpeg"
	"image/png"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/image/bmp"
	"golang.org/x/image/tiff"
	"golang.org/x/image/webp"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/jobs/ops/enginetest"
	imageop "github.com/filemill/filemill/jobs/ops/image"
	"github.com/filemill/filemill/jobs/ops/pdf/pdftest"
)

var (
	engOnce sync.Once
	eng     *imageop.Engine
	engErr  error
)

// engine returns the package's shared engine (libvips is process-wide anyway).
func engine(t testing.TB) *imageop.Engine {
	t.Helper()
	engOnce.Do(func() {
		eng, engErr = imageop.New(imageop.DefaultConfig())
		if engErr == nil {
			engErr = eng.Check(context.Background())
		}
	})
	if engErr != nil {
		t.Fatalf("libvips is not usable here: %v\nInstall it with: apt-get install -y --no-install-recommends libvips-dev", engErr)
	}
	return eng
}

// result is one conversion's output.
type result struct {
	art  domain.EngineArtifact
	data []byte
}

func convertWith(t testing.TB, e *imageop.Engine, name string, data []byte, opts map[string]any) (*result, error) {
	t.Helper()
	dir := t.TempDir()
	in := filepath.Join(dir, "input")
	require.NoError(t, os.WriteFile(in, data, 0o600))
	work := filepath.Join(dir, "work")
	require.NoError(t, os.Mkdir(work, 0o700))
	raw, err := json.Marshal(opts)
	require.NoError(t, err)
	o, err := domain.DecodeOptions(imageop.Specs(), imageop.OperationConvert, raw)
	if err != nil {
		return nil, err
	}
	head := data[:min(len(data), domain.DetectSniffBytes)]
	out, err := e.Run(context.Background(), domain.EngineInput{Operation: "image.convert", Options: o, Path: in,
		Filename: name, Format: domain.Detect(head), ByteSize: int64(len(data)), WorkDir: work})
	if err != nil {
		require.Nil(t, out)
		entries, _ := os.ReadDir(work)
		require.Empty(t, entries, "a failed conversion leaves nothing in the work dir")
		return nil, err
	}
	require.Len(t, out.Artifacts, 1)
	a := out.Artifacts[0]
	require.Equal(t, work, filepath.Dir(a.Path))
	b, err := os.ReadFile(a.Path)
	require.NoError(t, err)
	return &result{art: a, data: b}, nil
}

func convert(t testing.TB, name string, data []byte, opts map[string]any) *result {
	t.Helper()
	r, err := convertWith(t, engine(t), name, data, opts)
	require.NoError(t, err)
	return r
}

func requireCode(t testing.TB, err error, code string) {
	t.Helper()
	require.Error(t, err)
	require.Equal(t, code, domain.ErrorCode(err), "error: %v", err)
}

// decode decodes an output with Go's own decoders (independent of libvips).
func decode(t testing.TB, data []byte) goimage.Image {
	t.Helper()
	var (
		im  goimage.Image
		err error
	)
	switch {
	case bytes.HasPrefix(data, []byte{0xff, 0xd8, 0xff}):
		im, err = jpeg.Decode(bytes.NewReader(data))
	case bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")):
		im, err = png.Decode(bytes.NewReader(data))
	case bytes.HasPrefix(data, []byte("GIF8")):
		im, err = gif.Decode(bytes.NewReader(data))
	case len(data) > 12 && string(data[:4]) == "RIFF" && string(data[8:12]) == "WEBP":
		im, err = webp.Decode(bytes.NewReader(data))
	case bytes.HasPrefix(data, []byte("II*\x00")) || bytes.HasPrefix(data, []byte("MM\x00*")):
		im, err = tiff.Decode(bytes.NewReader(data))
	default:
		t.Fatalf("no Go decoder for output starting %q", data[:min(16, len(data))])
	}
	require.NoError(t, err)
	return im
}

func dims(im goimage.Image) [2]int { return [2]int{im.Bounds().Dx(), im.Bounds().Dy()} }

// rgbAt returns 8-bit RGB at (x, y) relative to the image's origin.
func rgbAt(im goimage.Image, x, y int) [3]int {
	r, g, b, _ := im.At(im.Bounds().Min.X+x, im.Bounds().Min.Y+y).RGBA()
	return [3]int{int(r >> 8), int(g >> 8), int(b >> 8)}
}

func alphaAt(im goimage.Image, x, y int) int {
	_, _, _, a := im.At(im.Bounds().Min.X+x, im.Bounds().Min.Y+y).RGBA()
	return int(a >> 8)
}

// near reports whether two colours are within tol on every channel.
func near(a, b [3]int, tol int) bool {
	for i := range a {
		if d := a[i] - b[i]; d > tol || d < -tol {
			return false
		}
	}
	return true
}

// variance is the mean per-channel variance of a region: detail, not flat colour.
func variance(im goimage.Image, r goimage.Rectangle) float64 {
	var sum, sum2 [3]float64
	n := 0.0
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			c := rgbAt(im, x, y)
			for i := range c {
				sum[i] += float64(c[i])
				sum2[i] += float64(c[i] * c[i])
			}
			n++
		}
	}
	v := 0.0
	for i := range sum {
		m := sum[i] / n
		v += sum2[i]/n - m*m
	}
	return v / 3
}

// photo is a photo-like RGB image: smooth gradients with fine noise.
func photo(w, h int, seed int64) *goimage.NRGBA {
	im := goimage.NewNRGBA(goimage.Rect(0, 0, w, h))
	r := rand.New(rand.NewSource(seed))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			n := r.Intn(32)
			fx, fy := float64(x)/float64(w), float64(y)/float64(h)
			im.SetNRGBA(x, y, color.NRGBA{clamp(200*fx + 30*math.Sin(float64(x)/9) + float64(n)),
				clamp(200*fy + 30*math.Cos(float64(y)/7)), clamp(90 + 60*math.Sin(float64(x+y)/13) + float64(n)), 255})
		}
	}
	return im
}

func clamp(v float64) uint8 { return uint8(math.Max(0, math.Min(255, v))) }

// solid is an image of one colour.
func solid(w, h int, c color.NRGBA) *goimage.NRGBA {
	im := goimage.NewNRGBA(goimage.Rect(0, 0, w, h))
	for i := 0; i < len(im.Pix); i += 4 {
		im.Pix[i], im.Pix[i+1], im.Pix[i+2], im.Pix[i+3] = c.R, c.G, c.B, c.A
	}
	return im
}

// fill paints r of im with c.
func fill(im *goimage.NRGBA, r goimage.Rectangle, c color.NRGBA) {
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			im.SetNRGBA(x, y, c)
		}
	}
}

func encJPEG(t testing.TB, im goimage.Image, q int) []byte {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, jpeg.Encode(&b, im, &jpeg.Options{Quality: q}))
	return b.Bytes()
}

func encPNG(t testing.TB, im goimage.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, im))
	return b.Bytes()
}

func encBMP(t testing.TB, im goimage.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, bmp.Encode(&b, im))
	return b.Bytes()
}

func encTIFF(t testing.TB, im goimage.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, tiff.Encode(&b, im, &tiff.Options{Compression: tiff.Deflate}))
	return b.Bytes()
}

// animatedGIF has n frames, each a solid colour with a moving white square.
func animatedGIF(t testing.TB, w, h, n int) []byte {
	t.Helper()
	g := &gif.GIF{LoopCount: 0}
	for i := 0; i < n; i++ {
		fr := goimage.NewPaletted(goimage.Rect(0, 0, w, h), palette.Plan9)
		c := color.RGBA{uint8(60 * i), 40, uint8(255 - 60*i), 255}
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				fr.Set(x, y, c)
			}
		}
		for y := 0; y < h/4; y++ {
			for x := i * w / n; x < i*w/n+w/4 && x < w; x++ {
				fr.Set(x, y, color.White)
			}
		}
		g.Image = append(g.Image, fr)
		g.Delay = append(g.Delay, 10)
	}
	var b bytes.Buffer
	require.NoError(t, gif.EncodeAll(&b, g))
	return b.Bytes()
}

// jpegSegment is one APPn segment of a JPEG.
type jpegSegment struct {
	marker byte
	data   []byte
}

// jpegSegments lists the APPn and COM segments before the image data.
func jpegSegments(t testing.TB, data []byte) []jpegSegment {
	t.Helper()
	require.True(t, bytes.HasPrefix(data, []byte{0xff, 0xd8}), "not a JPEG")
	var out []jpegSegment
	for i := 2; i+4 <= len(data); {
		require.Equal(t, byte(0xff), data[i], "bad marker at %d", i)
		m := data[i+1]
		if m == 0xda || m == 0xd9 { // start of scan: headers end
			break
		}
		n := int(binary.BigEndian.Uint16(data[i+2:]))
		if m >= 0xe0 && m <= 0xef || m == 0xfe {
			out = append(out, jpegSegment{m, data[i+4 : i+2+n]})
		}
		i += 2 + n
	}
	return out
}

// withJPEGSegments inserts APPn segments right after the SOI marker.
func withJPEGSegments(jpg []byte, segs ...jpegSegment) []byte {
	out := append([]byte{}, jpg[:2]...)
	for _, s := range segs {
		out = append(out, 0xff, s.marker)
		out = binary.BigEndian.AppendUint16(out, uint16(len(s.data)+2))
		out = append(out, s.data...)
	}
	return append(out, jpg[2:]...)
}

// exifSegment builds an APP1 Exif segment with the orientation and, when make is
// set, the camera make (an identifying tag stripping must remove).
func exifSegment(orientation uint16, make string) jpegSegment {
	le := binary.LittleEndian
	var b []byte
	b = append(b, "Exif\x00\x00"...)
	b = append(b, 'I', 'I', 42, 0)
	b = le.AppendUint32(b, 8)
	entries := 1
	if make != "" {
		entries = 2
	}
	b = le.AppendUint16(b, uint16(entries))
	dataOff := 8 + 2 + entries*12 + 4
	if make != "" {
		mk := append([]byte(make), 0)
		b = le.AppendUint16(b, 0x010f) // Make
		b = le.AppendUint16(b, 2)      // ASCII
		b = le.AppendUint32(b, uint32(len(mk)))
		b = le.AppendUint32(b, uint32(dataOff))
	}
	b = le.AppendUint16(b, 0x0112) // Orientation
	b = le.AppendUint16(b, 3)      // SHORT
	b = le.AppendUint32(b, 1)
	b = le.AppendUint16(b, orientation)
	b = le.AppendUint16(b, 0)
	b = le.AppendUint32(b, 0) // no next IFD
	if make != "" {
		b = append(b, append([]byte(make), 0)...)
	}
	return jpegSegment{0xe1, b}
}

// exifOrientation reads the orientation from a JPEG's Exif segment; 0 when there is
// no Exif, 1 when Exif has no orientation tag.
func exifOrientation(t testing.TB, data []byte) int {
	t.Helper()
	for _, s := range jpegSegments(t, data) {
		if s.marker != 0xe1 || !bytes.HasPrefix(s.data, []byte("Exif\x00\x00")) {
			continue
		}
		tf := s.data[6:]
		var bo binary.ByteOrder = binary.LittleEndian
		if tf[0] == 'M' {
			bo = binary.BigEndian
		}
		ifd := int(bo.Uint32(tf[4:]))
		n := int(bo.Uint16(tf[ifd:]))
		for i := 0; i < n; i++ {
			e := tf[ifd+2+12*i:]
			if bo.Uint16(e) == 0x0112 {
				return int(bo.Uint16(e[8:]))
			}
		}
		return 1
	}
	return 0
}

// iccSegments builds the APP2 segment carrying an ICC profile.
func iccSegment(profile []byte) jpegSegment {
	d := append([]byte("ICC_PROFILE\x00"), 1, 1)
	return jpegSegment{0xe2, append(d, profile...)}
}

// jpegICC returns the ICC profile of a JPEG (one segment), or nil.
func jpegICC(t testing.TB, data []byte) []byte {
	t.Helper()
	var out []byte
	for _, s := range jpegSegments(t, data) {
		if s.marker == 0xe2 && bytes.HasPrefix(s.data, []byte("ICC_PROFILE\x00")) {
			out = append(out, s.data[14:]...)
		}
	}
	return out
}

// webpChunks lists the four-character chunk ids of a WebP file in order.
func webpChunks(t testing.TB, data []byte) []string {
	t.Helper()
	require.True(t, len(data) > 12 && string(data[:4]) == "RIFF" && string(data[8:12]) == "WEBP", "not a WebP")
	var ids []string
	for i := 12; i+8 <= len(data); {
		id := string(data[i : i+4])
		n := int(binary.LittleEndian.Uint32(data[i+4:]))
		ids = append(ids, id)
		i += 8 + n + n%2
	}
	return ids
}

// shortenedWebP cuts a WebP's last chunk (the image data) to a third, fixing its size
// and the RIFF size: the container still parses, the picture does not decode.
func shortenedWebP(t testing.TB, data []byte) []byte {
	t.Helper()
	require.True(t, len(data) > 12 && string(data[:4]) == "RIFF" && string(data[8:12]) == "WEBP", "not a WebP")
	last := 12
	for i := 12; i+8 <= len(data); {
		last = i
		n := int(binary.LittleEndian.Uint32(data[i+4:]))
		i += 8 + n + n%2
	}
	n := int(binary.LittleEndian.Uint32(data[last+4:])) / 3 &^ 1
	out := append([]byte(nil), data[:last+8+n]...)
	binary.LittleEndian.PutUint32(out[last+4:], uint32(n))
	binary.LittleEndian.PutUint32(out[4:], uint32(len(out)-8))
	return out
}

func count(ids []string, id string) int {
	n := 0
	for _, s := range ids {
		if s == id {
			n++
		}
	}
	return n
}

// swappedPrimariesProfile is a valid ICC v2 RGB display profile whose red and blue
// primaries are sRGB's blue and red: converting through it to sRGB turns stored red
// into displayed blue, so a test can see the conversion happen.
func swappedPrimariesProfile() []byte {
	be := binary.BigEndian
	s15 := func(b []byte, v float64) []byte { return be.AppendUint32(b, uint32(int32(math.Round(v*65536)))) }
	xyz := func(x, y, z float64) []byte {
		b := append([]byte("XYZ "), 0, 0, 0, 0)
		return s15(s15(s15(b, x), y), z)
	}
	curve := func() []byte {
		b := append([]byte("curv"), 0, 0, 0, 0)
		b = be.AppendUint32(b, 1)
		return be.AppendUint16(b, 0x0233) // gamma 2.2
	}
	desc := func(s string) []byte {
		b := append([]byte("desc"), 0, 0, 0, 0)
		b = be.AppendUint32(b, uint32(len(s)+1))
		b = append(b, s...)
		b = append(b, 0)
		b = append(b, make([]byte, 4+4+2+1+67)...) // no Unicode, no ScriptCode
		return b
	}
	text := func(s string) []byte { return append(append([]byte("text"), 0, 0, 0, 0), append([]byte(s), 0)...) }
	tags := []struct {
		sig  string
		data []byte
	}{
		{"desc", desc("filemill swapped primaries")},
		{"cprt", text("no copyright")},
		{"wtpt", xyz(0.9642, 1.0, 0.8249)},
		// sRGB's D50-adapted primaries, red and blue exchanged.
		{"rXYZ", xyz(0.1431, 0.0606, 0.7141)},
		{"gXYZ", xyz(0.3851, 0.7169, 0.0971)},
		{"bXYZ", xyz(0.4361, 0.2225, 0.0139)},
		{"rTRC", curve()}, {"gTRC", curve()}, {"bTRC", curve()},
	}
	var body []byte
	table := be.AppendUint32(nil, uint32(len(tags)))
	off := 128 + 4 + 12*len(tags)
	for _, tg := range tags {
		for len(body)%4 != 0 {
			body = append(body, 0)
		}
		table = append(table, tg.sig...)
		table = be.AppendUint32(table, uint32(off+len(body)))
		table = be.AppendUint32(table, uint32(len(tg.data)))
		body = append(body, tg.data...)
	}
	size := 128 + len(table) + len(body)
	h := be.AppendUint32(nil, uint32(size))
	h = append(h, "lcms"...)
	h = be.AppendUint32(h, 0x02100000)
	h = append(h, "mntrRGB XYZ "...)
	h = append(h, make([]byte, 12)...) // date
	h = append(h, "acsp"...)
	h = append(h, make([]byte, 4+4+4+4+8)...)
	h = be.AppendUint32(h, 0) // perceptual
	h = s15(s15(s15(h, 0.9642), 1.0), 0.8249)
	h = append(h, make([]byte, 128-len(h))...)
	return append(append(h, table...), body...)
}

// minimalPDF is a one-page PDF of w×h points with a red square in the lower left
// quarter and the rest white.
func minimalPDF(w, h int) []byte {
	content := fmt.Sprintf("1 1 1 rg 0 0 %d %d re f 1 0 0 rg 0 0 %d %d re f", w, h, w/2, h/2)
	objs := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %d %d] /Contents 4 0 R >>", w, h),
		fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(content), content),
	}
	return pdftest.Objects(objs...)
}

func engineOptions(tb testing.TB, op, raw string) any {
	return enginetest.Options(tb, imageop.Specs(), op, raw)
}
