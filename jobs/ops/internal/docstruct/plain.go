package docstruct

import (
	"bytes"
	"encoding/csv"
	"io"
	"strings"
)

// ReadText reads plain text: paragraphs apart by blank lines.
func ReadText(src []byte) *Document {
	d := &Document{}
	for _, p := range strings.Split(strings.ReplaceAll(string(src), "\r\n", "\n"), "\n\n") {
		if t := cleanText(p); t != "" {
			d.Blocks = append(d.Blocks, &Block{Kind: Paragraph, Text: t})
		}
	}
	return d
}

// ReadCSV reads comma-, semicolon- or tab-separated values (the one most used on the
// first line) as one table, the first non-empty row its header.
func ReadCSV(src []byte) (*Document, error) {
	src = bytes.TrimPrefix(src, []byte("\xef\xbb\xbf"))
	first, _, _ := bytes.Cut(src, []byte("\n"))
	sep := ','
	best := bytes.Count(first, []byte(","))
	for _, s := range []rune{';', '\t'} {
		if n := bytes.Count(first, []byte(string(s))); n > best {
			sep, best = s, n
		}
	}
	r := csv.NewReader(bytes.NewReader(src))
	r.Comma, r.FieldsPerRecord, r.LazyQuotes, r.ReuseRecord = sep, -1, true, false
	var rows [][]string
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		rows = append(rows, rec)
	}
	d := &Document{}
	if b := newTable(rows, 1); b != nil {
		d.Blocks = append(d.Blocks, b)
	}
	return d, nil
}
