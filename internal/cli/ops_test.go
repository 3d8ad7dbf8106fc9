package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestParseElectionFile(t *testing.T) {
	got, err := parseElectionFile([]byte(`{"partitions":[{"topic":"a","partition":1},{"topic":"b","partition":0},{"topic":"a","partition":0}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Topic != "a" || len(got[0].Partitions) != 2 || got[0].Partitions[1] != 0 || got[1].Topic != "b" {
		t.Fatalf("parsed %+v", got)
	}
	for in, want := range map[string]string{
		`{"partitions":[]}`: "no partitions",
		`{"partitions":[{"topic":"a","partition":1},{"topic":"a","partition":1}]}`: "duplicate partition a-1",
		`{"partitions":[{"topic":"a"}]}`:                                           "entry 0",
		`{"partitions":[{"topic":"","partition":1}]}`:                              "entry 0",
		`{"partitions":[{"topic":"a","partition":-1}]}`:                            "entry 0",
		`[1,2]`: "cannot unmarshal",
	} {
		if _, err := parseElectionFile([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", in, err, want)
		}
	}
}

func TestReportElection(t *testing.T) {
	resp := kmsg.NewPtrElectLeadersResponse()
	rt := kmsg.NewElectLeadersResponseTopic()
	rt.Topic = "t"
	for p, code := range []int16{0, kerr.ElectionNotNeeded.Code, kerr.PreferredLeaderNotAvailable.Code} {
		rp := kmsg.NewElectLeadersResponseTopicPartition()
		rp.Partition, rp.ErrorCode = int32(p), code
		rt.Partitions = append(rt.Partitions, rp)
	}
	resp.Topics = append(resp.Topics, rt)
	var out bytes.Buffer
	err := reportElection(&out, "PREFERRED", resp)
	if err == nil || !strings.Contains(err.Error(), "1 replica(s) could not be elected") {
		t.Fatalf("error %v", err)
	}
	for _, want := range []string{
		"Successfully completed leader election (PREFERRED) for partitions t-0\n",
		"Valid replica already elected for partitions t-1\n",
		"Error completing leader election (PREFERRED) for partitions t-2\n",
		"PREFERRED_LEADER_NOT_AVAILABLE",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	// Only "not needed": success.
	resp.Topics[0].Partitions = resp.Topics[0].Partitions[1:2]
	out.Reset()
	if err := reportElection(&out, "UNCLEAN", resp); err != nil {
		t.Fatalf("not needed is no failure: %v", err)
	}
}

func TestQuorumView(t *testing.T) {
	resp := kmsg.NewPtrDescribeQuorumResponse()
	p := kmsg.NewDescribeQuorumResponseTopicPartition()
	p.LeaderID, p.LeaderEpoch, p.HighWatermark = 2, 7, 100
	now := time.UnixMilli(1_000_000)
	rs := func(id int32, leo, caught int64) kmsg.DescribeQuorumResponseTopicPartitionReplicaState {
		r := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
		r.ReplicaID, r.LogEndOffset, r.LastCaughtUpTimestamp = id, leo, caught
		return r
	}
	p.CurrentVoters = append(p.CurrentVoters, rs(1, 90, 999_000), rs(2, 100, 1_000_000), rs(3, -1, -1))
	p.Observers = append(p.Observers, rs(4, 100, 1_000_000))
	n := kmsg.NewDescribeQuorumResponseNode()
	n.NodeID = 4
	l := kmsg.NewDescribeQuorumResponseNodeListener()
	l.Name, l.Host, l.Port = "CONTROLLER", "h", 9093
	n.Listeners = append(n.Listeners, l)
	resp.Nodes = append(resp.Nodes, n)
	v := quorumView(resp, &p, now)
	if v.MaxLag != 10 || v.MaxLagTimeMs != 1000 || len(v.Voters) != 3 || len(v.Observers) != 1 {
		t.Fatalf("view %+v", v)
	}
	if v.Replicas[1].Status != "Leader" || v.Replicas[0].Status != "Follower" || v.Replicas[3].Status != "Observer" ||
		v.Replicas[2].Lag != -1 || v.Replicas[3].Endpoint != "CONTROLLER://h:9093" {
		t.Fatalf("replicas %+v", v.Replicas)
	}
	var out bytes.Buffer
	if err := writeQuorum(&out, v, true, true); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"LeaderId:               2", "CurrentVoters:          [1,2,3]", "CurrentObservers:       [4]", "STATUS"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
