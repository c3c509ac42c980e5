package image

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
)

// libvips 8.14 writes a generated EXIF block (orientation, resolution, EXIF version)
// into WebP always, and into JPEG whenever it writes any metadata — which it must to
// keep the ICC profile. A stripped output must carry none of it: these passes remove
// it from the encoded file.

var errBadOutput = errors.New("the encoder wrote an unexpected structure")

// scrubJPEG removes APP1 (EXIF, XMP), APP13 (IPTC) and comment segments, keeping
// JFIF (density), ICC and Adobe segments.
func scrubJPEG(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if !bytes.HasPrefix(data, []byte{0xff, 0xd8}) {
		return errBadOutput
	}
	out := make([]byte, 0, len(data))
	out = append(out, 0xff, 0xd8)
	i := 2
	changed := false
	for {
		if i+4 > len(data) || data[i] != 0xff {
			return errBadOutput
		}
		m := data[i+1]
		if m == 0xda { // start of scan: the rest is image data
			break
		}
		n := int(binary.BigEndian.Uint16(data[i+2:]))
		if n < 2 || i+2+n > len(data) {
			return errBadOutput
		}
		if m == 0xe1 || m == 0xed || m == 0xfe {
			changed = true
		} else {
			out = append(out, data[i:i+2+n]...)
		}
		i += 2 + n
	}
	if !changed {
		return nil
	}
	return rewrite(path, append(out, data[i:]...))
}

// WebP VP8X flags.
const (
	webpFlagEXIF = 0x08
	webpFlagXMP  = 0x04
)

// scrubWebP removes the EXIF and XMP chunks and their VP8X flags.
func scrubWebP(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if len(data) < 12 || string(data[:4]) != "RIFF" || string(data[8:12]) != "WEBP" {
		return errBadOutput
	}
	out := make([]byte, 12, len(data))
	copy(out, data[:12])
	changed := false
	for i := 12; i < len(data); {
		if i+8 > len(data) {
			return errBadOutput
		}
		id := string(data[i : i+4])
		n := int(binary.LittleEndian.Uint32(data[i+4:]))
		end := i + 8 + n + n%2
		if end > len(data) {
			return errBadOutput
		}
		switch id {
		case "EXIF", "XMP ":
			changed = true
		case "VP8X":
			start := len(out)
			out = append(out, data[i:end]...)
			out[start+8] &^= webpFlagEXIF | webpFlagXMP
		default:
			out = append(out, data[i:end]...)
		}
		i = end
	}
	if !changed {
		return nil
	}
	binary.LittleEndian.PutUint32(out[4:], uint32(len(out)-8))
	return rewrite(path, out)
}

func rewrite(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// pdfEncrypted reports whether a PDF declares encryption: /Encrypt sits in the trailer
// or cross-reference stream, near the end, or near the start of a linearised file.
func pdfEncrypted(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return false
	}
	const window = 1 << 20
	head := make([]byte, min(st.Size(), window))
	if _, err := io.ReadFull(f, head); err != nil {
		return false
	}
	if !bytes.Contains(head[:min(len(head), 1024)], []byte("%PDF-")) {
		return false
	}
	if bytes.Contains(head, []byte("/Encrypt")) {
		return true
	}
	if st.Size() <= window {
		return false
	}
	tail := make([]byte, window)
	if _, err := f.ReadAt(tail, st.Size()-window); err != nil && err != io.EOF {
		return false
	}
	return bytes.Contains(tail, []byte("/Encrypt"))
}
