package recordbatch

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"testing"

	"github.com/klauspost/compress/snappy"
)

func TestBuildRecordsRoundTripEveryCodec(t *testing.T) {
	want := sampleRecords()
	for i := range want {
		want[i].OffsetDelta = int32(i)
	}
	for _, codec := range allCodecs {
		t.Run(codecName(codec), func(t *testing.T) {
			opts := defaultOpts()
			opts.Compression = codec
			in := sampleRecords()
			for i := range in {
				in[i].OffsetDelta = 99 // Build must ignore it
			}
			b := mustBuild(t, opts, in)
			h, err := Validate(b)
			if err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if h.Compression() != codec {
				t.Fatalf("codec %d, want %d", h.Compression(), codec)
			}
			got, err := Records(b)
			if err != nil {
				t.Fatalf("Records: %v", err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("records\n got %+v\nwant %+v", got, want)
			}
			if got[0].Key == nil || got[1].Key != nil || got[2].Value != nil || got[1].Value == nil {
				t.Fatalf("null/empty distinction lost: %+v", got[:3])
			}
		})
	}
}

func TestCompressionShrinksRepetitiveData(t *testing.T) {
	recs := []Record{{Value: bytes.Repeat([]byte("weir "), 2000)}}
	plain := len(mustBuild(t, defaultOpts(), recs))
	for _, codec := range allCodecs[1:] {
		opts := defaultOpts()
		opts.Compression = codec
		if n := len(mustBuild(t, opts, recs)); n >= plain/4 {
			t.Errorf("%s batch is %d bytes, uncompressed %d", codecName(codec), n, plain)
		}
	}
}

// xerialFrame frames data as snappy-java does, one chunk per piece.
func xerialFrame(pieces ...[]byte) []byte {
	out := append([]byte(nil), xerialMagic...)
	out = binary.BigEndian.AppendUint32(out, 1) // version
	out = binary.BigEndian.AppendUint32(out, 1) // compatible version
	for _, p := range pieces {
		block := snappy.Encode(nil, p)
		out = binary.BigEndian.AppendUint32(out, uint32(len(block)))
		out = append(out, block...)
	}
	return out
}

func snappyBatch(t *testing.T, body []byte, n int32) []byte {
	t.Helper()
	opts := defaultOpts()
	opts.Compression = CompressionSnappy
	b := mustBuild(t, opts, []Record{{}})
	b = withBody(b, body)
	setCount(b, n)
	return b
}

func TestXerialSnappy(t *testing.T) {
	in := sampleRecords()
	var raw []byte
	for i, r := range in {
		raw = appendRecord(raw, int32(i), r)
	}
	half := len(raw) / 2
	b := snappyBatch(t, xerialFrame(raw[:half], raw[half:]), int32(len(in)))
	if _, err := Validate(b); err != nil {
		t.Fatalf("Validate xerial batch: %v", err)
	}
	got, err := Records(b)
	if err != nil {
		t.Fatalf("Records xerial batch: %v", err)
	}
	if len(got) != len(in) || !bytes.Equal(got[3].Value, in[3].Value) || got[2].Headers[0].Key != "trace" {
		t.Fatalf("xerial records %+v", got)
	}

	// An empty stream after the header decodes to nothing.
	if out, err := decompress(CompressionSnappy, xerialFrame()); err != nil || len(out) != 0 {
		t.Fatalf("empty xerial: %q, %v", out, err)
	}
	frame := xerialFrame(raw)
	for name, bad := range map[string][]byte{
		"header cut":       frame[:12],
		"chunk cut":        frame[:len(frame)-1],
		"length cut":       frame[:xerialHeaderSize+2],
		"chunk overstated": append(frame[:xerialHeaderSize:xerialHeaderSize], 0x7f, 0, 0, 0, 1),
	} {
		if _, err := Validate(snappyBatch(t, bad, int32(len(in)))); err == nil {
			t.Errorf("%s: Validate succeeded", name)
		} else {
			wantErr(t, err, ErrCorrupt)
		}
	}
}

func TestRecordsAllowsCompactedGaps(t *testing.T) {
	b := withBody(mustBuild(t, defaultOpts(), []Record{{}}), rawRecords(0, 3, 9))
	binary.BigEndian.PutUint32(b[offRecordCount:], 3)
	binary.BigEndian.PutUint32(b[offLastOffsetDelta:], 9)
	fixCRC(b)
	got, err := Records(b)
	if err != nil {
		t.Fatalf("Records: %v", err)
	}
	if len(got) != 3 || got[1].OffsetDelta != 3 || got[2].OffsetDelta != 9 {
		t.Fatalf("records %+v", got)
	}
	_, err = Validate(b)
	wantErr(t, err, ErrInvalidRecord)

	// Deltas must still increase.
	b = withBody(b, rawRecords(0, 3, 3))
	_, err = Records(b)
	wantErr(t, err, ErrInvalidRecord)
}

func TestRecordsRejectsBadRecords(t *testing.T) {
	base := mustBuild(t, defaultOpts(), []Record{{}})
	// record prefixes fields with their exact length.
	record := func(fields ...byte) []byte {
		return append(binary.AppendVarint(nil, int64(len(fields))), fields...)
	}
	cases := map[string][]byte{
		// attrs, ts, offset, key len -1, value len -1, 1 header, key len -1, value -1
		"null header key":       record(0, 0, 0, 1, 1, 2, 1, 1),
		"negative header count": record(0, 0, 0, 1, 1, 1),
		"key length -2":         record(0, 0, 0, 3, 1, 0),
		"key beyond record":     record(0, 0, 0, 20, 1, 0),
		"bytes left in record":  record(0, 0, 0, 1, 1, 0, 0),
		"overlong varint":       record(0, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 1, 1, 0),
		"negative length":       {0x01, 0, 0, 0, 0, 0, 0},
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			b := withBody(base, body)
			_, err := Records(b)
			wantErr(t, err, ErrInvalidRecord)
			_, err = Validate(b)
			wantErr(t, err, ErrInvalidRecord)
		})
	}
}

func TestDecompressionBomb(t *testing.T) {
	const limit = 256 << 10
	zeros := make([]byte, limit+1)
	// Snappy cannot compress beyond ~21x, so only its forged length matters.
	for _, codec := range []Compression{CompressionGzip, CompressionLZ4, CompressionZstd} {
		t.Run(codecName(codec), func(t *testing.T) {
			packed, err := compress(codec, zeros)
			if err != nil {
				t.Fatal(err)
			}
			_, err = decompressLimited(codec, packed, limit)
			wantErr(t, err, ErrCorrupt)
			// Exactly at the limit decodes fine.
			packed, _ = compress(codec, zeros[:limit])
			if out, err := decompressLimited(codec, packed, limit); err != nil || len(out) != limit {
				t.Fatalf("at the limit: %d bytes, %v", len(out), err)
			}
		})
	}
	// Through the public API: a tiny zstd batch inflating past the floor.
	opts := defaultOpts()
	opts.Compression = CompressionZstd
	b := mustBuild(t, opts, []Record{{Value: make([]byte, minLimit)}})
	if len(b)*maxRatio >= minLimit {
		t.Fatalf("test premise: %d byte batch", len(b))
	}
	_, err := Validate(b)
	wantErr(t, err, ErrCorrupt)
	// A raw snappy block claiming a huge size is refused before decoding.
	forged := binary.AppendUvarint(nil, 1<<31)
	_, err = decompress(CompressionSnappy, append(forged, 0, 0, 0))
	wantErr(t, err, ErrCorrupt)
	// So is a xerial chunk whose blocks add up past the limit.
	_, err = decompressLimited(CompressionSnappy, xerialFrame(zeros[:limit/2+1], zeros[:limit/2+1]), limit)
	wantErr(t, err, ErrCorrupt)
}

func TestDecompressLimit(t *testing.T) {
	for _, tc := range []struct{ in, want int }{
		{0, minLimit}, {1000, minLimit}, {1 << 20, 64 << 20}, {16 << 20, maxLimit}, {1 << 40, maxLimit},
	} {
		if got := decompressLimit(tc.in); got != tc.want {
			t.Errorf("decompressLimit(%d) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

func codecName(c Compression) string {
	return [...]string{"none", "gzip", "snappy", "lz4", "zstd"}[c]
}
