package image

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/filemill/filemill/domain"
)

// SVGLimits bound what rendering one SVG may cost. librsvg draws each of libvips'
// 2000-pixel tiles by rendering the whole document again, and computes every filter
// over its whole region each time, in one call nothing can interrupt: a 2 KB file
// can keep a core busy for hours. What a render will cost is read from the document
// before anything is drawn, with a streaming parser that stops at the first limit.
// Zero fields take the defaults.
type SVGLimits struct {
	// MaxBytes is the largest document read, uncompressed (svgz). Default 16 MiB.
	MaxBytes int64
	// MaxElements is the most elements a document may hold. Default 200,000.
	MaxElements int
	// MaxDepth is the deepest element nesting. Default 64.
	MaxDepth int
	// MaxGroupDepth is the deepest nesting of elements that librsvg draws through a
	// surface of their own (opacity, filter, mask, clip-path): each holds one the size
	// of a tile while its children draw. Default 24.
	MaxGroupDepth int
	// MaxBlur is the largest blur (feGaussianBlur's and feDropShadow's stdDeviation)
	// in output pixels at the size rendered. Default 250.
	MaxBlur float64
	// MaxFilterWork bounds the filter work of one render: each filter primitive
	// applied (a filter used by several elements, or repeated by <use>, counts each
	// time; the costly ones — morphology, convolution, turbulence — by what they
	// cost), times the output pixels it may cover (the whole render: a region is
	// clipped to it), times libvips' tiles. Default 200 million (about 20 s of one
	// core).
	MaxFilterWork float64
}

// DefaultSVGLimits returns the limits used when nothing is configured.
func DefaultSVGLimits() SVGLimits {
	return SVGLimits{MaxBytes: 16 << 20, MaxElements: 200_000, MaxDepth: 64, MaxGroupDepth: 24, MaxBlur: 250,
		MaxFilterWork: 200_000_000}
}

func (l SVGLimits) withDefaults() SVGLimits {
	d := DefaultSVGLimits()
	if l.MaxBytes <= 0 {
		l.MaxBytes = d.MaxBytes
	}
	if l.MaxElements <= 0 {
		l.MaxElements = d.MaxElements
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = d.MaxDepth
	}
	if l.MaxGroupDepth <= 0 {
		l.MaxGroupDepth = d.MaxGroupDepth
	}
	if l.MaxBlur <= 0 {
		l.MaxBlur = d.MaxBlur
	}
	if l.MaxFilterWork <= 0 {
		l.MaxFilterWork = d.MaxFilterWork
	}
	return l
}

// svgTile is the tile size libvips' SVG loader renders (8.14: 2000 pixels a side).
const svgTile = 2000

// svgRender is the size an SVG is rendered at: its output pixels and the scale from
// its own pixels (its width and height as librsvg reads them) to them.
type svgRender struct {
	width, height int
	scale         float64
}

func (r svgRender) tiles() float64 {
	return math.Ceil(float64(r.width)/svgTile) * math.Ceil(float64(r.height)/svgTile)
}

// checkSVG reads the document at path and refuses it, naming the limit, when
// rendering it at r would cost more than l allows. Codes: unsupported_input;
// corrupted_file when it does not parse.
func checkSVG(path string, r svgRender, l SVGLimits) error {
	l = l.withDefaults()
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("image: open input: %w", err)
	}
	defer f.Close()
	br := bufio.NewReader(f)
	var src io.Reader = br
	if head, _ := br.Peek(2); bytes.Equal(head, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return svgCorrupted()
		}
		defer zr.Close()
		src = zr
	}
	lr := &io.LimitedReader{R: src, N: l.MaxBytes + 1}
	s := &svgScan{l: l, r: r, filters: map[string]*svgFilter{}, ids: map[string]*svgFrame{}}
	if err := s.scan(lr); err != nil {
		if lr.N <= 0 {
			return svgRefused("the SVG is larger than %d bytes", l.MaxBytes)
		}
		return err
	}
	return s.finish()
}

func svgRefused(format string, args ...any) error {
	return &domain.Error{Code: domain.CodeUnsupportedInput, Message: fmt.Sprintf(format, args...)}
}

func svgCorrupted() error {
	return &domain.Error{Code: domain.CodeCorruptedFile, Message: "the image cannot be decoded: the file is damaged or truncated"}
}

// svgFilter is a <filter>: what its primitives cost, or the filter it takes them
// from when it has none of its own (href).
type svgFilter struct {
	weight    float64      // primitives of fixed cost, each by its cost relative to a blur
	morph     [][2]float64 // feMorphology radii, in the units of bboxUnits
	blur      float64      // largest blur
	bboxUnits bool         // lengths are fractions of the element's box
	href      string
	defined   bool
	maxScale  float64 // the largest scale of an element using it
}

// svgFrame is an open element: the filters applied and the elements drawn again by
// <use> in its subtree, each with how often.
type svgFrame struct {
	id       string
	scale    float64 // from the element's user units to output pixels
	group    bool    // drawn through a surface of its own
	isFilter bool
	isStyle  bool
	apply    map[*svgFilter]float64
	uses     map[string]float64
}

type svgScan struct {
	l        SVGLimits
	r        svgRender
	stack    []*svgFrame
	groups   int
	elements int
	filters  map[string]*svgFilter
	ids      map[string]*svgFrame // closed elements with an id
	root     *svgFrame
	// cssFilter: a <style> sheet names a filter, which may apply to any element.
	cssFilter bool
	// open is the <filter> being read, whose primitives its children are.
	open *svgFilter
}

func (s *svgScan) scan(r io.Reader) error {
	d := xml.NewDecoder(r)
	d.Strict = true
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			var se *xml.SyntaxError
			if errors.As(err, &se) && strings.Contains(se.Msg, "entity") {
				// librsvg read it (the header came first): an entity Go's parser does not
				// know is one libxml2 expands into more document, unseen here.
				return svgRefused("the SVG declares XML entities, which are not rendered")
			}
			return svgCorrupted()
		}
		switch t := tok.(type) {
		case xml.Directive:
			if bytes.Contains(t, []byte("ENTITY")) {
				return svgRefused("the SVG declares XML entities, which are not rendered")
			}
		case xml.StartElement:
			if err := s.start(t); err != nil {
				return err
			}
		case xml.EndElement:
			s.end()
		case xml.CharData:
			if p := s.parent(); p != nil && p.isStyle && bytes.Contains(bytes.ToLower(t), []byte("filter")) {
				s.cssFilter = true
			}
		}
	}
}

func (s *svgScan) parent() *svgFrame {
	if len(s.stack) == 0 {
		return nil
	}
	return s.stack[len(s.stack)-1]
}

func (s *svgScan) filter(id string) *svgFilter {
	fl := s.filters[id]
	if fl == nil {
		fl = &svgFilter{} // perhaps defined further on: resolved at the end
		s.filters[id] = fl
	}
	return fl
}

func (s *svgScan) start(t xml.StartElement) error {
	s.elements++
	if s.elements > s.l.MaxElements {
		return svgRefused("the SVG has more than %d elements; at most %d are rendered", s.l.MaxElements, s.l.MaxElements)
	}
	if len(s.stack) >= s.l.MaxDepth {
		return svgRefused("the SVG nests elements more than %d deep; at most %d levels are rendered", s.l.MaxDepth, s.l.MaxDepth)
	}
	attr := func(n string) string {
		for _, a := range t.Attr {
			if a.Name.Local == n {
				return a.Value
			}
		}
		return ""
	}
	parent := s.parent()
	f := &svgFrame{id: attr("id"), scale: s.r.scale}
	if parent != nil {
		f.scale = parent.scale
	}
	name, style := t.Name.Local, attr("style")
	if name == "svg" && parent == nil {
		f.scale *= viewBoxScale(attr("viewBox"), attr("width"), attr("height"))
	}
	if tr := attr("transform"); tr != "" {
		f.scale *= transformScale(tr)
	}
	var used *svgFilter
	if ref := filterRef(attr("filter"), style); ref != "" {
		used = s.filter(ref)
		used.maxScale = max(used.maxScale, f.scale)
		f.apply = map[*svgFilter]float64{used: 1}
	}
	f.group = used != nil || attr("mask") != "" || attr("clip-path") != "" || partOpacity(attr("opacity")) ||
		strings.Contains(style, "mask") || strings.Contains(style, "clip-path") || strings.Contains(style, "opacity")
	if f.group {
		s.groups++
		if s.groups > s.l.MaxGroupDepth {
			return svgRefused("the SVG nests groups with opacity, filters, masks or clipping more than %d deep; at most %d are rendered",
				s.l.MaxGroupDepth, s.l.MaxGroupDepth)
		}
	}
	switch {
	case name == "style":
		f.isStyle = true
	case name == "filter":
		f.isFilter = true
		var fl *svgFilter
		if f.id != "" {
			fl = s.filter(f.id)
		} else {
			fl = &svgFilter{}
		}
		fl.defined = true
		fl.href = strings.TrimPrefix(attr("href"), "#")
		fl.bboxUnits = attr("primitiveUnits") == "objectBoundingBox"
		s.open = fl
	case name == "use":
		if href := attr("href"); strings.HasPrefix(href, "#") && len(href) > 1 {
			f.uses = map[string]float64{href[1:]: 1}
		}
	case strings.HasPrefix(name, "fe") && parent != nil && parent.isFilter:
		s.primitive(s.open, name, attr)
	}
	s.stack = append(s.stack, f)
	if s.root == nil {
		s.root = f
	}
	return nil
}

// primitive adds a filter primitive to fl: its weight, how much it costs next to a
// blur (measured with librsvg 2.54: morphology grows with the square of its radius,
// a convolution with its kernel, turbulence with its octaves).
func (s *svgScan) primitive(fl *svgFilter, name string, attr func(string) string) {
	switch name {
	case "feGaussianBlur", "feDropShadow":
		for _, v := range numbers(attr("stdDeviation")) {
			fl.blur = max(fl.blur, math.Abs(v))
		}
		fl.weight++
	case "feMorphology":
		r := numbers(attr("radius"))
		if len(r) == 0 {
			fl.weight++
			return
		}
		rx, ry := math.Abs(r[0]), math.Abs(r[len(r)-1])
		fl.morph = append(fl.morph, [2]float64{rx, ry})
	case "feConvolveMatrix":
		o := numbers(attr("order"))
		w := 1.0
		if len(o) > 0 {
			w = math.Abs(o[0]) * math.Abs(o[len(o)-1]) / 16
		}
		fl.weight += max(1, w)
	case "feTurbulence":
		w := 1.0
		if o := numbers(attr("numOctaves")); len(o) > 0 {
			w = math.Abs(o[0])
		}
		fl.weight += max(1, w)
	default:
		fl.weight++
	}
}

func (s *svgScan) end() {
	f := s.parent()
	if f == nil {
		return
	}
	s.stack = s.stack[:len(s.stack)-1]
	if f.group {
		s.groups--
	}
	if f.id != "" && (len(f.apply) > 0 || len(f.uses) > 0) {
		s.ids[f.id] = f
	}
	p := s.parent()
	if p == nil {
		return
	}
	for k, n := range f.apply {
		if p.apply == nil {
			p.apply = map[*svgFilter]float64{}
		}
		p.apply[k] += n
	}
	for k, n := range f.uses {
		if p.uses == nil {
			p.uses = map[string]float64{}
		}
		p.uses[k] += n
	}
}

// finish weighs what the whole document applies against the limits.
func (s *svgScan) finish() error {
	if s.root == nil {
		return svgCorrupted()
	}
	px := float64(s.r.width) * float64(s.r.height)
	for _, fl := range s.filters {
		src := s.resolve(fl)
		scale := max(fl.maxScale, s.r.scale)
		blur := src.blur * scale
		if src.bboxUnits {
			blur = src.blur * float64(max(s.r.width, s.r.height))
		}
		if blur > s.l.MaxBlur && fl.maxScale > 0 {
			return svgRefused("the SVG blurs by %.0f pixels at the size rendered; at most %.0f are allowed", blur, s.l.MaxBlur)
		}
	}
	memo := map[string]float64{}
	var cost func(f *svgFrame, depth int) (float64, error)
	cost = func(f *svgFrame, depth int) (float64, error) {
		if depth > s.l.MaxDepth {
			return 0, svgRefused("the SVG's <use> elements refer to each other more than %d deep", s.l.MaxDepth)
		}
		c := 0.0
		for fl, n := range f.apply {
			c += n * s.weight(fl)
		}
		for id, n := range f.uses {
			w, seen := memo[id]
			if !seen {
				target := s.ids[id]
				if target != nil {
					memo[id] = math.Inf(1) // being weighed: a use that reaches it again is a cycle
					var err error
					if w, err = cost(target, depth+1); err != nil {
						return 0, err
					}
				}
				memo[id] = w
			}
			if math.IsInf(w, 1) {
				return 0, svgRefused("the SVG has a <use> that draws itself")
			}
			c += n * w
		}
		return c, nil
	}
	applied, err := cost(s.root, 0)
	if err != nil {
		return err
	}
	if s.cssFilter {
		// A style sheet may give every element the costliest filter.
		heaviest := 0.0
		for _, fl := range s.filters {
			heaviest = max(heaviest, s.weight(fl))
		}
		applied += float64(s.elements) * max(heaviest, 1)
	}
	if work := applied * px * s.r.tiles(); work > s.l.MaxFilterWork {
		return svgRefused("the SVG applies filters %.0f times over %d×%d pixels; rendering it would filter %.3g pixels, at most %.3g are allowed",
			applied, s.r.width, s.r.height, work, s.l.MaxFilterWork)
	}
	return nil
}

// resolve follows a filter's href to the one whose primitives it uses.
func (s *svgScan) resolve(fl *svgFilter) *svgFilter {
	for range 16 {
		if fl.weight > 0 || len(fl.morph) > 0 || fl.href == "" {
			return fl
		}
		next := s.filters[fl.href]
		if next == nil {
			return fl
		}
		fl = next
	}
	return fl
}

// weight is what one use of fl costs, in blurs.
func (s *svgScan) weight(fl *svgFilter) float64 {
	src := s.resolve(fl)
	w := src.weight
	scale := max(fl.maxScale, s.r.scale)
	for _, r := range src.morph {
		rx, ry := r[0]*scale, r[1]*scale
		if src.bboxUnits {
			rx, ry = r[0]*float64(s.r.width), r[1]*float64(s.r.height)
		}
		w += max(1, (2*rx+1)*(2*ry+1)/50)
	}
	return w
}

// filterRef is the id a filter property names: filter="url(#id)" or style's
// filter:url(#id).
func filterRef(attr, style string) string {
	if m := urlRef.FindStringSubmatch(attr); m != nil {
		return m[1]
	}
	for _, decl := range strings.Split(style, ";") {
		k, v, ok := strings.Cut(decl, ":")
		if ok && strings.TrimSpace(k) == "filter" {
			if m := urlRef.FindStringSubmatch(v); m != nil {
				return m[1]
			}
		}
	}
	return ""
}

var urlRef = regexp.MustCompile(`url\(\s*['"]?#([^'")\s]+)['"]?\s*\)`)

// partOpacity reports whether an opacity attribute makes its element a group of its
// own (anything but fully opaque).
func partOpacity(v string) bool {
	n := numbers(v)
	return len(n) > 0 && n[0] < 1
}

// viewBoxScale is how much the root's viewBox enlarges its user units to its size.
func viewBoxScale(viewBox, width, height string) float64 {
	vb := numbers(viewBox)
	if len(vb) != 4 || vb[2] <= 0 || vb[3] <= 0 {
		return 1
	}
	w, h := numbers(width), numbers(height)
	sx, sy := 1.0, 1.0
	if len(w) > 0 && w[0] > 0 {
		sx = w[0] / vb[2]
	}
	if len(h) > 0 && h[0] > 0 {
		sy = h[0] / vb[3]
	}
	return max(sx, sy)
}

// transformScale is the largest factor a transform list stretches lengths by.
func transformScale(tr string) float64 {
	s := 1.0
	for _, m := range transformFn.FindAllStringSubmatch(tr, 32) {
		n := numbers(m[2])
		switch m[1] {
		case "scale":
			if len(n) > 0 {
				s *= max(math.Abs(n[0]), math.Abs(n[len(n)-1]))
			}
		case "matrix":
			if len(n) == 6 {
				s *= max(math.Hypot(n[0], n[1]), math.Hypot(n[2], n[3]))
			}
		}
	}
	if s == 0 || math.IsNaN(s) || math.IsInf(s, 0) {
		return 1
	}
	return s
}

var transformFn = regexp.MustCompile(`(scale|matrix|translate|rotate|skewX|skewY)\s*\(([^)]*)\)`)

// numbers reads the numbers of an attribute value ("500", "2 3", "0,0,90,90"),
// ignoring units.
func numbers(v string) []float64 {
	var out []float64
	for _, f := range strings.FieldsFunc(v, func(r rune) bool { return r == ' ' || r == ',' || r == '\t' || r == '\n' || r == '\r' }) {
		f = strings.TrimRightFunc(f, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
		if x, err := strconv.ParseFloat(f, 64); err == nil && !math.IsNaN(x) && !math.IsInf(x, 0) {
			out = append(out, x)
		}
		if len(out) >= 16 {
			break
		}
	}
	return out
}
