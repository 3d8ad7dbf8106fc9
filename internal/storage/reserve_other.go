//go:build !linux

package storage

import (
	"errors"
	"os"
)

// fallocateKeepSize is not available here: nothing is reserved.
func fallocateKeepSize(*os.File, int64, int64) error { return errors.ErrUnsupported }
