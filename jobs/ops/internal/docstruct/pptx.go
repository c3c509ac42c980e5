package docstruct

import (
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/filemill/filemill/jobs/ops/internal/zipparts"
)

// ReadPPTX reads a presentation: one section per shown slide (its number kept), the
// title as a heading, body text as nested bullets (or numbers), other text boxes as
// paragraphs, tables, pictures by their description, and the speaker notes.
func ReadPPTX(path string, lim zipparts.Limits) (*Document, error) {
	c, err := zipparts.Open(path, lim)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	const pres = "ppt/presentation.xml"
	if !c.Has(pres) {
		return nil, fmt.Errorf("docstruct: no %s", pres)
	}
	rs, err := rels(c, pres)
	if err != nil {
		return nil, err
	}
	rc, err := c.Open(pres)
	if err != nil {
		return nil, err
	}
	var slides []string
	d := xml.NewDecoder(rc)
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			rc.Close()
			return nil, err
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "sldId" {
			if t := rs[relAttr(se, "id")]; t != "" {
				slides = append(slides, t)
			}
		}
	}
	rc.Close()
	doc := &Document{}
	shown := 0
	for _, part := range slides {
		if !c.Has(part) {
			continue
		}
		s, err := readSlide(c, part)
		if err != nil {
			return nil, err
		}
		if s.hidden {
			continue
		}
		shown++
		doc.Blocks = append(doc.Blocks, &Block{Kind: Section, Text: "Slide " + strconv.Itoa(shown)})
		doc.Blocks = append(doc.Blocks, s.blocks...)
		if srs, err := rels(c, part); err == nil {
			for _, t := range srs {
				if strings.Contains(t, "notesSlide") && c.Has(t) {
					n, err := readNotes(c, t)
					if err != nil {
						return nil, err
					}
					if text := n.notes(); text != "" {
						doc.Blocks = append(doc.Blocks, &Block{Kind: Notes, Text: text})
					}
				}
			}
		}
	}
	return doc, nil
}

type slide struct {
	notesMode bool
	hidden    bool
	title     []*Block
	blocks    []*Block
	body      []string // a notes slide's body text
}

func (s *slide) notes() string { return strings.Join(s.body, "\n") }

// readNotes reads a notes slide: its body placeholder's text.
func readNotes(c *zipparts.Container, part string) (*slide, error) { return readPart(c, part, true) }

func readSlide(c *zipparts.Container, part string) (*slide, error) { return readPart(c, part, false) }

// pptPara is one paragraph of a text body.
type pptPara struct {
	text    string
	level   int
	bullet  int // 0 inherited, 1 a bullet, 2 none, 3 auto-numbered
	numType string
	start   int
}

func readPart(c *zipparts.Container, part string, notes bool) (*slide, error) {
	rc, err := c.Open(part)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	d := xml.NewDecoder(rc)
	s := &slide{notesMode: notes}
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		switch se.Name.Local {
		case "sld":
			s.hidden = anyAttr(se, "show") == "0"
		case "sp":
			if err := s.shape(d); err != nil {
				return nil, err
			}
		case "graphicFrame":
			if err := s.frame(d); err != nil {
				return nil, err
			}
		case "pic":
			if err := s.picture(d); err != nil {
				return nil, err
			}
		}
	}
	s.blocks = append(s.title, s.blocks...)
	return s, nil
}

// shape reads a shape: a placeholder's type (title, body), whether it is a plain text
// box, and its paragraphs.
func (s *slide) shape(d *xml.Decoder) error {
	var (
		ph    = ""
		isPh  bool
		paras []pptPara
	)
	for {
		tok, err := d.Token()
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "ph":
				isPh = true
				ph = anyAttr(t, "type")
			case "txBody":
				if paras, err = textBody(d); err != nil {
					return err
				}
			}
		case xml.EndElement:
			if t.Name.Local == "sp" {
				s.addShape(isPh, ph, paras)
				return nil
			}
		}
	}
}

func (s *slide) addShape(isPh bool, ph string, paras []pptPara) {
	if s.notesMode {
		if ph == "body" {
			for _, p := range paras {
				if p.text != "" {
					s.body = append(s.body, p.text)
				}
			}
		}
		return
	}
	switch {
	case ph == "title" || ph == "ctrTitle":
		var parts []string
		for _, p := range paras {
			if p.text != "" {
				parts = append(parts, p.text)
			}
		}
		if t := strings.Join(parts, " "); t != "" {
			s.title = append(s.title, &Block{Kind: Heading, Level: 1, Text: t})
		}
		return
	case ph == "sldNum" || ph == "dt" || ph == "ftr" || ph == "hdr" || ph == "sldImg":
		return
	}
	// A body placeholder's paragraphs are bullets unless they say not; a text box's
	// are paragraphs unless they say they are bullets.
	body := isPh && (ph == "" || ph == "body" || ph == "obj")
	counters := map[int]int{}
	for _, p := range paras {
		if p.text == "" {
			continue
		}
		bullet := p.bullet == 1 || p.bullet == 3 || (p.bullet == 0 && body)
		if !bullet {
			s.blocks = append(s.blocks, &Block{Kind: Paragraph, Text: p.text})
			continue
		}
		b := &Block{Kind: ListItem, Level: min(p.level, 8), Text: p.text}
		for l := range counters {
			if l > p.level {
				delete(counters, l)
			}
		}
		if p.bullet == 3 {
			n, ok := counters[p.level]
			if !ok {
				n = max(p.start, 1) - 1
			}
			n++
			counters[p.level] = n
			b.Ordered = true
			b.Marker = autoNumber(n, p.numType)
		} else {
			delete(counters, p.level)
		}
		s.blocks = append(s.blocks, b)
	}
}

// autoNumber writes n as a:buAutoNum's scheme says ("arabicPeriod" 1., "alphaLcParenR" a)).
func autoNumber(n int, scheme string) string {
	v := strconv.Itoa(n)
	switch {
	case strings.HasPrefix(scheme, "alphaLc"):
		v = letters(n, 'a')
	case strings.HasPrefix(scheme, "alphaUc"):
		v = letters(n, 'A')
	case strings.HasPrefix(scheme, "romanLc"):
		v = strings.ToLower(roman(n))
	case strings.HasPrefix(scheme, "romanUc"):
		v = roman(n)
	}
	switch {
	case strings.HasSuffix(scheme, "ParenR"):
		return v + ")"
	case strings.HasSuffix(scheme, "ParenBoth"):
		return "(" + v + ")"
	case strings.HasSuffix(scheme, "Plain"):
		return v
	}
	return v + "."
}

// textBody reads a:p paragraphs up to the end of txBody.
func textBody(d *xml.Decoder) ([]pptPara, error) {
	var out []pptPara
	var cur *pptPara
	var text strings.Builder
	inPPr := false
	for {
		tok, err := d.Token()
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "p":
				out = append(out, pptPara{})
				cur = &out[len(out)-1]
				text.Reset()
			case "pPr":
				inPPr = true
				if cur != nil {
					cur.level, _ = strconv.Atoi(anyAttr(t, "lvl"))
				}
			case "buNone":
				if cur != nil && inPPr {
					cur.bullet = 2
				}
			case "buChar", "buBlip":
				if cur != nil && inPPr {
					cur.bullet = 1
				}
			case "buAutoNum":
				if cur != nil && inPPr {
					cur.bullet = 3
					cur.numType = anyAttr(t, "type")
					cur.start, _ = strconv.Atoi(anyAttr(t, "startAt"))
				}
			case "t":
				var s string
				if err := d.DecodeElement(&s, &t); err != nil {
					return nil, err
				}
				text.WriteString(s)
			case "br", "tab":
				text.WriteByte(' ')
			}
		case xml.EndElement:
			switch t.Name.Local {
			case "pPr":
				inPPr = false
			case "p":
				if cur != nil {
					cur.text = cleanText(text.String())
				}
			case "txBody":
				return out, nil
			}
		}
	}
}

// frame reads a graphic frame: a table, or nothing else of text.
func (s *slide) frame(d *xml.Decoder) error {
	var rows [][]string
	var cont [][]bool
	depth := 0
	for {
		tok, err := d.Token()
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			switch t.Name.Local {
			case "tr":
				rows = append(rows, nil)
				cont = append(cont, nil)
			case "tc":
				if len(rows) == 0 {
					continue
				}
				span, _ := strconv.Atoi(anyAttr(t, "gridSpan"))
				hm, vm := anyAttr(t, "hMerge") == "1", anyAttr(t, "vMerge") == "1"
				paras, err := cellBody(d)
				if err != nil {
					return err
				}
				depth--
				var parts []string
				for _, p := range paras {
					if p.text != "" {
						parts = append(parts, p.text)
					}
				}
				r := len(rows) - 1
				text := strings.Join(parts, " ")
				if hm && len(rows[r]) > 0 {
					text = rows[r][len(rows[r])-1]
				}
				span = min(max(span, 1), maxSpan)
				for range span {
					rows[r] = append(rows[r], text)
					cont[r] = append(cont[r], vm)
				}
			}
		case xml.EndElement:
			if depth == 0 && t.Name.Local == "graphicFrame" {
				for r := 1; r < len(rows); r++ {
					for i := range rows[r] {
						if cont[r][i] && i < len(rows[r-1]) {
							rows[r][i] = rows[r-1][i]
						}
					}
				}
				if b := newTable(rows, 1); b != nil {
					s.blocks = append(s.blocks, b)
				}
				return nil
			}
			depth--
		}
	}
}

// cellBody reads a table cell's text body, up to the end of the cell.
func cellBody(d *xml.Decoder) ([]pptPara, error) {
	var out []pptPara
	for {
		tok, err := d.Token()
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if t.Name.Local == "txBody" {
				ps, err := textBody(d)
				if err != nil {
					return nil, err
				}
				out = append(out, ps...)
			}
		case xml.EndElement:
			if t.Name.Local == "tc" {
				return out, nil
			}
		}
	}
}

// picture reads a picture's description as an image block.
func (s *slide) picture(d *xml.Decoder) error {
	alt := ""
	for {
		tok, err := d.Token()
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if t.Name.Local == "cNvPr" {
				alt = anyAttr(t, "descr")
				if alt == "" {
					alt = anyAttr(t, "title")
				}
			}
		case xml.EndElement:
			if t.Name.Local == "pic" {
				if s.notesMode {
					return nil
				}
				s.blocks = append(s.blocks, &Block{Kind: Image, Text: cleanText(alt)})
				return nil
			}
		}
	}
}
