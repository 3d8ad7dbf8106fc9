package verify

import (
	"strconv"
	"strings"
)

// A value names the process that sent it and its sequence number there,
// "p3-1207", so that any value read traces back to one send. Values are
// unique within a run: each producer numbers its sends from 0.

// FormatValue is the value of proc's seq-th send.
func FormatValue(proc string, seq int64) string {
	return proc + "-" + strconv.FormatInt(seq, 10)
}

// ParseValue splits a value into its producer and sequence number.
func ParseValue(v string) (proc string, seq int64, ok bool) {
	i := strings.LastIndexByte(v, '-')
	if i <= 0 || strings.IndexByte(v[:i], '-') >= 0 {
		return "", 0, false
	}
	n, err := strconv.ParseInt(v[i+1:], 10, 64)
	if err != nil || n < 0 {
		return "", 0, false
	}
	return v[:i], n, true
}
