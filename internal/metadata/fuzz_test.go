package metadata

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzApplyCommand feeds arbitrary log entries to the state machine: it
// must never panic, a rejected entry must leave the state as it was, and an
// accepted one must leave a state that survives a snapshot round trip.
func FuzzApplyCommand(f *testing.F) {
	seeds := []struct {
		t cmdType
		p any
	}{
		{cmdRegisterBroker, registerBrokerCmd{Broker: Broker{ID: 1, Host: "h", Port: 1, Incarnation: [16]byte{5}}}},
		{cmdFenceBroker, fenceBrokerCmd{brokerRef{ID: 1}}},
		{cmdUnfenceBroker, unfenceBrokerCmd{brokerRef{ID: 2}}},
		{cmdBeginControlledShutdown, controlledShutdownCmd{brokerRef{ID: 1}}},
		{cmdAlterPartition, alterPartitionCmd{BrokerID: 1, Updates: []ISRUpdate{
			{TopicID: [16]byte{1}, NewISR: ISRMembers([]int32{1})},
			{TopicID: [16]byte{1}, Partition: 1, NewISR: []ISRMember{{BrokerID: 2, BrokerEpoch: 0}, {BrokerID: 1, BrokerEpoch: -1}}, LeaderRecoveryState: 1}}}},
		{cmdElectLeaders, electLeadersCmd{Type: ElectPreferred, Partitions: []partitionRef{{TopicID: [16]byte{1}, Partition: 1}}}},
		{cmdElectLeaders, electLeadersCmd{Type: ElectUnclean, Partitions: []partitionRef{{TopicID: [16]byte{1}}, {TopicID: [16]byte{2}, Partition: -1}}}},
		{cmdBootstrap, bootstrapCmd{ClusterID: "x"}},
		{cmdStaticDefaults, staticDefaultsCmd{MinISR: 2}},
		{cmdRegisterBroker, registerBrokerCmd{Broker: Broker{ID: 3, Host: "h", Port: 9092, Endpoints: []Endpoint{{Listener: "PLAINTEXT", Host: "h", Port: 9092}}}}},
		{cmdCreateTopic, createTopicCmd{Name: "new", ID: [16]byte{7}, Assignments: [][]int32{{1}, {2, 1}}}},
		{cmdCreateTopic, createTopicCmd{Name: "new", ID: [16]byte{7}, Assignments: [][]int32{{1, 2}}, Configs: map[string]string{"k": "v"}}},
		{cmdDeleteTopic, deleteTopicCmd{Name: "t"}},
		{cmdCreatePartitions, createPartitionsCmd{Name: "t", Total: 3, Assignments: [][]int32{{2, 1}}}},
		{cmdAlterConfigs, alterConfigsCmd{Name: "t", Set: map[string]*string{"a": strp("1"), "b": nil}, ReplaceAll: true}},
		{cmdAlterBrokerConfigs, alterBrokerConfigsCmd{Resource: "", Set: map[string]*string{"log.retention.ms": strp("1"), "b": nil}}},
		{cmdAlterBrokerConfigs, alterBrokerConfigsCmd{Resource: "2", Set: map[string]*string{"a": strp("1")}, ReplaceAll: true}},
		{cmdAlterBrokerConfigs, alterBrokerConfigsCmd{Resource: "x", Set: map[string]*string{"a": strp("1")}}},
		{cmdAllocateProducerIDs, allocateProducerIDsCmd{N: 1000}},
		{cmdCreateTopic, createTopicCmd{Name: "new", ID: [16]byte{7}, Assignments: [][]int32{{1}}, Pending: true,
			Limits: &PartitionLimits{MaxBrokerPartitions: 3, MaxPartitions: 4}}},
		{cmdCreatePartitions, createPartitionsCmd{Name: "t", Total: 3, Assignments: [][]int32{{2, 1}}, Limits: &PartitionLimits{MaxPartitions: 2}}},
		{cmdActivateTopic, topicRefCmd{Name: "t", ID: [16]byte{1}}},
		{cmdAbortTopic, topicRefCmd{Name: "t", ID: [16]byte{1}}},
		{cmdReassignPartitions, reassignPartitionsCmd{Partitions: []reassignmentRef{
			{TopicID: [16]byte{1}, Partition: 0, Replicas: []int32{2, 3}},
			{TopicID: [16]byte{1}, Partition: 1, Cancel: true, AllowUnclean: true},
			{TopicID: [16]byte{1}, Partition: 0, Replicas: []int32{1}, KeepReplicationFactor: true}}}},
		{cmdUnregisterBroker, unregisterBrokerCmd{brokerRef{ID: 2, Epoch: 0}}},
		{cmdRegisterController, registerControllerCmd{ControllerRecord{ID: 4, Endpoints: []Endpoint{{Listener: "CONTROLLER", Host: "h", Port: 9093}}}}},
	}
	for _, s := range seeds {
		f.Add(mustCommand(f, s.t, s.p))
	}
	f.Add([]byte(`{"v":1,"type":"create_topic","data":{"name":"a_b","id":[9],"assignments":[[1]]}}`))
	f.Add([]byte(`{"v":1,"type":"allocate_producer_ids","data":{"n":9223372036854775807}}`))
	f.Add([]byte(`null`))
	for _, e := range oldLog {
		f.Add([]byte(e))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		base := seededFSM(t).current()
		before := stateBytes(t, base)
		next, res := applyCommand(base, 99, data)
		if next.Index() != 99 {
			t.Fatalf("index %d, want 99", next.Index())
		}
		if !bytes.Equal(stateBytes(t, base), before) {
			t.Fatal("apply modified the input image")
		}
		if res.err != nil {
			if got := stateBytes(t, next); !bytes.Equal(got[strings.Index(string(got), `"clusterId"`):], before[strings.Index(string(before), `"clusterId"`):]) {
				t.Fatalf("rejected command changed state: %v", res.err)
			}
			return
		}
		// Whatever a command does, the cluster rules hold after it.
		if err := checkImage(next); err != nil {
			t.Fatalf("accepted command %q broke an invariant: %v", data, err)
		}
		if err := checkStep(base, next, 1); err != nil {
			t.Fatalf("accepted command %q: %v", data, err)
		}
		encoded := stateBytes(t, next)
		restored, err := decodeSnapshot(bytes.NewReader(encoded))
		if err != nil {
			t.Fatalf("accepted command %q left a state that does not restore: %v", data, err)
		}
		if !bytes.Equal(stateBytes(t, restored), encoded) {
			t.Fatal("snapshot round trip changed the state")
		}
	})
}

// FuzzDecodeSnapshot feeds arbitrary snapshot bytes to the decoder: it must
// never panic, and whatever it accepts must re-encode to something it
// decodes to the same state.
func FuzzDecodeSnapshot(f *testing.F) {
	var buf bytes.Buffer
	if err := encodeSnapshot(&buf, seededFSM(f).current()); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add([]byte(`{"version":1}`))
	f.Add([]byte(`{"version":4,"controllers":[{"id":2,"endpoints":[{"listener":"CONTROLLER","host":"h","port":9093}]}]}`))
	f.Add([]byte(`{"version":3,"brokerConfigs":{"":{"log.retention.ms":"1"},"2":{"a":"b"}}}`))
	f.Add([]byte(oldSnapshot))
	f.Add([]byte(`{"version":2,"brokers":[{"id":1,"incarnation":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16],"epoch":12,"fenced":true,"inControlledShutdown":true}],"topics":[{"name":"a","id":[1],"partitions":[{"partition":0,"leader":-1,"leaderEpoch":3,"replicas":[1,2],"isr":[1],"partitionEpoch":5,"leaderRecoveryState":1}]}]}`))
	f.Add([]byte(`{"version":1,"topics":[{"name":"a","id":[1],"partitions":[{"partition":0,"replicas":[1]}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		im, err := decodeSnapshot(bytes.NewReader(data))
		if err != nil {
			return
		}
		once := stateBytes(t, im)
		again, err := decodeSnapshot(bytes.NewReader(once))
		if err != nil {
			t.Fatalf("re-encoded snapshot rejected: %v", err)
		}
		if !bytes.Equal(stateBytes(t, again), once) {
			t.Fatal("snapshot round trip is not stable")
		}
	})
}
