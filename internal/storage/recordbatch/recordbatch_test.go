package recordbatch

import (
	"encoding/binary"
	"errors"
	"strconv"
	"strings"
	"testing"
)

func TestBuildHeaderFields(t *testing.T) {
	opts := BuildOptions{
		BaseOffset: 42, BaseTimestamp: 1000, Compression: CompressionLZ4,
		ProducerID: 7, ProducerEpoch: 3, BaseSequence: 11, LeaderEpoch: 9, Transactional: true,
	}
	recs := []Record{{TimestampDelta: 4}, {TimestampDelta: 20}, {TimestampDelta: -5}}
	b := mustBuild(t, opts, recs)
	h, err := Validate(b)
	if err != nil {
		t.Fatalf("Validate: %v", err)
	}
	want := Header{
		BaseOffset: 42, Length: int32(len(b) - 12), PartitionLeaderEpoch: 9, Magic: 2, CRC: h.CRC,
		Attributes: int16(CompressionLZ4) | attrTransactional, LastOffsetDelta: 2,
		BaseTimestamp: 1000, MaxTimestamp: 1020, ProducerID: 7, ProducerEpoch: 3, BaseSequence: 11, RecordCount: 3,
	}
	if h != want {
		t.Fatalf("header\n got %+v\nwant %+v", h, want)
	}
	if h.Size() != int64(len(b)) || h.LastOffset() != 44 {
		t.Fatalf("Size %d LastOffset %d", h.Size(), h.LastOffset())
	}
	if h.Compression() != CompressionLZ4 || !h.Transactional() || h.Control() || h.LogAppendTime() {
		t.Fatalf("attribute accessors wrong for %#x", h.Attributes)
	}
}

func TestBuildControlAndLogAppendTime(t *testing.T) {
	opts := defaultOpts()
	opts.Control, opts.LogAppendTime = true, true
	opts.ProducerID, opts.BaseSequence, opts.Transactional = 5, 0, true
	b := mustBuild(t, opts, []Record{{TimestampDelta: 99, Key: []byte{0, 0, 0, 1}}})
	h, err := Validate(b)
	if err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if !h.Control() || !h.LogAppendTime() || h.MaxTimestamp != opts.BaseTimestamp {
		t.Fatalf("header %+v", h)
	}
}

func TestBuildRejects(t *testing.T) {
	if _, err := Build(defaultOpts(), nil); err == nil {
		t.Fatal("Build with no records succeeded")
	}
	opts := defaultOpts()
	opts.Compression = 6
	if _, err := Build(opts, sampleRecords()); err == nil {
		t.Fatal("Build with codec 6 succeeded")
	}
}

func TestValidateErrors(t *testing.T) {
	good := mustBuild(t, defaultOpts(), sampleRecords())
	cases := []struct {
		name   string
		mutate func(b []byte) []byte
		want   error
	}{
		{"flipped record byte", func(b []byte) []byte { b[len(b)-1] ^= 0x40; return b }, ErrCorrupt},
		{"flipped timestamp byte", func(b []byte) []byte { b[offBaseTimestamp+7] ^= 1; return b }, ErrCorrupt},
		{"flipped crc", func(b []byte) []byte { b[offCRC] ^= 1; return b }, ErrCorrupt},
		{"bad magic", func(b []byte) []byte { b[offMagic] = 1; return b }, ErrCorrupt},
		{"truncated", func(b []byte) []byte { return b[:len(b)-1] }, ErrCorrupt},
		{"extra byte", func(b []byte) []byte { return append(b, 0) }, ErrCorrupt},
		{"shorter than header", func(b []byte) []byte { return b[:HeaderSize-1] }, ErrCorrupt},
		{"empty", func(b []byte) []byte { return nil }, ErrCorrupt},
		{"length below minimum", func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[offLength:], minLength-1)
			return b
		}, ErrCorrupt},
		{"negative length", func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[offLength:], 0xffffffff)
			return b
		}, ErrCorrupt},
		{"count != lastOffsetDelta+1", func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[offLastOffsetDelta:], 7)
			fixCRC(b)
			return b
		}, ErrInvalidRecord},
		{"zero records", func(b []byte) []byte { setCount(b, 0); return withBody(b, nil) }, ErrInvalidRecord},
		{"count above records present", func(b []byte) []byte { setCount(b, 5); return b }, ErrInvalidRecord},
		{"count below records present", func(b []byte) []byte { setCount(b, 3); return b }, ErrInvalidRecord},
		// Kafka ignores the sequence of a batch without producer id
		// (non-idempotent franz-go sends 0), so these are accepted.
		{"sequence without producer is accepted", func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[offBaseSequence:], 4)
			fixCRC(b)
			return b
		}, nil},
		{"producer without sequence", func(b []byte) []byte {
			binary.BigEndian.PutUint64(b[offProducerID:], 99)
			fixCRC(b)
			return b
		}, ErrInvalidRecord},
		{"producer id below -1 is accepted", func(b []byte) []byte {
			binary.BigEndian.PutUint64(b[offProducerID:], uint64(1<<64-2))
			fixCRC(b)
			return b
		}, nil},
		{"transactional without producer", func(b []byte) []byte {
			b[offAttributes+1] |= attrTransactional
			fixCRC(b)
			return b
		}, ErrInvalidRecord},
		{"offset deltas out of order", func(b []byte) []byte {
			b = withBody(b, rawRecords(1, 0))
			setCount(b, 2)
			return b
		}, ErrInvalidRecord},
		{"offset deltas with gap", func(b []byte) []byte {
			b = withBody(b, rawRecords(0, 2))
			setCount(b, 2)
			return b
		}, ErrInvalidRecord},
		{"bytes after last record", func(b []byte) []byte {
			b = withBody(b, append(rawRecords(0, 1), 0))
			setCount(b, 2)
			return b
		}, ErrInvalidRecord},
		{"record length beyond batch", func(b []byte) []byte {
			body := rawRecords(0)
			body[0] = 0x7e // varint 63, far more than the record holds
			b = withBody(b, body)
			setCount(b, 1)
			return b
		}, ErrInvalidRecord},
		{"record shorter than its fields", func(b []byte) []byte {
			body := rawRecords(0)
			body[0] -= 2 // claims 1 byte less (zig-zag), leaving the value cut
			b = withBody(b, body)
			setCount(b, 1)
			return b
		}, ErrInvalidRecord},
		{"unknown codec", func(b []byte) []byte {
			b[offAttributes+1] |= 0x07
			fixCRC(b)
			return b
		}, ErrCorrupt},
		{"compressed garbage", func(b []byte) []byte {
			b[offAttributes+1] |= byte(CompressionGzip)
			fixCRC(b)
			return b
		}, ErrCorrupt},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.mutate(append([]byte(nil), good...))
			_, err := Validate(b)
			wantErr(t, err, tc.want)
		})
	}
}

func TestValidateAcceptsMaxTimestampBelowBase(t *testing.T) {
	b := mustBuild(t, defaultOpts(), []Record{{TimestampDelta: -100}})
	h, err := Validate(b)
	if err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if h.MaxTimestamp >= h.BaseTimestamp {
		t.Fatalf("test premise: max %d base %d", h.MaxTimestamp, h.BaseTimestamp)
	}
}

func TestBaseOffsetAndEpochOutsideCRC(t *testing.T) {
	b := mustBuild(t, defaultOpts(), sampleRecords())
	SetBaseOffset(b, 1<<40+3)
	SetPartitionLeaderEpoch(b, 17)
	h, err := Validate(b)
	if err != nil {
		t.Fatalf("Validate after patch: %v", err)
	}
	if h.BaseOffset != 1<<40+3 || h.PartitionLeaderEpoch != 17 {
		t.Fatalf("patched header %+v", h)
	}
}

func TestSetLogAppendTime(t *testing.T) {
	opts := defaultOpts()
	opts.Compression = CompressionZstd
	b := mustBuild(t, opts, sampleRecords())
	before, _ := ParseHeader(b)
	SetLogAppendTime(b, 1_800_000_000_123)
	h, err := Validate(b)
	if err != nil {
		t.Fatalf("Validate after SetLogAppendTime: %v", err)
	}
	if !h.LogAppendTime() || h.MaxTimestamp != 1_800_000_000_123 || h.Compression() != CompressionZstd {
		t.Fatalf("header %+v", h)
	}
	if h.CRC == before.CRC || h.BaseTimestamp != before.BaseTimestamp {
		t.Fatalf("crc %x (was %x), base ts %d (was %d)", h.CRC, before.CRC, h.BaseTimestamp, before.BaseTimestamp)
	}
}

func TestCheckCRC(t *testing.T) {
	b := mustBuild(t, defaultOpts(), sampleRecords())
	if err := CheckCRC(b); err != nil {
		t.Fatalf("CheckCRC: %v", err)
	}
	for _, i := range []int{offAttributes, HeaderSize, len(b) - 1} {
		c := append([]byte(nil), b...)
		c[i] ^= 0x01
		wantErr(t, CheckCRC(c), ErrCorrupt)
	}
	wantErr(t, CheckCRC(b[:10]), ErrCorrupt)
}

func TestSplit(t *testing.T) {
	var all []byte
	var want []int64
	for i, codec := range allCodecs {
		opts := defaultOpts()
		opts.BaseOffset = int64(i * 10)
		opts.Compression = codec
		all = append(all, mustBuild(t, opts, sampleRecords()[:i%3+1])...)
		want = append(want, opts.BaseOffset)
	}
	var got []int64
	err := Split(all, func(batch []byte, h Header) error {
		if int64(len(batch)) != h.Size() {
			t.Errorf("batch of %d bytes, header size %d", len(batch), h.Size())
		}
		if _, err := Validate(batch); err != nil {
			t.Errorf("Validate split batch: %v", err)
		}
		got = append(got, h.BaseOffset)
		return nil
	})
	if err != nil {
		t.Fatalf("Split: %v", err)
	}
	if len(got) != len(want) {
		t.Fatalf("got base offsets %v, want %v", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("got base offsets %v, want %v", got, want)
		}
	}
	if err := Split(nil, func([]byte, Header) error { t.Fatal("called on empty input"); return nil }); err != nil {
		t.Fatalf("Split(nil): %v", err)
	}
}

func TestSplitErrors(t *testing.T) {
	one := mustBuild(t, defaultOpts(), sampleRecords())
	two := append(append([]byte(nil), one...), one...)
	count := func(b []byte) (int, error) {
		n := 0
		err := Split(b, func([]byte, Header) error { n++; return nil })
		return n, err
	}

	n, err := count(two[:len(two)-1])
	wantErr(t, err, ErrCorrupt)
	if n != 1 || !strings.Contains(err.Error(), "byte "+strconv.Itoa(len(one))) {
		t.Fatalf("partial tail: %d batches, err %v", n, err)
	}

	n, err = count(append(append([]byte(nil), one...), 1, 2, 3))
	wantErr(t, err, ErrCorrupt)
	if n != 1 {
		t.Fatalf("short tail: %d batches", n)
	}

	bad := append([]byte(nil), two...)
	bad[len(one)+offMagic] = 0
	n, err = count(bad)
	wantErr(t, err, ErrCorrupt)
	if n != 1 {
		t.Fatalf("bad magic: %d batches", n)
	}

	stop := errors.New("stop")
	n = 0
	err = Split(two, func([]byte, Header) error { n++; return stop })
	if !errors.Is(err, stop) || n != 1 {
		t.Fatalf("callback error: n=%d err=%v", n, err)
	}
}
