package ocr

import (
	"fmt"
	"math"
	"strings"
	"unicode/utf16"

	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"

	"github.com/filemill/filemill/jobs/ops/internal/imagepdf"
)

// The text layer is written the way tesseract's PDF renderer writes it (and OCRmyPDF
// grafts it): each word in invisible ink (render mode 3) on its line's baseline, in a
// glyph-less font whose every glyph is half an em wide, stretched (Tz) to the word's
// width, so that selecting or searching text finds it where the image shows it. It is
// laid out in the recognised image's pixels, y up, and one cm places it on the page.

// layerWord is one recognised word with what laying it out needs; coordinates are
// pixels of the recognised image, origin top-left.
type layerWord struct {
	text      string
	block     int    // index of its text block
	line      [4]int // its line's baseline x1, y1, x2, y2 (left to right)
	base      [4]int // its own baseline
	pointSize int    // tesseract's estimate; 0 when it has none
	rtl       bool
	lineEnd   bool
}

// clipBaseline flattens a line's baseline when it tilts by less than 2 points over
// more than 2 points of run, as tesseract's renderer does: some viewers select text
// better on level lines.
func clipBaseline(ppi float64, l [4]int) [4]int {
	rise := math.Abs(float64(l[3]-l[1])) * 72
	run := math.Abs(float64(l[2]-l[0])) * 72
	if rise < 2*ppi && 2*ppi < run {
		y := (l[1] + l[3]) / 2
		l[1], l[3] = y, y
	}
	return l
}

// glyphWidth is the glyph-less font's advance, in thousandths of an em.
const glyphWidth = 500

// defaultPointSize stands in for a word tesseract gives no size for.
const defaultPointSize = 8

// layerContent lays words out as text objects in the pixel space of a width×height
// image (y up), in the font resource named font.
func layerContent(words []layerWord, height int, ppi float64, font string) []byte {
	if ppi <= 0 {
		ppi = 300
	}
	var b strings.Builder
	num := func(v ...float64) { b.WriteString(imagepdf.Numbers(v...)) }
	var (
		oldX, oldY   float64
		oldSize      float64
		a, bb, c, d  = 1.0, 0.0, 0.0, 1.0
		oldRTL       bool
		newBlockText = true
	)
	for i, w := range words {
		if i == 0 || w.block != words[i-1].block {
			b.WriteString("BT\n3 Tr")
			oldSize, newBlockText = 0, true
		}
		// The word's origin: its first baseline point (its last, right to left)
		// projected onto its line's baseline; its length along its own baseline.
		wx1, wy1, wx2, wy2 := float64(w.base[0]), float64(w.base[1]), float64(w.base[2]), float64(w.base[3])
		if w.rtl {
			wx1, wy1, wx2, wy2 = wx2, wy2, wx1, wy1
		}
		lx1, ly1, lx2, ly2 := float64(w.line[0]), float64(w.line[1]), float64(w.line[2]), float64(w.line[3])
		x, y := lx1, ly1
		if l2 := (lx2-lx1)*(lx2-lx1) + (ly2-ly1)*(ly2-ly1); l2 > 0 {
			t := ((wx1-lx2)*(lx2-lx1) + (wy1-ly2)*(ly2-ly1)) / l2
			x, y = lx2+t*(lx2-lx1), ly2+t*(ly2-ly1)
		}
		y = float64(height) - y
		length := math.Hypot(wx2-wx1, wy2-wy1)

		if w.rtl != oldRTL || newBlockText {
			theta := math.Atan2(ly1-ly2, lx2-lx1)
			a, bb, c, d = math.Cos(theta), math.Sin(theta), -math.Sin(theta), math.Cos(theta)
			if w.rtl {
				a, bb = -a, -bb
			}
			b.WriteByte(' ')
			num(a, bb, c, d, x, y)
			b.WriteString(" Tm ")
			newBlockText = false
		} else {
			dx, dy := x-oldX, y-oldY
			b.WriteByte(' ')
			num(dx*a+dy*bb, dx*c+dy*d)
			b.WriteString(" Td ")
		}
		oldX, oldY, oldRTL = x, y, w.rtl

		pt := w.pointSize
		if pt <= 0 {
			pt = defaultPointSize
		}
		size := float64(pt) * ppi / 72 // in pixels
		if size != oldSize {
			b.WriteString("/" + font + " ")
			num(size)
			b.WriteString(" Tf ")
			oldSize = size
		}
		hex, n := utf16Hex(w.text)
		if i < len(words)-1 {
			hex += "0020" // the space after it, outside its stretched width
		}
		if length > 0 && n > 0 {
			num(100 * length / (size * float64(n) * glyphWidth / 1000))
			b.WriteString(" Tz [ <" + hex + "> ] TJ")
		}
		if w.lineEnd {
			b.WriteString(" \n")
		}
		if i == len(words)-1 || words[i+1].block != w.block {
			b.WriteString("\nET\n")
		}
	}
	return []byte(b.String())
}

// utf16Hex is s in UTF-16BE hex, the codes of the glyph-less font (its CMap is
// Identity-H, its ToUnicode the identity), and the count of characters.
func utf16Hex(s string) (string, int) {
	var b strings.Builder
	n := 0
	for _, r := range s {
		if r == 0xFFFD || r > 0x10FFFF || (r >= 0xD800 && r < 0xE000) {
			continue
		}
		for _, u := range utf16.Encode([]rune{r}) {
			fmt.Fprintf(&b, "%04X", u)
		}
		n++
	}
	return b.String(), n
}

// toUnicode maps every two-byte code to the same UTF-16 code unit.
const toUnicode = `/CIDInit /ProcSet findresource begin
12 dict begin
begincmap
/CIDSystemInfo
<<
  /Registry (Adobe)
  /Ordering (UCS)
  /Supplement 0
>> def
/CMapName /Adobe-Identify-UCS def
/CMapType 2 def
1 begincodespacerange
<0000> <FFFF>
endcodespacerange
1 beginbfrange
<0000> <FFFF> <0000>
endbfrange
endcmap
CMapName currentdict /CMap defineresource pop
end
end
`

// addGlyphLessFont adds the text layer's font once per document: a Type0 font over a
// TrueType CID font whose every code draws glyph 1 of ttf (tesseract's pdf.ttf, an
// empty glyph); without ttf the font is not embedded (the ink is invisible anyway).
func addGlyphLessFont(pc *model.Context, ttf []byte) (*types.IndirectRef, error) {
	cidToGID := make([]byte, 2<<16)
	for i := 1; i < len(cidToGID); i += 2 {
		cidToGID[i] = 1
	}
	mapRef, err := imagepdf.AddStream(pc, cidToGID)
	if err != nil {
		return nil, err
	}
	uniRef, err := imagepdf.AddStream(pc, []byte(toUnicode))
	if err != nil {
		return nil, err
	}
	desc := types.Dict{
		"Type": types.Name("FontDescriptor"), "FontName": types.Name("GlyphLessFont"),
		"Ascent": types.Integer(1000), "CapHeight": types.Integer(1000), "Descent": types.Integer(-1),
		"Flags": types.Integer(5), "FontBBox": types.NewIntegerArray(0, 0, glyphWidth, 1000),
		"ItalicAngle": types.Integer(0), "StemV": types.Integer(80),
	}
	if len(ttf) > 0 {
		sd, err := pc.NewStreamDictForBuf(ttf)
		if err != nil {
			return nil, err
		}
		sd.Insert("Length1", types.Integer(len(ttf)))
		if err := sd.Encode(); err != nil {
			return nil, err
		}
		ref, err := pc.IndRefForNewObject(*sd)
		if err != nil {
			return nil, err
		}
		desc["FontFile2"] = *ref
	}
	descRef, err := pc.IndRefForNewObject(desc)
	if err != nil {
		return nil, err
	}
	cid, err := pc.IndRefForNewObject(types.Dict{
		"Type": types.Name("Font"), "Subtype": types.Name("CIDFontType2"), "BaseFont": types.Name("GlyphLessFont"),
		"CIDSystemInfo": types.Dict{"Registry": types.StringLiteral("Adobe"), "Ordering": types.StringLiteral("Identity"),
			"Supplement": types.Integer(0)},
		"FontDescriptor": *descRef, "CIDToGIDMap": *mapRef, "DW": types.Integer(glyphWidth),
	})
	if err != nil {
		return nil, err
	}
	return pc.IndRefForNewObject(types.Dict{
		"Type": types.Name("Font"), "Subtype": types.Name("Type0"), "BaseFont": types.Name("GlyphLessFont"),
		"Encoding": types.Name("Identity-H"), "DescendantFonts": types.Array{*cid}, "ToUnicode": *uniRef,
	})
}

// overlay adds page's text layer on top of what page n of pc draws: the page's
// content is wrapped in q … Q so that no state it leaves changes the layer, and the
// font joins the page's resources under a name the page does not use. place maps the
// recognised image's unit square onto the page; nil means the page's displayed area
// (its crop box, turned by its /Rotate), which is what a rendered page shows.
func overlay(pc *model.Context, n int, r *pageResult, font types.IndirectRef, wrap *types.IndirectRef) error {
	page, _, inh, err := pc.PageDict(n, false)
	if err != nil {
		return err
	}
	res := types.Dict{}
	for k, v := range inh.Resources {
		res[k] = v
	}
	fonts := types.Dict{}
	if f, ok := res["Font"]; ok {
		d, err := pc.DereferenceDict(f)
		if err != nil {
			return err
		}
		for k, v := range d {
			fonts[k] = v
		}
	}
	name := "OCR"
	for i := 1; fonts[name] != nil; i++ {
		name = fmt.Sprintf("OCR%d", i)
	}
	fonts[name] = font
	res["Font"] = fonts
	page["Resources"] = res

	place := displayedArea(inh)
	if r.place != nil {
		place = *r.place
	}
	// Pixels (y up) to the image's unit square, then onto the page.
	w, h := float64(r.width), float64(r.height)
	cm := [6]float64{place[0] / w, place[1] / w, place[2] / h, place[3] / h, place[4], place[5]}
	var layer strings.Builder
	layer.WriteString("\nQ\nq " + imagepdf.Numbers(cm[:]...) + " cm\n")
	layer.Write(layerContent(r.layer, r.height, r.ppi, name))
	layer.WriteString("Q\n")
	layerRef, err := imagepdf.AddStream(pc, []byte(layer.String()))
	if err != nil {
		return err
	}
	contents := types.Array{*wrap}
	if c, ok := page.Find("Contents"); ok {
		switch c := c.(type) {
		case types.IndirectRef:
			o, err := pc.Dereference(c)
			if err != nil {
				return err
			}
			if a, ok := o.(types.Array); ok {
				contents = append(contents, a...)
			} else {
				contents = append(contents, c)
			}
		case types.Array:
			contents = append(contents, c...)
		}
	}
	page["Contents"] = append(contents, *layerRef)
	return nil
}

// displayedArea maps the unit square onto the page's displayed area: its crop box
// (within its media box), turned clockwise by its /Rotate, as renderers draw a page.
func displayedArea(inh *model.InheritedPageAttrs) [6]float64 {
	box := types.Rectangle{LL: types.Point{X: 0, Y: 0}, UR: types.Point{X: 612, Y: 792}}
	if inh.MediaBox != nil {
		box = *inh.MediaBox
	}
	if c := inh.CropBox; c != nil {
		box = types.Rectangle{
			LL: types.Point{X: math.Max(box.LL.X, c.LL.X), Y: math.Max(box.LL.Y, c.LL.Y)},
			UR: types.Point{X: math.Min(box.UR.X, c.UR.X), Y: math.Min(box.UR.Y, c.UR.Y)},
		}
	}
	return displayedAreaOf(box.LL.X, box.LL.Y, box.UR.X, box.UR.Y, inh.Rotate)
}

// displayedAreaOf maps the unit square onto the box x0, y0, x1, y1 shown turned
// clockwise by rotate degrees.
func displayedAreaOf(x0, y0, x1, y1 float64, rotate int) [6]float64 {
	w, h := x1-x0, y1-y0
	switch ((rotate % 360) + 360) % 360 {
	case 90: // the page's left edge shows on top
		return [6]float64{0, h, -w, 0, x1, y0}
	case 180:
		return [6]float64{-w, 0, 0, -h, x1, y1}
	case 270: // its right edge shows on top
		return [6]float64{0, -h, w, 0, x0, y1}
	}
	return [6]float64{w, 0, 0, h, x0, y0}
}
