package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestOddButValidInputs sends requests with empty lists, null names,
// unknown topic ids, negative partitions and extreme limits: each must be
// answered (a handler panic closes the connection) on the same connection.
func TestOddButValidInputs(t *testing.T) {
	b := startTestBroker(t)
	c := b.dial()
	c.createTopic("odd", 1, nil)

	var reqs []kmsg.Request
	add := func(r kmsg.Request, v int16) { r.SetVersion(v); reqs = append(reqs, r) }

	md := kmsg.NewPtrMetadataRequest()
	md.Topics = []kmsg.MetadataRequestTopic{{Topic: nil}, {Topic: kmsg.StringPtr("")}}
	add(md, 12)
	add(kmsg.NewPtrMetadataRequest(), 0)

	f := kmsg.NewPtrFetchRequest()
	f.MaxWaitMillis, f.MinBytes, f.MaxBytes = 0, 1<<30, 1
	f.Topics = []kmsg.FetchRequestTopic{{TopicID: [16]byte{1}, Partitions: []kmsg.FetchRequestTopicPartition{{Partition: -1, FetchOffset: -5, PartitionMaxBytes: -1}}}}
	add(f, 13)
	f4 := kmsg.NewPtrFetchRequest()
	f4.Topics = []kmsg.FetchRequestTopic{{Topic: "odd", Partitions: []kmsg.FetchRequestTopicPartition{{Partition: -1}, {Partition: 0, FetchOffset: 1 << 62, PartitionMaxBytes: 0}}}}
	add(f4, 4)

	lo := kmsg.NewPtrListOffsetsRequest()
	lo.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: "odd", Partitions: []kmsg.ListOffsetsRequestTopicPartition{{Partition: -1, Timestamp: -1}, {Partition: 0, Timestamp: -9}, {Partition: 0, Timestamp: 1 << 62}}}}
	add(lo, 0)

	ofe := kmsg.NewPtrOffsetForLeaderEpochRequest()
	ofe.Topics = []kmsg.OffsetForLeaderEpochRequestTopic{{Topic: "odd", Partitions: []kmsg.OffsetForLeaderEpochRequestTopicPartition{{Partition: -3, LeaderEpoch: -1}, {Partition: 0, LeaderEpoch: 1 << 30}}}}
	add(ofe, 4)

	add(kmsg.NewPtrCreateTopicsRequest(), 7)
	dt := kmsg.NewPtrDeleteTopicsRequest()
	dt.Topics = []kmsg.DeleteTopicsRequestTopic{{Topic: nil}}
	add(dt, 6)

	dr := kmsg.NewPtrDeleteRecordsRequest()
	dr.Topics = []kmsg.DeleteRecordsRequestTopic{{Topic: "odd", Partitions: []kmsg.DeleteRecordsRequestTopicPartition{{Partition: -1, Offset: -7}, {Partition: 0, Offset: -7}}}}
	add(dr, 2)

	dc := kmsg.NewPtrDescribeConfigsRequest()
	dc.Resources = []kmsg.DescribeConfigsRequestResource{{ResourceType: 99}, {ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: "x"}}
	add(dc, 4)

	iac := kmsg.NewPtrIncrementalAlterConfigsRequest()
	iac.Resources = []kmsg.IncrementalAlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "odd",
		Configs: []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "cleanup.policy", Op: kmsg.IncrementalAlterConfigOpAppend}, {Name: "x", Op: 9}}}}
	iac.ValidateOnly = true
	add(iac, 1)

	cp := kmsg.NewPtrCreatePartitionsRequest()
	cp.Topics = []kmsg.CreatePartitionsRequestTopic{{Topic: "missing", Count: -1}}
	cp.ValidateOnly = true
	add(cp, 3)

	dtp := kmsg.NewPtrDescribeTopicPartitionsRequest()
	dtp.Topics = []kmsg.DescribeTopicPartitionsRequestTopic{{Topic: ""}, {Topic: "odd"}}
	dtp.Cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: "odd", Partition: 1<<31 - 1}
	dtp.ResponsePartitionLimit = 1<<31 - 1
	add(dtp, 0)

	dcl := kmsg.NewPtrDescribeClusterRequest()
	dcl.EndpointType = -1
	add(dcl, 1)

	p := produceReq(13, "", 0, nil)
	p.Topics[0].TopicID = [16]byte{2}
	add(p, 13)

	for _, r := range reqs {
		if _, err := c.tryRequest(r); err != nil {
			t.Fatalf("%s v%d: %v", kmsg.NameForKey(r.Key()), r.GetVersion(), err)
		}
	}
}
