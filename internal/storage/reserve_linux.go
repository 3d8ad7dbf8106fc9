package storage

import (
	"os"
	"syscall"
)

// fallocKeepSize is FALLOC_FL_KEEP_SIZE: allocate without growing the file.
const fallocKeepSize = 0x1

// fallocateKeepSize allocates [off, off+n) of f without changing its size.
func fallocateKeepSize(f *os.File, off, n int64) error {
	for {
		err := syscall.Fallocate(int(f.Fd()), fallocKeepSize, off, n)
		if err != syscall.EINTR {
			return err
		}
	}
}
