package server

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestEncodedSizeHintCoversFetchResponses(t *testing.T) {
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = 12
	for i := 0; i < 3; i++ {
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic = "some-topic"
		for p := int32(0); p < 4; p++ {
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.Partition = p
			rp.RecordBatches = make([]byte, 1000*int(p+1))
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if hint, size := encodedSizeHint(resp), len(resp.AppendTo(nil)); hint < size {
		t.Fatalf("size hint %d below the encoded size %d: the buffer would still grow", hint, size)
	}
	if encodedSizeHint(kmsg.NewPtrMetadataResponse()) != 0 {
		t.Fatal("no hint expected for small responses")
	}
}
