package metadata

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/raft"
)

// mustCommand encodes a command or fails the test.
func mustCommand(t testing.TB, typ cmdType, payload any) []byte {
	t.Helper()
	b, err := encodeCommand(typ, payload)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// seededFSM is an FSM with a cluster id, two brokers and one topic.
func seededFSM(t testing.TB) *fsm {
	t.Helper()
	f := newFSM()
	cmds := [][]byte{
		mustCommand(t, cmdBootstrap, bootstrapCmd{ClusterID: "AAAAAAAAAAAAAAAAAAAAAA"}),
		mustCommand(t, cmdRegisterBroker, registerBrokerCmd{Broker: Broker{ID: 1, Host: "h1", Port: 1}}),
		mustCommand(t, cmdRegisterBroker, registerBrokerCmd{Broker: Broker{ID: 2, Host: "h2", Port: 2}}),
		mustCommand(t, cmdCreateTopic, createTopicCmd{Name: "t", ID: [16]byte{1}, Assignments: [][]int32{{1, 2}, {2, 1}}}),
	}
	for i, b := range cmds {
		if res := f.Apply(&raft.Log{Index: uint64(i + 1), Data: b}).(applyResult); res.err != nil {
			t.Fatalf("seed command %d: %v", i, res.err)
		}
	}
	return f
}

func TestFSMRejectedCommandChangesNothing(t *testing.T) {
	f := seededFSM(t)
	ch := f.changes()
	before := stateBytes(t, f.current())
	bad := []struct {
		data []byte
		want error
	}{
		{[]byte("not json"), nil},
		{[]byte(`{"v":1,"type":"launch_missiles","data":{}}`), nil},
		{[]byte(`{"v":9,"type":"bootstrap","data":{"clusterId":"x"}}`), nil},
		{mustCommand(t, cmdCreateTopic, createTopicCmd{Name: "t", ID: [16]byte{2}, Assignments: [][]int32{{1}}}), ErrTopicExists},
		{mustCommand(t, cmdCreateTopic, createTopicCmd{Name: "u", ID: [16]byte{1}, Assignments: [][]int32{{1}}}), ErrInvalidRequest},
		{mustCommand(t, cmdCreateTopic, createTopicCmd{Name: "u", ID: [16]byte{3}, Assignments: [][]int32{{5}}}), ErrInvalidReplicaAssignment},
		{mustCommand(t, cmdCreateTopic, createTopicCmd{Name: "u/v", ID: [16]byte{3}, Assignments: [][]int32{{1}}}), ErrInvalidTopic},
		{mustCommand(t, cmdDeleteTopic, deleteTopicCmd{Name: "t", ID: [16]byte{9}}), ErrUnknownTopic},
		{mustCommand(t, cmdCreatePartitions, createPartitionsCmd{Name: "t", ID: [16]byte{1}, Total: 4, Assignments: [][]int32{{1, 2}}}), ErrInvalidReplicaAssignment},
		{mustCommand(t, cmdCreatePartitions, createPartitionsCmd{Name: "t", ID: [16]byte{1}, Total: 3, Assignments: [][]int32{{1}}}), ErrInvalidReplicaAssignment},
		{mustCommand(t, cmdCreatePartitions, createPartitionsCmd{Name: "t", ID: [16]byte{1}, Total: 1}), ErrInvalidPartitions},
		{mustCommand(t, cmdAllocateProducerIDs, allocateProducerIDsCmd{N: 0}), ErrInvalidRequest},
		{mustCommand(t, cmdRegisterBroker, registerBrokerCmd{Broker: Broker{ID: -3}}), nil},
	}
	for i, tc := range bad {
		res := f.Apply(&raft.Log{Index: uint64(100 + i), Data: tc.data}).(applyResult)
		if res.err == nil {
			t.Fatalf("command %d (%s) accepted", i, tc.data)
		}
		if tc.want != nil && !errors.Is(res.err, tc.want) {
			t.Fatalf("command %d: %v, want %v", i, res.err, tc.want)
		}
	}
	if got := f.current().Index(); got != uint64(100+len(bad)-1) {
		t.Fatalf("index %d after rejected commands", got)
	}
	// Readers are woken all the same: a broker reports the index it has
	// caught up to, and must see the one a rejected command moved.
	select {
	case <-ch:
	default:
		t.Fatal("a rejected command's index did not wake Changes")
	}
	after := stateBytes(t, f.current())
	// Only the index moved.
	trim := func(b []byte) string { return string(b[strings.Index(string(b), `"clusterId"`):]) }
	if trim(after) != trim(before) {
		t.Fatalf("state changed:\n%s\n%s", before, after)
	}
}

func TestFSMSecondBootstrapKeepsClusterID(t *testing.T) {
	f := seededFSM(t)
	f.Apply(&raft.Log{Index: 10, Data: mustCommand(t, cmdBootstrap, bootstrapCmd{ClusterID: "other"})})
	if got := f.current().ClusterID(); got != "AAAAAAAAAAAAAAAAAAAAAA" {
		t.Fatalf("cluster id %q after second bootstrap", got)
	}
}

type memSink struct {
	bytes.Buffer
	cancelled bool
}

func (s *memSink) ID() string    { return "mem" }
func (s *memSink) Close() error  { return nil }
func (s *memSink) Cancel() error { s.cancelled = true; return nil }

func TestFSMSnapshotRestoreRoundTrip(t *testing.T) {
	f := seededFSM(t)
	f.Apply(&raft.Log{Index: 10, Data: mustCommand(t, cmdAlterConfigs, alterConfigsCmd{Name: "t", Set: map[string]*string{"a": strp("b")}})})
	f.Apply(&raft.Log{Index: 11, Data: mustCommand(t, cmdAllocateProducerIDs, allocateProducerIDsCmd{N: 5})})
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	// A change after Snapshot() must not leak into the persisted state.
	f.Apply(&raft.Log{Index: 12, Data: mustCommand(t, cmdDeleteTopic, deleteTopicCmd{Name: "t"})})
	var sink memSink
	if err := snap.Persist(&sink); err != nil {
		t.Fatal(err)
	}
	g := newFSM()
	ch := g.changes()
	if err := g.Restore(readCloser{&sink.Buffer}); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	<-ch // Restore publishes
	im := g.current()
	if im.Index() != 11 || im.ClusterID() != "AAAAAAAAAAAAAAAAAAAAAA" || im.NextProducerID() != 5 {
		t.Fatalf("restored index %d cluster %q next pid %d", im.Index(), im.ClusterID(), im.NextProducerID())
	}
	top := im.TopicByID([16]byte{1})
	if top == nil || top.Name != "t" || len(top.Partitions) != 2 || top.Configs["a"] != "b" {
		t.Fatalf("restored topic %+v", top)
	}
	if b, ok := im.Broker(2); !ok || b.Host != "h2" {
		t.Fatalf("restored broker 2 = %+v, %v", b, ok)
	}
}

type readCloser struct{ *bytes.Buffer }

func (readCloser) Close() error { return nil }

func TestDecodeSnapshotRejectsBrokenInvariants(t *testing.T) {
	cases := map[string]string{
		"garbage":         `{{`,
		"version 0":       `{"version":0}`,
		"version 5":       `{"version":5}`,
		"dup controller":  `{"version":4,"controllers":[{"id":2,"endpoints":[{"listener":"C","host":"h","port":1}]},{"id":2,"endpoints":[{"listener":"C","host":"h","port":1}]}]}`,
		"no ctrl ep":      `{"version":4,"controllers":[{"id":2,"endpoints":[]}]}`,
		"bad ctrl port":   `{"version":4,"controllers":[{"id":2,"endpoints":[{"listener":"C","host":"h","port":0}]}]}`,
		"bad resource":    `{"version":3,"brokerConfigs":{"01":{"a":"b"}}}`,
		"neg resource":    `{"version":3,"brokerConfigs":{"-1":{"a":"b"}}}`,
		"empty configs":   `{"version":3,"brokerConfigs":{"1":{}}}`,
		"empty key":       `{"version":3,"brokerConfigs":{"":{"":"b"}}}`,
		"negative epoch":  `{"version":2,"brokers":[{"id":1,"epoch":-1}]}`,
		"empty isr":       `{"version":2,"topics":[{"name":"a","id":[1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0],"partitions":[{"partition":0,"leader":1,"replicas":[1],"isr":[]}]}]}`,
		"isr not replica": `{"version":2,"topics":[{"name":"a","id":[1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0],"partitions":[{"partition":0,"leader":1,"replicas":[1],"isr":[1,2]}]}]}`,
		"isr duplicate":   `{"version":2,"topics":[{"name":"a","id":[1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0],"partitions":[{"partition":0,"leader":1,"replicas":[1,2],"isr":[1,1]}]}]}`,
		"dup replica":     `{"version":2,"topics":[{"name":"a","id":[1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0],"partitions":[{"partition":0,"leader":1,"replicas":[1,1],"isr":[1]}]}]}`,
		"leader not isr":  `{"version":2,"topics":[{"name":"a","id":[1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0],"partitions":[{"partition":0,"leader":2,"replicas":[1,2],"isr":[1]}]}]}`,
		"bad recovery":    `{"version":2,"topics":[{"name":"a","id":[1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0],"partitions":[{"partition":0,"leader":1,"replicas":[1],"isr":[1],"leaderRecoveryState":2}]}]}`,
		"neg part epoch":  `{"version":2,"topics":[{"name":"a","id":[1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0],"partitions":[{"partition":0,"leader":1,"replicas":[1],"isr":[1],"partitionEpoch":-1}]}]}`,
		"negative pid":    `{"version":1,"nextProducerId":-1}`,
		"dup broker":      `{"version":1,"brokers":[{"id":1},{"id":1}]}`,
		"null topic":      `{"version":1,"topics":[null]}`,
		"bad name":        `{"version":1,"topics":[{"name":"a b","id":[1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0],"partitions":[{"partition":0,"replicas":[1]}]}]}`,
		"zero id":         `{"version":1,"topics":[{"name":"a","partitions":[{"partition":0,"replicas":[1]}]}]}`,
		"no partitions":   `{"version":1,"topics":[{"name":"a","id":[1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0],"partitions":[]}]}`,
		"misnumbered":     `{"version":1,"topics":[{"name":"a","id":[1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0],"partitions":[{"partition":1,"replicas":[1]}]}]}`,
		"no replicas":     `{"version":1,"topics":[{"name":"a","id":[1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0],"partitions":[{"partition":0}]}]}`,
		"shared id":       `{"version":1,"topics":[{"name":"a","id":[1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0],"partitions":[{"partition":0,"replicas":[1]}]},{"name":"b","id":[1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0],"partitions":[{"partition":0,"replicas":[1]}]}]}`,
		"duplicate topic": `{"version":1,"topics":[{"name":"a","id":[1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0],"partitions":[{"partition":0,"replicas":[1]}]},{"name":"a","id":[2,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0],"partitions":[{"partition":0,"replicas":[1]}]}]}`,
	}
	for name, in := range cases {
		if _, err := decodeSnapshot(strings.NewReader(in)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestPlaceSpreadsReplicas(t *testing.T) {
	for n := 1; n <= 6; n++ {
		brokers := make([]placementBroker, n)
		for i := range brokers {
			brokers[i] = placementBroker{id: int32(10 + i)}
		}
		for rf := 1; rf <= n; rf++ {
			for start := 0; start < n; start++ {
				// Whole rounds of n partitions from 0 balance exactly.
				count := 3 * n
				asg := place(brokers, 0, count, rf, start)
				leaders := map[int32]int{}
				replicas := map[int32]int{}
				for p, r := range asg {
					if len(r) != rf {
						t.Fatalf("n=%d rf=%d: partition %d has %v", n, rf, p, r)
					}
					seen := map[int32]bool{}
					for _, id := range r {
						if seen[id] {
							t.Fatalf("n=%d rf=%d start=%d: partition %d repeats broker: %v", n, rf, start, p, r)
						}
						seen[id] = true
						replicas[id]++
					}
					leaders[r[0]]++
				}
				for _, b := range brokers {
					if id := b.id; leaders[id] != 3 || replicas[id] != 3*rf {
						t.Fatalf("n=%d rf=%d start=%d: unbalanced leaders %v replicas %v", n, rf, start, leaders, replicas)
					}
				}
			}
		}
	}
}

func TestPlaceContinuesNumbering(t *testing.T) {
	brokers := []placementBroker{{id: 1}, {id: 2}, {id: 3}}
	all := place(brokers, 0, 9, 2, 1)
	tail := place(brokers, 4, 5, 2, 1)
	for i, r := range tail {
		if !slices.Equal(r, all[4+i]) {
			t.Fatalf("partition %d placed %v when added later, %v when created", 4+i, r, all[4+i])
		}
	}
}

func TestUUIDFormat(t *testing.T) {
	for range 200 {
		id, err := newUUID()
		if err != nil {
			t.Fatal(err)
		}
		s := FormatUUID(id)
		if len(s) != 22 || s[0] == '-' || id == ([16]byte{}) {
			t.Fatalf("bad uuid %q", s)
		}
		back, err := ParseUUID(s)
		if err != nil || back != id {
			t.Fatalf("ParseUUID(%q) = %v, %v", s, back, err)
		}
	}
	if _, err := ParseUUID("short"); err == nil {
		t.Fatal("ParseUUID accepted a short string")
	}
}
