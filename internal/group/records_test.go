package group

import (
	"bytes"
	"encoding/hex"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestPartitionForMatchesJava(t *testing.T) {
	// Values of abs(s.hashCode()) % 50 computed with Java's rules.
	cases := map[string]int32{
		"": 0, "a": 47, "hello": 22, "my-group": 12,
		"console-consumer-12345": 6,
		"polygenelubricants":     0,  // hashCode is Integer.MIN_VALUE: Utils.abs gives 0
		"\U0001F600":             49, // a surrogate pair: two UTF-16 units
		"grüppe":                 12,
	}
	for s, want := range cases {
		if got := PartitionFor(s, 50); got != want {
			t.Errorf("PartitionFor(%q, 50) = %d, want %d", s, got, want)
		}
	}
	if got := javaStringHash("hello"); got != 99162322 {
		t.Errorf("hash(hello) = %d", got)
	}
	if got := PartitionFor("x", 0); got != 0 {
		t.Errorf("zero partitions: %d", got)
	}
}

func TestOffsetRecordBytesAreKafkas(t *testing.T) {
	// Key v1: version, group, topic, partition. Value v3: version,
	// offset, leader epoch, metadata, commit timestamp.
	r := offsetRecord("g", tp{"t", 3}, Offset{Offset: 42, LeaderEpoch: 7, Metadata: "m", CommitTime: time.UnixMilli(0x0102)})
	wantKey := "0001" + "0001" + "67" + "0001" + "74" + "00000003"
	wantValue := "0003" + "000000000000002a" + "00000007" + "0001" + "6d" + "0000000000000102"
	if got := hex.EncodeToString(r.Key); got != wantKey {
		t.Errorf("key %s, want %s", got, wantKey)
	}
	if got := hex.EncodeToString(r.Value); got != wantValue {
		t.Errorf("value %s, want %s", got, wantValue)
	}
	if gk := hex.EncodeToString(groupKey("g")); gk != "0002000167" {
		t.Errorf("group key %s", gk)
	}
}

func TestRecordRoundTrips(t *testing.T) {
	now := time.UnixMilli(1_700_000_123_456)
	o := Offset{Offset: 99, LeaderEpoch: 3, Metadata: "meta", CommitTime: now}
	d, err := decodeRecord(offsetRecord("grp", tp{"topic", 5}, o).Key, offsetRecord("grp", tp{"topic", 5}, o).Value)
	if err != nil {
		t.Fatal(err)
	}
	if !d.isOffset || d.group != "grp" || d.tp != (tp{"topic", 5}) || d.offset == nil || *d.offset != o {
		t.Fatalf("decoded %+v (%+v)", d, d.offset)
	}

	// With an expire time (OffsetCommit v2-v4 retention): value v1.
	o.ExpireTime = now.Add(time.Hour)
	o.LeaderEpoch = -1
	r := offsetRecord("grp", tp{"topic", 5}, o)
	if r.Value[1] != 1 {
		t.Fatalf("value version %d, want 1", r.Value[1])
	}
	d, err = decodeRecord(r.Key, r.Value)
	if err != nil || *d.offset != o {
		t.Fatalf("decoded %+v, %v", d.offset, err)
	}

	ts := offsetTombstone("grp", tp{"topic", 5})
	d, err = decodeRecord(ts.Key, ts.Value)
	if err != nil || !d.isOffset || d.offset != nil {
		t.Fatalf("tombstone decoded %+v, %v", d, err)
	}

	g := newGroup("grp", 0, now)
	g.protocolType = "consumer"
	g.protocol, g.generation = "range", 4
	g.addMember(&member{id: "m1", instanceID: "i1", clientID: "c1", clientHost: "/1.2.3.4", sessionTimeout: 10 * time.Second,
		rebalanceTimeout: time.Minute, protocols: []Protocol{{"range", []byte("sub1")}}, assignment: []byte("as1")})
	g.addMember(&member{id: "m2", clientID: "c2", clientHost: "/1.2.3.5", sessionTimeout: 6 * time.Second,
		rebalanceTimeout: time.Minute, protocols: []Protocol{{"range", []byte("sub2")}}, assignment: []byte("as2")})
	gr := groupRecord("grp", g.metadataValue(now))
	d, err = decodeRecord(gr.Key, gr.Value)
	if err != nil || d.isOffset || d.meta == nil {
		t.Fatalf("group decoded %+v, %v", d, err)
	}
	back := newGroup("grp", 0, now)
	back.restore(d.meta)
	if back.state != Stable || back.generation != 4 || back.protocol != "range" || back.leader != "m1" || len(back.members) != 2 {
		t.Fatalf("restored %+v", back)
	}
	m := back.members["m1"]
	if m.instanceID != "i1" || back.static["i1"] != "m1" || string(m.assignment) != "as1" || string(m.metadataFor("range")) != "sub1" || m.sessionTimeout != 10*time.Second {
		t.Fatalf("restored member %+v", m)
	}
	if !back.stateTime.Equal(now) {
		t.Fatalf("state time %v", back.stateTime)
	}

	gt := groupTombstone("grp")
	d, err = decodeRecord(gt.Key, gt.Value)
	if err != nil || d.isOffset || d.meta != nil || d.group != "grp" {
		t.Fatalf("group tombstone decoded %+v, %v", d, err)
	}
}

func TestDecodeRejectsOtherAndBadKeys(t *testing.T) {
	if _, err := decodeRecord([]byte{0, 3, 0, 0}, nil); err == nil {
		t.Error("key version 3 accepted")
	}
	if _, err := decodeRecord([]byte{0}, nil); err == nil {
		t.Error("1-byte key accepted")
	}
	if _, err := decodeRecord([]byte{0, 1, 0, 9, 'a'}, nil); err == nil {
		t.Error("truncated key accepted")
	}
	k := offsetRecord("g", tp{"t", 0}, Offset{}).Key
	if _, err := decodeRecord(k, []byte{0, 3, 1}); err == nil {
		t.Error("truncated value accepted")
	}
}

func FuzzDecodeRecord(f *testing.F) {
	now := time.UnixMilli(1_700_000_000_000)
	o := offsetRecord("g", tp{"t", 1}, Offset{Offset: 5, Metadata: "x", CommitTime: now})
	f.Add(o.Key, o.Value)
	f.Add(o.Key, []byte(nil))
	withID := offsetRecord("g", tp{"t", 1}, Offset{Offset: 5, LeaderEpoch: 3, CommitTime: now, TopicID: TopicID{1, 2, 3}})
	f.Add(withID.Key, withID.Value)
	g := newGroup("g", 0, now)
	g.protocolType = "consumer"
	g.addMember(&member{id: "m", protocols: []Protocol{{"range", []byte{1}}}})
	gr := groupRecord("g", g.metadataValue(now))
	f.Add(gr.Key, gr.Value)
	v4 := kmsg.NewGroupMetadataValue()
	v4.Version = 4
	f.Add(gr.Key, v4.AppendTo(nil))
	f.Add([]byte{0, 2, 0xff, 0xff}, []byte{0, 3, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, key, value []byte) {
		d, err := decodeRecord(key, value)
		if err != nil {
			return
		}
		// Whatever decodes must re-encode to something that decodes the same.
		switch {
		case d.isOffset && d.offset != nil:
			r := offsetRecord(d.group, d.tp, *d.offset)
			d2, err := decodeRecord(r.Key, r.Value)
			if err != nil || d2.group != d.group || d2.tp != d.tp || d2.offset.Offset != d.offset.Offset || d2.offset.Metadata != d.offset.Metadata ||
				(d.offset.ExpireTime.IsZero() && d2.offset.TopicID != d.offset.TopicID) {
				t.Fatalf("offset re-encode: %+v vs %+v (%v)", d, d2, err)
			}
		case !d.isOffset && d.meta != nil:
			back := newGroup(d.group, 0, now)
			back.restore(d.meta)
			r := groupRecord(d.group, back.metadataValue(now))
			if _, err := decodeRecord(r.Key, r.Value); err != nil {
				t.Fatalf("group re-encode: %v", err)
			}
			if !bytes.Equal(r.Key, groupKey(d.group)) {
				t.Fatal("group key changed")
			}
		}
	})
}
