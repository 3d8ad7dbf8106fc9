package cli

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func sampleRecord() *kgo.Record {
	return &kgo.Record{
		Topic:     "t",
		Partition: 2,
		Offset:    41,
		Timestamp: time.UnixMilli(1700000000123),
		Key:       []byte("k1"),
		Value:     []byte(`say "hi"`),
		Headers:   []kgo.RecordHeader{{Key: "h", Value: []byte("1")}, {Key: "h", Value: []byte{0xff}}},
	}
}

func TestFormatValueAndKV(t *testing.T) {
	for _, tc := range []struct {
		format, sep string
		rec         *kgo.Record
		want        string
	}{
		{"value", "", sampleRecord(), "say \"hi\"\n"},
		{"kv", "\t", sampleRecord(), "k1\tsay \"hi\"\n"},
		{"KV", "=>", sampleRecord(), "k1=>say \"hi\"\n"},
		{"kv", "\t", &kgo.Record{Value: []byte("v")}, "null\tv\n"}, // null key, as kafka-console-consumer prints it
		{"kv", "\t", &kgo.Record{Key: []byte{}, Value: []byte("v")}, "\tv\n"},
		{"value", "", &kgo.Record{}, "\n"},
	} {
		f, err := newFormatter(tc.format, tc.sep)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := f(&buf, tc.rec); err != nil {
			t.Fatal(err)
		}
		if buf.String() != tc.want {
			t.Errorf("%s: got %q, want %q", tc.format, buf.String(), tc.want)
		}
	}
	if _, err := newFormatter("avro", ""); err == nil {
		t.Error("unknown format: want an error")
	}
}

func TestFormatJSON(t *testing.T) {
	b, err := formatJSON(sampleRecord())
	if err != nil {
		t.Fatal(err)
	}
	want := `{"topic":"t","partition":2,"offset":41,"timestamp":1700000000123,"key":"k1","value":"say \"hi\"",` +
		`"headers":[{"key":"h","value":"1"},{"key":"h","value":"/w==","value_encoding":"base64"}]}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
	// Null key and value stay null; no headers is an empty list, not null.
	b, err = formatJSON(&kgo.Record{Topic: "t", Timestamp: time.UnixMilli(5)})
	if err != nil {
		t.Fatal(err)
	}
	want = `{"topic":"t","partition":0,"offset":0,"timestamp":5,"key":null,"value":null,"headers":[]}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
}

// decodeField undoes encodeBytes.
func decodeField(t *testing.T, s *string, enc string) []byte {
	t.Helper()
	if s == nil {
		return nil
	}
	switch enc {
	case "":
		return []byte(*s)
	case "base64":
		b, err := base64.StdEncoding.DecodeString(*s)
		if err != nil {
			t.Fatalf("bad base64 %q: %v", *s, err)
		}
		return b
	}
	t.Fatalf("unknown encoding %q", enc)
	return nil
}

// FuzzFormatJSON checks that any record bytes give one line of valid JSON
// from which key, value and header values come back exactly.
func FuzzFormatJSON(f *testing.F) {
	f.Add([]byte("k"), []byte("v"), []byte("h"), false)
	f.Add([]byte{0xff, 0xfe}, []byte("\x00\n\"\\"), []byte{0xc3}, false)
	f.Add([]byte(nil), []byte("é€😀"), []byte(nil), true)
	f.Fuzz(func(t *testing.T, key, value, hval []byte, nullKey bool) {
		if nullKey {
			key = nil
		} else if key == nil {
			key = []byte{}
		}
		r := &kgo.Record{Topic: "t", Key: key, Value: value, Headers: []kgo.RecordHeader{{Key: "h", Value: hval}}}
		b, err := formatJSON(r)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.IndexByte(b, '\n') >= 0 {
			t.Fatalf("JSON spans lines: %s", b)
		}
		var got jsonRecord
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("invalid JSON %s: %v", b, err)
		}
		if k := decodeField(t, got.Key, got.KeyEncoding); !bytes.Equal(k, key) || (k == nil) != (key == nil) {
			t.Fatalf("key %q came back as %q", key, k)
		}
		if v := decodeField(t, got.Value, got.ValueEncoding); !bytes.Equal(v, value) || (v == nil) != (value == nil) {
			t.Fatalf("value %q came back as %q", value, v)
		}
		if len(got.Headers) != 1 {
			t.Fatalf("headers = %+v", got.Headers)
		}
		if h := decodeField(t, got.Headers[0].Value, got.Headers[0].ValueEncoding); !bytes.Equal(h, hval) {
			t.Fatalf("header value %q came back as %q", hval, h)
		}
	})
}
