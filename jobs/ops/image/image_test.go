package image_test

import (
	"bytes"
	"context"
	"encoding/json"
	goimage "image"
	"image/color"
	"image/gif"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/domain"
	imageop "github.com/filemill/filemill/jobs/ops/image"
)

func TestSpecs(t *testing.T) {
	specs := imageop.Specs()
	require.Len(t, specs, 1)
	s := specs[0]
	require.Equal(t, "image.convert", s.Name)
	require.Equal(t, "image", s.Engine)
	require.Equal(t, domain.Price{Credits: 1, Per: "file"}, s.Price)
	require.IsType(t, imageop.Options{}, s.Options)
	// The option names are the contract.
	raw, err := json.Marshal(imageop.Options{Format: "webp", Width: ptr(1), Height: ptr(1), Fit: "cover",
		Gravity: "north", Rotate: 90, Enlarge: ptr(false), Quality: ptr(1), Lossless: true, Effort: ptr(1),
		StripMetadata: ptr(false), Background: "#fff000", DPI: ptr(1), Animated: true})
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	require.ElementsMatch(t, []string{"format", "width", "height", "fit", "gravity", "rotate", "enlarge", "quality",
		"lossless", "effort", "strip_metadata", "background", "dpi", "animated"}, keys(m))
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func ptr[T any](v T) *T { return &v }

func TestCheckAndVersion(t *testing.T) {
	e := engine(t)
	require.NoError(t, e.Check(context.Background()))
	require.True(t, strings.HasPrefix(e.Version(), "libvips 8."), e.Version())
}

func TestOptionsValidate(t *testing.T) {
	cases := []struct {
		name  string
		opts  imageop.Options
		param string
	}{
		{"SmartCropNeedsCover", imageop.Options{Gravity: "attention", Fit: "contain"}, "options.gravity"},
		{"SmartCropNeedsCoverByDefault", imageop.Options{Gravity: "entropy"}, "options.gravity"},
		{"LosslessJPEG", imageop.Options{Format: "jpeg", Lossless: true}, "options.lossless"},
		{"GIFQuality", imageop.Options{Format: "gif", Quality: ptr(50)}, "options.quality"},
		{"AnimatedPNG", imageop.Options{Format: "png", Animated: true}, "options.animated"},
		{"BadBackground", imageop.Options{Background: "red"}, "options.background"},
		{"BadRotate", imageop.Options{Rotate: 45}, "options.rotate"},
		{"HugeWidth", imageop.Options{Width: ptr(20000)}, "options.width"},
		{"BadFormat", imageop.Options{Format: "bmp"}, "options.format"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.opts.Validate()
			requireCode(t, err, domain.CodeInvalidRequest)
			require.Equal(t, tc.param, domain.AsError(err).Param)
		})
	}
	require.NoError(t, imageop.Options{}.Validate())
	require.NoError(t, imageop.Options{Format: "avif", Lossless: true, Gravity: "attention", Fit: "cover", Background: "#11223344"}.Validate())
}

// TestOutputFormats checks each output format by its magic bytes and by decoding it
// with a decoder other than libvips.
func TestOutputFormats(t *testing.T) {
	t.Parallel()
	src := encPNG(t, photo(320, 200, 1))
	magic := map[string]func([]byte) bool{
		"jpeg": func(b []byte) bool { return bytes.HasPrefix(b, []byte{0xff, 0xd8, 0xff}) },
		"png":  func(b []byte) bool { return bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) },
		"webp": func(b []byte) bool { return string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP" },
		"avif": func(b []byte) bool { return string(b[4:12]) == "ftypavif" },
		"gif":  func(b []byte) bool { return bytes.HasPrefix(b, []byte("GIF89a")) },
		"tiff": func(b []byte) bool {
			return bytes.HasPrefix(b, []byte("II*\x00")) || bytes.HasPrefix(b, []byte("MM\x00*"))
		},
	}
	mimes := map[string]string{"jpeg": "image/jpeg", "png": "image/png", "webp": "image/webp", "avif": "image/avif", "gif": "image/gif", "tiff": "image/tiff"}
	names := map[string]string{"jpeg": "pic.jpg", "png": "pic.png", "webp": "pic.webp", "avif": "pic.avif", "gif": "pic.gif", "tiff": "pic.tiff"}
	for f := range magic {
		t.Run(f, func(t *testing.T) {
			r := convert(t, "pic.png", src, map[string]any{"format": f, "width": 160, "effort": 1})
			require.True(t, magic[f](r.data), "%s magic: %q", f, r.data[:16])
			require.Equal(t, mimes[f], r.art.MIMEType)
			require.Equal(t, names[f], r.art.Name)
			require.Equal(t, mimes[f], domain.Detect(r.data).MIMEType)
			var im goimage.Image
			if f == "avif" {
				// No AVIF decoder in Go: libvips decodes it back to PNG, read by Go.
				im = decode(t, convert(t, "pic.avif", r.data, map[string]any{"format": "png"}).data)
			} else {
				im = decode(t, r.data)
			}
			require.Equal(t, [2]int{160, 100}, dims(im))
			// The top-left is dark-ish red/green, the bottom-right bright: the picture survived.
			tl, br := rgbAt(im, 2, 2), rgbAt(im, 157, 97)
			require.Greater(t, br[0]+br[1], tl[0]+tl[1]+150, "gradient lost: %v → %v", tl, br)
		})
	}
}

// TestInputFormats converts each input format the engine reads.
func TestInputFormats(t *testing.T) {
	t.Parallel()
	pic := photo(240, 160, 2)
	fill(pic, goimage.Rect(0, 0, 120, 80), color.NRGBA{255, 0, 0, 255})
	webpIn := convert(t, "a.png", encPNG(t, pic), map[string]any{"format": "webp", "quality": 95}).data
	avifIn := convert(t, "a.png", encPNG(t, pic), map[string]any{"format": "avif", "quality": 90, "effort": 1}).data
	svg := []byte(`<svg xmlns="http://www.w3.org/2000/svg" width="240" height="160">` +
		`<rect width="240" height="160" fill="#fff"/><rect width="120" height="80" fill="#f00"/></svg>`)
	inputs := []struct {
		name string
		data []byte
		want [2]int
	}{
		{"a.jpg", encJPEG(t, pic, 92), [2]int{120, 80}},
		{"a.png", encPNG(t, pic), [2]int{120, 80}},
		{"a.webp", webpIn, [2]int{120, 80}},
		{"a.avif", avifIn, [2]int{120, 80}},
		{"a.gif", animatedGIF(t, 240, 160, 2), [2]int{120, 80}},
		{"a.tiff", encTIFF(t, pic), [2]int{120, 80}},
		{"a.bmp", encBMP(t, pic), [2]int{120, 80}},
		{"a.svg", svg, [2]int{120, 80}},
		// A 240×160 pt page, page 1, rendered at size.
		{"a.pdf", minimalPDF(240, 160), [2]int{120, 80}},
	}
	for _, in := range inputs {
		t.Run(in.name, func(t *testing.T) {
			r := convert(t, in.name, in.data, map[string]any{"format": "png", "width": 120})
			im := decode(t, r.data)
			require.Equal(t, in.want, dims(im))
			switch in.name {
			case "a.gif":
				// The first frame: dark blue with a white square at the left.
				require.True(t, near(rgbAt(im, 5, 5), [3]int{255, 255, 255}, 40), "%v", rgbAt(im, 5, 5))
				require.Greater(t, rgbAt(im, 100, 60)[2], 150)
			case "a.pdf":
				// The red square is the lower-left quarter of the page.
				require.True(t, near(rgbAt(im, 10, 70), [3]int{255, 0, 0}, 30), "%v", rgbAt(im, 10, 70))
				require.True(t, near(rgbAt(im, 100, 10), [3]int{255, 255, 255}, 30), "%v", rgbAt(im, 100, 10))
			default:
				require.True(t, near(rgbAt(im, 20, 20), [3]int{255, 0, 0}, 40), "red corner: %v", rgbAt(im, 20, 20))
				require.False(t, near(rgbAt(im, 100, 70), [3]int{255, 0, 0}, 60), "the rest is not red: %v", rgbAt(im, 100, 70))
			}
		})
	}
}

func TestUnsupportedAndDamagedInputs(t *testing.T) {
	t.Parallel()
	e := engine(t)
	_, err := convertWith(t, e, "a.txt", []byte("just some text, not an image\n"), nil)
	requireCode(t, err, domain.CodeUnsupportedInput)

	jpg := encJPEG(t, photo(400, 300, 3), 90)
	_, err = convertWith(t, e, "cut.jpg", jpg[:len(jpg)/2], map[string]any{"format": "png"})
	requireCode(t, err, domain.CodeCorruptedFile)
	require.NotContains(t, err.Error(), "VipsJpeg", "libvips' own message stays in the log")

	png := encPNG(t, photo(64, 64, 3))
	_, err = convertWith(t, e, "cut.png", png[:len(png)-40], map[string]any{"format": "jpeg"})
	requireCode(t, err, domain.CodeCorruptedFile)
}

func TestFitModes(t *testing.T) {
	t.Parallel()
	// 600×400 with a red left edge column and a blue right edge column.
	pic := photo(600, 400, 4)
	fill(pic, goimage.Rect(0, 0, 30, 400), color.NRGBA{255, 0, 0, 255})
	fill(pic, goimage.Rect(570, 0, 600, 400), color.NRGBA{0, 0, 255, 255})
	src := encPNG(t, pic)
	cases := []struct {
		name string
		opts map[string]any
		want [2]int
	}{
		{"Inside", map[string]any{"width": 300, "height": 300, "fit": "inside"}, [2]int{300, 200}},
		{"InsideIsDefault", map[string]any{"width": 300, "height": 300}, [2]int{300, 200}},
		{"Outside", map[string]any{"width": 300, "height": 300, "fit": "outside"}, [2]int{450, 300}},
		{"Cover", map[string]any{"width": 300, "height": 300, "fit": "cover"}, [2]int{300, 300}},
		{"Contain", map[string]any{"width": 300, "height": 300, "fit": "contain"}, [2]int{300, 300}},
		{"Fill", map[string]any{"width": 300, "height": 300, "fit": "fill"}, [2]int{300, 300}},
		{"WidthOnly", map[string]any{"width": 150}, [2]int{150, 100}},
		{"HeightOnly", map[string]any{"height": 100, "fit": "cover"}, [2]int{150, 100}},
		{"NoSize", map[string]any{}, [2]int{600, 400}},
		{"Enlarges", map[string]any{"width": 1200, "height": 1200}, [2]int{1200, 800}},
		{"NoEnlargeInside", map[string]any{"width": 1200, "height": 1200, "enlarge": false}, [2]int{600, 400}},
		{"NoEnlargeCover", map[string]any{"width": 500, "height": 500, "fit": "cover", "enlarge": false}, [2]int{500, 400}},
		{"NoEnlargeContainPads", map[string]any{"width": 800, "height": 800, "fit": "contain", "enlarge": false}, [2]int{800, 800}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts["format"] = "png"
			im := decode(t, convert(t, "a.png", src, tc.opts).data)
			require.Equal(t, tc.want, dims(im))
			w, h := dims(im)[0], dims(im)[1]
			red, blue := [3]int{255, 0, 0}, [3]int{0, 0, 255}
			switch tc.name {
			case "Cover":
				// Centre crop: both coloured edges are cut away.
				require.False(t, near(rgbAt(im, 1, h/2), red, 60), "left edge kept: %v", rgbAt(im, 1, h/2))
				require.False(t, near(rgbAt(im, w-2, h/2), blue, 60))
			case "Contain":
				// 300×200 image centred: transparent bands above and below.
				require.Equal(t, 0, alphaAt(im, 150, 10))
				require.Equal(t, 0, alphaAt(im, 150, 290))
				require.Equal(t, 255, alphaAt(im, 150, 150))
				require.True(t, near(rgbAt(im, 3, 150), red, 40), "%v", rgbAt(im, 3, 150))
			case "Fill":
				// Stretched, not cropped: both edges are there, full height.
				require.True(t, near(rgbAt(im, 3, 5), red, 40))
				require.True(t, near(rgbAt(im, w-4, h-5), blue, 40))
			case "Outside", "Inside", "WidthOnly", "NoSize", "Enlarges":
				require.True(t, near(rgbAt(im, 2, h/2), red, 40))
				require.True(t, near(rgbAt(im, w-3, h/2), blue, 40))
			}
		})
	}
}

func TestGravityAndBackground(t *testing.T) {
	t.Parallel()
	pic := photo(600, 400, 5)
	fill(pic, goimage.Rect(0, 0, 30, 400), color.NRGBA{255, 0, 0, 255})
	fill(pic, goimage.Rect(570, 0, 600, 400), color.NRGBA{0, 0, 255, 255})
	src := encPNG(t, pic)

	west := decode(t, convert(t, "a.png", src, map[string]any{"format": "png", "width": 200, "height": 200, "fit": "cover", "gravity": "west"}).data)
	require.True(t, near(rgbAt(west, 2, 100), [3]int{255, 0, 0}, 40), "west keeps the left edge")
	east := decode(t, convert(t, "a.png", src, map[string]any{"format": "png", "width": 200, "height": 200, "fit": "cover", "gravity": "east"}).data)
	require.True(t, near(rgbAt(east, 197, 100), [3]int{0, 0, 255}, 40), "east keeps the right edge")

	// contain with a colour, placed north: padding below only, in that colour.
	north := decode(t, convert(t, "a.png", src, map[string]any{"format": "jpeg", "width": 300, "height": 300, "fit": "contain",
		"gravity": "north", "background": "#00ff00"}).data)
	require.Equal(t, [2]int{300, 300}, dims(north))
	require.True(t, near(rgbAt(north, 150, 290), [3]int{0, 255, 0}, 30), "padding: %v", rgbAt(north, 150, 290))
	require.False(t, near(rgbAt(north, 150, 10), [3]int{0, 255, 0}, 60), "image at the top")

	// A transparent image flattened onto the background colour for JPEG, kept for PNG.
	trans := solid(100, 100, color.NRGBA{0, 0, 0, 0})
	fill(trans, goimage.Rect(40, 40, 60, 60), color.NRGBA{255, 0, 0, 255})
	flat := decode(t, convert(t, "t.png", encPNG(t, trans), map[string]any{"format": "jpeg", "background": "#0000ff"}).data)
	require.True(t, near(rgbAt(flat, 5, 5), [3]int{0, 0, 255}, 30), "%v", rgbAt(flat, 5, 5))
	white := decode(t, convert(t, "t.png", encPNG(t, trans), map[string]any{"format": "jpeg"}).data)
	require.True(t, near(rgbAt(white, 5, 5), [3]int{255, 255, 255}, 10), "jpeg default flattens onto white")
	kept := decode(t, convert(t, "t.png", encPNG(t, trans), map[string]any{"format": "png"}).data)
	require.Equal(t, 0, alphaAt(kept, 5, 5))
	require.True(t, near(rgbAt(kept, 50, 50), [3]int{255, 0, 0}, 10))
	opaque := decode(t, convert(t, "t.png", encPNG(t, trans), map[string]any{"format": "png", "background": "#ffff00"}).data)
	require.Equal(t, 255, alphaAt(opaque, 5, 5))
	require.True(t, near(rgbAt(opaque, 5, 5), [3]int{255, 255, 0}, 10))
}

// TestAttentionCropKeepsDetail crops a wide image whose only detail is in its right
// third: the attention crop keeps that region, the centre crop does not.
func TestAttentionCropKeepsDetail(t *testing.T) {
	t.Parallel()
	pic := solid(1200, 400, color.NRGBA{128, 128, 128, 255})
	detail := photo(400, 400, 6)
	for y := 0; y < 400; y++ {
		copy(pic.Pix[y*pic.Stride+800*4:y*pic.Stride+1200*4], detail.Pix[y*detail.Stride:(y+1)*detail.Stride])
	}
	// Saturated, high-contrast speckles in the detail region (what attention looks for).
	for y := 0; y < 400; y += 8 {
		for x := 800; x < 1200; x += 8 {
			fill(pic, goimage.Rect(x, y, x+4, y+4), color.NRGBA{uint8(255 * ((x / 8) % 2)), 0, uint8(255 * ((y / 8) % 2)), 255})
		}
	}
	src := encPNG(t, pic)
	region := goimage.Rect(0, 0, 200, 200)
	att := decode(t, convert(t, "a.png", src, map[string]any{"format": "png", "width": 200, "height": 200, "fit": "cover", "gravity": "attention"}).data)
	require.Equal(t, [2]int{200, 200}, dims(att))
	centre := decode(t, convert(t, "a.png", src, map[string]any{"format": "png", "width": 200, "height": 200, "fit": "cover"}).data)
	va, vc := variance(att, region), variance(centre, region)
	require.Greater(t, va, 1500.0, "attention crop is busy (variance %.0f)", va)
	require.Less(t, vc, 50.0, "centre crop is the flat grey (variance %.0f)", vc)
	ent := decode(t, convert(t, "a.png", src, map[string]any{"format": "png", "width": 200, "height": 200, "fit": "cover", "gravity": "entropy"}).data)
	require.Greater(t, variance(ent, region), 1500.0)
}

func TestQualityAndEffort(t *testing.T) {
	t.Parallel()
	src := encPNG(t, photo(640, 480, 7))
	for _, f := range []string{"jpeg", "webp", "avif"} {
		t.Run(f, func(t *testing.T) {
			lo := convert(t, "a.png", src, map[string]any{"format": f, "quality": 20, "effort": 2})
			hi := convert(t, "a.png", src, map[string]any{"format": f, "quality": 90, "effort": 2})
			require.Less(t, len(lo.data)*3/2, len(hi.data), "quality 20 (%d bytes) well under quality 90 (%d bytes)", len(lo.data), len(hi.data))
		})
	}
	t.Run("png", func(t *testing.T) {
		full := convert(t, "a.png", src, map[string]any{"format": "png"})
		pal := convert(t, "a.png", src, map[string]any{"format": "png", "quality": 40})
		require.Less(t, len(pal.data), len(full.data)/2, "palette png %d vs truecolour %d", len(pal.data), len(full.data))
	})
	t.Run("LosslessWebP", func(t *testing.T) {
		pic := solid(64, 64, color.NRGBA{10, 200, 30, 255})
		fill(pic, goimage.Rect(10, 10, 20, 20), color.NRGBA{250, 3, 77, 255})
		r := convert(t, "a.png", encPNG(t, pic), map[string]any{"format": "webp", "lossless": true})
		require.Contains(t, webpChunks(t, r.data), "VP8L", "lossless bitstream")
		im := decode(t, r.data)
		require.Equal(t, [3]int{250, 3, 77}, rgbAt(im, 15, 15))
		require.Equal(t, [3]int{10, 200, 30}, rgbAt(im, 40, 40))
	})
	t.Run("Effort", func(t *testing.T) {
		fast := convert(t, "a.png", src, map[string]any{"format": "png", "effort": 0})
		slow := convert(t, "a.png", src, map[string]any{"format": "png", "effort": 9})
		require.Less(t, len(slow.data), len(fast.data), "more effort, smaller png")
	})
}

// orientedJPEG stores a 600×400 image with a red top-left corner and EXIF orientation
// 6: displayed upright it is 400×600 with the red corner at the top right.
func orientedJPEG(t *testing.T, make string) []byte {
	pic := photo(600, 400, 8)
	fill(pic, goimage.Rect(0, 0, 100, 100), color.NRGBA{255, 0, 0, 255})
	return withJPEGSegments(encJPEG(t, pic, 92), exifSegment(6, make))
}

func TestOrientationAndRotate(t *testing.T) {
	t.Parallel()
	src := orientedJPEG(t, "")
	red := [3]int{255, 0, 0}
	up := decode(t, convert(t, "a.jpg", src, map[string]any{"format": "png"}).data)
	require.Equal(t, [2]int{400, 600}, dims(up), "EXIF orientation applied")
	require.True(t, near(rgbAt(up, 380, 20), red, 40), "red corner at top right: %v", rgbAt(up, 380, 20))
	require.False(t, near(rgbAt(up, 20, 20), red, 80))

	// Resized: width refers to the upright image.
	small := decode(t, convert(t, "a.jpg", src, map[string]any{"format": "png", "width": 200}).data)
	require.Equal(t, [2]int{200, 300}, dims(small))

	// rotate 90 after orientation: upright 400×600 turned clockwise is 600×400 with the
	// red corner at the bottom right.
	rot := decode(t, convert(t, "a.jpg", src, map[string]any{"format": "png", "rotate": 90}).data)
	require.Equal(t, [2]int{600, 400}, dims(rot))
	require.True(t, near(rgbAt(rot, 580, 380), red, 40), "%v", rgbAt(rot, 580, 380))
	rot180 := decode(t, convert(t, "a.jpg", src, map[string]any{"format": "png", "rotate": 180, "width": 200}).data)
	require.Equal(t, [2]int{200, 300}, dims(rot180))
	require.True(t, near(rgbAt(rot180, 8, 290), red, 40), "%v", rgbAt(rot180, 8, 290))
	// With rotate, width/height and the crop describe the rotated image.
	rc := decode(t, convert(t, "a.jpg", src, map[string]any{"format": "png", "rotate": 270, "width": 300, "height": 100, "fit": "cover", "gravity": "north"}).data)
	require.Equal(t, [2]int{300, 100}, dims(rc))
	require.True(t, near(rgbAt(rc, 10, 10), red, 40), "rotate 270 puts the red corner top left: %v", rgbAt(rc, 10, 10))
}

func TestMetadata(t *testing.T) {
	t.Parallel()
	src := orientedJPEG(t, "FilemillCam")
	stripped := convert(t, "a.jpg", src, map[string]any{"format": "jpeg"}).data
	require.NotContains(t, string(stripped), "FilemillCam")
	require.Zero(t, exifOrientation(t, stripped), "no EXIF at all")
	require.Nil(t, jpegICC(t, stripped), "no profile: none was there")

	kept := convert(t, "a.jpg", src, map[string]any{"format": "jpeg", "strip_metadata": false}).data
	require.Contains(t, string(kept), "FilemillCam", "EXIF kept when asked")
	require.Equal(t, 1, exifOrientation(t, kept), "orientation reset: the pixels are upright")
	require.Equal(t, [2]int{400, 600}, dims(decode(t, kept)))

	webpKept := convert(t, "a.jpg", src, map[string]any{"format": "webp", "strip_metadata": false}).data
	require.Contains(t, webpChunks(t, webpKept), "EXIF")
	require.Contains(t, string(webpKept), "FilemillCam")
	webpStripped := convert(t, "a.jpg", src, map[string]any{"format": "webp"}).data
	require.NotContains(t, webpChunks(t, webpStripped), "EXIF")
	require.Equal(t, [2]int{400, 600}, dims(decode(t, webpStripped)))
	pngStripped := convert(t, "a.jpg", src, map[string]any{"format": "png"}).data
	require.NotContains(t, string(pngStripped), "eXIf")
	require.NotContains(t, string(pngStripped), "FilemillCam")

	// With a profile to keep, nothing else comes along.
	withICC := withJPEGSegments(encJPEG(t, photo(64, 64, 1), 90), iccSegment(swappedPrimariesProfile()), exifSegment(1, "FilemillCam"))
	for _, f := range []string{"jpeg", "webp"} {
		out := convert(t, "a.jpg", withICC, map[string]any{"format": f}).data
		require.NotContains(t, string(out), "FilemillCam")
		require.NotContains(t, string(out), "Exif\x00\x00", "%s carries no EXIF", f)
		if f == "webp" {
			ids := webpChunks(t, out)
			require.Contains(t, ids, "ICCP")
			require.NotContains(t, ids, "EXIF")
			decode(t, out)
		} else {
			require.NotNil(t, jpegICC(t, out))
		}
	}
}

// TestICCProfile converts through an embedded profile whose red and blue primaries
// are exchanged: stripping converts the pixels to sRGB (stored red shows blue) and
// tags the output sRGB; keeping metadata keeps the pixels and the profile.
func TestICCProfile(t *testing.T) {
	t.Parallel()
	prof := swappedPrimariesProfile()
	src := withJPEGSegments(encJPEG(t, solid(64, 64, color.NRGBA{255, 0, 0, 255}), 95), iccSegment(prof))

	conv := convert(t, "a.jpg", src, map[string]any{"format": "jpeg"}).data
	c := rgbAt(decode(t, conv), 32, 32)
	require.Greater(t, c[2], 200, "stored red displays blue once converted: %v", c)
	require.Less(t, c[0], 60, "%v", c)
	icc := jpegICC(t, conv)
	require.NotNil(t, icc, "the output carries a profile")
	require.Contains(t, string(icc), "sRGB")
	require.NotContains(t, string(icc), "swapped")

	kept := convert(t, "a.jpg", src, map[string]any{"format": "jpeg", "strip_metadata": false}).data
	k := rgbAt(decode(t, kept), 32, 32)
	require.Greater(t, k[0], 200, "pixels untouched: %v", k)
	require.Equal(t, prof, jpegICC(t, kept), "the original profile is kept")

	png := convert(t, "a.jpg", src, map[string]any{"format": "png"}).data
	require.Contains(t, string(png), "iCCP", "png carries the sRGB profile")
}

func TestDPI(t *testing.T) {
	t.Parallel()
	r := convert(t, "a.png", encPNG(t, photo(100, 80, 9)), map[string]any{"format": "png", "dpi": 300})
	// pHYs: pixels per metre, 300 dpi = 11811.
	i := bytes.Index(r.data, []byte("pHYs"))
	require.Positive(t, i)
	ppm := int(r.data[i+4])<<24 | int(r.data[i+5])<<16 | int(r.data[i+6])<<8 | int(r.data[i+7])
	require.InDelta(t, 11811, ppm, 2)

	// Vector inputs render at the dpi: a 240 pt page at 144 dpi is 480 px.
	pdf := decode(t, convert(t, "a.pdf", minimalPDF(240, 160), map[string]any{"format": "png", "dpi": 144}).data)
	require.Equal(t, [2]int{480, 320}, dims(pdf))
	svg := []byte(`<svg xmlns="http://www.w3.org/2000/svg" width="1in" height="0.5in"><rect width="100%" height="100%" fill="#f00"/></svg>`)
	sv := decode(t, convert(t, "a.svg", svg, map[string]any{"format": "png", "dpi": 200}).data)
	require.Equal(t, [2]int{200, 100}, dims(sv))
}

func TestAnimation(t *testing.T) {
	t.Parallel()
	src := animatedGIF(t, 200, 100, 4)

	webpAnim := convert(t, "a.gif", src, map[string]any{"format": "webp", "animated": true, "width": 100}).data
	ids := webpChunks(t, webpAnim)
	require.Contains(t, ids, "ANIM")
	require.Equal(t, 4, count(ids, "ANMF"), "four frames: %v", ids)

	gifAnim := convert(t, "a.gif", src, map[string]any{"format": "gif", "animated": true, "width": 100, "height": 100, "fit": "cover"}).data
	g, err := gif.DecodeAll(bytes.NewReader(gifAnim))
	require.NoError(t, err)
	require.Len(t, g.Image, 4)
	require.Equal(t, 100, g.Config.Width)
	require.Equal(t, 100, g.Config.Height)
	// The white square moves right from frame to frame; the centre crop keeps the
	// middle 100 px of 200, where frames 1 and 2 have it.
	white := [3]int{255, 255, 255}
	require.False(t, near(rgbAt(g.Image[0], 20, 5), white, 40))
	require.True(t, near(rgbAt(g.Image[1], 20, 5), white, 40), "%v", rgbAt(g.Image[1], 20, 5))
	require.True(t, near(rgbAt(g.Image[2], 70, 5), white, 40), "%v", rgbAt(g.Image[2], 70, 5))
	require.False(t, near(rgbAt(g.Image[2], 20, 5), white, 40))

	still := convert(t, "a.gif", src, map[string]any{"format": "webp", "width": 100}).data
	require.NotContains(t, webpChunks(t, still), "ANIM", "not animated unless asked")
	stillGIF := convert(t, "a.gif", src, map[string]any{"format": "gif"}).data
	g, err = gif.DecodeAll(bytes.NewReader(stillGIF))
	require.NoError(t, err)
	require.Len(t, g.Image, 1)
}

func TestLimits(t *testing.T) {
	t.Parallel()
	small, err := imageop.New(imageop.Config{MaxFrames: 3, MaxPixels: 1_000_000, MaxOutputDimension: 1000})
	require.NoError(t, err)
	_, err = convertWith(t, small, "a.gif", animatedGIF(t, 100, 100, 4), map[string]any{"format": "webp", "animated": true})
	requireCode(t, err, domain.CodeUnsupportedInput)
	require.Contains(t, err.Error(), "4 frames")
	// The first frame alone is fine.
	_, err = convertWith(t, small, "a.gif", animatedGIF(t, 100, 100, 4), map[string]any{"format": "webp"})
	require.NoError(t, err)

	_, err = convertWith(t, small, "a.png", encPNG(t, photo(1100, 1000, 1)), map[string]any{"format": "webp", "width": 10})
	requireCode(t, err, domain.CodeUnsupportedInput)
	_, err = convertWith(t, small, "a.png", encPNG(t, photo(100, 100, 1)), map[string]any{"format": "webp", "width": 1001})
	requireCode(t, err, domain.CodeUnsupportedInput)
	// cover of a long strip would need a huge intermediate image.
	_, err = convertWith(t, small, "a.png", encPNG(t, photo(1000, 2, 1)), map[string]any{"format": "webp", "width": 1000, "height": 1000, "fit": "cover"})
	requireCode(t, err, domain.CodeUnsupportedInput)
}

func TestOutputName(t *testing.T) {
	t.Parallel()
	src := encPNG(t, photo(20, 20, 1))
	require.Equal(t, "holiday.photo.jpg", convert(t, "holiday.photo.png", src, map[string]any{"format": "jpeg"}).art.Name)
	require.Equal(t, "image.webp", convert(t, "", src, nil).art.Name)
	r := convert(t, "../../etc/x.png", src, nil)
	require.Equal(t, "x.webp", r.art.Name)
	require.Equal(t, "image.webp", filepath.Base(r.art.Path))
}

func TestCancelled(t *testing.T) {
	t.Parallel()
	e := engine(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.png")
	require.NoError(t, os.WriteFile(in, encPNG(t, photo(50, 50, 1)), 0o600))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := e.Run(ctx, domain.EngineInput{Operation: "image.convert", Path: in, WorkDir: dir})
	require.ErrorIs(t, err, context.Canceled)
}

// TestRegistry: the options struct compiles into the platform's schema, the presets'
// fixed options pass it, and what the registry hands the engine (canonical options,
// defaults filled in) converts.
func TestRegistry(t *testing.T) {
	t.Parallel()
	reg := domain.NewRegistry()
	require.NoError(t, reg.AddOperations(imageop.Specs()...))
	for _, p := range imageop.Presets() {
		require.NoError(t, reg.AddPreset(p), p.Name)
	}
	op := reg.Operation("image.convert")
	require.NotNil(t, op)
	canon, err := op.ValidateOptions(json.RawMessage(`{"width":64}`))
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(canon, &m))
	require.Equal(t, "webp", m["format"])
	require.Equal(t, true, m["strip_metadata"])
	_, err = op.ValidateOptions(json.RawMessage(`{"gravity":"attention"}`))
	requireCode(t, err, domain.CodeInvalidRequest)
	_, err = op.ValidateOptions(json.RawMessage(`{"rotate":45}`))
	requireCode(t, err, domain.CodeInvalidRequest)

	r := convertRaw(t, canon)
	require.Equal(t, [2]int{64, 40}, dims(decode(t, r.data)))

	for _, name := range []string{"image", "avatar"} {
		p := reg.Preset(name)
		require.NotNil(t, p, name)
		require.Len(t, p.Steps, 2)
		for _, st := range p.Steps {
			require.Equal(t, "image.convert", st.Operation.Name)
		}
	}
}

func convertRaw(t *testing.T, opts json.RawMessage) *result {
	var m map[string]any
	require.NoError(t, json.Unmarshal(opts, &m))
	return convert(t, "a.png", encPNG(t, photo(320, 200, 1)), m)
}

// TestVerify: the verifier for outputs Go cannot decode reads AVIF, still WebP (lossy,
// with alpha, lossless) and every frame of an animated WebP, and refuses a damaged one.
func TestVerify(t *testing.T) {
	t.Parallel()
	e := engine(t)
	dir := t.TempDir()
	anim := convert(t, "a.gif", animatedGIF(t, 120, 80, 3), map[string]any{"format": "webp", "animated": true}).data
	avif := convert(t, "a.png", encPNG(t, photo(64, 48, 1)), map[string]any{"format": "avif", "effort": 0}).data
	translucent := photo(64, 48, 2)
	fill(translucent, goimage.Rect(0, 0, 32, 48), color.NRGBA{10, 200, 30, 90})
	still := convert(t, "a.png", encPNG(t, photo(64, 48, 1)), map[string]any{"format": "webp"}).data
	alpha := convert(t, "a.png", encPNG(t, translucent), map[string]any{"format": "webp"}).data
	lossless := convert(t, "a.png", encPNG(t, translucent), map[string]any{"format": "webp", "lossless": true}).data
	for name, data := range map[string][]byte{"anim.webp": anim, "a.avif": avif, "still.webp": still,
		"alpha.webp": alpha, "lossless.webp": lossless} {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, data, 0o600))
		require.NoError(t, e.Verify(context.Background(), p), name)
		cut := filepath.Join(dir, "cut-"+name)
		require.NoError(t, os.WriteFile(cut, data[:len(data)*2/3], 0o600))
		requireCode(t, e.Verify(context.Background(), cut), domain.CodeOutputValidationFailed)
		if strings.HasSuffix(name, ".webp") && name != "anim.webp" {
			short := filepath.Join(dir, "short-"+name)
			require.NoError(t, os.WriteFile(short, shortenedWebP(t, data), 0o600))
			requireCode(t, e.Verify(context.Background(), short), domain.CodeOutputValidationFailed)
		}
	}
}
