// Package imagepdf makes one-page PDFs that show an image the way viewers display it.
// The image's EXIF orientation becomes the matrix that places the image on the page,
// so an image keeps its encoded bytes (a JPEG is embedded byte for byte) and the page
// still comes out upright. convert (image → PDF) and ocr (the searchable PDF of an
// image) share it.
//
// It imports pdfcpu and the standard library only: callers decode, orient and
// re-encode pixels with the engines they own.
package imagepdf

import (
	"bytes"
	"compress/zlib"
	"errors"
	"fmt"
	"image/color"
	"image/jpeg"
	"math"
	"os"
	"strconv"

	"github.com/pdfcpu/pdfcpu/pkg/api"
	"github.com/pdfcpu/pdfcpu/pkg/filter"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"
)

func init() { api.DisableConfigDir() }

// Image is an encoded image, ready to be a PDF image XObject: Width×Height samples as
// stored (before any orientation), Data encoded with Filter.
type Image struct {
	Width, Height    int
	Filter           string // filter.DCT, filter.Flate or filter.CCITTFax
	DecodeParms      types.Dict
	ColorSpace       string // DeviceGray, DeviceRGB or DeviceCMYK
	BitsPerComponent int
	// Decode inverts the samples of Adobe's CMYK JPEGs.
	Decode types.Array
	Data   []byte
}

// JPEG embeds a JPEG file as it is: no decoding, no generation loss.
func JPEG(data []byte) (*Image, error) {
	cfg, err := jpeg.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("imagepdf: read the JPEG header: %w", err)
	}
	img := &Image{Width: cfg.Width, Height: cfg.Height, Filter: filter.DCT, BitsPerComponent: 8, Data: data}
	switch cfg.ColorModel {
	case color.GrayModel:
		img.ColorSpace = model.DeviceGrayCS
	case color.CMYKModel:
		// Adobe's CMYK JPEGs store inverted samples, as every JPEG writer that makes
		// them does; PDF readers take the samples literally unless told.
		img.ColorSpace = model.DeviceCMYKCS
		img.Decode = types.NewIntegerArray(1, 0, 1, 0, 1, 0, 1, 0)
	default:
		img.ColorSpace = model.DeviceRGBCS
	}
	return img, nil
}

// Flate encodes 8-bit samples losslessly: bands 1 (gray) or 3 (RGB), rows packed.
func Flate(pix []byte, width, height, bands int) (*Image, error) {
	if width <= 0 || height <= 0 || (bands != 1 && bands != 3) || len(pix) < width*height*bands {
		return nil, errors.New("imagepdf: pixels do not match their size")
	}
	var b bytes.Buffer
	z, _ := zlib.NewWriterLevel(&b, zlib.BestSpeed)
	if _, err := z.Write(pix[:width*height*bands]); err != nil {
		return nil, err
	}
	if err := z.Close(); err != nil {
		return nil, err
	}
	cs := model.DeviceGrayCS
	if bands == 3 {
		cs = model.DeviceRGBCS
	}
	return &Image{Width: width, Height: height, Filter: filter.Flate, ColorSpace: cs, BitsPerComponent: 8, Data: b.Bytes()}, nil
}

// streamDict is the image XObject.
func (img *Image) streamDict() *types.StreamDict {
	d := types.Dict{
		"Type":             types.Name("XObject"),
		"Subtype":          types.Name("Image"),
		"Width":            types.Integer(img.Width),
		"Height":           types.Integer(img.Height),
		"BitsPerComponent": types.Integer(img.BitsPerComponent),
		"ColorSpace":       types.Name(img.ColorSpace),
		"Filter":           types.Name(img.Filter),
	}
	if img.DecodeParms != nil {
		d["DecodeParms"] = img.DecodeParms
	}
	if img.Decode != nil {
		d["Decode"] = img.Decode
	}
	n := int64(len(img.Data))
	d["Length"] = types.Integer(n)
	sd := types.NewStreamDict(d, 0, &n, nil, []types.PDFFilter{{Name: img.Filter, DecodeParms: img.DecodeParms}})
	sd.Raw = img.Data
	return &sd
}

// Upright returns the size of an image of w×h stored pixels as displayed with
// orientation: orientations 5–8 turn it a quarter.
func Upright(w, h, orientation int) (int, int) {
	if orientation >= 5 && orientation <= 8 {
		return h, w
	}
	return w, h
}

// Matrix maps the image's unit square (PDF image space) onto a page of pageW×pageH
// points so that the image shows as orientation says it is displayed.
//
// The EXIF orientation of a stored image of w×h pixels says where its pixel (u, v),
// origin top-left, appears in the displayed image of W×H: 1 (u, v), 2 (w−u, v),
// 3 (w−u, h−v), 4 (u, h−v), 5 (v, u), 6 (h−v, u), 7 (h−v, w−u), 8 (v, w−u). The
// unit square's (s, t) is stored pixel (s·w, (1−t)·h); the page's y axis points up.
func Matrix(orientation int, pageW, pageH float64) [6]float64 {
	// With the stored size normalised to 1×1, the displayed image is 1×1 too.
	shown := func(s, t float64) (x, y float64) {
		u, v := s, 1-t
		switch orientation {
		case 2:
			u = 1 - u
		case 3:
			u, v = 1-u, 1-v
		case 4:
			v = 1 - v
		case 5:
			u, v = v, u
		case 6:
			u, v = 1-v, u
		case 7:
			u, v = 1-v, 1-u
		case 8:
			u, v = v, 1-u
		}
		return u * pageW, (1 - v) * pageH
	}
	ox, oy := shown(0, 0)
	sx, sy := shown(1, 0)
	tx, ty := shown(0, 1)
	return [6]float64{sx - ox, sy - oy, tx - ox, ty - oy, ox, oy}
}

// Conf is pdfcpu's configuration for writing these documents: relaxed, offline,
// compact (object and cross-reference streams).
func Conf() *model.Configuration {
	return &model.Configuration{
		Version:                   model.VersionStr,
		Reader15:                  true,
		ValidationMode:            model.ValidationRelaxed,
		UnsupportedResourcePolicy: model.UnsupportedResourceSkip,
		Eol:                       types.EolLF,
		WriteObjectStream:         true,
		WriteXRefStream:           true,
		Offline:                   true,
		Timeout:                   5,
		Limits:                    model.DefaultResourceLimits(),
	}
}

// New returns a document without pages, to add them to.
func New() (pc *model.Context, err error) {
	defer recoverPanic(&err)
	return pdfcpu.CreateContextWithXRefTable(Conf(), &types.Dim{Width: 612, Height: 792})
}

// AddPage appends a page showing img upright, of its displayed size at dpi (pixels
// per inch; 72 makes a pixel a point), and returns the page's size in points.
func AddPage(pc *model.Context, img *Image, orientation int, dpi float64) (pageW, pageH float64, err error) {
	if dpi <= 0 || math.IsInf(dpi, 0) || math.IsNaN(dpi) {
		return 0, 0, errors.New("imagepdf: the resolution must be positive")
	}
	defer recoverPanic(&err)
	w, h := Upright(img.Width, img.Height, orientation)
	pageW, pageH = float64(w)*72/dpi, float64(h)*72/dpi
	pagesRef, err := pc.Pages()
	if err != nil {
		return 0, 0, err
	}
	pages, err := pc.DereferenceDict(*pagesRef)
	if err != nil {
		return 0, 0, err
	}
	imgRef, err := pc.IndRefForNewObject(*img.streamDict())
	if err != nil {
		return 0, 0, err
	}
	m := Matrix(orientation, pageW, pageH)
	contentRef, err := AddStream(pc, []byte("q "+Numbers(m[:]...)+" cm /Im0 Do Q\n"))
	if err != nil {
		return 0, 0, err
	}
	page := types.Dict{
		"Type":      types.Name("Page"),
		"Parent":    *pagesRef,
		"MediaBox":  types.RectForDim(pageW, pageH).Array(),
		"Resources": types.Dict{"XObject": types.Dict{"Im0": *imgRef}},
		"Contents":  *contentRef,
	}
	pageRef, err := pc.IndRefForNewObject(page)
	if err != nil {
		return 0, 0, err
	}
	if err := model.AppendPageTree(pageRef, 1, pages); err != nil {
		return 0, 0, err
	}
	pc.PageCount++
	return pageW, pageH, nil
}

// AddStream adds a Flate-compressed stream object holding data.
func AddStream(pc *model.Context, data []byte) (*types.IndirectRef, error) {
	sd, err := pc.NewStreamDictForBuf(data)
	if err != nil {
		return nil, err
	}
	if err := sd.Encode(); err != nil {
		return nil, err
	}
	return pc.IndRefForNewObject(*sd)
}

// Write writes pc to path.
func Write(pc *model.Context, path string) (err error) {
	defer recoverPanic(&err)
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := api.WriteContext(pc, f); err != nil {
		f.Close()
		return fmt.Errorf("imagepdf: write: %w", err)
	}
	return f.Close()
}

// recoverPanic turns a pdfcpu panic (it has some on malformed input) into an error.
func recoverPanic(err *error) {
	if p := recover(); p != nil {
		*err = fmt.Errorf("pdfcpu: %v", p)
	}
}

// Numbers formats numbers for a content stream: at most four decimals, no exponent.
func Numbers(v ...float64) string {
	var b []byte
	for i, x := range v {
		if i > 0 {
			b = append(b, ' ')
		}
		x = math.Round(x*1e4) / 1e4
		if x == 0 {
			x = 0 // no "-0"
		}
		b = strconv.AppendFloat(b, x, 'f', -1, 64)
	}
	return string(b)
}
