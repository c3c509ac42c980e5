package inspect

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/filemill/filemill/domain"
	"github.com/filemill/filemill/jobs/ops/internal/officeprops"
	"github.com/filemill/filemill/jobs/ops/internal/zipparts"
)

// inspectOffice reads an OOXML or ODF zip container: the document type from the
// detected format, the application and statistics from the document properties, and
// sheet and slide counts from the document's own parts.
func (e *Engine) inspectOffice(ctx context.Context, src source, f domain.Format) (*OfficeReport, error) {
	// Count the entries from the end-of-central-directory record before archive/zip
	// allocates one struct per entry.
	n, err := zipparts.EntryCount(src.f, src.size)
	if err != nil {
		return nil, err
	}
	if n > uint64(e.cfg.MaxZipEntries) {
		return nil, tooManyEntries(n, e.cfg.MaxZipEntries)
	}
	zr, err := zip.NewReader(src.f, src.size)
	// Entry names are only looked up here, never used as paths: "insecure" ones are fine.
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
		return nil, corrupted("office document", err)
	}
	if len(zr.File) > e.cfg.MaxZipEntries {
		return nil, tooManyEntries(len(zr.File), e.cfg.MaxZipEntries)
	}
	rep, err := officeprops.Read(ctx, zr, f.Extension, e.cfg.MaxXMLBytes)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, ctxErr
		}
		return nil, corrupted("office document", err)
	}
	return &OfficeReport{DocumentType: documentTypes[f.Extension], Application: rep.Application,
		Pages: rep.Pages, Words: rep.Words, Sheets: rep.Sheets, Slides: rep.Slides, SkippedParts: rep.SkippedParts}, nil
}

var documentTypes = map[string]string{
	"docx": DocumentWordProcessing, "odt": DocumentWordProcessing,
	"xlsx": DocumentSpreadsheet, "ods": DocumentSpreadsheet,
	"pptx": DocumentPresentation, "odp": DocumentPresentation,
	"odg": DocumentDrawing,
}

// inspectCFB recognises a password-protected OOXML document: a compound file whose
// directory holds an "EncryptedPackage" stream. Directory entries are 128 bytes at
// 128-byte-aligned offsets (sectors are 512 or 4096 bytes), each starting with its
// UTF-16LE name, so an aligned scan finds them without following the FAT chains.
// Other compound files get no office section.
func (e *Engine) inspectCFB(ctx context.Context, src source) (*OfficeReport, error) {
	name := utf16le("EncryptedPackage")
	buf := make([]byte, 1<<20) // a multiple of 128, so chunks keep the alignment
	for off := int64(0); off < src.size; off += int64(len(buf)) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n, err := src.f.ReadAt(buf, off)
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("inspect: read compound file: %w", err)
		}
		for i := 0; i+128 <= n; i += 128 {
			entry := buf[i : i+128]
			nameLen := binary.LittleEndian.Uint16(entry[64:66])
			const streamObject = 2
			if int(nameLen) == len(name)+2 && entry[66] == streamObject && bytes.Equal(entry[:len(name)], name) {
				return &OfficeReport{Encrypted: true}, nil
			}
		}
		if n < len(buf) {
			break
		}
	}
	return nil, nil
}

func utf16le(s string) []byte {
	b := make([]byte, 0, 2*len(s))
	for _, c := range []byte(s) {
		b = append(b, c, 0)
	}
	return b
}

// tooManyEntries refuses a container with more entries than are read.
func tooManyEntries[N int | uint64](n N, limit int) error {
	return &domain.Error{Code: domain.CodeCorruptedFile,
		Message: fmt.Sprintf("the office document holds %d entries; at most %d are read", n, limit)}
}
