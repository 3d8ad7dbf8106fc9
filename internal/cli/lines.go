package cli

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// lineReader yields the lines of the producer's input. Each returned slice
// is freshly allocated because the producer keeps it until the record is
// acknowledged.
type lineReader struct {
	r    *bufio.Reader
	line int // number of the line last returned, from 1
}

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10)}
}

// next returns the next line without its "\n" or "\r\n". A last line with
// no newline is still a line; io.EOF means there are no more.
func (l *lineReader) next() ([]byte, error) {
	b, err := l.r.ReadBytes('\n')
	if len(b) == 0 && err != nil {
		if errors.Is(err, io.EOF) {
			return nil, io.EOF
		}
		return nil, fmt.Errorf("read input after line %d: %w", l.line, err)
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read input line %d: %w", l.line+1, err)
	}
	l.line++
	return trimEOL(b), nil
}

// trimEOL drops a trailing "\n" or "\r\n"; a CR not followed by LF is data.
func trimEOL(b []byte) []byte {
	if !bytes.HasSuffix(b, []byte("\n")) {
		return b
	}
	b = b[:len(b)-1]
	return bytes.TrimSuffix(b, []byte("\r"))
}

// splitLine turns an input line into key and value. With no separator the
// whole line is the value and the key is nil (a keyless record, which the
// default partitioner spreads stickily). With a separator the text before
// its first occurrence is the key; a line without it is an error, as with
// kafka-console-producer's parse.key, because silently producing a keyless
// record would land it on the wrong partition.
func splitLine(line []byte, sep string) (key, value []byte, err error) {
	if sep == "" {
		return nil, line, nil
	}
	k, v, ok := bytes.Cut(line, []byte(sep))
	if !ok {
		return nil, nil, fmt.Errorf("no key separator %q", sep)
	}
	return k, v, nil
}
