package image

import (
	"bytes"
	"context"
	"fmt"
	goimage "image"
	"image/color"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/image/bmp"

	"github.com/filemill/filemill/domain"
)

// conversion is one run of image.convert.
type conversion struct {
	ctx  context.Context
	e    *Engine
	p    *pipeline
	in   domain.EngineInput
	opts Options
}

// source is the opened input: its header at the size it will be loaded, and how to
// load it.
type source struct {
	hdr      header
	pathOpts string // the path with loader options, for file loads
	bmp      *goimage.NRGBA
	frames   int // frames that will be loaded
}

// geometry is the size plan, computed from the header before any pixel is decoded.
type geometry struct {
	thumbW, thumbH int // what the thumbnail stage produces per frame (EXIF-upright, before rotate)
	resW, resH     int // after rotate, before crop or padding
	cropW, cropH   int // > 0: cover crops to this
	padW, padH     int // > 0: contain pads to this
	outW, outH     int // each output frame
}

func (c *conversion) run() (*domain.EngineOutput, error) {
	src, err := c.open()
	if err != nil {
		return nil, err
	}
	g, err := c.plan(src)
	if err != nil {
		return nil, err
	}
	if strings.HasPrefix(src.hdr.Loader, "svgload") {
		r := svgRender{width: g.thumbW, height: g.thumbH, scale: float64(g.thumbW) / float64(src.hdr.Width)}
		if err := checkSVG(c.in.Path, r, c.e.cfg.SVG); err != nil {
			return nil, err
		}
	}
	fi := formats[c.opts.format()]

	img, err := c.decode(src, g)
	if err != nil {
		return nil, err
	}
	if img, err = c.shape(img, src.frames, g); err != nil {
		return nil, c.undecodable(err)
	}
	if img, err = c.colour(img, fi); err != nil {
		return nil, c.undecodable(err)
	}
	strip := c.opts.stripMetadata()
	res := 0.0
	if c.opts.DPI != nil {
		res = float64(*c.opts.DPI) / 25.4
	}
	pageHeight := 0
	if src.frames > 1 {
		pageHeight = g.outH
	}
	if img, err = c.p.finishMeta(img, strip, res, pageHeight); err != nil {
		return nil, c.undecodable(err)
	}

	path := filepath.Join(c.in.WorkDir, "image."+fi.ext)
	settings := saveSettings{format: fi.code, quality: -1, effort: -1, lossless: c.opts.Lossless,
		// A saver told to strip drops the ICC profile too; keep it when there is one.
		// AVIF describes sRGB in its own colour box (nclx), and libvips would add an
		// EXIF block beside a profile: a stripped AVIF carries neither.
		strip: strip && (fi.code == fmtAVIF || !hasField(img, "icc-profile-data"))}
	if c.opts.Quality != nil {
		settings.quality = *c.opts.Quality
		settings.palette = fi.code == fmtPNG
	}
	if c.opts.Effort != nil {
		settings.effort = *c.opts.Effort
	}
	c.p.watch(img)
	if err := save(img, path, settings); err != nil {
		os.Remove(path)
		return nil, c.undecodable(err)
	}
	if err := c.scrub(path, fi, strip); err != nil {
		os.Remove(path)
		return nil, c.fail(domain.CodeOutputValidationFailed, "the converted image does not decode", err)
	}
	if err := c.verify(path, fi, g, src.frames); err != nil {
		os.Remove(path)
		return nil, err
	}
	return &domain.EngineOutput{Artifacts: []domain.EngineArtifact{
		{Name: outputName(c.in.Filename, fi.ext), MIMEType: fi.mime, Path: path, Verified: true},
	}}, nil
}

// scrub removes from a stripped output the EXIF block libvips generates. A WebP
// keeps it when dpi was asked for: WebP has no other place for the density.
func (c *conversion) scrub(path string, fi formatInfo, strip bool) error {
	if !strip {
		return nil
	}
	switch {
	case fi.code == fmtJPEG:
		return scrubJPEG(path)
	case fi.code == fmtWebP && c.opts.DPI == nil:
		return scrubWebP(path)
	}
	return nil
}

// fail logs a library's message and returns the client's error; when the job's
// context has ended, the failure is the cancellation's (libvips was told to stop).
func (c *conversion) fail(code, msg string, cause error) error {
	if err := c.ctx.Err(); err != nil {
		return err
	}
	return c.e.fail(c.in, code, msg, cause)
}

// undecodable is the failure of a stage that decodes the input: libvips decodes
// lazily, so a damaged file fails wherever its pixels are first needed.
func (c *conversion) undecodable(err error) error {
	return c.fail(domain.CodeCorruptedFile, "the image cannot be decoded: the file is damaged or truncated", err)
}

// outputName is the input's name with the output's extension.
func outputName(filename, ext string) string {
	base := filepath.Base(strings.ReplaceAll(filename, "\\", "/"))
	base = strings.TrimSuffix(base, filepath.Ext(base))
	if base == "" || base == "." || base == "/" {
		base = "image"
	}
	return base + "." + ext
}

// open reads the input's header with the loader options it will be decoded with, and
// applies the input limits.
func (c *conversion) open() (*source, error) {
	cfg := c.e.cfg
	path := c.in.Path
	head := make([]byte, 16)
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("image: open input: %w", err)
	}
	n, _ := io.ReadFull(f, head)
	f.Close()
	head = head[:n]
	if bytes.HasPrefix(head, []byte("BM")) {
		return c.openBMP()
	}
	if !loaderAllowed(path) {
		return nil, &domain.Error{Code: domain.CodeUnsupportedInput, Message: "the file is not an image format image.convert reads"}
	}
	hdr, err := readHeaderFile(path)
	if err != nil {
		return nil, c.loadFailed(err)
	}
	var opts []string
	switch {
	case strings.HasPrefix(hdr.Loader, "pdfload"):
		opts = append(opts, "page=0", "n=1")
		if c.opts.DPI != nil && c.opts.Width == nil && c.opts.Height == nil {
			opts = append(opts, fmt.Sprintf("dpi=%d", *c.opts.DPI))
		}
	case strings.HasPrefix(hdr.Loader, "svgload"):
		if c.opts.DPI != nil && c.opts.Width == nil && c.opts.Height == nil {
			opts = append(opts, fmt.Sprintf("dpi=%d", *c.opts.DPI))
		}
	case c.opts.Animated && hdr.Pages > 1 && (strings.HasPrefix(hdr.Loader, "gifload") || strings.HasPrefix(hdr.Loader, "webpload")):
		if hdr.Pages > cfg.MaxFrames {
			return nil, &domain.Error{Code: domain.CodeUnsupportedInput,
				Message: fmt.Sprintf("the animation has %d frames; at most %d are converted", hdr.Pages, cfg.MaxFrames)}
		}
		opts = append(opts, "n=-1")
	}
	src := &source{hdr: hdr, pathOpts: path, frames: 1}
	if len(opts) > 0 {
		src.pathOpts = path + "[" + strings.Join(opts, ",") + "]"
		if src.hdr, err = readHeaderFile(src.pathOpts); err != nil {
			return nil, c.loadFailed(err)
		}
		src.frames = src.hdr.frames()
	}
	if src.hdr.PageHeight <= 0 {
		src.hdr.PageHeight = src.hdr.Height
	}
	if err := c.checkPixels(src.hdr.Width, src.hdr.PageHeight, src.frames); err != nil {
		return nil, err
	}
	return src, nil
}

// loadFailed names the contract code for a decoder's failure. libvips' error buffer is
// shared by all threads, so its text cannot tell the cause: the file itself does.
func (c *conversion) loadFailed(err error) error {
	if pdfEncrypted(c.in.Path) {
		return c.fail(domain.CodeEncryptedFile, "the PDF is password-protected", err)
	}
	return c.undecodable(err)
}

func (c *conversion) checkPixels(w, h, frames int) error {
	px := int64(w) * int64(h) * int64(frames)
	if px > c.e.cfg.MaxPixels || w <= 0 || h <= 0 {
		return &domain.Error{Code: domain.CodeUnsupportedInput, Message: fmt.Sprintf(
			"the image is %d×%d pixels%s; at most %d pixels are converted", w, h, framesNote(frames), c.e.cfg.MaxPixels)}
	}
	return nil
}

func framesNote(frames int) string {
	if frames > 1 {
		return fmt.Sprintf(" × %d frames", frames)
	}
	return ""
}

// openBMP decodes a BMP in Go: libvips reads BMP only through ImageMagick, which is
// kept out of reach of uploads.
func (c *conversion) openBMP() (*source, error) {
	f, err := os.Open(c.in.Path)
	if err != nil {
		return nil, fmt.Errorf("image: open input: %w", err)
	}
	defer f.Close()
	cfg, err := bmp.DecodeConfig(f)
	if err != nil {
		return nil, c.undecodable(err)
	}
	if err := c.checkPixels(cfg.Width, cfg.Height, 1); err != nil {
		return nil, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	im, err := bmp.Decode(f)
	if err != nil {
		return nil, c.undecodable(err)
	}
	b := im.Bounds()
	nrgba, ok := im.(*goimage.NRGBA)
	if !ok {
		nrgba = goimage.NewNRGBA(b)
		for y := b.Min.Y; y < b.Max.Y; y++ {
			for x := b.Min.X; x < b.Max.X; x++ {
				nrgba.Set(x, y, im.At(x, y))
			}
		}
	}
	return &source{hdr: header{Width: b.Dx(), Height: b.Dy(), PageHeight: b.Dy(), Pages: 1, Orientation: 1, Bands: 4, Loader: "bmp"},
		bmp: nrgba, frames: 1}, nil
}

// plan computes every size of the conversion from the header.
func (c *conversion) plan(src *source) (geometry, error) {
	o := c.opts
	w, h := src.hdr.Width, src.hdr.PageHeight
	if src.hdr.Swap {
		w, h = h, w
	}
	if o.Rotate == 90 || o.Rotate == 270 {
		w, h = h, w
	}
	sx, sy := 1.0, 1.0
	both := o.Width != nil && o.Height != nil
	switch {
	case o.Width != nil && o.Height == nil:
		sx = float64(*o.Width) / float64(w)
		sy = sx
	case o.Height != nil && o.Width == nil:
		sy = float64(*o.Height) / float64(h)
		sx = sy
	case both:
		fx, fy := float64(*o.Width)/float64(w), float64(*o.Height)/float64(h)
		switch o.fit() {
		case "inside", "contain":
			sx = math.Min(fx, fy)
			sy = sx
		case "outside", "cover":
			sx = math.Max(fx, fy)
			sy = sx
		case "fill":
			sx, sy = fx, fy
		}
	}
	if !o.enlarge() {
		sx, sy = math.Min(sx, 1), math.Min(sy, 1)
	}
	g := geometry{resW: scaled(w, sx), resH: scaled(h, sy)}
	if both {
		W, H := *o.Width, *o.Height
		switch o.fit() {
		case "inside", "contain":
			g.resW, g.resH = min(g.resW, W), min(g.resH, H)
		case "outside", "cover":
			if o.enlarge() {
				g.resW, g.resH = max(g.resW, W), max(g.resH, H)
			}
		}
		switch o.fit() {
		case "cover":
			g.cropW, g.cropH = min(W, g.resW), min(H, g.resH)
		case "contain":
			g.padW, g.padH = W, H
		}
	}
	g.outW, g.outH = g.resW, g.resH
	if g.cropW > 0 {
		g.outW, g.outH = g.cropW, g.cropH
	}
	if g.padW > 0 {
		g.outW, g.outH = g.padW, g.padH
	}
	g.thumbW, g.thumbH = g.resW, g.resH
	if o.Rotate == 90 || o.Rotate == 270 {
		g.thumbW, g.thumbH = g.resH, g.resW
	}
	cfg := c.e.cfg
	if g.outW > cfg.MaxOutputDimension || g.outH > cfg.MaxOutputDimension {
		return g, &domain.Error{Code: domain.CodeUnsupportedInput, Message: fmt.Sprintf(
			"the output would be %d×%d pixels; at most %d pixels a side are produced", g.outW, g.outH, cfg.MaxOutputDimension)}
	}
	// The resized image before a crop can be far larger than the output (cover of a
	// very long strip): it is bounded like an input.
	if int64(g.resW)*int64(g.resH)*int64(src.frames) > cfg.MaxPixels || g.resW > vipsMaxCoord || g.resH > vipsMaxCoord {
		return g, &domain.Error{Code: domain.CodeUnsupportedInput, Message: fmt.Sprintf(
			"resizing to cover the box needs %d×%d pixels%s; at most %d pixels are processed", g.resW, g.resH, framesNote(src.frames), cfg.MaxPixels)}
	}
	return g, nil
}

// vipsMaxCoord is libvips' largest image side.
const vipsMaxCoord = 10_000_000

func scaled(n int, s float64) int {
	v := int(math.Round(float64(n) * s))
	return max(1, v)
}

// decode builds the load-and-resize stage: shrink-on-load, EXIF orientation and
// colour management happen here.
func (c *conversion) decode(src *source, g geometry) (vimg, error) {
	profile := ""
	// Stripping converts to sRGB through the embedded profile; CMYK always becomes sRGB.
	if (c.opts.stripMetadata() && src.hdr.HasICC) || src.hdr.CMYK {
		profile = "srgb"
	}
	if src.bmp != nil {
		return c.decodeBMP(src, g)
	}
	img, err := c.p.thumbnailFile(src.pathOpts, g.thumbW, g.thumbH, profile)
	if err != nil {
		return nil, c.loadFailed(err)
	}
	return img, nil
}

func (c *conversion) decodeBMP(src *source, g geometry) (vimg, error) {
	im := src.bmp
	b := im.Bounds()
	opaque := im.Opaque()
	nb := 4
	pix := im.Pix
	if opaque {
		nb = 3
		pix = make([]byte, 0, b.Dx()*b.Dy()*3)
		for y := 0; y < b.Dy(); y++ {
			row := im.Pix[y*im.Stride : y*im.Stride+b.Dx()*4]
			for x := 0; x < len(row); x += 4 {
				pix = append(pix, row[x], row[x+1], row[x+2])
			}
		}
	} else if im.Stride != b.Dx()*4 {
		pix = make([]byte, 0, b.Dx()*b.Dy()*4)
		for y := 0; y < b.Dy(); y++ {
			pix = append(pix, im.Pix[y*im.Stride:y*im.Stride+b.Dx()*4]...)
		}
	}
	mem, err := c.p.fromPixels(pix, b.Dx(), b.Dy(), nb)
	if err != nil {
		return nil, fmt.Errorf("image: bmp pixels: %w", err)
	}
	src.bmp = nil // the pixels are in libvips now
	img, err := c.p.thumbnailImage(mem, g.thumbW, g.thumbH)
	if err != nil {
		return nil, c.undecodable(err)
	}
	return img, nil
}

// shape rotates, crops and pads each frame.
func (c *conversion) shape(img vimg, frames int, g geometry) (vimg, error) {
	o := c.opts
	smart := g.cropW > 0 && (o.gravity() == "attention" || o.gravity() == "entropy")
	if o.Rotate == 0 && g.cropW == 0 && g.padW == 0 {
		return img, nil
	}
	var err error
	// Rotation and smart crops read the image out of order; the image is at its
	// output scale by now, bounded by MaxPixels.
	if o.Rotate != 0 || smart || frames > 1 {
		if img, err = c.p.copyMemory(img); err != nil {
			return nil, err
		}
	}
	pageH := height(img) / frames
	out := make([]vimg, 0, frames)
	for i := 0; i < frames; i++ {
		f := img
		if frames > 1 {
			if f, err = c.p.extract(img, 0, i*pageH, width(img), pageH); err != nil {
				return nil, err
			}
		}
		if f, err = c.shapeFrame(f, g, smart); err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	if frames == 1 {
		return out[0], nil
	}
	return c.p.join(out)
}

func (c *conversion) shapeFrame(f vimg, g geometry, smart bool) (vimg, error) {
	o := c.opts
	var err error
	if o.Rotate != 0 {
		if f, err = c.p.rot(f, o.Rotate); err != nil {
			return nil, err
		}
	}
	gv := gravities[o.gravity()]
	if g.cropW > 0 && (g.cropW < width(f) || g.cropH < height(f)) {
		switch {
		case smart:
			interesting := interestingAttention
			if o.gravity() == "entropy" {
				interesting = interestingEntropy
			}
			f, err = c.p.smartcrop(f, g.cropW, g.cropH, interesting)
		default:
			left := int(math.Round(float64(width(f)-g.cropW) * gv[0]))
			top := int(math.Round(float64(height(f)-g.cropH) * gv[1]))
			f, err = c.p.extract(f, left, top, g.cropW, g.cropH)
		}
		if err != nil {
			return nil, err
		}
	}
	if g.padW > 0 && (g.padW > width(f) || g.padH > height(f)) {
		bg, err := c.padColour(&f)
		if err != nil {
			return nil, err
		}
		x := int(math.Round(float64(g.padW-width(f)) * gv[0]))
		y := int(math.Round(float64(g.padH-height(f)) * gv[1]))
		if f, err = c.p.embed(f, x, y, g.padW, g.padH, bg); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// padColour returns contain's padding for f, converting f so the colour fits its
// bands: grey becomes sRGB for a colour, and an alpha band is added for transparency.
func (c *conversion) padColour(f *vimg) ([]float64, error) {
	fi := formats[c.opts.format()]
	bg, set := parseBackground(c.opts.Background)
	if !set {
		bg = rgba{255, 255, 255, 255}
		if fi.alpha {
			bg = rgba{0, 0, 0, 0}
		}
	}
	var err error
	if bands(*f) < 3 {
		if *f, err = c.p.toSRGB(*f); err != nil {
			return nil, err
		}
	}
	transparent := fi.alpha && bg[3] < 255
	if transparent && bands(*f) == 3 {
		if *f, err = c.p.addAlpha(*f); err != nil {
			return nil, err
		}
	}
	if bands(*f) == 4 {
		if !fi.alpha {
			bg[3] = 255
		}
		return bg[:], nil
	}
	return bg[:3], nil
}

// colour flattens transparency the output cannot carry (or onto an opaque
// background) and gives formats that need it three bands.
func (c *conversion) colour(img vimg, fi formatInfo) (vimg, error) {
	bg, set := parseBackground(c.opts.Background)
	hasAlpha := bands(img) == 2 || bands(img) == 4
	var err error
	if hasAlpha && (!fi.alpha || (set && bg[3] == 255)) {
		if !set {
			bg = rgba{255, 255, 255, 255}
		}
		if bands(img) == 2 && (bg[0] != bg[1] || bg[1] != bg[2]) {
			if img, err = c.p.toSRGB(img); err != nil {
				return nil, err
			}
		}
		vals := bg[:3]
		if bands(img) == 2 {
			vals = bg[:1]
		}
		if img, err = c.p.flatten(img, vals); err != nil {
			return nil, err
		}
	}
	// libheif and the GIF and WebP encoders want RGB.
	if bands(img) < 3 && (fi.code == fmtAVIF || fi.code == fmtGIF || fi.code == fmtWebP) {
		if img, err = c.p.toSRGB(img); err != nil {
			return nil, err
		}
	}
	return img, nil
}

// verify reads the output back and checks its format, size and frames.
func (c *conversion) verify(path string, fi formatInfo, g geometry, frames int) error {
	if fi.code == fmtWebP && frames == 1 {
		w, h, animated, err := verifyWebPFile(path)
		if err != nil {
			return c.fail(domain.CodeOutputValidationFailed, "the converted image does not decode", err)
		}
		if animated || w != g.outW || h != g.outH {
			return c.fail(domain.CodeOutputValidationFailed, "the converted image is not what was asked for",
				fmt.Errorf("output WebP %d×%d (animated: %t); expected %d×%d, 1 frame", w, h, animated, g.outW, g.outH))
		}
		return nil
	}
	pathOpts := path
	if frames > 1 {
		pathOpts += "[n=-1]"
	}
	h, err := verifyFile(pathOpts)
	if err != nil {
		return c.fail(domain.CodeOutputValidationFailed, "the converted image does not decode", err)
	}
	pageH := h.PageHeight
	if pageH <= 0 {
		pageH = h.Height
	}
	got := h.Height / pageH
	if !strings.HasPrefix(h.Loader, fi.loader) || h.Width != g.outW || pageH != g.outH || got != frames {
		return c.fail(domain.CodeOutputValidationFailed, "the converted image is not what was asked for",
			fmt.Errorf("output %s %d×%d, %d frames; expected %s %d×%d, %d frames", h.Loader, h.Width, pageH, got, fi.loader, g.outW, g.outH, frames))
	}
	return nil
}

// writeCheckImage writes a small PNG with transparency for Check.
func writeCheckImage(path string) error {
	im := goimage.NewNRGBA(goimage.Rect(0, 0, 16, 12))
	for y := 0; y < 12; y++ {
		for x := 0; x < 16; x++ {
			im.SetNRGBA(x, y, color.NRGBA{uint8(x * 16), uint8(y * 20), 128, uint8(128 + x*8)})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, im); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o600)
}
