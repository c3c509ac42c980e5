package hostile

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"fmt"
	"hash/crc32"
	"io"
)

// Part is one entry of a bomb container: Head, then Fill repeated until the entry holds
// Size bytes, then Tail.
type Part struct {
	Name       string
	Head, Tail string
	Fill       string // "" is zeros
	Size       int64  // the bytes between Head and Tail, rounded down to whole Fills
	// DeclaredSize, when not 0, is the uncompressed size the headers state instead of
	// the true one.
	DeclaredSize uint64
}

// Zip writes a container of parts, deflated at the best compression: a part of
// gigabytes of one repeated chunk becomes a few megabytes at most.
func Zip(parts ...Part) []byte {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, p := range parts {
		var comp bytes.Buffer
		fw, _ := flate.NewWriter(&comp, flate.BestCompression)
		n := writePart(fw, p)
		fw.Close()
		size := uint64(n)
		if p.DeclaredSize != 0 {
			size = p.DeclaredSize
		}
		w, err := zw.CreateRaw(&zip.FileHeader{Name: p.Name, Method: zip.Deflate,
			CompressedSize64: uint64(comp.Len()), UncompressedSize64: size, CRC32: crcOf(p)})
		if err != nil {
			panic(err)
		}
		w.Write(comp.Bytes())
	}
	if err := zw.Close(); err != nil {
		panic(err)
	}
	return b.Bytes()
}

func writePart(w io.Writer, p Part) int64 {
	n, _ := io.WriteString(w, p.Head)
	total := int64(n)
	chunk := []byte(p.Fill)
	if len(chunk) == 0 {
		chunk = make([]byte, 64<<10)
	} else {
		chunk = bytes.Repeat(chunk, max(1, (64<<10)/len(chunk)))
	}
	left := p.Size
	if p.Fill != "" {
		left -= left % int64(len(p.Fill))
	}
	for left > 0 {
		c := chunk[:min(int64(len(chunk)), left)]
		w.Write(c)
		left -= int64(len(c))
		total += int64(len(c))
	}
	n, _ = io.WriteString(w, p.Tail)
	return total + int64(n)
}

// crcOf is the CRC-32 of a part's content, computed as it streams.
func crcOf(p Part) uint32 {
	h := crc32.NewIEEE()
	writePart(h, p)
	return h.Sum32()
}

// ManyEntries is a zip of n empty entries, named e0, e1, …: its central directory
// makes archive/zip allocate per entry, from a file of about 100 bytes per entry.
func ManyEntries(n int) []byte {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for i := range n {
		if _, err := zw.CreateHeader(&zip.FileHeader{Name: fmt.Sprintf("e%d", i), Method: zip.Store}); err != nil {
			panic(err)
		}
	}
	if err := zw.Close(); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// Nested is a zip holding a zip holding … depth levels deep, the innermost holding a
// text file.
func Nested(depth int) []byte {
	data := []byte("the bottom")
	name := "bottom.txt"
	for i := range depth {
		var b bytes.Buffer
		zw := zip.NewWriter(&b)
		w, _ := zw.Create(name)
		w.Write(data)
		zw.Close()
		data, name = b.Bytes(), fmt.Sprintf("level%d.zip", depth-i)
	}
	return data
}
