package interop

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/test/harness"
)

// describedConfig is one topic config as DescribeConfigs reports it.
func describedConfig(t *testing.T, adm *kadm.Client, topic, key string) kadm.Config {
	t.Helper()
	rcs, err := adm.DescribeTopicConfigs(harness.Ctx(t, opTimeout), topic)
	if err != nil {
		t.Fatalf("describe configs of %s: %v", topic, err)
	}
	rc, err := rcs.On(topic, nil)
	if err == nil {
		err = rc.Err
	}
	if err != nil {
		t.Fatalf("describe configs of %s: %v", topic, err)
	}
	for _, c := range rc.Configs {
		if c.Key == key {
			return c
		}
	}
	t.Fatalf("describe configs of %s: no %s", topic, key)
	return kadm.Config{}
}

func expectConfig(t *testing.T, adm *kadm.Client, topic, key, value string, source kmsg.ConfigSource) {
	t.Helper()
	c := describedConfig(t, adm, topic, key)
	if c.MaybeValue() != value || c.Source != source {
		t.Errorf("%s %s = %q (%v), want %q (%v)", topic, key, c.MaybeValue(), c.Source, value, source)
	}
}

func alterErr(resps kadm.AlterConfigsResponses, err error) error {
	if err != nil {
		return err
	}
	for _, r := range resps {
		if r.Err != nil {
			return fmt.Errorf("%w (%s)", r.Err, r.ErrMessage)
		}
	}
	return nil
}

// TestAdminConfigs describes, alters and incrementally alters topic
// configs, and checks where each value comes from: a topic override is
// DYNAMIC_TOPIC_CONFIG, a broker setting STATIC_BROKER_CONFIG, Kafka's
// default DEFAULT_CONFIG.
func TestAdminConfigs(t *testing.T) {
	const topic = "cfg"
	b := harness.StartBroker(t, "log.segment.bytes=536870912")
	adm := newAdmin(t, b)
	ctx := harness.Ctx(t, 2*opTimeout)
	createTopic(t, adm, topic, 1, map[string]*string{"retention.ms": strp("3600000")})

	const (
		dynamic = kmsg.ConfigSourceDynamicTopicConfig
		static  = kmsg.ConfigSourceStaticBrokerConfig
		deflt   = kmsg.ConfigSourceDefaultConfig
	)
	expectConfig(t, adm, topic, "retention.ms", "3600000", dynamic)
	expectConfig(t, adm, topic, "segment.bytes", "536870912", static)
	expectConfig(t, adm, topic, "cleanup.policy", "delete", deflt)

	incr := func(op kadm.IncrementalOp, key string, value *string) error {
		return alterErr(adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: op, Name: key, Value: value}}, topic))
	}
	steps := []struct {
		op    kadm.IncrementalOp
		value *string
		want  string
		src   kmsg.ConfigSource
	}{
		{kadm.SetConfig, strp("compact"), "compact", dynamic},
		{kadm.AppendConfig, strp("delete"), "compact,delete", dynamic},
		{kadm.SubtractConfig, strp("compact"), "delete", dynamic},
		{kadm.DeleteConfig, nil, "delete", deflt},
	}
	for _, s := range steps {
		if err := incr(s.op, "cleanup.policy", s.value); err != nil {
			t.Fatalf("incremental %v cleanup.policy %v: %v", s.op, s.value, err)
		}
		expectConfig(t, adm, topic, "cleanup.policy", s.want, s.src)
	}

	for _, bad := range []struct{ key, value string }{
		{"retention.ms", "soon"},
		{"min.insync.replicas", "0"},
		{"cleanup.policy", "shred"},
		{"no.such.config", "1"},
	} {
		if err := incr(kadm.SetConfig, bad.key, strp(bad.value)); !errors.Is(err, kerr.InvalidConfig) {
			t.Errorf("set %s=%s: %v, want INVALID_CONFIG", bad.key, bad.value, err)
		}
	}
	expectConfig(t, adm, topic, "retention.ms", "3600000", dynamic)

	// Validate-only changes nothing.
	err := alterErr(adm.ValidateAlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: strp("1000")}}, topic))
	if err != nil {
		t.Fatalf("validate-only incremental alter: %v", err)
	}
	expectConfig(t, adm, topic, "retention.ms", "3600000", dynamic)

	// The legacy AlterConfigs replaces the whole set of overrides:
	// retention.ms falls back to its default.
	err = alterErr(adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: "max.message.bytes", Value: strp("2000000")}}, topic))
	if err != nil {
		t.Fatalf("alter configs: %v", err)
	}
	expectConfig(t, adm, topic, "max.message.bytes", "2000000", dynamic)
	expectConfig(t, adm, topic, "retention.ms", "604800000", deflt)
	err = alterErr(adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: "retention.bytes", Value: strp("lots")}}, topic))
	if !errors.Is(err, kerr.InvalidConfig) {
		t.Errorf("alter configs with a bad value: %v, want INVALID_CONFIG", err)
	}
	expectConfig(t, adm, topic, "max.message.bytes", "2000000", dynamic)

	err = alterErr(adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: strp("1000")}}, "cfg-unknown"))
	if !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Errorf("alter configs of an unknown topic: %v, want UNKNOWN_TOPIC_OR_PARTITION", err)
	}

	// The broker's configs are listed, with the static override. The
	// cluster-wide resource ("") holds only values set on it at runtime,
	// as in Kafka: none here.
	brcs, err := adm.DescribeBrokerConfigs(ctx)
	if err != nil || len(brcs) != 1 || brcs[0].Err != nil || len(brcs[0].Configs) != 0 {
		t.Fatalf("describe the cluster-wide broker configs: %v %+v, want none", err, brcs)
	}
	md, err := adm.BrokerMetadata(ctx)
	if err != nil || len(md.Brokers) != 1 {
		t.Fatalf("metadata: %v %+v", err, md.Brokers)
	}
	brcs, err = adm.DescribeBrokerConfigs(ctx, md.Brokers[0].NodeID)
	if err != nil || len(brcs) != 1 || brcs[0].Err != nil {
		t.Fatalf("describe broker configs: %v %+v", err, brcs)
	}
	found := false
	for _, c := range brcs[0].Configs {
		if c.Key == "log.segment.bytes" {
			found = true
			if c.MaybeValue() != "536870912" || c.Source != static {
				t.Errorf("broker log.segment.bytes = %q (%v), want 536870912 (%v)", c.MaybeValue(), c.Source, static)
			}
		}
	}
	if !found {
		t.Error("broker configs do not list log.segment.bytes")
	}
}

// TestAdminDescribeCluster checks the broker and cluster as kadm sees
// them through Metadata and DescribeCluster.
func TestAdminDescribeCluster(t *testing.T) {
	b := harness.StartBroker(t, "node.id=7")
	adm := newAdmin(t, b)
	ctx := harness.Ctx(t, opTimeout)
	host, portStr, err := net.SplitHostPort(b.Addr)
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(portStr)

	md, err := adm.BrokerMetadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if md.Cluster == "" || md.Controller != 7 || len(md.Brokers) != 1 {
		t.Fatalf("metadata: cluster %q controller %d brokers %+v; want an id, controller 7, one broker", md.Cluster, md.Controller, md.Brokers)
	}
	if br := md.Brokers[0]; br.NodeID != 7 || br.Host != host || br.Port != int32(port) {
		t.Errorf("broker %+v, want node 7 at %s", br, b.Addr)
	}

	resp, err := kmsg.NewPtrDescribeClusterRequest().RequestWith(ctx, b.Client())
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		t.Fatalf("describe cluster: %v", err)
	}
	if resp.ClusterID != md.Cluster || resp.ControllerID != 7 || len(resp.Brokers) != 1 ||
		resp.Brokers[0].NodeID != 7 || resp.Brokers[0].Host != host || resp.Brokers[0].Port != int32(port) {
		t.Errorf("describe cluster: %+v; want cluster %q, controller 7, node 7 at %s", resp, md.Cluster, b.Addr)
	}
}
