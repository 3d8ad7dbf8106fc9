package metadata

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/raft"
)

// oldLog and oldSnapshot are byte for byte what the metadata code before
// the broker lifecycle (commit 4a18604) wrote: its log entries for a small
// single-node history (including a broker restart, which re-registered),
// and its snapshot of the resulting state.
var oldLog = []string{
	`{"v":1,"type":"bootstrap","data":{"clusterId":"MkU3OEVBNTcwNTJENDM2Qk"}}`,
	`{"v":1,"type":"register_broker","data":{"broker":{"id":1,"host":"127.0.0.1","port":9092,"endpoints":[{"listener":"PLAINTEXT","host":"127.0.0.1","port":9092,"securityProtocol":"PLAINTEXT"}]}}}`,
	`{"v":1,"type":"register_broker","data":{"broker":{"id":2,"host":"127.0.0.1","port":9093,"rack":"r2"}}}`,
	`{"v":1,"type":"create_topic","data":{"name":"orders","id":[1,2,3,0,0,0,0,0,0,0,0,0,0,0,0,0],"assignments":[[1,2],[2,1]],"configs":{"retention.ms":"1000"}}}`,
	`{"v":1,"type":"create_topic","data":{"name":"solo","id":[4,5,6,0,0,0,0,0,0,0,0,0,0,0,0,0],"assignments":[[1]]}}`,
	`{"v":1,"type":"register_broker","data":{"broker":{"id":1,"host":"127.0.0.1","port":9092}}}`,
	`{"v":1,"type":"allocate_producer_ids","data":{"n":1000}}`,
}

const oldSnapshot = `{"version":1,"index":7,"clusterId":"MkU3OEVBNTcwNTJENDM2Qk","nextProducerId":1000,"brokers":[{"id":1,"host":"127.0.0.1","port":9092},{"id":2,"host":"127.0.0.1","port":9093,"rack":"r2"}],"topics":[{"name":"orders","id":[1,2,3,0,0,0,0,0,0,0,0,0,0,0,0,0],"partitions":[{"partition":0,"leader":1,"leaderEpoch":0,"replicas":[1,2],"isr":[1,2],"partitionEpoch":0},{"partition":1,"leader":2,"leaderEpoch":0,"replicas":[2,1],"isr":[2,1],"partitionEpoch":0}],"configs":{"retention.ms":"1000"}},{"name":"solo","id":[4,5,6,0,0,0,0,0,0,0,0,0,0,0,0,0],"partitions":[{"partition":0,"leader":1,"leaderEpoch":0,"replicas":[1],"isr":[1],"partitionEpoch":0}]}]}
`

// checkOldState checks im is the state oldLog describes, read as legacy
// registrations: every broker unfenced at epoch 0, partitions as the old
// code left them.
func checkOldState(t *testing.T, im *Image) {
	t.Helper()
	if im.ClusterID() != "MkU3OEVBNTcwNTJENDM2Qk" || im.NextProducerID() != 1000 {
		t.Fatalf("cluster %q next pid %d", im.ClusterID(), im.NextProducerID())
	}
	for _, id := range []int32{1, 2} {
		b, ok := im.Broker(id)
		if !ok || b.Fenced || b.InControlledShutdown || b.Epoch != 0 || b.Incarnation != ([16]byte{}) {
			t.Fatalf("broker %d = %+v, %v; want a live legacy registration", id, b, ok)
		}
	}
	if b, _ := im.Broker(2); b.Rack != "r2" || b.Port != 9093 {
		t.Fatalf("broker 2 = %+v", b)
	}
	want := map[string][]Partition{
		"orders": {{Partition: 0, Leader: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 2}},
			{Partition: 1, Leader: 2, Replicas: []int32{2, 1}, ISR: []int32{2, 1}}},
		"solo": {{Partition: 0, Leader: 1, Replicas: []int32{1}, ISR: []int32{1}}},
	}
	for name, parts := range want {
		top := im.TopicByName(name)
		if top == nil || len(top.Partitions) != len(parts) {
			t.Fatalf("topic %s = %+v", name, top)
		}
		for i, p := range parts {
			got := top.Partitions[i]
			if got.Leader != p.Leader || !slices.Equal(got.ISR, p.ISR) || !slices.Equal(got.Replicas, p.Replicas) ||
				got.LeaderEpoch != 0 || got.PartitionEpoch != 0 {
				t.Fatalf("%s-%d = %+v, want %+v", name, i, got, p)
			}
		}
	}
	if err := checkImage(im); err != nil {
		t.Fatal(err)
	}
}

func TestOldLogAndOldSnapshotAgree(t *testing.T) {
	replayed := emptyImage()
	for i, e := range oldLog {
		var res applyResult
		if replayed, res = applyCommand(replayed, uint64(i+1), []byte(e)); res.err != nil {
			t.Fatalf("old entry %d: %v", i+1, res.err)
		}
	}
	checkOldState(t, replayed)
	restored, err := decodeSnapshot(strings.NewReader(oldSnapshot))
	if err != nil {
		t.Fatalf("version 1 snapshot: %v", err)
	}
	checkOldState(t, restored)
	// A node that restored the old snapshot and one that replayed the old
	// log must hold the same state, or the next command could split them.
	if a, b := stateBytes(t, replayed), stateBytes(t, restored); !bytes.Equal(a, b) {
		t.Fatalf("replayed and restored states differ:\n%s\n%s", a, b)
	}
	// Written again, it is a current-version snapshot that reads back the same.
	again, err := decodeSnapshot(bytes.NewReader(stateBytes(t, restored)))
	if err != nil || !bytes.Equal(stateBytes(t, again), stateBytes(t, restored)) {
		t.Fatalf("version %d round trip: %v", snapshotVersion, err)
	}
	if !bytes.Contains(stateBytes(t, again), []byte(fmt.Sprintf(`"version":%d`, snapshotVersion))) {
		t.Fatalf("snapshot not written as version %d", snapshotVersion)
	}
}

// upgradeToIncarnations does what an upgraded broker does on its first
// start: register an incarnation (fencing the legacy registration) and,
// once caught up, unfence. It checks the partitions come back led by it.
func upgradeToIncarnations(t *testing.T, c *Controller) {
	t.Helper()
	ctx := testCtx(t)
	before := c.Image()
	epoch, err := c.RegisterIncarnation(ctx, BrokerRegistration{ID: 1, Incarnation: [16]byte{7}, Host: "127.0.0.1", Port: 9092})
	if err != nil {
		t.Fatalf("RegisterIncarnation: %v", err)
	}
	if p, _ := c.Image().Partition("solo", 0); p.Leader != -1 {
		t.Fatalf("solo-0 after the new incarnation registered: %+v", p)
	}
	if err := c.UnfenceBroker(ctx, 1, epoch); err != nil {
		t.Fatalf("UnfenceBroker: %v", err)
	}
	im := c.Image()
	for _, tp := range []struct {
		topic  string
		p      int32
		leader int32
		isr    []int32
	}{{"solo", 0, 1, []int32{1}}, {"orders", 0, 2, []int32{2}}, {"orders", 1, 2, []int32{2}}} {
		p, _ := im.Partition(tp.topic, tp.p)
		old, _ := before.Partition(tp.topic, tp.p)
		if p.Leader != tp.leader || !slices.Equal(p.ISR, tp.isr) || p.PartitionEpoch <= old.PartitionEpoch {
			t.Fatalf("%s-%d after upgrade: %+v (was %+v)", tp.topic, tp.p, p, old)
		}
	}
	if err := checkImage(im); err != nil {
		t.Fatal(err)
	}
}

// An existing data dir whose Raft log was written by the old code comes up
// with the old state, keeps working as before, and upgrades cleanly.
func TestUpgradeFromOldRaftLog(t *testing.T) {
	c := openLeader(t, testConfig(t.TempDir()))
	ctx := testCtx(t)
	// A fresh leader has written its own bootstrap already; the old
	// entries follow, exactly as the old code wrote them.
	for _, e := range oldLog[1:] {
		f := c.raft.Apply([]byte(e), testTimeout)
		if err := f.Error(); err != nil {
			t.Fatal(err)
		}
		if res := f.Response().(applyResult); res.err != nil {
			t.Fatalf("old entry %s: %v", e, res.err)
		}
	}
	c = reopen(t, c) // replays the log
	im := c.Image()
	if b, _ := im.Broker(1); b.Fenced || b.Epoch != 0 {
		t.Fatalf("broker 1 after replay: %+v", b)
	}
	if p, _ := im.Partition("orders", 1); p.Leader != 2 || !slices.Equal(p.ISR, []int32{2, 1}) {
		t.Fatalf("orders-1 after replay: %+v", p)
	}
	// The broker as it is today re-registers statically and creates topics.
	if err := c.RegisterBroker(ctx, Broker{ID: 1, Host: "127.0.0.1", Port: 9092}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTopic(ctx, CreateTopic{Name: "after", NumPartitions: 2, ReplicationFactor: 2}); err != nil {
		t.Fatalf("create after upgrade: %v", err)
	}
	upgradeToIncarnations(t, c)
	want := stateBytes(t, c.Image())
	if err := c.raft.Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	c = reopen(t, c) // from a current-version snapshot
	if got := stateBytes(t, c.Image()); !bytes.Equal(got, want) {
		t.Fatalf("state after reopening from a current-version snapshot differs:\n%s\n%s", got, want)
	}
}

// A data dir whose latest Raft snapshot was written by the old code.
func TestUpgradeFromOldRaftSnapshot(t *testing.T) {
	dir := t.TempDir()
	snaps, err := raft.NewFileSnapshotStore(dir, 2, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	_, trans := raft.NewInmemTransport("127.0.0.1:1")
	conf := raft.Configuration{Servers: []raft.Server{{Suffrage: raft.Voter, ID: "1", Address: "127.0.0.1:1"}}}
	sink, err := snaps.Create(raft.SnapshotVersionMax, 7, 1, conf, 1, trans)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sink.Write([]byte(oldSnapshot)); err != nil {
		t.Fatal(err)
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	c := openLeader(t, testConfig(dir))
	checkOldState(t, c.Image())
	upgradeToIncarnations(t, c)
}
