package docstruct

import (
	"encoding/xml"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/filemill/filemill/jobs/ops/internal/zipparts"
)

// maxSheetCells bounds the cells read from one workbook.
const maxSheetCells = 2_000_000

// ReadXLSX reads a workbook: one section per visible sheet, its name a heading, its
// cells a table of values as displayed (number formats applied), merged cells
// repeated, empty rows and columns dropped, the first row the header.
func ReadXLSX(path string, lim zipparts.Limits) (*Document, error) {
	c, err := zipparts.Open(path, lim)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	const wb = "xl/workbook.xml"
	if !c.Has(wb) {
		return nil, fmt.Errorf("docstruct: no %s", wb)
	}
	rs, err := rels(c, wb)
	if err != nil {
		return nil, err
	}
	x := &xlsxReader{c: c}
	if err := x.workbook(wb, rs); err != nil {
		return nil, err
	}
	for _, t := range rs {
		switch {
		case strings.HasSuffix(t, "sharedStrings.xml"):
			if err := x.sharedStrings(t); err != nil {
				return nil, err
			}
		case strings.HasSuffix(t, "styles.xml"):
			if err := x.styles(t); err != nil {
				return nil, err
			}
		}
	}
	doc := &Document{}
	for _, s := range x.sheets {
		if s.hidden || !c.Has(s.part) {
			continue
		}
		rows, err := x.sheet(s.part)
		if err != nil {
			return nil, err
		}
		doc.Blocks = append(doc.Blocks, &Block{Kind: Heading, Level: 1, Text: cleanText(s.name)})
		if b := newTable(rows, 1); b != nil {
			doc.Blocks = append(doc.Blocks, b)
		}
	}
	return doc, nil
}

type xlsxSheet struct {
	name, part string
	hidden     bool
}

type xlsxReader struct {
	c        *zipparts.Container
	sheets   []xlsxSheet
	strings  []string
	formats  []string // by cell style index: the number format code
	date1904 bool
	cells    int
}

func (x *xlsxReader) decode(part string, fn func(d *xml.Decoder, se xml.StartElement) error) error {
	rc, err := x.c.Open(part)
	if err != nil {
		return err
	}
	defer rc.Close()
	d := xml.NewDecoder(rc)
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if se, ok := tok.(xml.StartElement); ok {
			if err := fn(d, se); err != nil {
				return err
			}
		}
	}
}

func (x *xlsxReader) workbook(part string, rs map[string]string) error {
	return x.decode(part, func(_ *xml.Decoder, se xml.StartElement) error {
		switch se.Name.Local {
		case "sheet":
			st := anyAttr(se, "state")
			x.sheets = append(x.sheets, xlsxSheet{name: anyAttr(se, "name"), part: rs[relAttr(se, "id")], hidden: st == "hidden" || st == "veryHidden"})
		case "workbookPr":
			v := anyAttr(se, "date1904")
			x.date1904 = v == "1" || v == "true"
		}
		return nil
	})
}

func (x *xlsxReader) sharedStrings(part string) error {
	return x.decode(part, func(d *xml.Decoder, se xml.StartElement) error {
		if se.Name.Local != "si" {
			return nil
		}
		// No sheet shows more strings than it has cells: more is a part built to be read.
		if len(x.strings) >= maxSheetCells {
			return fmt.Errorf("%w: more than %d shared strings", zipparts.ErrTooLarge, maxSheetCells)
		}
		s, err := richText(d, "si")
		if err != nil {
			return err
		}
		x.strings = append(x.strings, s)
		return nil
	})
}

// richText reads the text of a string item (t, or runs of r/t; phonetic runs aside)
// up to the end of the element named end.
func richText(d *xml.Decoder, end string) (string, error) {
	var b strings.Builder
	for {
		tok, err := d.Token()
		if err != nil {
			return "", err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "t":
				var s string
				if err := d.DecodeElement(&s, &t); err != nil {
					return "", err
				}
				b.WriteString(s)
			case "rPh", "phoneticPr":
				if err := d.Skip(); err != nil {
					return "", err
				}
			}
		case xml.EndElement:
			if t.Name.Local == end {
				return b.String(), nil
			}
		}
	}
}

func (x *xlsxReader) styles(part string) error {
	custom := map[int]string{}
	inXfs := false
	return x.decode(part, func(d *xml.Decoder, se xml.StartElement) error {
		switch se.Name.Local {
		case "numFmt":
			id, _ := strconv.Atoi(anyAttr(se, "numFmtId"))
			custom[id] = anyAttr(se, "formatCode")
		case "cellXfs":
			inXfs = true
		case "cellStyleXfs":
			inXfs = false
		case "xf":
			if inXfs {
				id, _ := strconv.Atoi(anyAttr(se, "numFmtId"))
				code, ok := custom[id]
				if !ok {
					code = builtinFormats[id]
				}
				x.formats = append(x.formats, code)
			}
		}
		return nil
	})
}

type xlsxCell struct {
	col  int
	text string
}

// sheet reads a worksheet's cells as rows of displayed text. Rows and columns are
// compacted: only those holding text are kept, so a cell far out costs nothing.
func (x *xlsxReader) sheet(part string) ([][]string, error) {
	type row struct {
		n     int
		cells []xlsxCell
	}
	var rows []row
	type merge struct{ r0, c0, r1, c1 int }
	var merges []merge
	nextRow := 0
	err := x.decode(part, func(d *xml.Decoder, se xml.StartElement) error {
		switch se.Name.Local {
		case "row":
			n, err := strconv.Atoi(anyAttr(se, "r"))
			if err != nil || n < 1 {
				n = nextRow + 1
			}
			nextRow = n
			cells, err := x.row(d, n)
			if err != nil {
				return err
			}
			if len(cells) > 0 {
				rows = append(rows, row{n, cells})
			}
		case "mergeCell":
			a, b, ok := strings.Cut(anyAttr(se, "ref"), ":")
			if ok {
				r0, c0, ok0 := cellRef(a)
				r1, c1, ok1 := cellRef(b)
				if ok0 && ok1 && r1 >= r0 && c1 >= c0 && (r1-r0+1)*(c1-c0+1) <= 10_000 {
					merges = append(merges, merge{r0, c0, r1, c1})
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// A merged cell's text covers its area.
	if len(merges) > 0 {
		at := map[[2]int]string{}
		for _, r := range rows {
			for _, c := range r.cells {
				at[[2]int{r.n, c.col}] = c.text
			}
		}
		for _, m := range merges {
			t := at[[2]int{m.r0, m.c0}]
			if t == "" {
				continue
			}
			for r := m.r0; r <= m.r1; r++ {
				for c := m.c0; c <= m.c1; c++ {
					at[[2]int{r, c}] = t
				}
			}
		}
		byRow := map[int][]xlsxCell{}
		for k, t := range at {
			if t != "" {
				byRow[k[0]] = append(byRow[k[0]], xlsxCell{k[1], t})
			}
		}
		rows = rows[:0]
		for n, cs := range byRow {
			sort.Slice(cs, func(i, j int) bool { return cs[i].col < cs[j].col })
			rows = append(rows, row{n, cs})
		}
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].n < rows[j].n })
	var cols []int
	seen := map[int]bool{}
	for _, r := range rows {
		for _, c := range r.cells {
			if !seen[c.col] {
				seen[c.col] = true
				cols = append(cols, c.col)
			}
		}
	}
	sort.Ints(cols)
	idx := make(map[int]int, len(cols))
	for i, c := range cols {
		idx[c] = i
	}
	out := make([][]string, len(rows))
	for i, r := range rows {
		out[i] = make([]string, len(cols))
		for _, c := range r.cells {
			out[i][idx[c.col]] = c.text
		}
	}
	return out, nil
}

// row reads the cells of row n that hold text.
func (x *xlsxReader) row(d *xml.Decoder, n int) ([]xlsxCell, error) {
	var out []xlsxCell
	next := 0
	for {
		tok, err := d.Token()
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if t.Name.Local != "c" {
				continue
			}
			col := next
			if _, c, ok := cellRef(anyAttr(t, "r")); ok {
				col = c
			}
			next = col + 1
			typ := anyAttr(t, "t")
			style, _ := strconv.Atoi(anyAttr(t, "s"))
			v, inline, err := cellValue(d)
			if err != nil {
				return nil, err
			}
			text := x.display(typ, v, inline, style)
			if strings.TrimSpace(text) != "" {
				if x.cells++; x.cells > maxSheetCells {
					return nil, fmt.Errorf("%w: more than %d cells", zipparts.ErrTooLarge, maxSheetCells)
				}
				out = append(out, xlsxCell{col, text})
			}
		case xml.EndElement:
			if t.Name.Local == "row" {
				return out, nil
			}
		}
	}
}

// cellValue reads a cell's v and inline string, up to the end of the cell.
func cellValue(d *xml.Decoder) (v, inline string, err error) {
	for {
		tok, err := d.Token()
		if err != nil {
			return "", "", err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "v":
				if err := d.DecodeElement(&v, &t); err != nil {
					return "", "", err
				}
			case "is":
				if inline, err = richText(d, "is"); err != nil {
					return "", "", err
				}
			case "f", "extLst":
				if err := d.Skip(); err != nil {
					return "", "", err
				}
			}
		case xml.EndElement:
			if t.Name.Local == "c" {
				return v, inline, nil
			}
		}
	}
}

func (x *xlsxReader) display(typ, v, inline string, style int) string {
	switch typ {
	case "s":
		i, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || i < 0 || i >= len(x.strings) {
			return ""
		}
		return x.strings[i]
	case "inlineStr":
		return inline
	case "str", "e":
		return v
	case "b":
		if strings.TrimSpace(v) == "1" {
			return "TRUE"
		}
		return "FALSE"
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil {
		return v
	}
	code := ""
	if style >= 0 && style < len(x.formats) {
		code = x.formats[style]
	}
	return FormatValue(f, code, x.date1904)
}

// cellRef reads "BC12" as row 12, column 54 (0-based columns).
func cellRef(s string) (row, col int, ok bool) {
	i := 0
	col = 0
	for i < len(s) && s[i] >= 'A' && s[i] <= 'Z' {
		col = col*26 + int(s[i]-'A'+1)
		i++
		if col > 16384 {
			return 0, 0, false
		}
	}
	if i == 0 || i == len(s) {
		return 0, 0, false
	}
	r, err := strconv.Atoi(s[i:])
	if err != nil || r < 1 || r > 1_048_576 {
		return 0, 0, false
	}
	return r, col - 1, true
}
