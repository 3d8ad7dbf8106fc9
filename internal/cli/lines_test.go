package cli

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

func readAllLines(t *testing.T, in string) []string {
	t.Helper()
	lr := newLineReader(strings.NewReader(in))
	var out []string
	for {
		b, err := lr.next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("next: %v", err)
		}
		out = append(out, string(b))
		if lr.line != len(out) {
			t.Fatalf("line counter %d after %d lines", lr.line, len(out))
		}
	}
}

func TestLineReader(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"a\nb\n", []string{"a", "b"}},
		{"a\nb", []string{"a", "b"}},       // last line without newline
		{"a\r\nb\r\n", []string{"a", "b"}}, // Windows line ends
		{"\n\nx\n", []string{"", "", "x"}}, // empty lines are empty records, as in Kafka
		{"a\rb\n", []string{"a\rb"}},       // a lone CR is data
		{strings.Repeat("z", 200000) + "\n", []string{strings.Repeat("z", 200000)}}, // longer than the buffer
	} {
		got := readAllLines(t, tc.in)
		if strings.Join(got, "|") != strings.Join(tc.want, "|") || len(got) != len(tc.want) {
			t.Errorf("lines of %.20q = %q, want %q", tc.in, got, tc.want)
		}
	}
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("disk on fire") }

func TestLineReaderError(t *testing.T) {
	lr := newLineReader(io.MultiReader(strings.NewReader("ok\n"), failingReader{}))
	if b, err := lr.next(); err != nil || string(b) != "ok" {
		t.Fatalf("first line = %q, %v", b, err)
	}
	_, err := lr.next()
	if err == nil || errors.Is(err, io.EOF) || !strings.Contains(err.Error(), "disk on fire") {
		t.Fatalf("want the read error, got %v", err)
	}
}

func TestSplitLine(t *testing.T) {
	for _, tc := range []struct {
		line, sep string
		key       []byte
		value     string
		wantErr   bool
	}{
		{"hello", "", nil, "hello", false},
		{"k:v", ":", []byte("k"), "v", false},
		{"k:v:w", ":", []byte("k"), "v:w", false}, // first separator only
		{":v", ":", []byte{}, "v", false},         // empty, not null, key
		{"k:", ":", []byte("k"), "", false},
		{"k::v", "::", []byte("k"), "v", false}, // multi-byte separator
		{"novalue", ":", nil, "", true},
	} {
		k, v, err := splitLine([]byte(tc.line), tc.sep)
		if tc.wantErr {
			if err == nil {
				t.Errorf("splitLine(%q, %q): want an error", tc.line, tc.sep)
			}
			continue
		}
		if err != nil {
			t.Fatalf("splitLine(%q, %q): %v", tc.line, tc.sep, err)
		}
		if (k == nil) != (tc.key == nil) || !bytes.Equal(k, tc.key) || string(v) != tc.value {
			t.Errorf("splitLine(%q, %q) = %q, %q; want %q, %q", tc.line, tc.sep, k, v, tc.key, tc.value)
		}
	}
}

// FuzzSplitLine checks that splitting never loses or invents bytes and
// always cuts at the first separator.
func FuzzSplitLine(f *testing.F) {
	f.Add([]byte("k:v"), ":")
	f.Add([]byte("no separator"), ":")
	f.Add([]byte("a::b::c"), "::")
	f.Add([]byte("\xff\x00:\x01"), ":")
	f.Add([]byte("value only"), "")
	f.Fuzz(func(t *testing.T, line []byte, sep string) {
		k, v, err := splitLine(line, sep)
		if sep == "" {
			if err != nil || k != nil || !bytes.Equal(v, line) {
				t.Fatalf("no separator: got %q, %q, %v", k, v, err)
			}
			return
		}
		if err != nil {
			if bytes.Contains(line, []byte(sep)) {
				t.Fatalf("line %q holds %q but split failed: %v", line, sep, err)
			}
			return
		}
		if bytes.Contains(k, []byte(sep)) {
			t.Fatalf("key %q holds the separator %q: not cut at the first one", k, sep)
		}
		joined := append(append(append([]byte{}, k...), sep...), v...)
		if !bytes.Equal(joined, line) {
			t.Fatalf("key %q + %q + value %q != line %q", k, sep, v, line)
		}
	})
}

// FuzzLineReader checks that the lines read, rejoined with newlines, give
// back the input minus line terminators, whatever the bytes.
func FuzzLineReader(f *testing.F) {
	f.Add([]byte("a\nb\n"))
	f.Add([]byte("a\r\nb"))
	f.Add([]byte("\n\n\r\n"))
	f.Add([]byte{0xff, '\n', 0})
	f.Add([]byte("a\r"))
	f.Fuzz(func(t *testing.T, in []byte) {
		lr := newLineReader(bytes.NewReader(in))
		var lines [][]byte
		for {
			b, err := lr.next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if bytes.IndexByte(b, '\n') >= 0 {
				t.Fatalf("line %q holds a newline", b)
			}
			lines = append(lines, b)
		}
		want := bytes.ReplaceAll(in, []byte("\r\n"), []byte("\n"))
		want = bytes.TrimSuffix(want, []byte("\n"))
		if got := bytes.Join(lines, []byte("\n")); !bytes.Equal(got, want) {
			t.Fatalf("rejoined %q, want %q", got, want)
		}
	})
}
