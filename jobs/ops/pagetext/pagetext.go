// Package pagetext is the page text the engines share: what PDFium reads from a page's
// text layer (jobs/ops/pdfium, which aliases these types) and what OCR recognises, in
// one shape, so that an engine reading page text (aiready) depends on neither.
//
// It imports nothing.
package pagetext

// Page is the text of one page: its text layer as PDFium reads it, or the words OCR
// recognised on it.
type Page struct {
	Page int // 1-based
	// Width and Height are the page's size in points as displayed; every box below is
	// in the same space: origin at the top-left corner, y growing downwards.
	Width, Height float64
	// Text is the page's text in PDFium's order, with the spaces and line breaks it
	// infers from positions; empty when the page has no text layer.
	Text string
	// Runs are the pieces of text drawn in one font at one size on one line, in
	// content order.
	Runs []Run
	// Rules are the page's straight horizontal and vertical strokes and thin bars
	// (table borders, separators, underlines), drawn on the page itself.
	Rules []Rect
	// Images and Paths count the page's image and path objects: a page with images and
	// no text is a scan.
	Images, Paths int
}

// Run is text drawn in one font at one size on one line.
type Run struct {
	Text string
	Box  Rect
	// FontName is the font's PostScript name without a subset prefix ("Helvetica-Bold").
	FontName string
	// FontSize is the size the text appears at, in points (the font size scaled by the
	// text and graphics matrices).
	FontSize float64
	// Weight is the font weight (400 regular, 700 bold); 0 when the font does not say.
	Weight int
	Bold   bool
	Italic bool
	// Chars are the run's characters with their boxes; len(Chars) ≥ the runes of Text
	// only when a glyph maps to several runes (ligatures).
	Chars []Char
}

// Char is one character and its box.
type Char struct {
	Rune rune
	Box  Rect
}

// Rect is a box in points: X0 < X1 left to right, Y0 < Y1 top to bottom.
type Rect struct{ X0, Y0, X1, Y1 float64 }
