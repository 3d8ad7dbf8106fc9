package checkpoint

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// version is the only checkpoint format version Kafka has written.
const version = 0

// lines splits a checkpoint file into lines, tolerating only a missing final
// newline, and checks the version and count header. It returns the entry
// lines (numbered from 3 in messages).
func lines(data []byte) ([]string, error) {
	text := string(data)
	text = strings.TrimSuffix(text, "\n")
	if text == "" {
		return nil, fmt.Errorf("%w: line 1: empty file", ErrMalformed)
	}
	ls := strings.Split(text, "\n")
	if ls[0] != strconv.Itoa(version) {
		return nil, fmt.Errorf("%w: line 1: version %q, want %d", ErrMalformed, ls[0], version)
	}
	if len(ls) < 2 {
		return nil, fmt.Errorf("%w: line 2: missing entry count", ErrMalformed)
	}
	n, err := parseNonNegative(ls[1], 32, 2, "entry count")
	if err != nil {
		return nil, err
	}
	if got := int64(len(ls) - 2); got != n {
		return nil, fmt.Errorf("%w: line %d: %d entries, header says %d", ErrMalformed, min(got, n)+3, got, n)
	}
	return ls[2:], nil
}

// fields splits an entry line into exactly n single-space-separated tokens,
// as Kafka writes them.
func fields(line string, lineNo, n int) ([]string, error) {
	f := strings.Split(line, " ")
	if len(f) != n {
		return nil, fmt.Errorf("%w: line %d: %d fields, want %d: %q", ErrMalformed, lineNo, len(f), n, line)
	}
	for _, s := range f {
		if s == "" {
			return nil, fmt.Errorf("%w: line %d: empty field: %q", ErrMalformed, lineNo, line)
		}
	}
	return f, nil
}

// parseNonNegative parses a decimal in [0, 2^bits).
func parseNonNegative(s string, bits, lineNo int, what string) (int64, error) {
	v, err := strconv.ParseInt(s, 10, bits)
	if err != nil || v < 0 || s[0] == '+' {
		return 0, fmt.Errorf("%w: line %d: bad %s %q", ErrMalformed, lineNo, what, s)
	}
	return v, nil
}

// validTopic reports whether s is a legal Kafka topic name.
func validTopic(s string) bool {
	if s == "" || len(s) > 249 || s == "." || s == ".." {
		return false
	}
	for _, c := range []byte(s) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '.' || c == '_' || c == '-'
		if !ok {
			return false
		}
	}
	return true
}

// header renders the version and count lines.
func header(buf *bytes.Buffer, n int) {
	fmt.Fprintf(buf, "%d\n%d\n", version, n)
}
