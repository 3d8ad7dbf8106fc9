//go:build !unix

package storage

import "errors"

// fileLimit is unknown here; the caller assumes a common default.
func fileLimit() (uint64, error) { return 0, errors.New("no RLIMIT_NOFILE on this platform") }
