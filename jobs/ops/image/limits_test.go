package image_test

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	goimage "image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pdfcpu/pdfcpu/pkg/api"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/domain"
	imageop "github.com/filemill/filemill/jobs/ops/image"
)

// procStatus reads one kB figure (VmRSS, VmHWM) of this process.
func procStatus(t testing.TB, field string) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			require.NoError(t, err)
			return kb
		}
	}
	t.Fatalf("no %s in /proc/self/status", field)
	return 0
}

// resetPeak makes VmHWM start again from the current resident size.
func resetPeak(t testing.TB) {
	t.Helper()
	require.NoError(t, os.WriteFile("/proc/self/clear_refs", []byte("5"), 0o200))
}

func pngChunk(typ string, data []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(data)))
	b = append(b, typ...)
	b = append(b, data...)
	return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(append([]byte(typ), data...)))
}

// pngDeclaring is a PNG whose header declares w×h RGB pixels but holds almost no data.
func pngDeclaring(w, h uint32) []byte {
	ihdr := binary.BigEndian.AppendUint32(nil, w)
	ihdr = binary.BigEndian.AppendUint32(ihdr, h)
	ihdr = append(ihdr, 8, 2, 0, 0, 0)
	var idat bytes.Buffer
	zw := zlib.NewWriter(&idat)
	zw.Write(make([]byte, 1000))
	zw.Close()
	out := []byte("\x89PNG\r\n\x1a\n")
	out = append(out, pngChunk("IHDR", ihdr)...)
	out = append(out, pngChunk("IDAT", idat.Bytes())...)
	return append(out, pngChunk("IEND", nil)...)
}

// jpegDeclaring patches a small JPEG's frame header to declare w×h.
func jpegDeclaring(t *testing.T, w, h uint16) []byte {
	data := encJPEG(t, solid(16, 16, color.NRGBA{1, 2, 3, 255}), 90)
	i := bytes.Index(data, []byte{0xff, 0xc0})
	require.Positive(t, i)
	binary.BigEndian.PutUint16(data[i+5:], h)
	binary.BigEndian.PutUint16(data[i+7:], w)
	return data
}

// webpDeclaring is a lossless WebP whose header declares w×h pixels (at most 16383 a
// side) followed by a few bytes of no image.
func webpDeclaring(w, h uint32) []byte {
	vp8l := []byte{0x2f}
	vp8l = binary.LittleEndian.AppendUint32(vp8l, (w-1)|(h-1)<<14)
	vp8l = append(vp8l, make([]byte, 27)...)
	chunk := append([]byte("VP8L"), binary.LittleEndian.AppendUint32(nil, uint32(len(vp8l)))...)
	chunk = append(chunk, vp8l...)
	out := append([]byte("RIFF"), binary.LittleEndian.AppendUint32(nil, uint32(4+len(chunk)))...)
	return append(append(out, "WEBP"...), chunk...)
}

// tiffDeclaring is an uncompressed 8-bit grey TIFF whose directory declares w×h pixels
// in one strip of 16 bytes.
func tiffDeclaring(w, h uint32) []byte {
	le := binary.LittleEndian
	out := []byte("II*\x00")
	out = le.AppendUint32(out, 8)
	tags := [][3]uint32{{256, 4, w}, {257, 4, h}, {258, 3, 8}, {259, 3, 1}, {262, 3, 1}, {273, 4, 0}, {277, 3, 1}, {278, 4, h}, {279, 4, 16}}
	dataAt := uint32(8 + 2 + 12*len(tags) + 4)
	out = le.AppendUint16(out, uint16(len(tags)))
	for _, tg := range tags {
		v := tg[2]
		if tg[0] == 273 {
			v = dataAt
		}
		out = le.AppendUint16(out, uint16(tg[0]))
		out = le.AppendUint16(out, uint16(tg[1]))
		out = le.AppendUint32(out, 1)
		if tg[1] == 3 {
			out = le.AppendUint16(out, uint16(v))
			out = le.AppendUint16(out, 0)
		} else {
			out = le.AppendUint32(out, v)
		}
	}
	out = le.AppendUint32(out, 0)
	return append(out, make([]byte, 16)...)
}

// TestPixelBombRefusedFromHeader: files declaring billions of pixels are refused as
// unsupported_input from their header. A decode would fail differently (the files
// hold almost no pixel data: corrupted_file) after allocating gigabytes; the resident
// peak stays within a few megabytes and the answer comes well within the deadline.
// Not parallel, so the peak is this test's.
func TestPixelBombRefusedFromHeader(t *testing.T) {
	e := engine(t)
	bombs := map[string][]byte{
		"bomb.png":  pngDeclaring(100000, 100000),
		"bomb.jpg":  jpegDeclaring(t, 65000, 65000),
		"bomb.svg":  []byte(`<svg xmlns="http://www.w3.org/2000/svg" width="100000" height="100000"><rect width="10" height="10"/></svg>`),
		"bomb.webp": webpDeclaring(16383, 16383),
		"bomb.tiff": tiffDeclaring(100000, 100000),
	}
	for name, data := range bombs {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			in := filepath.Join(dir, "input")
			require.NoError(t, os.WriteFile(in, data, 0o600))
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			before := procStatus(t, "VmRSS")
			resetPeak(t)
			start := time.Now()
			_, err := e.Run(ctx, domain.EngineInput{Operation: "image.convert", Options: engineOptions(t, "image.convert", `{"format":"webp","width":100}`),
				Path: in, Filename: name, WorkDir: dir})
			peak := procStatus(t, "VmHWM")
			t.Logf("%s (%d bytes): refused in %s, resident peak +%d kB (bound 32 MiB): %v", name, len(data),
				time.Since(start).Round(time.Millisecond), peak-before, err)
			requireCode(t, err, domain.CodeUnsupportedInput)
			require.Contains(t, err.Error(), "pixels")
			require.NoError(t, ctx.Err(), "answered before the deadline")
			require.Less(t, peak-before, int64(32<<10), "resident peak grew %d kB", peak-before)
		})
	}
}

// TestMemoryStaysFlat runs 1,000 conversions through every stage (shrink-on-load,
// smart crop, rotation, padding, each encoder) and checks the resident size does not
// grow after warm-up: nothing libvips allocates per conversion is kept.
func TestMemoryStaysFlat(t *testing.T) {
	e := engine(t)
	src := encJPEG(t, photo(800, 600, 11), 90)
	dir := t.TempDir()
	in := filepath.Join(dir, "input")
	require.NoError(t, os.WriteFile(in, src, 0o600))
	variants := []string{
		`{"format":"webp","width":256,"height":256,"fit":"cover","gravity":"attention"}`,
		`{"format":"jpeg","width":300,"height":300,"fit":"contain","background":"#102030"}`,
		`{"format":"png","width":200,"rotate":90}`,
		`{"format":"avif","width":96,"effort":0}`,
		`{"format":"gif","width":120,"height":120,"fit":"cover","gravity":"southeast","effort":0}`,
		`{"format":"tiff","width":150,"quality":70}`,
	}
	run := func(i int) {
		work := filepath.Join(dir, fmt.Sprintf("w%d", i))
		require.NoError(t, os.Mkdir(work, 0o700))
		_, err := e.Run(context.Background(), domain.EngineInput{Operation: "image.convert",
			Options: engineOptions(t, "image.convert", variants[i%len(variants)]), Path: in, Filename: "a.jpg", WorkDir: work})
		require.NoError(t, err)
		require.NoError(t, os.RemoveAll(work))
	}
	const warmup, total = 200, 1000
	for i := 0; i < warmup; i++ {
		run(i)
	}
	after := procStatus(t, "VmRSS")
	for i := warmup; i < total; i++ {
		run(i)
	}
	end := procStatus(t, "VmRSS")
	t.Logf("resident after %d conversions: %d kB; after %d: %d kB", warmup, after, total, end)
	require.Less(t, end-after, int64(24<<10), "resident size grew %d kB over %d conversions", end-after, total-warmup)
}

func TestDeadlineStopsConversion(t *testing.T) {
	t.Parallel()
	e := engine(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "input")
	// Enlarged to 10000×10000 and compressed at maximum effort: many seconds of work.
	require.NoError(t, os.WriteFile(in, encPNG(t, photo(1000, 1000, 12)), 0o600))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := e.Run(ctx, domain.EngineInput{Operation: "image.convert", Options: engineOptions(t, "image.convert", `{"format":"png","effort":9,"width":10000}`),
		Path: in, Filename: "a.png", WorkDir: dir})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.NoFileExists(t, filepath.Join(dir, "image.png"), "no partial output left")
}

func TestEncryptedPDF(t *testing.T) {
	t.Parallel()
	var enc bytes.Buffer
	conf := model.NewAESConfiguration("user", "owner", 256)
	require.NoError(t, api.Encrypt(bytes.NewReader(minimalPDF(200, 200)), &enc, conf))
	_, err := convertWith(t, engine(t), "secret.pdf", enc.Bytes(), map[string]any{"format": "png"})
	requireCode(t, err, domain.CodeEncryptedFile)
}

func TestConcurrentConversions(t *testing.T) {
	t.Parallel()
	e := engine(t)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			w := 100 + 10*i
			r, err := convertWith(t, e, "a.png", encPNG(t, photo(400+i, 300, int64(i))), map[string]any{"format": "png", "width": w})
			if err != nil {
				errs <- err
				return
			}
			im := decode(t, r.data)
			if dims(im)[0] != w {
				errs <- fmt.Errorf("conversion %d: width %d, want %d", i, dims(im)[0], w)
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// runSteps runs a preset's steps as the platform does: each step reads the previous
// step's output.
func runSteps(t *testing.T, name string, data []byte, steps []imageop.Options) []*result {
	var out []*result
	for _, s := range steps {
		raw, err := json.Marshal(s)
		require.NoError(t, err)
		var opts map[string]any
		require.NoError(t, json.Unmarshal(raw, &opts))
		r := convert(t, name, data, opts)
		out = append(out, r)
		data, name = r.data, r.art.Name
	}
	return out
}

func TestPresetSteps(t *testing.T) {
	t.Parallel()
	t.Run("Image", func(t *testing.T) {
		// A 3000×2000 photo stored sideways (EXIF orientation 6) with a camera make.
		pic := photo(3000, 2000, 13)
		src := withJPEGSegments(encJPEG(t, pic, 90), exifSegment(6, "FilemillCam"))
		out := runSteps(t, "big.jpg", src, imageop.ImagePresetSteps())
		require.Len(t, out, 2)
		main, thumb := decode(t, out[0].data), decode(t, out[1].data)
		require.Equal(t, [2]int{1365, 2048}, dims(main), "upright, inside 2048×2048")
		require.Equal(t, [2]int{171, 256}, dims(thumb), "256 px thumbnail")
		for _, r := range out {
			require.Equal(t, "image/webp", r.art.MIMEType)
			require.NotContains(t, webpChunks(t, r.data), "EXIF")
			require.NotContains(t, string(r.data), "FilemillCam")
		}
		// Small images are not enlarged.
		small := runSteps(t, "s.png", encPNG(t, photo(200, 100, 1)), imageop.ImagePresetSteps())
		require.Equal(t, [2]int{200, 100}, dims(decode(t, small[0].data)))
		require.Equal(t, [2]int{200, 100}, dims(decode(t, small[1].data)))
	})
	t.Run("Avatar", func(t *testing.T) {
		pic := solid(900, 600, color.NRGBA{200, 200, 200, 255})
		fill(pic, goimage.Rect(0, 0, 300, 600), color.NRGBA{30, 30, 30, 255})
		out := runSteps(t, "me.jpg", encJPEG(t, pic, 90), imageop.AvatarPresetSteps())
		require.Equal(t, [2]int{512, 512}, dims(decode(t, out[0].data)))
		require.Equal(t, [2]int{128, 128}, dims(decode(t, out[1].data)))
		tiny := runSteps(t, "me.png", encPNG(t, photo(100, 80, 2)), imageop.AvatarPresetSteps())
		require.Equal(t, [2]int{512, 512}, dims(decode(t, tiny[0].data)), "avatars have fixed sizes")
	})
}

// A conversion whose libvips memory grows past its bound stops at its next tile and
// fails resource_limit_exceeded, leaving nothing behind; the same conversion without
// the bound succeeds. 4000×4000 pixels shrunk to 3000 wide hold more than 1 MiB of
// line and tile buffers at once.
func TestMemoryBoundStopsConversion(t *testing.T) {
	e := engine(t)
	src := flatPNG(t, 4000, 4000)
	run := func(bound int64) error {
		dir := t.TempDir()
		in := filepath.Join(dir, "input")
		require.NoError(t, os.WriteFile(in, src, 0o600))
		work := filepath.Join(dir, "work")
		require.NoError(t, os.Mkdir(work, 0o700))
		o, err := domain.DecodeOptions(imageop.Specs(), imageop.OperationConvert, []byte(`{"format":"png","width":3000,"effort":0}`))
		require.NoError(t, err)
		_, err = e.Run(context.Background(), domain.EngineInput{Operation: "image.convert", Options: o, Path: in,
			Filename: "big.png", Format: domain.Detect(src[:64]), ByteSize: int64(len(src)), WorkDir: work,
			Limits: domain.JobLimits{Memory: bound}})
		if err != nil {
			entries, _ := os.ReadDir(work)
			require.Empty(t, entries, "a failed conversion leaves nothing in the work dir")
		}
		return err
	}
	err := run(1 << 20)
	require.Equal(t, domain.CodeResourceLimitExceeded, domain.ErrorCode(err), "%v", err)
	require.Contains(t, err.Error(), "limit: memory")
	require.NoError(t, run(0))
	require.NoError(t, run(1<<30), "a bound far above what it needs changes nothing")
}

func flatPNG(t *testing.T, w, h int) []byte {
	t.Helper()
	img := goimage.NewNRGBA(goimage.Rect(0, 0, w, h))
	for i := 0; i < len(img.Pix); i += 4 {
		copy(img.Pix[i:], []byte{200, 120, 40, 255})
	}
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, img))
	return buf.Bytes()
}
