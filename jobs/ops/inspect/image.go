package inspect

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"

	"golang.org/x/image/bmp"
	"golang.org/x/image/tiff"
	"golang.org/x/image/webp"

	"github.com/filemill/filemill/domain"
)

// inspectImage reads an image's dimensions and colour model from its header (never the
// pixels), then the few facts the standard decoders do not expose — EXIF orientation,
// bit depth, frame count, JPEG's Adobe colour transform — from the container itself.
func (e *Engine) inspectImage(ctx context.Context, src source, f domain.Format) (*ImageReport, error) {
	sr := io.NewSectionReader(src.f, 0, src.size)
	decodeConfig := map[string]func(io.Reader) (image.Config, error){
		"image/png": png.DecodeConfig, "image/jpeg": jpeg.DecodeConfig, "image/gif": gif.DecodeConfig,
		"image/webp": webp.DecodeConfig, "image/tiff": tiff.DecodeConfig,
	}[f.MIMEType]
	if decodeConfig == nil {
		decodeConfig = bmp.DecodeConfig // the remaining members of imageMIMETypes
	}
	// TIFF's decoder wants an io.ReaderAt (else it buffers the whole file): hand the
	// section reader over as is; the others read sequentially, so buffer them.
	var r io.Reader = sr
	if f.MIMEType != "image/tiff" {
		r = bufio.NewReader(sr)
	}
	cfg, cfgErr := decodeConfig(r)
	// A valid file using a variant the decoder lacks (12-bit or arithmetic-coded JPEG,
	// RLE or 16-bit BMP, tiled TIFF ...) is not corrupted: its header still tells.
	unsupported := isUnsupported(cfgErr)
	if cfgErr != nil && !unsupported {
		return nil, corrupted("image", cfgErr)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	var h header
	var err error
	switch f.MIMEType {
	case "image/png":
		h, err = pngHeader(sr)
	case "image/jpeg":
		h, err = jpegHeader(sr)
	case "image/gif":
		h, err = gifHeader(ctx, sr)
	case "image/webp":
		h, err = webpHeader(ctx, sr)
	case "image/tiff":
		h, err = readTIFFTags(sr, src.size)
	default:
		h, err = bmpHeader(sr)
	}
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, ctxErr
		}
		return nil, corrupted("image", err)
	}
	if unsupported {
		if h.width <= 0 || h.height <= 0 || h.colorSpace == "" {
			return nil, &domain.Error{Code: domain.CodeUnsupportedInput, Message: fmt.Sprintf("the image cannot be read: %v", cfgErr)}
		}
		cfg.Width, cfg.Height = h.width, h.height
	} else {
		h.colorSpace = colorSpace(cfg.ColorModel, h.colorSpace)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 {
		return nil, corrupted("image", fmt.Errorf("invalid dimensions %d×%d", cfg.Width, cfg.Height))
	}
	if h.orientation < 1 || h.orientation > 8 {
		h.orientation = 1
	}
	pixels := int64(cfg.Width) * int64(cfg.Height)
	width, height := cfg.Width, cfg.Height
	if h.orientation >= 5 { // a quarter turn (with or without a mirror): displayed on its side
		width, height = height, width
	}
	return &ImageReport{
		Width:             width,
		Height:            height,
		StoredWidth:       cfg.Width,
		StoredHeight:      cfg.Height,
		Megapixels:        float64(pixels) / 1e6,
		ExceedsPixelLimit: pixels > e.cfg.MaxPixels,
		Orientation:       h.orientation,
		ColorSpace:        h.colorSpace,
		BitDepth:          h.bitDepth,
		Frames:            h.frames,
	}, nil
}

func isUnsupported(err error) bool {
	var j jpeg.UnsupportedError
	var p png.UnsupportedError
	var t tiff.UnsupportedError
	return errors.As(err, &j) || errors.As(err, &p) || errors.As(err, &t) || errors.Is(err, bmp.ErrUnsupported)
}

// header is what the container's own headers say. Width, height and colour space
// stand in for the decoder's when it does not support the variant.
type header struct {
	width, height int
	colorSpace    string
	bitDepth      int
	orientation   int
	frames        int
}

// colorSpace names the decoder's colour model; fromHeader refines it where the model
// is ambiguous (JPEG's CMYK model covers YCCK too).
func colorSpace(m color.Model, fromHeader string) string {
	switch m {
	case color.GrayModel, color.Gray16Model:
		return "gray"
	case color.CMYKModel:
		if fromHeader == "ycck" {
			return "ycck"
		}
		return "cmyk"
	case color.YCbCrModel, color.NYCbCrAModel:
		return "ycbcr"
	case color.RGBAModel, color.RGBA64Model, color.NRGBAModel, color.NRGBA64Model:
		return "srgb"
	}
	if _, ok := m.(color.Palette); ok {
		return "paletted"
	}
	if fromHeader != "" {
		return fromHeader
	}
	return "unknown"
}

// pngHeader reads the bit depth from IHDR, which must follow the PNG signature.
func pngHeader(r io.ReaderAt) (header, error) {
	var b [26]byte
	if _, err := r.ReadAt(b[:], 0); err != nil {
		return header{}, fmt.Errorf("png header: %w", err)
	}
	if string(b[12:16]) != "IHDR" {
		return header{}, errors.New("png: IHDR is not the first chunk")
	}
	return header{bitDepth: int(b[24])}, nil
}

// jpegHeader walks the marker segments up to the start of scan: SOF gives the size,
// components and sample precision, APP1 Exif the orientation, APP14 Adobe whether four
// components are CMYK or YCCK (the standard decoder calls both CMYK).
func jpegHeader(r io.ReaderAt) (header, error) {
	h := header{}
	br := bufio.NewReader(io.NewSectionReader(r, 0, 1<<62))
	var soi [2]byte
	if _, err := io.ReadFull(br, soi[:]); err != nil || soi != [2]byte{0xFF, 0xD8} {
		return h, errors.New("jpeg: missing SOI marker")
	}
	components, adobeTransform := 0, -1
	for range 4096 { // real files have tens of segments before the scan
		marker, err := nextJPEGMarker(br)
		if err != nil {
			return h, err
		}
		switch {
		case marker == 0xD9 || marker == 0xDA: // EOI, SOS: the headers are over
			switch {
			case components == 1:
				h.colorSpace = "gray"
			case components == 3 && adobeTransform == 0:
				h.colorSpace = "srgb"
			case components == 3:
				h.colorSpace = "ycbcr"
			case components == 4 && adobeTransform == 2:
				h.colorSpace = "ycck"
			case components == 4:
				h.colorSpace = "cmyk"
			}
			return h, nil
		case marker == 0x01 || marker >= 0xD0 && marker <= 0xD7: // no payload
			continue
		}
		var l [2]byte
		if _, err := io.ReadFull(br, l[:]); err != nil {
			return h, fmt.Errorf("jpeg: segment length: %w", err)
		}
		n := int(binary.BigEndian.Uint16(l[:])) - 2
		if n < 0 {
			return h, errors.New("jpeg: bad segment length")
		}
		seg := make([]byte, n)
		if _, err := io.ReadFull(br, seg); err != nil {
			return h, fmt.Errorf("jpeg: segment: %w", err)
		}
		switch {
		case marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC:
			if len(seg) >= 6 {
				h.bitDepth = int(seg[0])
				h.height = int(binary.BigEndian.Uint16(seg[1:3]))
				h.width = int(binary.BigEndian.Uint16(seg[3:5]))
				components = int(seg[5])
			}
		case marker == 0xE1 && bytes.HasPrefix(seg, []byte("Exif\x00\x00")):
			exif := seg[6:]
			if t, err := readTIFFTags(bytes.NewReader(exif), int64(len(exif))); err == nil {
				h.orientation = t.orientation
			}
		case marker == 0xEE && len(seg) >= 12 && bytes.HasPrefix(seg, []byte("Adobe")):
			adobeTransform = int(seg[11])
		}
	}
	return h, errors.New("jpeg: too many segments before the scan")
}

func nextJPEGMarker(br *bufio.Reader) (byte, error) {
	// Like libjpeg (and the standard decoder), step over junk between segments, within
	// reason.
	b, err := br.ReadByte()
	for skipped := 0; err == nil && b != 0xFF; skipped++ {
		if skipped == 1<<16 {
			return 0, errors.New("jpeg: no marker where one was expected")
		}
		b, err = br.ReadByte()
	}
	for err == nil && b == 0xFF { // fill bytes may precede a marker
		b, err = br.ReadByte()
	}
	if err != nil {
		return 0, fmt.Errorf("jpeg: marker: %w", err)
	}
	return b, nil
}

// gifHeader counts frames by walking the blocks, skipping the LZW data unread, and
// takes the bit depth from the global colour table's size.
func gifHeader(ctx context.Context, r io.ReaderAt) (header, error) {
	h := header{}
	br := bufio.NewReader(io.NewSectionReader(r, 0, 1<<62))
	var lsd [13]byte
	if _, err := io.ReadFull(br, lsd[:]); err != nil {
		return h, fmt.Errorf("gif header: %w", err)
	}
	if lsd[10]&0x80 != 0 {
		h.bitDepth = int(lsd[10]&7) + 1
		if _, err := br.Discard(3 << (lsd[10]&7 + 1)); err != nil {
			return h, nil // truncated: the decoder accepted the header, count no frames
		}
	}
	skipSubBlocks := func() error {
		for {
			n, err := br.ReadByte()
			if err != nil || n == 0 {
				return err
			}
			if _, err := br.Discard(int(n)); err != nil {
				return err
			}
		}
	}
	// A truncated file or junk after the last frame ends the count: viewers show the
	// frames so far, and so does the report.
	for i := 0; ; i++ {
		if i%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return h, err
			}
		}
		b, err := br.ReadByte()
		if err != nil {
			return h, nil
		}
		switch b {
		case 0x21: // extension: label, then data sub-blocks
			if _, err := br.ReadByte(); err != nil || skipSubBlocks() != nil {
				return h, nil
			}
		case 0x2C: // image descriptor
			var d [9]byte
			if _, err := io.ReadFull(br, d[:]); err != nil {
				return h, nil
			}
			if d[8]&0x80 != 0 {
				if _, err := br.Discard(3 << (d[8]&7 + 1)); err != nil {
					return h, nil
				}
			}
			if _, err := br.ReadByte(); err != nil { // LZW minimum code size
				return h, nil
			}
			if skipSubBlocks() != nil {
				return h, nil
			}
			h.frames++
		default: // 0x3B trailer, or junk
			return h, nil
		}
	}
}

// webpHeader walks the RIFF chunks: ANMF chunks are animation frames, EXIF holds the
// orientation. Chunk payloads other than EXIF are skipped unread.
func webpHeader(ctx context.Context, r io.ReaderAt) (header, error) {
	h := header{}
	var riff [12]byte
	if _, err := r.ReadAt(riff[:], 0); err != nil {
		return h, fmt.Errorf("webp header: %w", err)
	}
	riffEnd := int64(binary.LittleEndian.Uint32(riff[4:8])) + 8
	animated := false
	off := int64(12)
	for i := 0; off+8 <= riffEnd; i++ {
		if i%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return h, err
			}
		}
		var ch [8]byte
		if _, err := r.ReadAt(ch[:], off); err != nil {
			break // a truncated tail: keep what the chunks so far say
		}
		size := int64(binary.LittleEndian.Uint32(ch[4:8]))
		data := off + 8
		switch string(ch[:4]) {
		case "VP8X":
			var flags [1]byte
			if _, err := r.ReadAt(flags[:], data); err == nil {
				animated = flags[0]&0x02 != 0
			}
		case "ANMF":
			h.frames++
		case "EXIF":
			if size <= 1<<20 {
				exif := make([]byte, size)
				if _, err := r.ReadAt(exif, data); err == nil {
					exif = bytes.TrimPrefix(exif, []byte("Exif\x00\x00"))
					if t, err := readTIFFTags(bytes.NewReader(exif), int64(len(exif))); err == nil {
						h.orientation = t.orientation
					}
				}
			}
		}
		off = data + size + size&1 // chunks are padded to even sizes
	}
	if !animated || h.frames == 0 {
		h.frames = 1
	}
	return h, nil
}

// bmpHeader reads the info header. Bits per pixel become bits per sample: 24- and
// 32-bit BMPs store 8-bit samples; 8 bits and fewer index a palette.
func bmpHeader(r io.ReaderAt) (header, error) {
	h := header{colorSpace: "srgb"}
	var b [30]byte
	if _, err := r.ReadAt(b[:], 0); err != nil {
		return h, fmt.Errorf("bmp header: %w", err)
	}
	switch infoLen := binary.LittleEndian.Uint32(b[14:18]); {
	case infoLen == 12: // OS/2 BITMAPCOREHEADER: 16-bit sizes
		h.width = int(binary.LittleEndian.Uint16(b[18:20]))
		h.height = int(binary.LittleEndian.Uint16(b[20:22]))
		return h, nil // bits per pixel sit elsewhere; leave the depth unknown
	case infoLen >= 40:
		h.width = int(int32(binary.LittleEndian.Uint32(b[18:22])))
		h.height = int(int32(binary.LittleEndian.Uint32(b[22:26])))
		if h.height < 0 { // top-down rows
			h.height = -h.height
		}
	}
	switch bpp := int(binary.LittleEndian.Uint16(b[28:30])); {
	case bpp == 24 || bpp == 32:
		h.bitDepth = 8
	case bpp >= 1 && bpp <= 8:
		h.bitDepth, h.colorSpace = bpp, "paletted"
	}
	return h, nil
}

// readTIFFTags reads the first IFD of a TIFF structure — a TIFF file, or the Exif
// payload of a JPEG or WebP — for the size, photometric interpretation, bits per
// sample and orientation.
func readTIFFTags(r io.ReaderAt, size int64) (header, error) {
	h := header{}
	var b [8]byte
	if _, err := r.ReadAt(b[:], 0); err != nil {
		return h, fmt.Errorf("tiff header: %w", err)
	}
	var bo binary.ByteOrder
	switch string(b[:4]) {
	case "II*\x00":
		bo = binary.LittleEndian
	case "MM\x00*":
		bo = binary.BigEndian
	default:
		return h, errors.New("tiff: bad header")
	}
	ifd := int64(bo.Uint32(b[4:8]))
	var c [2]byte
	if ifd+2 > size {
		return h, errors.New("tiff: IFD offset out of range")
	}
	if _, err := r.ReadAt(c[:], ifd); err != nil {
		return h, fmt.Errorf("tiff: IFD: %w", err)
	}
	n := int64(bo.Uint16(c[:]))
	if ifd+2+12*n > size {
		return h, errors.New("tiff: IFD out of range")
	}
	entries := make([]byte, 12*n)
	if _, err := r.ReadAt(entries, ifd+2); err != nil {
		return h, fmt.Errorf("tiff: IFD: %w", err)
	}
	const typeShort, typeLong = 3, 4
	for i := range n {
		e := entries[12*i : 12*i+12]
		tag, typ, count := bo.Uint16(e[0:2]), bo.Uint16(e[2:4]), bo.Uint32(e[4:8])
		if count == 0 || typ != typeShort && typ != typeLong {
			continue
		}
		v := int(bo.Uint16(e[8:10])) // the first value, when it is stored inline
		if typ == typeLong {
			v = int(bo.Uint32(e[8:12]))
		}
		switch tag {
		case 0x0100: // ImageWidth
			h.width = v
		case 0x0101: // ImageLength
			h.height = v
		case 0x0106: // PhotometricInterpretation
			h.colorSpace = map[int]string{0: "gray", 1: "gray", 2: "srgb", 3: "paletted", 5: "cmyk", 6: "ycbcr"}[v]
		case 0x0112: // Orientation
			h.orientation = v
		case 0x0102: // BitsPerSample: one value per sample; they are equal in practice
			if typ != typeShort {
				continue
			}
			if count <= 2 {
				h.bitDepth = v
			} else if off := int64(bo.Uint32(e[8:12])); off+2 <= size {
				if _, err := r.ReadAt(c[:], off); err == nil {
					h.bitDepth = int(bo.Uint16(c[:]))
				}
			}
		}
	}
	return h, nil
}
