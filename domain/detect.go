package domain

import (
	"bytes"
	"mime"
	"strings"
	"unicode/utf8"

	"github.com/gabriel-vasile/mimetype"
)

// DetectSniffBytes is how much of a file's head detection looks at: enough for the
// local headers of the first entries of an OOXML/ODF zip container.
const DetectSniffBytes = 64 << 10

func init() { mimetype.SetLimit(DetectSniffBytes) }

// Format is a detected file format.
type Format struct {
	Extension string `json:"extension"` // without the dot, e.g. "pdf"
	MIMEType  string `json:"mime_type"`
}

// Detect names the format of a file from its first bytes (never from its name or the
// declared type). Beyond the magic numbers it recognises OOXML and ODF documents by the
// entries of their zip container, and tells UTF-8 text from binary.
func Detect(head []byte) Format {
	m := mimetype.Detect(head)
	mt, _, _ := mime.ParseMediaType(m.String())
	f := Format{Extension: strings.TrimPrefix(m.Extension(), "."), MIMEType: mt}
	switch {
	case mt == "application/zip":
		if office := detectOfficeZip(head); office.MIMEType != "" {
			return office
		}
	case mt == "application/octet-stream" && looksLikeText(head):
		return Format{Extension: "txt", MIMEType: "text/plain"}
	}
	if f.Extension == "" {
		if exts, _ := mime.ExtensionsByType(mt); len(exts) > 0 {
			f.Extension = strings.TrimPrefix(exts[0], ".")
		} else {
			f.Extension = "bin"
		}
	}
	return f
}

// officeMarkers maps a zip entry name prefix to the OOXML format it proves.
var officeMarkers = []struct {
	entry string
	f     Format
}{
	{"word/", Format{"docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"}},
	{"xl/", Format{"xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"}},
	{"ppt/", Format{"pptx", "application/vnd.openxmlformats-officedocument.presentationml.presentation"}},
}

var odfTypes = map[string]string{
	"application/vnd.oasis.opendocument.text":         "odt",
	"application/vnd.oasis.opendocument.spreadsheet":  "ods",
	"application/vnd.oasis.opendocument.presentation": "odp",
	"application/vnd.oasis.opendocument.graphics":     "odg",
}

// detectOfficeZip reads the local file headers in head: ODF stores its type in a first
// entry named "mimetype"; OOXML is known by its part folders.
func detectOfficeZip(head []byte) Format {
	const sig = "PK\x03\x04"
	for off := 0; off+30 <= len(head); {
		if string(head[off:off+4]) != sig {
			i := bytes.Index(head[off+1:], []byte(sig))
			if i < 0 {
				break
			}
			off += 1 + i
			continue
		}
		nameLen := int(head[off+26]) | int(head[off+27])<<8
		extraLen := int(head[off+28]) | int(head[off+29])<<8
		compSize := int(head[off+18]) | int(head[off+19])<<8 | int(head[off+20])<<16 | int(head[off+21])<<24
		if off+30+nameLen > len(head) {
			break
		}
		name := string(head[off+30 : off+30+nameLen])
		data := off + 30 + nameLen + extraLen
		if name == "mimetype" && data+compSize <= len(head) {
			if ext, ok := odfTypes[string(head[data:data+compSize])]; ok {
				return Format{Extension: ext, MIMEType: string(head[data : data+compSize])}
			}
		}
		for _, m := range officeMarkers {
			if strings.HasPrefix(name, m.entry) {
				return m.f
			}
		}
		off = data + compSize
	}
	return Format{}
}

func looksLikeText(head []byte) bool {
	if len(head) == 0 || bytes.IndexByte(head, 0) >= 0 {
		return false
	}
	// The head may end inside a multi-byte character.
	for i := 0; i < 3 && len(head) > 0 && !utf8.Valid(head); i++ {
		head = head[:len(head)-1]
	}
	return utf8.Valid(head)
}

// FormatMatches reports whether a detected format satisfies one policy entry: an
// extension ("pdf" or ".pdf"), a MIME type ("application/pdf") or a family ("image/*").
func FormatMatches(f Format, entry string) bool {
	e := strings.ToLower(strings.TrimSpace(entry))
	switch {
	case e == "":
		return false
	case strings.HasSuffix(e, "/*"):
		return strings.HasPrefix(f.MIMEType, strings.TrimSuffix(e, "*"))
	case strings.Contains(e, "/"):
		return f.MIMEType == e || mimetype.Lookup(f.MIMEType) != nil && mimetype.Lookup(f.MIMEType).Is(e)
	}
	ext := strings.TrimPrefix(e, ".")
	return ext == f.Extension || (ext == "jpeg" && f.Extension == "jpg") || (ext == "jpg" && f.Extension == "jpeg") ||
		(ext == "tif" && f.Extension == "tiff") || (ext == "tiff" && f.Extension == "tif")
}

// declaredMatches reports whether a declared MIME type agrees with the detected format.
// Generic declarations (octet-stream) and text-family declarations of text agree.
func declaredMatches(declared string, f Format) bool {
	d, _, err := mime.ParseMediaType(declared)
	if err != nil {
		return false
	}
	if d == "application/octet-stream" || d == f.MIMEType {
		return true
	}
	if m := mimetype.Lookup(f.MIMEType); m != nil && m.Is(d) {
		return true
	}
	// Detection cannot tell every text dialect apart (CSV from plain text, say).
	return strings.HasPrefix(d, "text/") && strings.HasPrefix(f.MIMEType, "text/")
}
