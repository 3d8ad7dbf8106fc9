package recordbatch

// Validating a producer's batch walks every record (Kafka's validator
// does too: offset deltas must run 0..n-1 and every length must hold).
// With 100-byte records that walk, not the CRC, was the cost of
// validation, so the strict walk has a path of its own here: it only
// skips over the fields, reading each varint with a one-byte fast path,
// and materialises nothing. Whatever it refuses is parsed again by
// parseRecord for the error to report, so both walks give the same
// answers and messages (FuzzCheckRecord holds them to it).

// checkRecord reports the encoded size of the record at the start of b
// if it is well formed with offset delta want, as parseRecord would
// accept it; ok is false otherwise.
func checkRecord(b []byte, want int32) (n int, ok bool) {
	length, n, ok := fastVarint32(b)
	if !ok || length < 0 || int64(length) > int64(len(b)-n) {
		return 0, false
	}
	total := n + int(length)
	r := b[n:total]
	if len(r) == 0 { // attributes
		return 0, false
	}
	r = r[1:]
	if r, ok = skipVarint64(r); !ok { // timestamp delta
		return 0, false
	}
	delta, m, ok := fastVarint32(r)
	if !ok || delta != want {
		return 0, false
	}
	r = r[m:]
	for range 2 { // key, value: null (-1) allowed
		if r, ok = skipBytes(r, true); !ok {
			return 0, false
		}
	}
	count, m, ok := fastVarint32(r)
	if !ok || count < 0 || int(count) > (len(r)-m)/2 {
		return 0, false
	}
	r = r[m:]
	for range count {
		if r, ok = skipBytes(r, false); !ok { // header key: never null
			return 0, false
		}
		if r, ok = skipBytes(r, true); !ok {
			return 0, false
		}
	}
	return total, len(r) == 0
}

// fastVarint32 is varint32 with the one- and two-byte cases inline: the
// lengths of records and values up to 8 KiB, the common sizes, take two.
// Like binary.Varint it accepts an overlong encoding (a zero last byte).
func fastVarint32(b []byte) (int32, int, bool) {
	if len(b) > 0 && b[0] < 0x80 {
		u := int32(b[0])
		return (u >> 1) ^ -(u & 1), 1, true
	}
	if len(b) > 1 && b[1] < 0x80 {
		u := int32(b[0]&0x7f) | int32(b[1])<<7
		return (u >> 1) ^ -(u & 1), 2, true
	}
	v, n, err := varint32(b)
	return v, n, err == nil
}

// skipVarint64 skips a varint as binary.Varint reads it (at most 10
// bytes, the tenth at most 1).
func skipVarint64(b []byte) ([]byte, bool) {
	for i := 0; i < len(b) && i < 10; i++ {
		if b[i] < 0x80 {
			if i == 9 && b[i] > 1 {
				return nil, false
			}
			return b[i+1:], true
		}
	}
	return nil, false
}

// skipBytes skips a varint length and that many bytes; -1 (null) only if
// nullable.
func skipBytes(b []byte, nullable bool) ([]byte, bool) {
	l, n, ok := fastVarint32(b)
	switch {
	case !ok, l < -1, l == -1 && !nullable, int64(l) > int64(len(b)-n):
		return nil, false
	case l == -1:
		return b[n:], true
	}
	return b[n+int(l):], true
}
