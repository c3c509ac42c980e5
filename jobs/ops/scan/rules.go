package scan

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"mime"
	"os"
	"path"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/gabriel-vasile/mimetype"

	"github.com/filemill/filemill/domain"
)

// headBytes is how much of a file or archive entry the rules look at when they do not
// need all of it.
const headBytes = 64 << 10

// inspector runs the built-in rules over one file and what it contains.
type inspector struct {
	ctx      context.Context
	cfg      Config
	findings []Finding
	seen     map[string]bool
	budget   int64 // decompressed bytes still allowed
	entries  int   // archive entries met, all levels
	stopped  bool  // a limit ended the inspection of archives
}

func newInspector(ctx context.Context, cfg Config) *inspector {
	return &inspector{ctx: ctx, cfg: cfg, seen: map[string]bool{}, budget: cfg.MaxInspectBytes}
}

// add records a finding once.
func (s *inspector) add(rule, severity, msg string) {
	k := rule + "\x00" + msg
	if s.seen[k] {
		return
	}
	s.seen[k] = true
	s.findings = append(s.findings, Finding{Rule: rule, Severity: severity, Message: msg})
}

// inspectFile maps the file and inspects it. A fault reading the mapping (the file
// shrank underneath) or a rule's failure on a hostile structure fails the scan: the
// file is not passed.
func (s *inspector) inspectFile(f *os.File, size int64, filename, declared string) (err error) {
	if size == 0 {
		return nil
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("scan: map input: %w", err)
	}
	defer syscall.Munmap(data)
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("scan: the built-in rules failed on %q: %v", filename, p)
		}
	}()
	s.inspect(data, filename, declared, 0, "")
	return s.ctx.Err()
}

// item names what is being inspected, for messages: the file, or an entry inside it.
func item(where, name string) string {
	switch {
	case where == "" && name == "":
		return "the file"
	case where == "":
		return fmt.Sprintf("the file %q", name)
	}
	return fmt.Sprintf("%q in %s", name, where)
}

// inspect applies every rule to data: a whole file (depth 0) or a whole archive entry.
// where locates it ("" for the file itself).
func (s *inspector) inspect(data []byte, name, declared string, depth int, where string) {
	if s.ctx.Err() != nil {
		return
	}
	head := data[:min(len(data), headBytes)]
	what := item(where, name)
	if isEICAR(data) {
		s.add("eicar", SeverityHigh, fmt.Sprintf("%s is the EICAR anti-virus test file", what))
		return
	}
	if kind := executableKind(head); kind != "" {
		s.executable(kind, name, declared, where, what)
	} else {
		s.mismatch(head, name, declared, what)
	}
	switch {
	case isPDF(head):
		s.inspectPDF(data, what)
	case isZip(head):
		s.inspectZip(data, name, depth, what)
	case isCFB(head):
		s.inspectCFB(data, what)
	case isGzip(head):
		s.inspectGzip(data, name, depth, what)
	case isBzip2(head):
		s.inspectBzip2(data, name, depth, what)
	case isTar(head):
		s.inspectTar(data, depth, what)
	}
}

// inspectHead applies the rules that need only the first bytes: to an entry too big to
// read whole.
func (s *inspector) inspectHead(head []byte, name string, where string) {
	what := item(where, name)
	if isEICAR(head) {
		s.add("eicar", SeverityHigh, fmt.Sprintf("%s is the EICAR anti-virus test file", what))
		return
	}
	if kind := executableKind(head); kind != "" {
		s.executable(kind, name, "", where, what)
		return
	}
	s.mismatch(head, name, "", what)
}

// needsWhole reports whether an entry starting with head is worth reading whole:
// containers and documents whose structure the rules look into.
func needsWhole(head []byte) bool {
	return isPDF(head) || isZip(head) || isCFB(head) || isGzip(head) || isBzip2(head) || isTar(head)
}

// EICAR: the 68-byte test string at the start of a file of at most 128 bytes whose
// remainder is whitespace (the test file's definition).
const eicar = `X5O!P%@AP[4\PZX54(P^)7CC)7}$EICAR-STANDARD-ANTIVIRUS-TEST-FILE!$H+H*`

func isEICAR(data []byte) bool {
	if len(data) < len(eicar) || len(data) > 128 || string(data[:len(eicar)]) != eicar {
		return false
	}
	return len(bytes.TrimSpace(data[len(eicar):])) == 0
}

// executableKind names a native executable format from its header, or "".
func executableKind(b []byte) string {
	switch {
	case len(b) >= 64 && b[0] == 'M' && b[1] == 'Z':
		off := int(binary.LittleEndian.Uint32(b[0x3c:]))
		if off >= 0x40 && off+4 <= len(b) && string(b[off:off+4]) == "PE\x00\x00" {
			return "Windows (PE)"
		}
	case len(b) >= 16 && string(b[:4]) == "\x7fELF" && (b[4] == 1 || b[4] == 2) && (b[5] == 1 || b[5] == 2):
		return "ELF"
	case len(b) >= 8 && (string(b[:4]) == "\xfe\xed\xfa\xce" || string(b[:4]) == "\xfe\xed\xfa\xcf" ||
		string(b[:4]) == "\xce\xfa\xed\xfe" || string(b[:4]) == "\xcf\xfa\xed\xfe"):
		return "Mach-O"
	case len(b) >= 8 && string(b[:4]) == "\xca\xfe\xba\xbe":
		// A universal binary counts its architectures here; a Java class file has its
		// version (45 and up) in the same place.
		if n := binary.BigEndian.Uint32(b[4:]); n >= 1 && n <= 20 {
			return "Mach-O (universal)"
		}
	case len(b) >= 20 && string(b[:20]) == "\x4c\x00\x00\x00\x01\x14\x02\x00\x00\x00\x00\x00\xc0\x00\x00\x00\x00\x00\x00\x46":
		return "Windows shortcut (LNK)"
	}
	return ""
}

// Names an executable may honestly carry.
var executableExtensions = map[string]bool{
	"": true, "exe": true, "dll": true, "sys": true, "scr": true, "com": true, "cpl": true, "ocx": true,
	"drv": true, "efi": true, "mui": true, "so": true, "o": true, "ko": true, "bin": true, "elf": true,
	"out": true, "run": true, "appimage": true, "dylib": true, "bundle": true, "lnk": true, "axf": true,
}

// Declared types an executable may honestly carry.
var executableTypes = map[string]bool{
	"": true, "application/octet-stream": true, "application/x-msdownload": true, "application/x-dosexec": true,
	"application/vnd.microsoft.portable-executable": true, "application/x-executable": true, "application/x-elf": true,
	"application/x-sharedlib": true, "application/x-pie-executable": true, "application/x-mach-binary": true,
	"application/x-mach-o-executable": true, "application/x-ms-shortcut": true, "application/x-object": true,
}

// extension returns a name's last extension, lower case, without the dot.
func extension(name string) string {
	return strings.ToLower(strings.TrimPrefix(path.Ext(path.Base(strings.ReplaceAll(name, "\\", "/"))), "."))
}

// executable reports an executable: high when its name or declared type passes it off
// as something else (or hides it behind a double extension), medium inside an
// archive, low when it is an executable openly uploaded as one.
func (s *inspector) executable(kind, name, declared, where, what string) {
	ext := extension(name)
	base := strings.TrimSuffix(path.Base(strings.ReplaceAll(name, "\\", "/")), "."+ext)
	inner := extension(base)
	dt, _, _ := mime.ParseMediaType(declared)
	switch {
	case !executableExtensions[ext] || (declared != "" && !executableTypes[strings.ToLower(dt)]):
		claim := ""
		if declared != "" {
			claim = fmt.Sprintf(" declared as %s", dt)
		}
		s.add("executable.disguised", SeverityHigh, fmt.Sprintf("%s%s is a %s executable", what, claim, kind))
	case inner != "" && expectedType(inner) != "":
		s.add("executable.disguised", SeverityHigh, fmt.Sprintf("%s is a %s executable behind a double extension", what, kind))
	case where != "":
		s.add("executable.in_archive", SeverityMedium, fmt.Sprintf("%s is a %s executable", what, kind))
	default:
		s.add("executable", SeverityLow, fmt.Sprintf("%s is a %s executable", what, kind))
	}
}

// typeByExtension is what a name's extension promises, for the formats detection
// recognises (docm and friends have the structure of their macro-free siblings).
var typeByExtension = map[string]string{
	"jpg": "image/jpeg", "jpeg": "image/jpeg", "jpe": "image/jpeg", "png": "image/png", "gif": "image/gif",
	"webp": "image/webp", "avif": "image/avif", "heic": "image/heic", "heif": "image/heif", "tif": "image/tiff",
	"tiff": "image/tiff", "bmp": "image/bmp", "svg": "image/svg+xml", "ico": "image/x-icon",
	"pdf": "application/pdf", "zip": "application/zip", "gz": "application/gzip", "tgz": "application/gzip",
	"tar": "application/x-tar", "7z": "application/x-7z-compressed", "rar": "application/x-rar-compressed",
	"bz2":  "application/x-bzip2",
	"docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
	"docm": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
	"xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
	"xlsm": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
	"pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
	"pptm": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
	"odt":  "application/vnd.oasis.opendocument.text", "ods": "application/vnd.oasis.opendocument.spreadsheet",
	"odp": "application/vnd.oasis.opendocument.presentation", "doc": "application/x-ole-storage",
	"xls": "application/x-ole-storage", "ppt": "application/x-ole-storage", "msg": "application/x-ole-storage",
	"rtf": "text/rtf", "txt": "text/plain", "csv": "text/plain", "tsv": "text/plain", "md": "text/plain",
	"log": "text/plain", "json": "text/plain", "xml": "text/plain", "html": "text/html", "htm": "text/html",
	"mp3": "audio/mpeg", "mp4": "video/mp4", "mov": "video/quicktime", "wav": "audio/wav",
}

func expectedType(ext string) string { return typeByExtension[ext] }

// Detected types that run code when opened in a browser or shell: a mismatch hiding
// one of them is more than a naming slip.
var activeTypes = map[string]bool{
	"text/html": true, "image/svg+xml": true, "application/javascript": true, "text/javascript": true,
	"text/x-shellscript": true, "application/x-shellscript": true, "application/x-sh": true,
	"text/x-php": true, "application/x-php": true, "text/x-python": true, "application/hta": true,
}

// typeAliases maps declared types to the type detection gives such content: macro-
// enabled OOXML has the structure of its plain sibling; legacy Office files are
// compound files.
var typeAliases = map[string]string{
	"application/vnd.ms-word.document.macroenabled.12":           "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
	"application/vnd.ms-excel.sheet.macroenabled.12":             "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
	"application/vnd.ms-powerpoint.presentation.macroenabled.12": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
	"application/msword":            "application/x-ole-storage",
	"application/vnd.ms-excel":      "application/x-ole-storage",
	"application/vnd.ms-powerpoint": "application/x-ole-storage",
	"application/vnd.ms-outlook":    "application/x-ole-storage",
	"image/jpg":                     "image/jpeg",
	"application/x-zip-compressed":  "application/zip",
	"application/x-gzip":            "application/gzip",
}

// agrees reports whether detected content satisfies an expected type.
func agrees(detected, expected string) bool {
	if a, ok := typeAliases[expected]; ok {
		expected = a
	}
	if detected == expected {
		return true
	}
	// Content that runs code agrees only with a name that says so.
	if activeTypes[detected] {
		return false
	}
	textual := func(t string) bool {
		return strings.HasPrefix(t, "text/") || t == "application/json" || t == "application/xml"
	}
	// Detection cannot tell every text dialect apart.
	if textual(expected) && textual(detected) {
		return true
	}
	if m := mimetype.Lookup(detected); m != nil {
		for p := m; p != nil; p = p.Parent() {
			if p.Is(expected) {
				return true
			}
		}
	}
	return false
}

// mismatch reports a name or declared type that disagrees with the bytes.
func (s *inspector) mismatch(head []byte, name, declared, what string) {
	det := domain.Detect(head).MIMEType
	if det == "application/octet-stream" || det == "" {
		// Nothing recognisable: nothing to disagree with.
		return
	}
	sev := SeverityLow
	if activeTypes[det] {
		sev = SeverityMedium
	}
	if exp := expectedType(extension(name)); exp != "" && !agrees(det, exp) {
		s.add("type.mismatch", sev, fmt.Sprintf("%s is named .%s but its content is %s", what, extension(name), det))
	}
	if declared == "" {
		return
	}
	dt, _, err := mime.ParseMediaType(declared)
	if err != nil || dt == "application/octet-stream" || dt == "binary/octet-stream" {
		return
	}
	if !agrees(det, strings.ToLower(dt)) {
		s.add("type.mismatch", sev, fmt.Sprintf("%s is declared as %s but its content is %s", what, dt, det))
	}
}

// Container signatures.
func isPDF(b []byte) bool { return bytes.Contains(b[:min(len(b), 1024)], []byte("%PDF-")) }
func isZip(b []byte) bool {
	return bytes.HasPrefix(b, []byte("PK\x03\x04")) || bytes.HasPrefix(b, []byte("PK\x05\x06"))
}
func isCFB(b []byte) bool  { return bytes.HasPrefix(b, []byte("\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1")) }
func isGzip(b []byte) bool { return bytes.HasPrefix(b, []byte{0x1f, 0x8b, 0x08}) }
func isBzip2(b []byte) bool {
	// "BZh", the block size, then a block's or the end's magic number.
	return len(b) >= 10 && string(b[:3]) == "BZh" && b[3] >= '1' && b[3] <= '9' &&
		(string(b[4:10]) == "\x31\x41\x59\x26\x53\x59" || string(b[4:10]) == "\x17\x72\x45\x38\x50\x90")
}
func isTar(b []byte) bool {
	return len(b) >= 512 && (string(b[257:262]) == "ustar")
}
