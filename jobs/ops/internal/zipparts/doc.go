// Package zipparts reads the parts of a zip container (OOXML, ODF) within limits that
// keep a decompression bomb harmless: the entry count is read from the central
// directory's end record before archive/zip allocates anything per entry, and every
// part, and all parts together, are read up to a bound of decompressed bytes.
//
// It imports the standard library only.
package zipparts
