//go:build !amd64

package enginelib

// Load does nothing where the stubs are not built (they are x86-64 code): the engines'
// libraries are linked as usual and loaded at start.
func Load() error { return nil }
