package scan

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unicode/utf16"
)

// A compound file (CFB, "OLE2": .doc, .xls, .ppt, .msg, and vbaProject.bin) is a small
// file system. Its directory names the storages and streams; VBA macros live in
// storages named Macros (Word) or _VBA_PROJECT_CUR (Excel), each holding a VBA storage
// with a _VBA_PROJECT stream.

var errCFB = errors.New("not a readable compound file")

const (
	cfbEndOfChain = 0xfffffffe
	cfbFree       = 0xffffffff
	cfbMaxSector  = 0xfffffffa
)

// cfbNames returns the names in a compound file's directory.
func cfbNames(data []byte) ([]string, error) {
	if len(data) < 512 || !isCFB(data) {
		return nil, errCFB
	}
	le := binary.LittleEndian
	shift := le.Uint16(data[0x1e:])
	if shift != 9 && shift != 12 {
		return nil, errCFB
	}
	ss := 1 << shift
	nsectors := uint32((len(data) - ss) / ss)
	sector := func(id uint32) []byte {
		if id >= nsectors {
			return nil
		}
		off := (int(id) + 1) * ss
		return data[off : off+ss]
	}
	// The FAT's own sectors: 109 listed in the header, the rest in the DIFAT chain.
	var fatSectors []uint32
	for i := 0; i < 109; i++ {
		id := le.Uint32(data[0x4c+4*i:])
		if id <= cfbMaxSector {
			fatSectors = append(fatSectors, id)
		}
	}
	difat := le.Uint32(data[0x44:])
	for hops := 0; difat <= cfbMaxSector && hops < int(nsectors); hops++ {
		sec := sector(difat)
		if sec == nil {
			return nil, errCFB
		}
		for i := 0; i < ss/4-1; i++ {
			if id := le.Uint32(sec[4*i:]); id <= cfbMaxSector {
				fatSectors = append(fatSectors, id)
			}
		}
		difat = le.Uint32(sec[ss-4:])
	}
	fat := make([]uint32, 0, len(fatSectors)*ss/4)
	for _, id := range fatSectors {
		sec := sector(id)
		if sec == nil {
			return nil, errCFB
		}
		for i := 0; i < ss/4; i++ {
			fat = append(fat, le.Uint32(sec[4*i:]))
		}
	}
	var names []string
	id := le.Uint32(data[0x30:])
	for hops := 0; id != cfbEndOfChain; hops++ {
		// A chain longer than the file has sectors loops.
		if hops > int(nsectors) || int(id) >= len(fat) {
			return names, errCFB
		}
		sec := sector(id)
		if sec == nil {
			return names, errCFB
		}
		for off := 0; off+128 <= ss; off += 128 {
			e := sec[off : off+128]
			n := int(le.Uint16(e[0x40:]))
			if e[0x42] == 0 || n < 2 || n > 64 {
				continue
			}
			u := make([]uint16, n/2-1)
			for i := range u {
				u[i] = le.Uint16(e[2*i:])
			}
			names = append(names, string(utf16.Decode(u)))
		}
		id = fat[id]
		if id == cfbFree {
			break
		}
	}
	return names, nil
}

// inspectCFB flags VBA macros in a compound file.
func (s *inspector) inspectCFB(data []byte, what string) {
	names, _ := cfbNames(data)
	for _, n := range names {
		switch n {
		case "_VBA_PROJECT_CUR", "_VBA_PROJECT", "Macros", "VBA":
			s.add("office.macro", SeverityMedium, fmt.Sprintf("%s contains VBA macros (%s)", what, n))
			return
		}
	}
}
