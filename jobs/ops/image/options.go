package image

import (
	"regexp"
	"strconv"

	"github.com/filemill/filemill/domain"
)

// OperationConvert is the operation this engine serves.
const OperationConvert = "image.convert"

// MaxDimension is the largest width or height an option may ask for (WebP's limit is
// 16383; Config.MaxOutputDimension may lower it further).
const MaxDimension = 16384

// Options are image.convert's options. Their names are the contract.
type Options struct {
	Format string `json:"format,omitempty" doc:"Output format. Default webp." schema:"enum=jpeg|png|webp|avif|gif|tiff,default=webp"`
	Width  *int   `json:"width,omitempty" doc:"Target width in pixels. With only width or only height, the other follows the aspect ratio and fit does not matter; with neither, the image keeps its size." schema:"min=1,max=16384"`
	Height *int   `json:"height,omitempty" doc:"Target height in pixels." schema:"min=1,max=16384"`
	Fit    string `json:"fit,omitempty" doc:"How the image meets width×height. inside: as large as possible within the box, aspect kept; outside: as small as possible covering the box, aspect kept; cover: covers the box and is cropped to exactly width×height (see gravity); contain: fits inside and is padded to exactly width×height with background; fill: stretched to exactly width×height. Default inside." schema:"enum=cover|contain|fill|inside|outside,default=inside"`
	// Gravity places the crop window (cover) or the image in its padding (contain).
	Gravity string `json:"gravity,omitempty" doc:"Which part is kept when cover crops, or where contain places the image in its padding. attention (the region a person looks at first: skin, saturated colour, detail) and entropy (the busiest region) are smart crops, for fit cover only. Default center." schema:"enum=center|north|northeast|east|southeast|south|southwest|west|northwest|attention|entropy,default=center"`
	Rotate  int    `json:"rotate,omitempty" doc:"Clockwise rotation in degrees, applied after the EXIF orientation (always applied) and before resizing: width, height and gravity describe the rotated image. Default 0." schema:"enum=0|90|180|270,default=0"`
	Enlarge *bool  `json:"enlarge,omitempty" doc:"Whether a smaller image may be scaled up to reach width/height. false caps the scale at 1: inside/outside keep a smaller image's size, cover crops to at most the image, contain pads the unscaled image, fill stretches no axis beyond its size. Default true." schema:"default=true"`
	Quality *int   `json:"quality,omitempty" doc:"Lossy quality 1–100 (lower: smaller file). Default 80 for jpeg and webp, 60 for avif. For png it turns on 8-bit palette quantisation at that quality; for tiff it selects JPEG compression (without it tiff is deflate, lossless). gif takes none." schema:"min=1,max=100"`
	// Lossless applies to webp and avif; png, gif and (without quality) tiff are
	// lossless anyway.
	Lossless bool `json:"lossless,omitempty" doc:"Lossless webp or avif. Not for jpeg. Default false." schema:"default=false"`
	Effort   *int `json:"effort,omitempty" doc:"Encoder effort 0 (fastest) to 9 (slowest, smallest), mapped onto each encoder's own scale: webp 0–6 (default 4), avif 0–9 (default 4; slow above 5), png zlib level (default 6), gif 1–10 (default 7), jpeg optimised Huffman tables from 5 (default off)." schema:"min=0,max=9"`
	// StripMetadata: see the doc tag.
	StripMetadata *bool  `json:"strip_metadata,omitempty" doc:"Remove EXIF, XMP, IPTC and comments. An embedded ICC profile is not simply dropped: the pixels are converted from it to sRGB and the output carries an sRGB profile. false keeps all metadata and the original colour profile (orientation is reset, the pixels being upright). Default true." schema:"default=true"`
	Background    string `json:"background,omitempty" doc:"Colour #RRGGBB or #RRGGBBAA for contain's padding and for flattening transparency. Unset: padding is transparent where the format has alpha (white for jpeg) and transparency is kept (flattened onto white for jpeg). An opaque colour also flattens transparency in formats with alpha." schema:"maxLength=9"`
	DPI           *int   `json:"dpi,omitempty" doc:"Density written into the output's metadata (JPEG, PNG and TIFF headers; WebP in its EXIF block; AVIF and GIF have no place for it); for SVG and PDF inputs also the resolution they are rendered at when neither width nor height is given (default 72)." schema:"min=1,max=2400"`
	Animated      bool   `json:"animated,omitempty" doc:"Keep every frame of an animated GIF or WebP (format gif or webp only); otherwise the first frame is converted. Default false." schema:"default=false"`
}

var backgroundPattern = regexp.MustCompile(`^#?([0-9a-fA-F]{6}|[0-9a-fA-F]{8})$`)

// Validate checks the rules across options. Codes: invalid_request with param
// options.<name>.
func (o Options) Validate() error {
	format := o.format()
	fit := o.fit()
	gravity := o.gravity()
	switch format {
	case "jpeg", "png", "webp", "avif", "gif", "tiff":
	default:
		return domain.InvalidParam("options.format", "format must be one of jpeg, png, webp, avif, gif, tiff")
	}
	switch fit {
	case "cover", "contain", "fill", "inside", "outside":
	default:
		return domain.InvalidParam("options.fit", "fit must be one of cover, contain, fill, inside, outside")
	}
	if _, ok := gravities[gravity]; !ok {
		return domain.InvalidParam("options.gravity", "gravity must be one of center, north, northeast, east, southeast, south, southwest, west, northwest, attention, entropy")
	}
	if (gravity == "attention" || gravity == "entropy") && fit != "cover" {
		return domain.InvalidParam("options.gravity", "gravity %s is a smart crop: it needs fit cover", gravity)
	}
	switch o.Rotate {
	case 0, 90, 180, 270:
	default:
		return domain.InvalidParam("options.rotate", "rotate must be 0, 90, 180 or 270")
	}
	for name, v := range map[string]*int{"width": o.Width, "height": o.Height} {
		if v != nil && (*v < 1 || *v > MaxDimension) {
			return domain.InvalidParam("options."+name, "%s must be between 1 and %d", name, MaxDimension)
		}
	}
	if o.Quality != nil {
		if *o.Quality < 1 || *o.Quality > 100 {
			return domain.InvalidParam("options.quality", "quality must be between 1 and 100")
		}
		if format == "gif" {
			return domain.InvalidParam("options.quality", "gif has no quality setting")
		}
	}
	if o.Lossless && format == "jpeg" {
		return domain.InvalidParam("options.lossless", "jpeg cannot be lossless: choose png, webp or avif")
	}
	if o.Effort != nil && (*o.Effort < 0 || *o.Effort > 9) {
		return domain.InvalidParam("options.effort", "effort must be between 0 and 9")
	}
	if o.Background != "" && !backgroundPattern.MatchString(o.Background) {
		return domain.InvalidParam("options.background", "background must be a colour #RRGGBB or #RRGGBBAA")
	}
	if o.DPI != nil && (*o.DPI < 1 || *o.DPI > 2400) {
		return domain.InvalidParam("options.dpi", "dpi must be between 1 and 2400")
	}
	if o.Animated && format != "gif" && format != "webp" {
		return domain.InvalidParam("options.animated", "animation needs format gif or webp")
	}
	return nil
}

func (o Options) format() string {
	if o.Format == "" {
		return "webp"
	}
	return o.Format
}

func (o Options) fit() string {
	if o.Fit == "" {
		return "inside"
	}
	return o.Fit
}

func (o Options) gravity() string {
	if o.Gravity == "" {
		return "center"
	}
	return o.Gravity
}

func (o Options) enlarge() bool       { return o.Enlarge == nil || *o.Enlarge }
func (o Options) stripMetadata() bool { return o.StripMetadata == nil || *o.StripMetadata }

// gravities maps a compass gravity to where the kept window sits on each axis: 0 at
// the start (left, top), 1 at the end, 0.5 centred.
var gravities = map[string][2]float64{
	"center": {0.5, 0.5}, "north": {0.5, 0}, "northeast": {1, 0}, "east": {1, 0.5}, "southeast": {1, 1},
	"south": {0.5, 1}, "southwest": {0, 1}, "west": {0, 0.5}, "northwest": {0, 0},
	"attention": {0.5, 0.5}, "entropy": {0.5, 0.5},
}

// rgba is a background colour with each channel 0–255.
type rgba [4]float64

// parseBackground reads #RRGGBB or #RRGGBBAA; ok is false when unset.
func parseBackground(s string) (c rgba, ok bool) {
	if s == "" {
		return rgba{}, false
	}
	h := s
	if h[0] == '#' {
		h = h[1:]
	}
	c[3] = 255
	for i := 0; i+1 < len(h) && i/2 < 4; i += 2 {
		v, err := strconv.ParseUint(h[i:i+2], 16, 8)
		if err != nil {
			return rgba{}, false
		}
		c[i/2] = float64(v)
	}
	return c, true
}

// formatInfo names an output format's file extension, MIME type and libvips loader.
type formatInfo struct {
	code   int
	ext    string
	mime   string
	loader string // the loader that must read it back
	alpha  bool   // can carry transparency
}

var formats = map[string]formatInfo{
	"jpeg": {fmtJPEG, "jpg", "image/jpeg", "jpegload", false},
	"png":  {fmtPNG, "png", "image/png", "pngload", true},
	"webp": {fmtWebP, "webp", "image/webp", "webpload", true},
	"avif": {fmtAVIF, "avif", "image/avif", "heifload", true},
	"gif":  {fmtGIF, "gif", "image/gif", "gifload", true},
	"tiff": {fmtTIFF, "tiff", "image/tiff", "tiffload", true},
}
