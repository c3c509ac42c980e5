package zipparts

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/filemill/filemill/internal/hostile"
)

// zipOf is a zip of named parts, deflated.
func zipOf(parts ...[]byte) []byte {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	zw.RegisterCompressor(zip.Deflate, func(w io.Writer) (io.WriteCloser, error) { return flate.NewWriter(w, flate.BestCompression) })
	for i := 0; i+1 < len(parts); i += 2 {
		w, _ := zw.Create(string(parts[i]))
		w.Write(parts[i+1])
	}
	zw.Close()
	return b.Bytes()
}

// FuzzZipParts: the container reader that the document readers (ai-ready, convert's
// structure, inspect) walk opens a container within its entry limit or refuses it,
// and reads no part, nor all parts together, past their decompressed bounds, whatever
// the central directory, the local headers or the compressed data claim.
func FuzzZipParts(f *testing.F) {
	f.Add(zipOf([]byte("word/document.xml"), []byte("<w:document/>"), []byte("[Content_Types].xml"), []byte("<Types/>")))
	f.Add(zipOf([]byte("xl/sharedStrings.xml"), bytes.Repeat([]byte("a"), 3<<20)))
	f.Add(zipOf([]byte("a"), []byte("1"), []byte("a"), []byte("2"), []byte("../../etc/passwd"), []byte("x")))
	var many [][]byte
	for i := range 150 {
		many = append(many, []byte{byte('a' + i%26), byte('a' + i/26)}, nil)
	}
	f.Add(zipOf(many...))
	f.Add([]byte("PK\x05\x06\x00\x00\x00\x00\xff\xff\xff\xff\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"))
	f.Add([]byte("PK\x06\x06" + string(make([]byte, 52)) + "PK\x06\x07\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00" +
		"PK\x05\x06\x00\x00\x00\x00\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x00\x00"))
	lim := Limits{MaxEntries: 100, MaxPartBytes: 1 << 20, MaxTotalBytes: 2 << 20}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "in.zip")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		var total int64
		alloc := hostile.Allocated(func() {
			c, err := Open(path, lim)
			if err != nil {
				return
			}
			defer c.Close()
			names := c.Names()
			if len(names) > lim.MaxEntries {
				t.Fatalf("opened %d parts", len(names))
			}
			sort.Strings(names)
			for _, name := range names {
				if !c.Has(name) {
					t.Fatalf("lists %q but has it not", name)
				}
				b, err := c.ReadAll(name)
				// One read of the decompressor may pass the bound before it is noticed.
				if int64(len(b)) > lim.MaxPartBytes+64<<10 {
					t.Fatalf("read %d bytes of %q", len(b), name)
				}
				total += int64(len(b))
				if err == nil && int64(len(b)) > lim.MaxPartBytes {
					t.Fatalf("read %d bytes of %q without a refusal", len(b), name)
				}
			}
			if _, err := c.Open("\x00no such part"); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("a missing part: %v", err)
			}
		})
		if total > lim.MaxTotalBytes+int64(lim.MaxEntries)*(64<<10) {
			t.Fatalf("read %d bytes in all", total)
		}
		if limit := uint64(hostile.Slack+64*len(data)) + 8*uint64(lim.MaxTotalBytes); alloc > limit {
			t.Fatalf("opening %d bytes allocated %d bytes", len(data), alloc)
		}
	})
}
