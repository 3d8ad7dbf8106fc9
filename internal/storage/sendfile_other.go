//go:build !linux

package storage

import (
	"io"
	"os"
)

// sendfile is not used off Linux; callers fall back to a copy.
func sendfile(io.Writer, *os.File, int64, int64) (int64, bool, error) { return 0, false, nil }
