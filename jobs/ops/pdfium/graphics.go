package pdfium

import (
	"context"
	"math"
)

// PDFium page object types and path segment types.
const (
	objText  = 1
	objPath  = 2
	objImage = 3

	segLineTo = 0
	segMoveTo = 2
)

// Limits on the graphics read from one page: a real page has a few hundred objects; a
// vector drawing may have many more, whose rules would say nothing of tables anyway.
const (
	maxObjectsPerPage  = 50_000
	maxSegmentsPerPath = 400
	maxRulesPerPage    = 5_000
	// ruleThickness is the most a bar may measure across to count as a rule (points).
	ruleThickness = 3.0
	// ruleMinLength is the least a rule measures along (points): shorter strokes are
	// glyph-like decoration.
	ruleMinLength = 6.0
)

// graphics reads what a page draws besides text: its rules (straight horizontal and
// vertical strokes and thin filled bars, in the displayed space) and how many image
// and path objects it has. Objects inside form XObjects are not visited.
func (pg *page) graphics(ctx context.Context, toDisplay func(l, t, r, b float64) Rect, out *PageText) error {
	in := pg.d.in
	n, err := in.quickInt("FPDFPage_CountObjects", pg.handle)
	if err != nil || n <= 0 {
		return err
	}
	n = min(n, maxObjectsPerPage)
	// Scratch layout: bounds (4 floats) at 0, matrix (6 floats) at 16, a point at 40,
	// the draw mode at 48.
	bounds, matrix, point, mode := in.scratch, in.scratch+16, in.scratch+40, in.scratch+48
	addRule := func(l, b, r, t float64) {
		if len(out.Rules) >= maxRulesPerPage {
			return
		}
		w, h := r-l, t-b
		if (h <= ruleThickness && w >= ruleMinLength) || (w <= ruleThickness && h >= ruleMinLength) {
			out.Rules = append(out.Rules, toDisplay(l, t, r, b))
		}
	}
	for i := 0; i < n; i++ {
		if i&255 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		obj, err := in.quick("FPDFPage_GetObject", pg.handle, uint64(i))
		if err != nil {
			return err
		}
		if obj == 0 {
			continue
		}
		typ, err := in.quickInt("FPDFPageObj_GetType", obj)
		if err != nil {
			return err
		}
		switch typ {
		case objImage:
			out.Images++
			continue
		case objPath:
			out.Paths++
		default:
			continue
		}
		ok, err := in.quick("FPDFPageObj_GetBounds", obj, uint64(bounds), uint64(bounds+4), uint64(bounds+8), uint64(bounds+12))
		if err != nil {
			return err
		}
		if ok == 0 {
			continue
		}
		l, b, r, t := in.f32(bounds), in.f32(bounds+4), in.f32(bounds+8), in.f32(bounds+12)
		if r-l <= ruleThickness || t-b <= ruleThickness {
			// A thin object is a rule whatever it is made of (a stroke or a filled bar).
			addRule(l, b, r, t)
			continue
		}
		// A larger stroked path may be a grid: its straight axis-aligned segments are rules.
		if ok, err := in.quick("FPDFPath_GetDrawMode", obj, uint64(mode), uint64(mode+4)); err != nil {
			return err
		} else if ok == 0 || in.i32(mode+4) == 0 {
			continue
		}
		segs, err := in.quickInt("FPDFPath_CountSegments", obj)
		if err != nil {
			return err
		}
		if segs <= 1 || segs > maxSegmentsPerPath {
			continue
		}
		ma, mb, mc, md, me, mf := 1.0, 0.0, 0.0, 1.0, 0.0, 0.0
		if ok, err := in.quick("FPDFPageObj_GetMatrix", obj, uint64(matrix)); err != nil {
			return err
		} else if ok != 0 {
			ma, mb, mc, md, me, mf = in.f32(matrix), in.f32(matrix+4), in.f32(matrix+8), in.f32(matrix+12), in.f32(matrix+16), in.f32(matrix+20)
		}
		var px, py, sx, sy float64
		have := false
		for s := 0; s < segs; s++ {
			seg, err := in.quick("FPDFPath_GetPathSegment", obj, uint64(s))
			if err != nil {
				return err
			}
			if seg == 0 {
				break
			}
			st, err := in.quickInt("FPDFPathSegment_GetType", seg)
			if err != nil {
				return err
			}
			if ok, err := in.quick("FPDFPathSegment_GetPoint", seg, uint64(point), uint64(point+4)); err != nil {
				return err
			} else if ok == 0 {
				have = false
				continue
			}
			x, y := in.f32(point), in.f32(point+4)
			x, y = ma*x+mc*y+me, mb*x+md*y+mf
			closes, err := in.quickInt("FPDFPathSegment_GetClose", seg)
			if err != nil {
				return err
			}
			switch {
			case st == segMoveTo:
				sx, sy = x, y
			case st == segLineTo && have:
				addLine(addRule, px, py, x, y)
				if closes != 0 {
					addLine(addRule, x, y, sx, sy)
				}
			}
			px, py, have = x, y, st == segMoveTo || st == segLineTo
		}
	}
	return nil
}

// addLine adds the segment (x0,y0)–(x1,y1) as a rule when it is horizontal or vertical.
func addLine(add func(l, b, r, t float64), x0, y0, x1, y1 float64) {
	const slack = 0.5
	if math.Abs(y1-y0) <= slack || math.Abs(x1-x0) <= slack {
		add(math.Min(x0, x1), math.Min(y0, y1), math.Max(x0, x1), math.Max(y0, y1))
	}
}
