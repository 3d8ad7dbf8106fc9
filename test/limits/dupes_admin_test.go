package limits

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/test/harness"
)

// TestDuplicateConfigResources: DescribeConfigs, AlterConfigs and
// IncrementalAlterConfigs answer every copy of a resource named twice with
// INVALID_REQUEST "Each resource must appear at most once." (Kafka's rule
// for the alter requests) and change nothing; a config named twice in one
// resource is INVALID_REQUEST too.
func TestDuplicateConfigResources(t *testing.T) {
	b, _ := startBroker(t)
	c := b.Dial()
	mustCreate(t, c, "cfg", 1)
	mustCreate(t, c, "other", 1)

	dreq := kmsg.NewPtrDescribeConfigsRequest()
	dreq.SetVersion(4)
	for _, name := range []string{"cfg", "other", "cfg"} {
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, name
		dreq.Resources = append(dreq.Resources, r)
	}
	dresp, _ := c.Request(dreq)
	rs := dresp.(*kmsg.DescribeConfigsResponse).Resources
	if len(rs) != 3 {
		t.Fatalf("%d answers, want 3", len(rs))
	}
	for i, want := range []*kerr.Error{kerr.InvalidRequest, nil, kerr.InvalidRequest} {
		expectCode(t, "describe entry "+itoa(i), rs[i].ErrorCode, want)
	}
	if len(rs[0].Configs) != 0 || len(rs[1].Configs) == 0 {
		t.Fatalf("configs: %d for the duplicate, %d for the other; want none and all", len(rs[0].Configs), len(rs[1].Configs))
	}
	if deref(rs[0].ErrorMessage) != "Each resource must appear at most once." {
		t.Fatalf("message %q", deref(rs[0].ErrorMessage))
	}

	areq := kmsg.NewPtrAlterConfigsRequest()
	areq.SetVersion(2)
	for _, v := range []string{"1000", "2000"} {
		r := kmsg.NewAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, "cfg"
		cfg := kmsg.NewAlterConfigsRequestResourceConfig()
		cfg.Name, cfg.Value = "retention.ms", kmsg.StringPtr(v)
		r.Configs = append(r.Configs, cfg)
		areq.Resources = append(areq.Resources, r)
	}
	r := kmsg.NewAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, "other"
	for _, v := range []string{"1000", "2000"} {
		cfg := kmsg.NewAlterConfigsRequestResourceConfig()
		cfg.Name, cfg.Value = "retention.ms", kmsg.StringPtr(v)
		r.Configs = append(r.Configs, cfg)
	}
	areq.Resources = append(areq.Resources, r)
	aresp, _ := c.Request(areq)
	for i, ar := range aresp.(*kmsg.AlterConfigsResponse).Resources {
		expectCode(t, "alter entry "+itoa(i), ar.ErrorCode, kerr.InvalidRequest)
	}

	ireq := kmsg.NewPtrIncrementalAlterConfigsRequest()
	ireq.SetVersion(1)
	for range 2 {
		r := kmsg.NewIncrementalAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, "cfg"
		cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		cfg.Name, cfg.Op, cfg.Value = "retention.ms", kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr("3000")
		r.Configs = append(r.Configs, cfg)
		ireq.Resources = append(ireq.Resources, r)
	}
	iresp, _ := c.Request(ireq)
	if rs := iresp.(*kmsg.IncrementalAlterConfigsResponse).Resources; len(rs) != 2 ||
		rs[0].ErrorCode != kerr.InvalidRequest.Code || rs[1].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("incremental alter twice: %+v, want INVALID_REQUEST for both", rs)
	}

	// Nothing was changed.
	one := kmsg.NewPtrDescribeConfigsRequest()
	one.SetVersion(4)
	for _, name := range []string{"cfg", "other"} {
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType, r.ResourceName, r.ConfigNames = kmsg.ConfigResourceTypeTopic, name, []string{"retention.ms"}
		one.Resources = append(one.Resources, r)
	}
	oresp, _ := c.Request(one)
	for _, r := range oresp.(*kmsg.DescribeConfigsResponse).Resources {
		if len(r.Configs) != 1 || r.Configs[0].Source != kmsg.ConfigSourceDefaultConfig {
			t.Fatalf("%s: retention.ms %+v, want the default (a refused request changed it)", r.ResourceName, r.Configs)
		}
	}
}

// TestDuplicateGroupRequests: the group requests answer a group or
// partition named many times once: OffsetCommit commits the last copy,
// OffsetFetch (one group and several), OffsetDelete, DescribeGroups,
// DeleteGroups and ConsumerGroupDescribe answer once each.
func TestDuplicateGroupRequests(t *testing.T) {
	b, _ := startBroker(t)
	c := b.Dial()
	mustCreate(t, c, "gt", 2)

	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.SetVersion(8)
	commit.Group, commit.Generation = "g", -1
	for _, off := range []int64{1, 2, 3} {
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = "gt"
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = 0, off, -1
		rt.Partitions = append(rt.Partitions, rp)
		commit.Topics = append(commit.Topics, rt)
	}
	// Partition 1 once, so the group outlives the OffsetDelete of 0.
	p1 := kmsg.NewOffsetCommitRequestTopicPartition()
	p1.Partition, p1.Offset, p1.LeaderEpoch = 1, 1, -1
	commit.Topics[0].Partitions = append(commit.Topics[0].Partitions, p1)
	// The first commit waits for the coordinator (FindCoordinator creates
	// __consumer_offsets, then its partitions load).
	var cresp kmsg.Response
	harness.WaitFor(t, opTimeout, "the group coordinator", func() bool {
		find := kmsg.NewPtrFindCoordinatorRequest()
		find.CoordinatorKey = "g"
		c.Request(find)
		cresp, _ = c.Request(commit)
		switch cresp.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode {
		case kerr.NotCoordinator.Code, kerr.CoordinatorLoadInProgress.Code, kerr.CoordinatorNotAvailable.Code:
			return false
		}
		return true
	})
	if ts := cresp.(*kmsg.OffsetCommitResponse).Topics; len(ts) != 1 || len(ts[0].Partitions) != 2 ||
		ts[0].Partitions[0].ErrorCode != 0 || ts[0].Partitions[1].ErrorCode != 0 {
		t.Fatalf("commit: %+v, want partitions 0 (named thrice) and 1 once each, no error", ts)
	}

	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.SetVersion(7)
	fetch.Group = "g"
	for range 3 {
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic, rt.Partitions = "gt", []int32{0, 0}
		fetch.Topics = append(fetch.Topics, rt)
	}
	fresp, _ := c.Request(fetch)
	if ts := fresp.(*kmsg.OffsetFetchResponse).Topics; len(ts) != 1 || len(ts[0].Partitions) != 1 || ts[0].Partitions[0].Offset != 3 {
		t.Fatalf("fetch: %+v, want partition 0 once at the last committed offset, 3", ts)
	}
	fetch8 := kmsg.NewPtrOffsetFetchRequest()
	fetch8.SetVersion(8)
	for range 3 {
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group = "g"
		rt := kmsg.NewOffsetFetchRequestGroupTopic()
		rt.Topic, rt.Partitions = "gt", []int32{0, 0}
		g.Topics = append(g.Topics, rt)
		fetch8.Groups = append(fetch8.Groups, g)
	}
	f8resp, _ := c.Request(fetch8)
	if gs := f8resp.(*kmsg.OffsetFetchResponse).Groups; len(gs) != 1 || len(gs[0].Topics) != 1 || len(gs[0].Topics[0].Partitions) != 1 {
		t.Fatalf("fetch v8: %+v, want group g once with partition 0 once", gs)
	}

	del := kmsg.NewPtrOffsetDeleteRequest()
	del.Group = "g"
	for range 2 {
		rt := kmsg.NewOffsetDeleteRequestTopic()
		rt.Topic = "gt"
		for range 2 {
			rp := kmsg.NewOffsetDeleteRequestTopicPartition()
			rp.Partition = 0
			rt.Partitions = append(rt.Partitions, rp)
		}
		del.Topics = append(del.Topics, rt)
	}
	dresp, _ := c.Request(del)
	if r := dresp.(*kmsg.OffsetDeleteResponse); r.ErrorCode != 0 || len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
		t.Fatalf("offset delete: %+v, want partition 0 once", r)
	}

	desc := kmsg.NewPtrDescribeGroupsRequest()
	desc.SetVersion(5)
	desc.Groups = []string{"g", "g", "none", "g"}
	descResp, _ := c.Request(desc)
	if gs := descResp.(*kmsg.DescribeGroupsResponse).Groups; len(gs) != 2 || gs[0].Group != "g" || gs[1].Group != "none" {
		t.Fatalf("describe groups: %+v, want g and none once each", gs)
	}
	cdesc := kmsg.NewPtrConsumerGroupDescribeRequest()
	cdesc.Groups = []string{"cg", "cg", "cg"}
	cdescResp, _ := c.Request(cdesc)
	if gs := cdescResp.(*kmsg.ConsumerGroupDescribeResponse).Groups; len(gs) != 1 {
		t.Fatalf("consumer group describe: %d answers, want 1", len(gs))
	}
	delg := kmsg.NewPtrDeleteGroupsRequest()
	delg.SetVersion(2)
	delg.Groups = []string{"g", "g"}
	delgResp, _ := c.Request(delg)
	if gs := delgResp.(*kmsg.DeleteGroupsResponse).Groups; len(gs) != 1 || gs[0].ErrorCode != 0 {
		t.Fatalf("delete groups: %+v, want g deleted once", gs)
	}
}
