package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFetchLongPollEndsWhenTopicDeleted: Kafka completes delayed fetches
// of partitions it stops hosting; a consumer long-polling a deleted topic
// hears UNKNOWN_TOPIC_OR_PARTITION at once, not after its max wait.
func TestFetchLongPollEndsWhenTopicDeleted(t *testing.T) {
	b := startTestBroker(t)
	admin := b.dial()
	admin.createTopic("gone", 1, nil)

	const maxWait = 90 * time.Second // under rawConn's 60 s deadline at half
	consumer := b.dial()
	req := fetchAll("gone", 1<<20, 1<<20)
	req.MaxWaitMillis = int32(maxWait / time.Millisecond)
	type result struct {
		resp kmsg.Response
		err  error
	}
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		resp, err := consumer.tryRequest(req)
		done <- result{resp, err}
	}()

	dt := kmsg.NewPtrDeleteTopicsRequest()
	dt.SetVersion(4)
	dt.TimeoutMillis = 30000
	dt.TopicNames = []string{"gone"}
	if code := admin.request(dt).(*kmsg.DeleteTopicsResponse).Topics[0].ErrorCode; code != 0 {
		t.Fatalf("delete topic: error code %d", code)
	}

	select {
	case r := <-done:
		if r.err != nil {
			t.Fatal(r.err)
		}
		sp := r.resp.(*kmsg.FetchResponse).Topics[0].Partitions[0]
		if sp.ErrorCode != kerr.UnknownTopicOrPartition.Code {
			t.Fatalf("fetch of a deleted topic: error code %d, want UNKNOWN_TOPIC_OR_PARTITION", sp.ErrorCode)
		}
	case <-time.After(maxWait / 2):
		t.Fatalf("fetch still waiting %v after its topic was deleted (max wait %v)", time.Since(start).Round(time.Second), maxWait)
	}
}
