package scan

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
)

// errBudget ends reading when the scan's decompression budget is spent.
var errBudget = errors.New("decompression budget spent")

// budgetReader reads through the scan's decompression budget, counting what it read.
type budgetReader struct {
	s *inspector
	r io.Reader
	n int64
}

func (b *budgetReader) Read(p []byte) (int, error) {
	if err := b.s.ctx.Err(); err != nil {
		return 0, err
	}
	if b.s.budget <= 0 {
		return 0, errBudget
	}
	if int64(len(p)) > b.s.budget {
		p = p[:b.s.budget]
	}
	n, err := b.r.Read(p)
	b.s.budget -= int64(n)
	b.n += int64(n)
	return n, err
}

// countingReader counts the compressed bytes a decompressor has consumed.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// partial notes that a limit stopped the inspection of archives; ClamAV still saw
// every byte.
func (s *inspector) partial(why string) {
	if s.stopped {
		return
	}
	s.stopped = true
	s.add("archive.partial", SeverityLow, "the built-in rules stopped looking into archives: "+why)
}

// ruleNesting is the finding of archives nested too deep: past MaxDepth, or past
// clamd's recursion limit.
const ruleNesting = "archive.nesting"

// nested checks the nesting depth before an archive at depth is opened.
func (s *inspector) nested(depth int, what string) bool {
	if depth >= s.cfg.MaxDepth {
		s.add(ruleNesting, SeverityHigh, fmt.Sprintf("%s nests archives more than %d deep", what, s.cfg.MaxDepth))
		return false
	}
	return true
}

// count adds n archive entries to the scan's count.
func (s *inspector) count(n int, what string) bool {
	s.entries += n
	if s.entries > s.cfg.MaxEntries {
		s.add("archive.entries", SeverityHigh, fmt.Sprintf("%s holds more than %d archive entries (%d seen)", what, s.cfg.MaxEntries, s.entries))
		return false
	}
	return true
}

// bomb reports an expansion ratio beyond the limit.
func (s *inspector) bomb(expanded, compressed int64, what string) bool {
	if compressed <= 0 || expanded < s.cfg.RatioMinBytes {
		return false
	}
	ratio := float64(expanded) / float64(compressed)
	if ratio <= s.cfg.MaxRatio {
		return false
	}
	s.add("archive.ratio", SeverityHigh, fmt.Sprintf("%s expands %d bytes into %d (ratio %.0f:1; at most %.0f:1 is accepted)",
		what, compressed, expanded, ratio, s.cfg.MaxRatio))
	return true
}

// readEntry reads an entry's head, and all of it (within MaxEntryBytes) when the rules
// look inside such content. whole is false when only the head was read. meter spends
// the decompression budget (an entry that r decompresses; a tar entry inside a
// compressed stream is metered by the stream).
func (s *inspector) readEntry(r io.Reader, declared int64, meter bool) (data []byte, whole bool) {
	var br io.Reader = r
	if meter {
		br = &budgetReader{s: s, r: r}
	}
	head := make([]byte, headBytes)
	n, err := io.ReadFull(br, head)
	head = head[:n]
	if err != nil {
		if errors.Is(err, errBudget) {
			s.partial(fmt.Sprintf("%d MiB decompressed", s.cfg.MaxInspectBytes>>20))
		}
		return head, err == io.EOF || err == io.ErrUnexpectedEOF
	}
	if !needsWhole(head) || declared > s.cfg.MaxEntryBytes {
		return head, false
	}
	var buf bytes.Buffer
	buf.Write(head)
	_, err = io.Copy(&buf, io.LimitReader(br, s.cfg.MaxEntryBytes-int64(n)+1))
	if err != nil {
		if errors.Is(err, errBudget) {
			s.partial(fmt.Sprintf("%d MiB decompressed", s.cfg.MaxInspectBytes>>20))
		}
		return head, false
	}
	if int64(buf.Len()) > s.cfg.MaxEntryBytes {
		return head, false
	}
	return buf.Bytes(), true
}

// entry inspects one archive entry read by readEntry.
func (s *inspector) entry(data []byte, whole bool, name string, depth int, where string) {
	if whole {
		s.inspect(data, name, "", depth+1, where)
	} else {
		s.inspectHead(data, name, where)
	}
}

// zipEntryCount reads the entry count from a zip's end records without parsing the
// central directory (which a hostile count would make large).
func zipEntryCount(data []byte) (uint64, bool) {
	start := max(0, len(data)-(65535+22))
	i := bytes.LastIndex(data[start:], []byte("PK\x05\x06"))
	if i < 0 || start+i+22 > len(data) {
		return 0, false
	}
	eocd := start + i
	n := uint64(binary.LittleEndian.Uint16(data[eocd+10:]))
	if n != 0xffff {
		return n, true
	}
	// Zip64: the locator sits just before the end record.
	loc := eocd - 20
	if loc < 0 || string(data[loc:loc+4]) != "PK\x06\x07" {
		return n, true
	}
	off := binary.LittleEndian.Uint64(data[loc+8:])
	if len(data) < 56 || off > uint64(len(data)-56) || string(data[off:off+4]) != "PK\x06\x06" {
		return n, true
	}
	return binary.LittleEndian.Uint64(data[off+32:]), true
}

// inspectZip looks into a zip (and the OOXML, ODF, JAR, APK documents that are zips).
func (s *inspector) inspectZip(data []byte, name string, depth int, what string) {
	if !s.nested(depth, what) {
		return
	}
	if n, ok := zipEntryCount(data); ok && n > uint64(s.cfg.MaxEntries) {
		s.count(int(min(n, 1<<30)), what)
		return
	}
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		// A damaged zip: ClamAV judges the bytes; there is nothing to walk.
		return
	}
	if !s.count(len(zr.File), what) {
		return
	}
	var declared uint64
	for _, f := range zr.File {
		declared += min(f.UncompressedSize64, 1<<50)
	}
	if s.bomb(int64(min(declared, 1<<62)), int64(len(data)), what) {
		return
	}
	s.officeMacros(zr, what)
	encrypted := false
	for _, f := range zr.File {
		if s.ctx.Err() != nil || s.stopped {
			return
		}
		if f.FileInfo().IsDir() || strings.HasSuffix(strings.ToLower(f.Name), "vbaproject.bin") {
			// A macro project is flagged by its name already.
			continue
		}
		if f.Flags&1 != 0 {
			encrypted = true
			continue
		}
		rc, err := f.Open()
		if err != nil {
			continue
		}
		d, whole := s.readEntry(rc, int64(min(f.UncompressedSize64, 1<<62)), true)
		rc.Close()
		s.entry(d, whole, f.Name, depth, what)
	}
	if encrypted {
		s.add("archive.encrypted", SeverityLow, fmt.Sprintf("%s has password-protected entries: their content could not be inspected", what))
	}
}

// officeMacros flags the macro parts of OOXML (vbaProject.bin) and ODF (Basic and
// Scripts folders) documents.
func (s *inspector) officeMacros(zr *zip.Reader, what string) {
	for _, f := range zr.File {
		n := strings.ToLower(f.Name)
		switch {
		case strings.HasSuffix(n, "vbaproject.bin"):
			s.add("office.macro", SeverityMedium, fmt.Sprintf("%s contains VBA macros (%s)", what, f.Name))
		case strings.HasPrefix(n, "basic/") && strings.HasSuffix(n, ".xml") &&
			!strings.HasSuffix(n, "/script-lb.xml") && n != "basic/script-lc.xml":
			s.add("office.macro", SeverityMedium, fmt.Sprintf("%s contains Basic macros (%s)", what, f.Name))
		case strings.HasPrefix(n, "scripts/") && !strings.HasSuffix(n, "/"):
			s.add("office.macro", SeverityMedium, fmt.Sprintf("%s contains scripts (%s)", what, f.Name))
		}
	}
}

// inspectGzip and inspectBzip2 decompress a stream (through the budget) and inspect
// what it holds; a tar inside is walked as it streams.
func (s *inspector) inspectGzip(data []byte, name string, depth int, what string) {
	if !s.nested(depth, what) {
		return
	}
	cr := &countingReader{r: bytes.NewReader(data)}
	zr, err := gzip.NewReader(cr)
	if err != nil {
		return
	}
	inner := strings.TrimSuffix(strings.TrimSuffix(name, ".gz"), ".GZ")
	if e := extension(name); e == "tgz" {
		inner = strings.TrimSuffix(name, name[len(name)-4:]) + ".tar"
	}
	s.inspectStream(zr, cr, inner, depth, what)
}

func (s *inspector) inspectBzip2(data []byte, name string, depth int, what string) {
	if !s.nested(depth, what) {
		return
	}
	cr := &countingReader{r: bytes.NewReader(data)}
	s.inspectStream(bzip2.NewReader(cr), cr, strings.TrimSuffix(name, ".bz2"), depth, what)
}

func (s *inspector) inspectStream(r io.Reader, compressed *countingReader, inner string, depth int, what string) {
	br := &budgetReader{s: s, r: r}
	head := make([]byte, headBytes)
	n, err := io.ReadFull(br, head)
	head = head[:n]
	ended := err == io.EOF || err == io.ErrUnexpectedEOF
	if err != nil && !ended {
		if errors.Is(err, errBudget) {
			s.partial(fmt.Sprintf("%d MiB decompressed", s.cfg.MaxInspectBytes>>20))
		}
		return
	}
	switch {
	case isTar(head):
		// The tar is the same archive level as its compression.
		s.walkTar(io.MultiReader(bytes.NewReader(head), br), depth, what)
	case ended:
		s.entry(head, true, inner, depth, what)
	case needsWhole(head):
		var buf bytes.Buffer
		buf.Write(head)
		_, err := io.Copy(&buf, io.LimitReader(br, s.cfg.MaxEntryBytes-int64(n)+1))
		if err == nil && int64(buf.Len()) <= s.cfg.MaxEntryBytes {
			s.entry(buf.Bytes(), true, inner, depth, what)
			break
		}
		s.inspectHead(head, inner, what)
	default:
		s.inspectHead(head, inner, what)
	}
	// Read to the end for the expansion ratio: a bomb reveals itself within the budget.
	_, err = io.Copy(io.Discard, br)
	if s.bomb(br.n, compressed.n, what) {
		return
	}
	if errors.Is(err, errBudget) {
		s.partial(fmt.Sprintf("%d MiB decompressed", s.cfg.MaxInspectBytes>>20))
	}
}

// inspectTar walks an uncompressed tar.
func (s *inspector) inspectTar(data []byte, depth int, what string) {
	if !s.nested(depth, what) {
		return
	}
	s.walkTar(bytes.NewReader(data), depth, what)
}

// walkTar inspects a tar's entries as they stream by; whatever decompresses r meters
// the budget.
func (s *inspector) walkTar(r io.Reader, depth int, what string) {
	tr := tar.NewReader(r)
	for {
		if s.ctx.Err() != nil || s.stopped {
			return
		}
		h, err := tr.Next()
		if err != nil {
			return
		}
		if !s.count(1, what) {
			return
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		d, whole := s.readEntry(tr, h.Size, false)
		s.entry(d, whole, h.Name, depth, what)
	}
}
