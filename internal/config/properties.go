package config

import (
	"fmt"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Property is one key/value pair read from a .properties file.
type Property struct {
	Key   string
	Value string
	Line  int // 1-based line on which the entry starts
}

// ParseProperties reads the Java .properties format as Kafka loads
// server.properties: entries are "key=value", "key: value" or "key value";
// lines whose first non-blank character is '#' or '!' are comments; a line
// ending in an odd number of backslashes continues on the next one (whose
// leading blanks are dropped); \t \n \r \f \uXXXX and \<any> escapes are
// decoded in keys and values. Entries are returned in file order, repeated
// keys included (the last one wins when they are collected). Bytes are taken
// as UTF-8 rather than Java's ISO-8859-1, which only matters for non-ASCII
// text. The only malformed input is a bad \uXXXX escape.
func ParseProperties(src []byte) ([]Property, error) {
	lines := splitNaturalLines(string(src))
	var props []Property
	for i := 0; i < len(lines); i++ {
		start := i
		line := trimLeftBlank(lines[i])
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		var logical strings.Builder
		for {
			if !endsInContinuation(line) {
				logical.WriteString(line)
				break
			}
			logical.WriteString(line[:len(line)-1])
			if i+1 >= len(lines) {
				break // Java drops a backslash at the very end of the input
			}
			i++
			line = trimLeftBlank(lines[i])
		}
		rawKey, rawValue := splitKeyValue(logical.String())
		key, err := unescapeProperty(rawKey)
		if err != nil {
			return nil, fmt.Errorf("line %d: key: %w", start+1, err)
		}
		value, err := unescapeProperty(rawValue)
		if err != nil {
			return nil, fmt.Errorf("line %d: value of %q: %w", start+1, key, err)
		}
		props = append(props, Property{Key: key, Value: value, Line: start + 1})
	}
	return props, nil
}

// splitNaturalLines splits on \n, \r and \r\n, as Java's LineReader does.
func splitNaturalLines(s string) []string {
	var lines []string
	for len(s) > 0 {
		j := strings.IndexAny(s, "\r\n")
		if j < 0 {
			lines = append(lines, s)
			break
		}
		lines = append(lines, s[:j])
		if s[j] == '\r' && j+1 < len(s) && s[j+1] == '\n' {
			j++
		}
		s = s[j+1:]
	}
	return lines
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\f' }

func trimLeftBlank(s string) string {
	i := 0
	for i < len(s) && isBlank(s[i]) {
		i++
	}
	return s[i:]
}

// endsInContinuation reports whether s ends in an odd number of
// backslashes: an even number are escaped backslashes.
func endsInContinuation(s string) bool {
	n := 0
	for i := len(s) - 1; i >= 0 && s[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

// splitKeyValue splits a logical line at the first unescaped '=', ':' or
// blank; blanks around the separator, and one '=' or ':' after blanks, are
// not part of the value. Both halves are still escaped.
func splitKeyValue(line string) (key, value string) {
	i := 0
	for i < len(line) {
		c := line[i]
		if c == '\\' {
			i += 2
			continue
		}
		if c == '=' || c == ':' || isBlank(c) {
			break
		}
		i++
	}
	if i >= len(line) {
		return line, ""
	}
	key = line[:i]
	rest := line[i:]
	sepSeen := rest[0] == '=' || rest[0] == ':'
	if sepSeen {
		rest = rest[1:]
	}
	rest = trimLeftBlank(rest)
	if !sepSeen && rest != "" && (rest[0] == '=' || rest[0] == ':') {
		rest = trimLeftBlank(rest[1:])
	}
	return key, rest
}

// unescapeProperty decodes the escapes of a key or value.
func unescapeProperty(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		i++
		if i >= len(s) {
			break // a lone trailing backslash means nothing
		}
		switch c = s[i]; c {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			r, n, err := decodeUnicodeEscape(s[i+1:])
			if err != nil {
				return "", err
			}
			b.WriteRune(r)
			i += n
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// decodeUnicodeEscape decodes the four hex digits after `\u` at the start
// of s, combining a UTF-16 surrogate pair written as two escapes. It
// returns the rune and how many bytes of s it used.
func decodeUnicodeEscape(s string) (rune, int, error) {
	hi, ok := hex4(s)
	if !ok {
		return 0, 0, fmt.Errorf(`malformed \uxxxx encoding`)
	}
	r := rune(hi)
	if utf16.IsSurrogate(r) && len(s) >= 10 && s[4] == '\\' && s[5] == 'u' {
		if lo, ok := hex4(s[6:]); ok {
			if pair := utf16.DecodeRune(r, rune(lo)); pair != utf8.RuneError {
				return pair, 10, nil
			}
		}
	}
	return r, 4, nil // a lone surrogate becomes U+FFFD when written
}

func hex4(s string) (uint16, bool) {
	if len(s) < 4 {
		return 0, false
	}
	var n uint16
	for i := 0; i < 4; i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		n = n<<4 | uint16(c)
	}
	return n, true
}
