package main

import (
	"debug/elf"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filemill/filemill/domain/eventually"
)

// engineLibraries are the engines' C libraries, which only a process running an engine
// loads (jobs/ops/internal/enginelib).
var engineLibraries = []string{"libvips", "libtesseract", "liblept", "libgomp", "libwebp", "libglib", "libgobject"}

func TestEngineLibrariesAreNotLinked(t *testing.T) {
	f, err := elf.Open(binary)
	require.NoError(t, err)
	defer f.Close()
	needed, err := f.ImportedLibraries()
	require.NoError(t, err)
	for _, lib := range needed {
		for _, engine := range engineLibraries {
			require.False(t, strings.HasPrefix(lib, engine), "the binary links %s at start: a function of it is called "+
				"without a stub in jobs/ops/internal/enginelib (needed: %v)", lib, needed)
		}
	}
}

// A client command runs without the engines' libraries in its address space.
func TestClientCommandLoadsNoEngineLibrary(t *testing.T) {
	// An API that takes the connection and never answers holds the command in its
	// request while its memory map is read.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		if c, err := l.Accept(); err == nil {
			accepted <- c
		}
	}()
	cmd := exec.Command(binary, "files")
	cmd.Env = cleanEnv("FILEMILL_API_URL=http://"+l.Addr().String(), "FILEMILL_API_KEY=fm_test_x",
		"XDG_CONFIG_HOME="+t.TempDir())
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	c := <-accepted
	defer c.Close()
	var maps string
	eventually.True(t, "the command's memory map", func() bool {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/maps")
		maps = string(b)
		return err == nil && strings.Contains(maps, "libc.so")
	})
	for _, engine := range engineLibraries {
		require.NotContains(t, maps, "/"+engine, "a client command loaded an engine library")
	}
}
