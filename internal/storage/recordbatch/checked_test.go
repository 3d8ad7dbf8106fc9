package recordbatch

import (
	"bytes"
	"testing"
)

// checkAll checks every batch of batches ahead, in order.
func checkAll(batches ...[]byte) Checked {
	var c Checked
	for _, b := range batches {
		c.CheckAhead(b)
	}
	return c
}

func TestCheckedCoversOnlyTheSetItChecked(t *testing.T) {
	a := mustBuild(t, defaultOpts(), sampleRecords())
	opts := defaultOpts()
	opts.BaseTimestamp++
	b := mustBuild(t, opts, sampleRecords()) // same size, other CRC
	set := bytes.Join([][]byte{a, b}, nil)

	c := checkAll(a, b)
	if !c.Valid() || !c.Covers(set) {
		t.Fatalf("a checked set is not covered: %+v", c)
	}
	for name, other := range map[string][]byte{
		"first batch only":  a,
		"other order":       bytes.Join([][]byte{b, a}, nil),
		"other batch twice": bytes.Join([][]byte{a, a}, nil),
		"truncated":         set[:len(set)-1],
		"a byte more":       append(append([]byte(nil), set...), 0),
		"empty":             nil,
	} {
		if c.Covers(other) {
			t.Errorf("%s: covered by the Checked of another set", name)
		}
	}
	if (Checked{}).Valid() || (Checked{}).Covers(set) {
		t.Error("the zero Checked covers a set")
	}
}

func TestCheckedRefusesWhatValidateRefuses(t *testing.T) {
	good := mustBuild(t, defaultOpts(), sampleRecords())
	badCRC := bytes.Clone(good)
	badCRC[len(badCRC)-1] ^= 1
	badCount := bytes.Clone(good)
	setCount(badCount, 2)
	opts := defaultOpts()
	opts.Compression = CompressionLZ4
	compressed := mustBuild(t, opts, sampleRecords())
	for name, bad := range map[string][]byte{
		"bad crc":          badCRC,
		"bad record count": badCount,
		"compressed":       compressed, // left to the append
		"short":            good[:HeaderSize-1],
	} {
		// A failure anywhere spoils the set, before or after good batches.
		for _, c := range []Checked{checkAll(bad), checkAll(good, bad), checkAll(bad, good)} {
			if c.Valid() {
				t.Errorf("%s: set checked valid", name)
			}
			if c.Covers(bytes.Join([][]byte{good, bad}, nil)) || c.Covers(bad) {
				t.Errorf("%s: covers a set", name)
			}
		}
	}
}
