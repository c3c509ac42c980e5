package pdf

import (
	"context"
	"math"
	"strconv"

	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"
)

// matrix is a PDF transformation [a b c d e f].
type matrix [6]float64

var identity = matrix{1, 0, 0, 1, 0, 0}

// times returns m×n: m applied first, as "m cm" applies m inside n.
func (m matrix) times(n matrix) matrix {
	return matrix{
		m[0]*n[0] + m[1]*n[2], m[0]*n[1] + m[1]*n[3],
		m[2]*n[0] + m[3]*n[2], m[2]*n[1] + m[3]*n[3],
		m[4]*n[0] + m[5]*n[2] + n[4], m[4]*n[1] + m[5]*n[3] + n[5],
	}
}

// size is an image's largest displayed size in points.
type size struct{ w, h float64 }

// placements finds, for every image XObject drawn by a page (directly or inside form
// XObjects), the largest size it is displayed at. Images it cannot see (patterns,
// annotations) are absent; pdf.compress then assumes they may fill the page.
type placements struct {
	x      *model.XRefTable
	sizes  map[int]size
	forms  map[int][]byte // decoded form content, by object number
	budget int64          // content bytes left to scan
}

const maxScanBytes = 256 << 20

func findPlacements(ctx context.Context, x *model.XRefTable, pages int) map[int]size {
	p := &placements{x: x, sizes: map[int]size{}, forms: map[int][]byte{}, budget: maxScanBytes}
	for i := 1; i <= pages && p.budget > 0; i++ {
		if ctx.Err() != nil {
			break
		}
		d, _, attrs, err := x.PageDict(i, true)
		if err != nil || d == nil {
			continue
		}
		content, err := x.PageContent(d, i)
		if err != nil {
			continue
		}
		var res types.Dict
		if attrs != nil {
			res = attrs.Resources
		}
		p.scan(content, res, identity, 0, nil)
	}
	return p.sizes
}

// scan walks a content stream, tracking the current transformation (q, Q, cm) and
// recording each Do of an image; forms are followed up to a depth, never in a loop.
func (p *placements) scan(b []byte, res types.Dict, ctm matrix, depth int, chain []int) {
	p.budget -= int64(len(b))
	if p.budget < 0 {
		return
	}
	var stack []matrix
	var nums []float64
	var name string
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case isSpace(c):
			i++
		case c == '%':
			for i < len(b) && b[i] != '\n' && b[i] != '\r' {
				i++
			}
		case c == '/':
			j := i + 1
			for j < len(b) && !isSpace(b[j]) && !isDelim(b[j]) {
				j++
			}
			name = string(b[i+1 : j])
			i = j
		case c == '(':
			i = skipString(b, i)
		case c == '<':
			if i+1 < len(b) && b[i+1] == '<' {
				i += 2
			} else {
				for i < len(b) && b[i] != '>' {
					i++
				}
				i++
			}
		case c == '>' || c == '[' || c == ']' || c == '{' || c == '}' || c == ')':
			i++
		case c == '+' || c == '-' || c == '.' || (c >= '0' && c <= '9'):
			j := i + 1
			for j < len(b) && (b[j] == '.' || (b[j] >= '0' && b[j] <= '9')) {
				j++
			}
			if v, err := strconv.ParseFloat(string(b[i:j]), 64); err == nil {
				nums = append(nums, v)
				if len(nums) > 6 {
					nums = nums[len(nums)-6:]
				}
			}
			i = j
		default:
			j := i
			for j < len(b) && !isSpace(b[j]) && !isDelim(b[j]) {
				j++
			}
			if j == i {
				j++
			}
			op := string(b[i:j])
			i = j
			switch op {
			case "q":
				if len(stack) < 1024 {
					stack = append(stack, ctm)
				}
			case "Q":
				if len(stack) > 0 {
					ctm = stack[len(stack)-1]
					stack = stack[:len(stack)-1]
				}
			case "cm":
				if len(nums) == 6 {
					ctm = matrix(nums).times(ctm)
				}
			case "Do":
				p.do(name, res, ctm, depth, chain)
			case "BI":
				i = skipInlineImage(b, i)
			}
			nums = nums[:0]
		}
	}
}

func (p *placements) do(name string, res types.Dict, ctm matrix, depth int, chain []int) {
	if res == nil || name == "" {
		return
	}
	xo, err := p.x.DereferenceDict(res["XObject"])
	if err != nil || xo == nil {
		return
	}
	ir, ok := xo[name].(types.IndirectRef)
	if !ok {
		return
	}
	nr := ir.ObjectNumber.Value()
	sd, _, err := p.x.DereferenceStreamDict(ir)
	if err != nil || sd == nil {
		return
	}
	switch st := sd.Subtype(); {
	case st != nil && *st == "Image":
		w, h := math.Hypot(ctm[0], ctm[1]), math.Hypot(ctm[2], ctm[3])
		s := p.sizes[nr]
		p.sizes[nr] = size{math.Max(s.w, w), math.Max(s.h, h)}
	case st != nil && *st == "Form":
		if depth >= 12 {
			return
		}
		for _, c := range chain {
			if c == nr {
				return
			}
		}
		content, ok := p.forms[nr]
		if !ok {
			if err := sd.DecodeWithLimit(p.budget); err == nil {
				content = sd.Content
			}
			p.forms[nr] = content
		}
		m := identity
		if a, err := p.x.DereferenceArray(sd.Dict["Matrix"]); err == nil && len(a) == 6 {
			for k, o := range a {
				if v, err := p.x.DereferenceNumber(o); err == nil {
					m[k] = v
				}
			}
		}
		fres := res
		if r, err := p.x.DereferenceDict(sd.Dict["Resources"]); err == nil && r != nil {
			fres = r
		}
		p.scan(content, fres, m.times(ctm), depth+1, append(chain, nr))
	}
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\f' || c == 0
}

func isDelim(c byte) bool {
	switch c {
	case '(', ')', '<', '>', '[', ']', '{', '}', '/', '%':
		return true
	}
	return false
}

// skipString returns the index after the literal string starting at b[i] == '('.
func skipString(b []byte, i int) int {
	depth := 0
	for ; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return i + 1
			}
		}
	}
	return i
}

// skipInlineImage returns the index after an inline image's EI, from just after BI.
func skipInlineImage(b []byte, i int) int {
	for ; i+1 < len(b); i++ {
		if b[i] == 'I' && b[i+1] == 'D' && i > 0 && isSpace(b[i-1]) {
			break
		}
	}
	for i += 2; i+2 < len(b); i++ {
		if isSpace(b[i]) && b[i+1] == 'E' && b[i+2] == 'I' && (i+3 == len(b) || isSpace(b[i+3])) {
			return i + 3
		}
	}
	return len(b)
}
