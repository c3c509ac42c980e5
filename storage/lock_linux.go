package storage

import (
	"os"

	"golang.org/x/sys/unix"
)

// lockRange takes an exclusive lock on n bytes of f from off (n 0: to the end and
// beyond), waiting while anyone holds any of them, and answers what releases it. The
// lock belongs to this open of the file (an open file description lock), so two opens
// exclude each other across goroutines and processes alike; closing f releases it too.
func lockRange(f *os.File, off, n int64) (func(), error) {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Start: off, Len: n}
	for {
		err := unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLKW, &lk)
		if err == nil {
			return func() {
				un := unix.Flock_t{Type: unix.F_UNLCK, Start: off, Len: n}
				_ = unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &un)
			}, nil
		}
		if err != unix.EINTR {
			return nil, err
		}
	}
}
