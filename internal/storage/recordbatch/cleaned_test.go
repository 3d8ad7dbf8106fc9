package recordbatch

import (
	"bytes"
	"errors"
	"testing"
)

// gapped returns records with offset deltas 1, 4, 9 (a compacted batch).
func gapped() []Record {
	return []Record{
		{OffsetDelta: 1, TimestampDelta: 10, Key: []byte("a"), Value: []byte("v1")},
		{OffsetDelta: 4, TimestampDelta: -5, Key: []byte("b"), Value: nil},
		{OffsetDelta: 9, TimestampDelta: 30, Key: []byte("c"), Value: []byte("v3"),
			Headers: []RecordHeader{{Key: "h", Value: []byte("x")}}},
	}
}

func TestBuildKeepOffsetDeltasRoundTrip(t *testing.T) {
	for _, codec := range allCodecs {
		opts := defaultOpts()
		opts.BaseOffset = 1000
		opts.Compression = codec
		opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence = 7, 2, 40
		opts.KeepOffsetDeltas, opts.LastOffsetDelta, opts.MaxTimestamp = true, 11, opts.BaseTimestamp+30
		opts.DeleteHorizon = true
		b := mustBuild(t, opts, gapped())
		if err := CheckCRC(b); err != nil {
			t.Fatalf("codec %d: %v", codec, err)
		}
		h, err := ParseHeader(b)
		if err != nil {
			t.Fatal(err)
		}
		if h.LastOffsetDelta != 11 || h.RecordCount != 3 || h.LastOffset() != 1011 || h.Compression() != codec {
			t.Fatalf("codec %d: header %+v", codec, h)
		}
		if h.ProducerID != 7 || h.ProducerEpoch != 2 || h.BaseSequence != 40 || h.MaxTimestamp != opts.BaseTimestamp+30 {
			t.Fatalf("codec %d: producer fields or max timestamp lost: %+v", codec, h)
		}
		if hz, set := h.DeleteHorizon(); !set || hz != opts.BaseTimestamp {
			t.Fatalf("codec %d: delete horizon %d %v", codec, hz, set)
		}
		recs, err := Records(b)
		if err != nil {
			t.Fatalf("codec %d: Records: %v", codec, err)
		}
		want := gapped()
		for i := range want {
			g, w := recs[i], want[i]
			if g.OffsetDelta != w.OffsetDelta || g.TimestampDelta != w.TimestampDelta ||
				!bytes.Equal(g.Key, w.Key) || !bytes.Equal(g.Value, w.Value) || (g.Value == nil) != (w.Value == nil) ||
				len(g.Headers) != len(w.Headers) {
				t.Fatalf("codec %d: record %d = %+v, want %+v", codec, i, g, w)
			}
		}
		// A producer may never send this: deltas are not 0..n-1.
		if _, err := Validate(b); !errors.Is(err, ErrInvalidRecord) {
			t.Fatalf("codec %d: Validate accepted a gapped batch: %v", codec, err)
		}
	}
}

func TestBuildEmptyKeptBatch(t *testing.T) {
	opts := defaultOpts()
	opts.BaseOffset, opts.Compression = 50, CompressionZstd
	opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence = 3, 0, 10
	opts.KeepOffsetDeltas, opts.LastOffsetDelta, opts.MaxTimestamp = true, 4, 123
	b := mustBuild(t, opts, nil)
	h, err := ParseHeader(b)
	if err != nil || CheckCRC(b) != nil {
		t.Fatalf("empty batch: %v", err)
	}
	if h.RecordCount != 0 || h.LastOffset() != 54 || h.Compression() != CompressionNone || h.Size() != HeaderSize {
		t.Fatalf("empty batch header %+v", h)
	}
	if _, set := h.DeleteHorizon(); set {
		t.Fatal("delete horizon set without asking")
	}
	if recs, err := Records(b); err != nil || len(recs) != 0 {
		t.Fatalf("Records(empty) = %v, %v", recs, err)
	}
	if _, err := Build(defaultOpts(), nil); err == nil {
		t.Fatal("Build without KeepOffsetDeltas accepted no records")
	}
}

func TestBuildKeepOffsetDeltasRejectsBadDeltas(t *testing.T) {
	for name, tc := range map[string]struct {
		last int32
		recs []Record
	}{
		"not increasing": {5, []Record{{OffsetDelta: 2}, {OffsetDelta: 2}}},
		"beyond last":    {3, []Record{{OffsetDelta: 4}}},
		"negative":       {3, []Record{{OffsetDelta: -1}}},
		"negative last":  {-1, nil},
	} {
		opts := defaultOpts()
		opts.KeepOffsetDeltas, opts.LastOffsetDelta = true, tc.last
		if _, err := Build(opts, tc.recs); err == nil {
			t.Errorf("%s: Build accepted bad deltas", name)
		}
	}
}

func TestCheckKeys(t *testing.T) {
	for _, codec := range allCodecs {
		opts := defaultOpts()
		opts.Compression = codec
		keyed := mustBuild(t, opts, []Record{{Key: []byte("a"), Value: []byte("1")}, {Key: []byte{}, Value: nil}})
		if err := CheckKeys(keyed); err != nil {
			t.Fatalf("codec %d: keyed batch refused: %v", codec, err)
		}
		keyless := mustBuild(t, opts, []Record{{Key: []byte("a")}, {Key: nil, Value: []byte("x")}})
		if err := CheckKeys(keyless); !errors.Is(err, ErrInvalidRecord) {
			t.Fatalf("codec %d: keyless record accepted: %v", codec, err)
		}
	}
	if err := CheckKeys([]byte{1, 2}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("short input: %v", err)
	}
}

func FuzzCheckKeys(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	opts := defaultOpts()
	opts.KeepOffsetDeltas, opts.LastOffsetDelta = true, 9
	b, err := Build(opts, gapped())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		err := CheckKeys(b)
		checkError(t, "CheckKeys", err)
	})
}
