//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package db

import "context"

// lockFile is a no-op where flock is unavailable: there, start one process first and
// let it migrate before starting others on the same SQLite file.
func lockFile(ctx context.Context, path string) (func() error, error) {
	return func() error { return nil }, nil
}
