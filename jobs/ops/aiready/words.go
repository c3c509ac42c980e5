package aiready

import (
	"strings"

	"github.com/filemill/filemill/jobs/ops/pagetext"
)

// Word is one recognised word: its text and its box in pixels of the page image
// (left, top, right, bottom), as OCR engines report words.
type Word struct {
	Text string
	BBox [4]int
}

// PageFromWords turns the words recognised on a page image of width×height pixels
// rendered at dpi into what an OCRFunc returns: one run a word, boxes in points,
// sizes left for the engine to estimate.
func PageFromWords(page, width, height, dpi int, words []Word) *pagetext.Page {
	if dpi <= 0 {
		dpi = 300
	}
	k := 72 / float64(dpi)
	pt := &pagetext.Page{Page: page, Width: float64(width) * k, Height: float64(height) * k}
	for _, w := range words {
		t := strings.TrimSpace(w.Text)
		b := w.BBox
		if t == "" || b[2] <= b[0] || b[3] <= b[1] {
			continue
		}
		pt.Runs = append(pt.Runs, pagetext.Run{Text: t,
			Box: pagetext.Rect{X0: float64(b[0]) * k, Y0: float64(b[1]) * k, X1: float64(b[2]) * k, Y1: float64(b[3]) * k}})
	}
	return pt
}
