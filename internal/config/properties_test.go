package config

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseProperties(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []Property
	}{
		{"empty", "", nil},
		{"equals", "a=b", []Property{{"a", "b", 1}}},
		{"colon", "a: b", []Property{{"a", "b", 1}}},
		{"blank separator", "a   b c", []Property{{"a", "b c", 1}}},
		{"blanks around equals", "  a \t=  b", []Property{{"a", "b", 1}}},
		{"trailing blanks kept as Java does", "a=b  ", []Property{{"a", "b  ", 1}}},
		{"key only", "a", []Property{{"a", "", 1}}},
		{"key with equals only", "a=", []Property{{"a", "", 1}}},
		{"second separator is value", "a==b", []Property{{"a", "=b", 1}}},
		{"blank then colon", "a : b", []Property{{"a", "b", 1}}},
		{"comments and blank lines", "# c\n! c\n\n   \n  # indented\na=1\n", []Property{{"a", "1", 6}}},
		{"hash inside value", "a=b#c", []Property{{"a", "b#c", 1}}},
		{"crlf and cr", "a=1\r\nb=2\rc=3", []Property{{"a", "1", 1}, {"b", "2", 2}, {"c", "3", 3}}},
		{"continuation", "a=one,\\\n    two\nb=3", []Property{{"a", "one,two", 1}, {"b", "3", 3}}},
		{"escaped backslash is not continuation", "a=x\\\\\nb=1", []Property{{"a", `x\`, 1}, {"b", "1", 2}}},
		{"continuation at end of input", "a=x\\", []Property{{"a", "x", 1}}},
		{"continued line may look like comment", "a=1\\\n#2", []Property{{"a", "1#2", 1}}},
		{"comment does not continue", "#x\\\na=1", []Property{{"a", "1", 2}}},
		{"escaped separator in key", `a\=b\:c=d`, []Property{{"a=b:c", "d", 1}}},
		{"escaped space in key", `a\ b=c`, []Property{{"a b", "c", 1}}},
		{"escapes", `a=\t\n\r\f\q\\`, []Property{{"a", "\t\n\r\f" + `q\`, 1}}},
		{"unicode escape", `a=\u0041\u00e9`, []Property{{"a", "Aé", 1}}},
		{"surrogate pair", `a=\ud83d\ude00`, []Property{{"a", "😀", 1}}},
		{"repeated key kept in order", "a=1\na=2", []Property{{"a", "1", 1}, {"a", "2", 2}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseProperties([]byte(tt.in))
			if err != nil {
				t.Fatalf("ParseProperties(%q): %v", tt.in, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("ParseProperties(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
		})
	}
}

func TestParsePropertiesMalformedUnicode(t *testing.T) {
	for _, in := range []string{`a=\u12`, `a=\uzzzz`, `\u00g0=1`, "x=1\nb=\\u-123"} {
		_, err := ParseProperties([]byte(in))
		if err == nil || !strings.Contains(err.Error(), `\uxxxx`) {
			t.Errorf("ParseProperties(%q) error = %v, want malformed \\uxxxx", in, err)
		}
	}
	_, err := ParseProperties([]byte("x=1\nb=\\u-123"))
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("error %v does not name line 2", err)
	}
}

// escapeProperty writes s so that ParseProperties reads it back unchanged:
// the inverse used by the round-trip fuzz test.
func escapeProperty(s string, isKey bool) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\', '=', ':', '#', '!':
			b.WriteByte('\\')
			b.WriteByte(c)
		case ' ':
			if isKey || i == 0 {
				b.WriteByte('\\')
			}
			b.WriteByte(' ')
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\f':
			b.WriteString(`\f`)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func FuzzParseProperties(f *testing.F) {
	for _, seed := range []string{
		"", "a=b", "a: b\n# c\n! d\n", "a b\\\n  c", `a\=b=\u0041\ud83d\ude00`, "a=\\", "\\", "\\u", "x\r\ny\rz=1\\\r\n",
		"listeners=PLAINTEXT://:9092,\\\n  CONTROLLER://:9093\n", "   \t\f", "a=\\u00", "#\\\na",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		props, err := ParseProperties(data)
		if err != nil {
			return
		}
		// Whatever was read must survive being written and read again.
		var sb strings.Builder
		for _, p := range props {
			sb.WriteString(escapeProperty(p.Key, true) + "=" + escapeProperty(p.Value, false) + "\n")
		}
		again, err := ParseProperties([]byte(sb.String()))
		if err != nil {
			t.Fatalf("re-parse of %q: %v", sb.String(), err)
		}
		if len(again) != len(props) {
			t.Fatalf("re-parse gave %d entries, want %d\nfirst: %+v\nagain: %+v", len(again), len(props), props, again)
		}
		for i := range props {
			if again[i].Key != props[i].Key || again[i].Value != props[i].Value {
				t.Fatalf("entry %d: re-parse gave %q=%q, want %q=%q", i, again[i].Key, again[i].Value, props[i].Key, props[i].Value)
			}
		}
	})
}
