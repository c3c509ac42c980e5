// Package fsutil holds the file operations the engines share.
package fsutil

import (
	"io"
	"os"
)

// CopyFile copies src to dst (created, or truncated, with mode 0600). io.Copy between
// two files lets the kernel copy (copy_file_range) where it can.
func CopyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
