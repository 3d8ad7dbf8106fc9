package cli_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/test/harness"
)

// TestConfigBrokerAlterCluster: in a cluster, a broker's dynamic config set
// through that broker (which forwards it to the active controller) applies
// to that broker alone, and the cluster-wide default to every broker.
func TestConfigBrokerAlterCluster(t *testing.T) {
	t.Parallel()
	c := harness.StartCluster(t, 3, "auto.create.topics.enable=false")
	bs := "--bootstrap-server=" + strings.Join(c.Bootstrap(), ",")
	// Every node serves, but may not be unfenced (listed in Metadata) yet.
	// Ask directly: kadm's BrokerMetadata answers from the client's cache.
	var md *kmsg.MetadataResponse
	probe := c.Client()
	harness.WaitFor(t, opTimeout, "all three brokers in the metadata", func() bool {
		req := kmsg.NewPtrMetadataRequest()
		req.Topics = []kmsg.MetadataRequestTopic{}
		var err error
		md, err = req.RequestWith(harness.Ctx(t, opTimeout), probe)
		return err == nil && len(md.Brokers) == 3 && md.ControllerID >= 0
	})
	// A client made now knows every broker, to send each its own requests.
	adm := kadm.NewClient(c.Client())
	var ids []int32
	for _, br := range md.Brokers {
		ids = append(ids, br.NodeID)
	}
	slices.Sort(ids)
	// f is not the controller, so its alter is forwarded; other is any
	// other broker.
	var f, other int32 = -1, -1
	for _, id := range ids {
		switch {
		case id != md.ControllerID && f < 0:
			f = id
		case other < 0 && id != f:
			other = id
		}
	}
	if f < 0 || other < 0 {
		t.Fatalf("brokers %v, controller %d", ids, md.ControllerID)
	}

	// A topic with one partition on each: partition 0 on f, 1 on other.
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 60_000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "split", -1, -1
	for p, r := range []int32{f, other} {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = int32(p), []int32{r}
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(harness.Ctx(t, opTimeout), c.Client())
	if err == nil {
		err = kerr.ErrorForCode(resp.Topics[0].ErrorCode)
	}
	if err != nil {
		t.Fatalf("create split: %v", err)
	}
	cl := c.Client(kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produce := func(p int32) error {
		r := &kgo.Record{Topic: "split", Partition: p, Value: []byte(strings.Repeat("x", 7000))}
		return cl.ProduceSync(harness.Ctx(t, opTimeout), r).FirstErr()
	}
	// refused waits until broker id refuses the 7000-byte record to its
	// partition p: it reports a new config as soon as its metadata has it,
	// and applies it to its logs a moment later.
	refused := func(p, id int32) {
		t.Helper()
		var last error
		harness.WaitFor(t, opTimeout, fmt.Sprintf("broker %d to refuse 7000 bytes", id), func() bool {
			last = produce(p)
			if last != nil && !errors.Is(last, kerr.MessageTooLarge) {
				t.Fatalf("7000 bytes to broker %d: %v, want MESSAGE_TOO_LARGE or success", id, last)
			}
			return last != nil
		})
	}
	// sees waits until broker id itself answers message.max.bytes = want.
	sees := func(id int32, want string) {
		t.Helper()
		harness.WaitFor(t, opTimeout, fmt.Sprintf("broker %d to report message.max.bytes %s", id, want), func() bool {
			rcs, err := adm.DescribeBrokerConfigs(harness.Ctx(t, opTimeout), id)
			if err != nil || len(rcs) != 1 {
				return false
			}
			i := slices.IndexFunc(rcs[0].Configs, func(c kadm.Config) bool { return c.Key == "message.max.bytes" })
			return i >= 0 && rcs[0].Configs[i].MaybeValue() == want
		})
	}

	ok(t, "", "config", "alter", fmt.Sprintf("--broker=%d", f), "--add-config", "message.max.bytes=5000", bs)
	sees(f, "5000")
	if got := configTable(t, ok(t, "", "config", "describe", fmt.Sprintf("--broker=%d", f), bs).stdout); got["message.max.bytes"] != (configRow{"5000", "DYNAMIC_BROKER_CONFIG"}) {
		t.Errorf("describe --broker %d = %v", f, got)
	}
	if got := configTable(t, ok(t, "", "config", "describe", fmt.Sprintf("--broker=%d", other), "--all", bs).stdout); got["message.max.bytes"] != (configRow{"1048588", "DEFAULT_CONFIG"}) {
		t.Errorf("describe --broker %d --all: message.max.bytes = %+v, want the default", other, got["message.max.bytes"])
	}
	refused(0, f)
	if err := produce(1); err != nil {
		t.Errorf("7000 bytes to broker %d with the default message.max.bytes: %v", other, err)
	}

	ok(t, "", "config", "alter", "--broker-defaults", "--add-config", "message.max.bytes=6000", bs)
	for _, id := range ids {
		want := "6000"
		if id == f {
			want = "5000" // its own value wins
		}
		sees(id, want)
	}
	refused(1, other)
}
