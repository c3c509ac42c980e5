package inspect

import (
	"bytes"
	"context"
	"errors"

	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"
)

// maxFormDepth bounds Form XObject nesting (a form drawing a form ...); real files
// nest two or three levels, hostile ones loop.
const maxFormDepth = 8

// maxPageTreeDepth bounds the page tree walk for the same reason.
const maxPageTreeDepth = 64

// hasTextLayer reports whether one of the first maxPages pages shows text in a font.
// complete is false when the walk stopped at maxPages without finding any, so the
// answer for the whole document is unknown.
func hasTextLayer(ctx context.Context, x *model.XRefTable, maxPages int) (found, complete bool, err error) {
	root, err := x.Pages()
	if err != nil || root == nil {
		return false, true, nil
	}
	w := &textWalker{ctx: ctx, x: x, maxPages: maxPages, forms: map[int]bool{}, nodes: map[int]bool{}}
	found, err = w.node(*root, nil, 0)
	if errors.Is(err, errPageLimit) {
		return false, false, nil
	}
	if err != nil {
		return false, false, err
	}
	return found, true, nil
}

var errPageLimit = errors.New("page limit reached")

type textWalker struct {
	ctx      context.Context
	x        *model.XRefTable
	maxPages int
	pages    int
	forms    map[int]bool // Form XObjects already scanned, by object number
	nodes    map[int]bool // page tree nodes visited: a cyclic tree must not loop
}

// node walks one page tree node in page order; Resources are inherited from parents.
func (w *textWalker) node(ref types.IndirectRef, inherited types.Dict, depth int) (bool, error) {
	objNr := ref.ObjectNumber.Value()
	if depth > maxPageTreeDepth || w.nodes[objNr] {
		return false, nil
	}
	w.nodes[objNr] = true
	d, err := w.x.DereferenceDict(ref)
	if err != nil || d == nil {
		return false, nil // a broken branch hides its pages, as in a viewer
	}
	res := inherited
	if o, ok := d.Find("Resources"); ok {
		if r, err := w.x.DereferenceDict(o); err == nil && r != nil {
			res = r
		}
	}
	kids := d.ArrayEntry("Kids")
	typ := d.Type()
	if typ != nil && *typ == "Page" || typ == nil && kids == nil {
		return w.page(d, res)
	}
	for _, k := range kids {
		kref, ok := k.(types.IndirectRef)
		if !ok {
			continue
		}
		found, err := w.node(kref, res, depth+1)
		if found || err != nil {
			return found, err
		}
	}
	return false, nil
}

func (w *textWalker) page(d, res types.Dict) (bool, error) {
	if w.pages >= w.maxPages {
		return false, errPageLimit
	}
	w.pages++
	if err := w.ctx.Err(); err != nil {
		return false, err
	}
	content, err := w.x.PageContent(d, w.pages)
	if err != nil {
		return false, nil // no content, or content that does not decode: no text here
	}
	return w.scan(content, res, 0), nil
}

// scan reads one content stream and reports whether it shows text in a font that the
// resources define: BT ... /F1 12 Tf (Hello) Tj ... ET, possibly inside a Form XObject.
func (w *textWalker) scan(content []byte, res types.Dict, depth int) bool {
	fonts := w.subDict(res, "Font")
	s := contentScanner{data: content}
	var (
		stack     []operand
		inText    bool
		fontOK    bool
		fontSaved []bool // q/Q save and restore the text state with the graphics state
	)
	for {
		t := s.next()
		switch t.kind {
		case tokEOF:
			return false
		case tokOperator:
		default:
			// Keep only the operands the last operator can use: hostile streams may
			// push millions of them.
			if len(stack) == 8 {
				copy(stack, stack[1:])
				stack = stack[:7]
			}
			stack = append(stack, t.operand)
			continue
		}
		last := func(i int) operand { // i-th operand from the end, zero value if absent
			if len(stack) < i {
				return operand{}
			}
			return stack[len(stack)-i]
		}
		shown := false
		switch op := string(t.op); op {
		case "BT":
			inText = true
		case "ET":
			inText = false
		case "q":
			if len(fontSaved) < 1024 {
				fontSaved = append(fontSaved, fontOK)
			}
		case "Q":
			if n := len(fontSaved); n > 0 {
				fontOK, fontSaved = fontSaved[n-1], fontSaved[:n-1]
			}
		case "Tf":
			if o := last(2); o.kind == tokName {
				_, fontOK = fonts[o.name]
			}
		case "Tj", "'", "TJ":
			shown = last(1).text
		case `"`:
			shown = last(1).text && last(1).kind == tokString
		case "Do":
			if o := last(1); o.kind == tokName && w.form(res, o.name, depth) {
				return true
			}
		case "BI":
			s.skipInlineImage()
		}
		if shown && inText && fontOK {
			return true
		}
		stack = stack[:0]
	}
}

// form scans the Form XObject named name, once per document.
func (w *textWalker) form(res types.Dict, name string, depth int) bool {
	if depth >= maxFormDepth {
		return false
	}
	xobjects := w.subDict(res, "XObject")
	o, ok := xobjects[name]
	if !ok {
		return false
	}
	ref, ok := o.(types.IndirectRef)
	if !ok {
		return false
	}
	if w.forms[ref.ObjectNumber.Value()] {
		return false
	}
	w.forms[ref.ObjectNumber.Value()] = true
	sd, _, err := w.x.DereferenceStreamDict(ref)
	if err != nil || sd == nil || sd.Subtype() == nil || *sd.Subtype() != "Form" {
		return false
	}
	if err := sd.Decode(); err != nil {
		return false
	}
	formRes := res // a form without Resources uses its page's (allowed before PDF 1.2)
	if o, ok := sd.Find("Resources"); ok {
		if r, err := w.x.DereferenceDict(o); err == nil && r != nil {
			formRes = r
		}
	}
	return w.scan(sd.Content, formRes, depth+1)
}

func (w *textWalker) subDict(res types.Dict, key string) types.Dict {
	if res == nil {
		return nil
	}
	o, ok := res.Find(key)
	if !ok {
		return nil
	}
	d, err := w.x.DereferenceDict(o)
	if err != nil {
		return nil
	}
	return d
}

// The content stream lexer: just enough of PDF syntax (ISO 32000-1, 7.2 and 7.8) to
// find operators and tell whether their operands carry text.

type tokenKind int

const (
	tokEOF tokenKind = iota
	tokOperator
	tokName
	tokString
	tokArray
	tokOther    // numbers, booleans, dictionaries
	tokArrayEnd // "]", seen by array
	tokDictEnd  // ">>", seen by skipDict
)

type operand struct {
	kind tokenKind
	name string // tokName: the decoded name without the slash
	text bool   // tokString: non-empty; tokArray: holds a non-empty string
}

type token struct {
	operand
	op []byte // tokOperator
}

type contentScanner struct {
	data  []byte
	pos   int
	depth int // array and dictionary nesting: bounded, as the lexer recurses
}

// maxNesting bounds array and dictionary nesting in content streams; "[[[[..." must
// not grow the stack without limit.
const maxNesting = 32

func isSpace(c byte) bool {
	return c == 0 || c == '\t' || c == '\n' || c == '\f' || c == '\r' || c == ' '
}

func isDelimiter(c byte) bool {
	switch c {
	case '(', ')', '<', '>', '[', ']', '{', '}', '/', '%':
		return true
	}
	return false
}

// isRegular reports whether c belongs to a name or keyword.
func isRegular(c byte) bool { return !isSpace(c) && !isDelimiter(c) }

func (s *contentScanner) next() token {
	for s.pos < len(s.data) {
		c := s.data[s.pos]
		switch {
		case isSpace(c):
			s.pos++
		case c == '%':
			for s.pos < len(s.data) && s.data[s.pos] != '\n' && s.data[s.pos] != '\r' {
				s.pos++
			}
		case c == '(':
			return token{operand: operand{kind: tokString, text: s.literalString()}}
		case c == '<' && s.peek(1) == '<':
			s.pos += 2
			if s.depth < maxNesting {
				s.skipDict()
			}
			return token{operand: operand{kind: tokOther}}
		case c == '<':
			return token{operand: operand{kind: tokString, text: s.hexString()}}
		case c == '>' && s.peek(1) == '>':
			s.pos += 2
			return token{operand: operand{kind: tokDictEnd}}
		case c == ']':
			s.pos++
			return token{operand: operand{kind: tokArrayEnd}}
		case c == '[':
			s.pos++
			if s.depth >= maxNesting {
				return token{operand: operand{kind: tokOther}}
			}
			return token{operand: operand{kind: tokArray, text: s.array()}}
		case c == '/':
			s.pos++
			return token{operand: operand{kind: tokName, name: s.name()}}
		case isDelimiter(c): // stray ) > { }
			s.pos++
			return token{operand: operand{kind: tokOther}}
		default:
			start := s.pos
			for s.pos < len(s.data) && isRegular(s.data[s.pos]) {
				s.pos++
			}
			w := s.data[start:s.pos]
			switch {
			case c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.',
				string(w) == "true", string(w) == "false", string(w) == "null":
				return token{operand: operand{kind: tokOther}}
			}
			return token{operand: operand{kind: tokOperator}, op: w}
		}
	}
	return token{operand: operand{kind: tokEOF}}
}

func (s *contentScanner) peek(i int) byte {
	if s.pos+i < len(s.data) {
		return s.data[s.pos+i]
	}
	return 0
}

// literalString consumes "(...)" with balanced parentheses and escapes.
func (s *contentScanner) literalString() (nonEmpty bool) {
	s.pos++ // (
	depth := 1
	for s.pos < len(s.data) {
		c := s.data[s.pos]
		s.pos++
		switch c {
		case '\\':
			s.pos++
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return nonEmpty
			}
		}
		nonEmpty = true
	}
	return nonEmpty
}

func (s *contentScanner) hexString() (nonEmpty bool) {
	s.pos++ // <
	for s.pos < len(s.data) {
		c := s.data[s.pos]
		s.pos++
		if c == '>' {
			return nonEmpty
		}
		if !isSpace(c) {
			nonEmpty = true
		}
	}
	return nonEmpty
}

// array consumes up to the matching "]" and reports whether it holds a non-empty string.
func (s *contentScanner) array() (text bool) {
	s.depth++
	defer func() { s.depth-- }()
	for {
		t := s.next()
		switch {
		case t.kind == tokEOF || t.kind == tokArrayEnd:
			return text
		case t.kind == tokString || t.kind == tokArray:
			text = text || t.text
		}
	}
}

// skipDict consumes up to the ">>" that closes an inline dictionary (marked-content
// properties), nested dictionaries and strings included.
func (s *contentScanner) skipDict() {
	s.depth++
	defer func() { s.depth-- }()
	for {
		if t := s.next(); t.kind == tokEOF || t.kind == tokDictEnd {
			return
		}
	}
}

// name consumes a name after its slash, decoding #xx escapes.
func (s *contentScanner) name() string {
	start := s.pos
	for s.pos < len(s.data) && isRegular(s.data[s.pos]) {
		s.pos++
	}
	raw := s.data[start:s.pos]
	if bytes.IndexByte(raw, '#') < 0 {
		return string(raw)
	}
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); i++ {
		if raw[i] == '#' && i+2 < len(raw) {
			if v, ok := unhex(raw[i+1], raw[i+2]); ok {
				out = append(out, v)
				i += 2
				continue
			}
		}
		out = append(out, raw[i])
	}
	return string(out)
}

func unhex(a, b byte) (byte, bool) {
	h := func(c byte) (byte, bool) {
		switch {
		case c >= '0' && c <= '9':
			return c - '0', true
		case c >= 'a' && c <= 'f':
			return c - 'a' + 10, true
		case c >= 'A' && c <= 'F':
			return c - 'A' + 10, true
		}
		return 0, false
	}
	x, ok1 := h(a)
	y, ok2 := h(b)
	return x<<4 | y, ok1 && ok2
}

// skipInlineImage consumes an inline image after BI: key/value pairs up to ID, then
// binary data up to an EI that stands alone between white space.
func (s *contentScanner) skipInlineImage() {
	for {
		t := s.next()
		if t.kind == tokEOF {
			return
		}
		if t.kind == tokOperator && string(t.op) == "ID" {
			break
		}
	}
	s.pos++ // the single white-space byte after ID
	for s.pos < len(s.data) {
		i := bytes.Index(s.data[s.pos:], []byte("EI"))
		if i < 0 {
			s.pos = len(s.data)
			return
		}
		at := s.pos + i
		s.pos = at + 2
		before := at == 0 || isSpace(s.data[at-1])
		after := s.pos == len(s.data) || !isRegular(s.data[s.pos])
		if before && after {
			return
		}
	}
}
