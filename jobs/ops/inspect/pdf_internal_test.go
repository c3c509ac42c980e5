package inspect

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFindEncryptKeys(t *testing.T) {
	t.Parallel()
	const chunk = 1 << 20
	data := []byte(strings.Repeat(".", 3*chunk))
	put := func(at int, s string) { copy(data[at:], s) }
	put(10, "/Encrypt 5 0 R")
	put(100, "/EncryptMetadata false") // another key: left alone
	put(chunk-8, "/Encrypt")           // ends exactly at the first chunk's end
	put(chunk-8+len("/Encrypt"), " ")
	put(2*chunk-3, "/Encrypt<<")       // straddles the second boundary
	data = append(data, "/Encrypt"...) // ends the file
	want := []int64{10, chunk - 8, 2*chunk - 3, int64(len(data) - len("/Encrypt"))}

	path := filepath.Join(t.TempDir(), "f.pdf")
	require.NoError(t, os.WriteFile(path, data, 0o600))
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	got, err := findEncryptKeys(context.Background(), source{f: f, size: int64(len(data))})
	require.NoError(t, err)
	require.Equal(t, want, got)

	// The patched reader renames exactly those keys, wherever the reads split.
	pr := &patchedReader{f: f, size: int64(len(data)), at: got}
	var out []byte
	buf := make([]byte, 4093)
	for {
		n, err := pr.Read(buf)
		out = append(out, buf[:n]...)
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
	}
	require.Equal(t, len(data), len(out))
	require.Equal(t, 4, strings.Count(string(out), "/NoCrypt"))
	require.Equal(t, 1, strings.Count(string(out), "/Encrypt"), "only /EncryptMetadata is left")
}
