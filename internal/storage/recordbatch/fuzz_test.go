package recordbatch

import (
	"bytes"
	"errors"
	"testing"
)

// fuzzSeeds returns valid batches for every codec plus a few damaged ones.
func fuzzSeeds(f *testing.F) [][]byte {
	var seeds [][]byte
	for _, codec := range allCodecs {
		opts := defaultOpts()
		opts.Compression = codec
		b, err := Build(opts, sampleRecords()[:3])
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, b)
	}
	xerial := withBody(seeds[CompressionSnappy], xerialFrame(rawRecords(0, 1)))
	setCount(xerial, 2)
	seeds = append(seeds, xerial, seeds[0][:HeaderSize], nil)
	return seeds
}

// checkError insists every failure is classified for the broker.
func checkError(t *testing.T, what string, err error) {
	if err != nil && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("%s: unclassified error %v", what, err)
	}
}

func FuzzValidate(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := Validate(b)
		checkError(t, "Validate", err)
		if err != nil {
			return
		}
		// A valid batch is self-consistent and decodes to its record count.
		if h.Size() != int64(len(b)) || CheckCRC(b) != nil {
			t.Fatalf("valid batch fails size/CRC: %+v", h)
		}
		recs, err := Records(b)
		if err != nil {
			t.Fatalf("Records of a valid batch: %v", err)
		}
		if int32(len(recs)) != h.RecordCount {
			t.Fatalf("%d records, header says %d", len(recs), h.RecordCount)
		}
		for i, r := range recs {
			if r.OffsetDelta != int32(i) {
				t.Fatalf("record %d offset delta %d", i, r.OffsetDelta)
			}
		}
	})
}

func FuzzRecords(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		recs, err := Records(b)
		checkError(t, "Records", err)
		if err != nil {
			return
		}
		// Re-encoding what was decoded must decode to the same records
		// (deltas renumbered, as Build does).
		if len(recs) == 0 {
			return
		}
		out, err := Build(defaultOpts(), recs)
		if err != nil {
			t.Fatalf("Build of decoded records: %v", err)
		}
		again, err := Records(out)
		if err != nil || len(again) != len(recs) {
			t.Fatalf("round trip: %d records, %v", len(again), err)
		}
		for i := range recs {
			if !bytes.Equal(again[i].Key, recs[i].Key) || !bytes.Equal(again[i].Value, recs[i].Value) ||
				(again[i].Value == nil) != (recs[i].Value == nil) || len(again[i].Headers) != len(recs[i].Headers) {
				t.Fatalf("record %d changed: %+v -> %+v", i, recs[i], again[i])
			}
		}
	})
}

func FuzzSplit(f *testing.F) {
	seeds := fuzzSeeds(f)
	f.Add(bytes.Join(seeds[:3], nil))
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		total := 0
		err := Split(b, func(batch []byte, h Header) error {
			if int64(len(batch)) != h.Size() || h.Magic != 2 {
				t.Fatalf("batch of %d bytes, header %+v", len(batch), h)
			}
			total += len(batch)
			return nil
		})
		checkError(t, "Split", err)
		if err == nil && total != len(b) {
			t.Fatalf("split covered %d of %d bytes", total, len(b))
		}
	})
}

// FuzzCheckRecord holds the strict walk's fast path to parseRecord: the
// same records accepted, with the same sizes.
func FuzzCheckRecord(f *testing.F) {
	for i, r := range sampleRecords() {
		f.Add(appendRecord(nil, int32(i), r), int32(i))
	}
	f.Add([]byte{0x80, 0x00, 0x00}, int32(0))
	f.Add([]byte{0x0e, 0x00, 0x00, 0x00, 0x01, 0x01, 0x00, 0x00}, int32(0))
	f.Fuzz(func(t *testing.T, b []byte, want int32) {
		n, ok := checkRecord(b, want)
		r, m, err := parseRecord(b, false)
		slow := err == nil && r.OffsetDelta == want
		if ok != slow || ok && n != m {
			t.Fatalf("checkRecord = (%d, %v), parseRecord = (%d, delta %d, %v) for want %d", n, ok, m, r.OffsetDelta, err, want)
		}
	})
}
