package checkpoint

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

func FuzzParseOffsets(f *testing.F) {
	f.Add([]byte("0\n2\norders 0 1500\norders 1 220\n"))
	f.Add([]byte("0\n0\n"))
	f.Add([]byte("0\n1\na.b_c-d 2147483647 9223372036854775807"))
	f.Add([]byte("0\n3\nt 0 1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseOffsets(data)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("unclassified error %v", err)
			}
			return
		}
		// Whatever parses re-formats to something that parses the same.
		out, err := formatOffsets(m)
		if err != nil {
			t.Fatalf("format of parsed map: %v", err)
		}
		again, err := ParseOffsets(out)
		if err != nil || !reflect.DeepEqual(again, m) {
			t.Fatalf("round trip: %v, %v vs %v", err, again, m)
		}
	})
}

func FuzzParseEpochs(f *testing.F) {
	f.Add([]byte("0\n2\n0 0\n3 1470\n"))
	f.Add([]byte("0\n0\n"))
	f.Add([]byte("0\n1\n1 -5\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, err := ParseEpochs(data)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("unclassified error %v", err)
			}
			return
		}
		for _, e := range entries {
			if e.Epoch < 0 || e.StartOffset < 0 {
				t.Fatalf("negative entry accepted: %+v", e)
			}
		}
		if len(entries) > bytes.Count(data, []byte("\n"))+1 {
			t.Fatalf("%d entries from %d lines", len(entries), bytes.Count(data, []byte("\n"))+1)
		}
	})
}
