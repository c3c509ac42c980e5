package inspect

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"unicode/utf16"
	"unicode/utf8"
)

// inspectText counts lines and characters in one streaming pass with a fixed buffer,
// whatever the file's size.
func inspectText(ctx context.Context, src source) (*TextReport, error) {
	var bom [3]byte
	n, _ := src.f.ReadAt(bom[:], 0)
	head := bom[:n]
	rep := &TextReport{Encoding: "utf-8"}
	var skip int64
	var bigEndian bool
	switch {
	case bytes.HasPrefix(head, []byte{0xEF, 0xBB, 0xBF}):
		skip = 3
	case bytes.HasPrefix(head, []byte{0xFF, 0xFE}):
		rep.Encoding, skip = "utf-16le", 2
	case bytes.HasPrefix(head, []byte{0xFE, 0xFF}):
		rep.Encoding, skip, bigEndian = "utf-16be", 2, true
	}
	var r io.Reader = io.NewSectionReader(src.f, skip, src.size-skip)
	if src.progress != nil && src.size > skip {
		// A long text takes a while to count: say how far it is.
		r = &progressReader{r: r, total: src.size - skip, report: src.progress}
	}
	c := &lineCounter{}
	var err error
	if rep.Encoding == "utf-8" {
		var valid bool
		valid, err = countUTF8(ctx, r, c)
		if !valid {
			rep.Encoding = "unknown"
		}
	} else {
		err = countUTF16(ctx, r, c, bigEndian)
	}
	if err != nil {
		return nil, err
	}
	rep.LineCount, rep.CharCount = c.lines(), c.chars
	return rep, nil
}

const textChunk = 64 << 10

// lineCounter counts characters and line ends; LF, CRLF and a lone CR each end a line.
type lineCounter struct {
	chars, breaks int64
	prevCR        bool
	lastBreak     bool
}

func (c *lineCounter) add(r rune) {
	c.chars++
	switch r {
	case '\n':
		if !c.prevCR {
			c.breaks++
		}
	case '\r':
		c.breaks++
	}
	c.prevCR = r == '\r'
	c.lastBreak = r == '\n' || r == '\r'
}

// lines counts an unterminated last line too.
func (c *lineCounter) lines() int64 {
	if c.chars > 0 && !c.lastBreak {
		return c.breaks + 1
	}
	return c.breaks
}

// countUTF8 feeds the characters of r to c and reports whether r is valid UTF-8. A
// character split between two reads is carried to the next.
func countUTF8(ctx context.Context, r io.Reader, c *lineCounter) (valid bool, err error) {
	valid = true
	buf := make([]byte, textChunk+utf8.UTFMax)
	carry := 0
	for {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		n, rerr := io.ReadFull(r, buf[carry:carry+textChunk])
		eof := rerr == io.EOF || rerr == io.ErrUnexpectedEOF
		if rerr != nil && !eof {
			return false, fmt.Errorf("inspect: read text: %w", rerr)
		}
		data := buf[:carry+n]
		i := 0
		for i < len(data) {
			if b := data[i]; b < utf8.RuneSelf {
				c.add(rune(b))
				i++
				continue
			}
			if !eof && !utf8.FullRune(data[i:]) {
				break
			}
			ru, size := utf8.DecodeRune(data[i:])
			if ru == utf8.RuneError && size == 1 {
				valid = false
			}
			c.add(ru)
			i += size
		}
		if eof {
			return valid, nil
		}
		carry = copy(buf, data[i:])
	}
}

// countUTF16 feeds the characters of UTF-16 text (after its byte order mark) to c. A
// surrogate pair is one character; a code unit split between reads is carried.
func countUTF16(ctx context.Context, r io.Reader, c *lineCounter, bigEndian bool) error {
	buf := make([]byte, textChunk+1)
	carry := 0
	var high rune // a high surrogate waiting for its pair
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, rerr := io.ReadFull(r, buf[carry:carry+textChunk])
		eof := rerr == io.EOF || rerr == io.ErrUnexpectedEOF
		if rerr != nil && !eof {
			return fmt.Errorf("inspect: read text: %w", rerr)
		}
		data := buf[:carry+n]
		i := 0
		for ; i+2 <= len(data); i += 2 {
			u := rune(data[i]) | rune(data[i+1])<<8
			if bigEndian {
				u = rune(data[i])<<8 | rune(data[i+1])
			}
			switch {
			case high != 0 && utf16.IsSurrogate(u) && u >= 0xDC00:
				c.add(utf16.DecodeRune(high, u))
				high = 0
				continue
			case high != 0:
				c.add(utf8.RuneError)
				high = 0
			}
			if u >= 0xD800 && u < 0xDC00 {
				high = u
				continue
			}
			c.add(u)
		}
		if eof {
			if high != 0 {
				c.add(utf8.RuneError)
			}
			if i < len(data) { // an odd trailing byte
				c.add(utf8.RuneError)
			}
			return nil
		}
		carry = copy(buf, data[i:])
	}
}

// progressReader tells report the percentage of total read so far, when it changes.
type progressReader struct {
	r      io.Reader
	total  int64
	read   int64
	last   int
	report func(percent int)
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	p.read += int64(n)
	if pct := int(p.read * 100 / p.total); pct != p.last {
		p.last = pct
		p.report(pct)
	}
	return n, err
}
