package broker

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// dtpPage is one DescribeTopicPartitions answer, flattened: "topic/p" per
// partition, "topic:ERROR" per failed topic, and the next cursor.
type dtpPage struct {
	items []string
	next  string
}

func describePartitionsPage(t *testing.T, c *rawConn, topics []string, limit int32, cursor *kmsg.DescribeTopicPartitionsRequestCursor) dtpPage {
	t.Helper()
	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	for _, name := range topics {
		rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
		rt.Topic = name
		req.Topics = append(req.Topics, rt)
	}
	req.ResponsePartitionLimit, req.Cursor = limit, cursor
	resp := c.request(req).(*kmsg.DescribeTopicPartitionsResponse)
	var pg dtpPage
	for _, rt := range resp.Topics {
		if rt.ErrorCode != 0 {
			pg.items = append(pg.items, *rt.Topic+":"+kerr.ErrorForCode(rt.ErrorCode).(*kerr.Error).Message)
			continue
		}
		for _, p := range rt.Partitions {
			if p.LeaderID != 1 || !slices.Equal(p.Replicas, []int32{1}) || !slices.Equal(p.ISR, []int32{1}) ||
				p.EligibleLeaderReplicas == nil || len(p.EligibleLeaderReplicas) != 0 || len(p.OfflineReplicas) != 0 {
				t.Fatalf("%s/%d: unexpected partition %+v", *rt.Topic, p.Partition, p)
			}
			pg.items = append(pg.items, fmt.Sprintf("%s/%d", *rt.Topic, p.Partition))
		}
	}
	if nc := resp.NextCursor; nc != nil {
		pg.next = fmt.Sprintf("%s/%d", nc.Topic, nc.Partition)
	}
	return pg
}

// TestDescribeTopicPartitionsPages: pages follow Kafka's rules (names in
// order, at most the limit of partitions, a cursor where the limit cut),
// and paging through with a small limit answers every partition once.
func TestDescribeTopicPartitionsPages(t *testing.T) {
	b := startTestBroker(t)
	c := b.dial()
	c.createTopic("b", 3, nil)
	c.createTopic("a", 2, nil)
	c.createTopic("c", 1, nil)

	check := func(got dtpPage, next string, items ...string) {
		t.Helper()
		if !slices.Equal(got.items, items) || got.next != next {
			t.Fatalf("got %v next %q, want %v next %q", got.items, got.next, items, next)
		}
	}
	check(describePartitionsPage(t, c, nil, 2000, nil), "", "a/0", "a/1", "b/0", "b/1", "b/2", "c/0")
	check(describePartitionsPage(t, c, []string{"c", "a", "c"}, 2000, nil), "", "a/0", "a/1", "c/0")
	// The limit cuts inside a topic, and at a topic's end.
	check(describePartitionsPage(t, c, nil, 3, nil), "b/1", "a/0", "a/1", "b/0")
	check(describePartitionsPage(t, c, nil, 2, nil), "b/0", "a/0", "a/1")
	check(describePartitionsPage(t, c, nil, 2, &kmsg.DescribeTopicPartitionsRequestCursor{Topic: "b", Partition: 1}), "c/0", "b/1", "b/2")
	// With every topic, a cursor naming none starts at the next name.
	check(describePartitionsPage(t, c, nil, 10, &kmsg.DescribeTopicPartitionsRequestCursor{Topic: "bb"}), "", "c/0")
	// Unknown and invalid names take no room, and are answered in order.
	check(describePartitionsPage(t, c, []string{"zz", "a", "bad/name"}, 10, nil), "",
		"a/0", "a/1", "bad/name:"+kerr.InvalidTopicException.Message, "zz:"+kerr.UnknownTopicOrPartition.Message)

	// Paging with limit 1 visits every partition once.
	var all []string
	var cur *kmsg.DescribeTopicPartitionsRequestCursor
	for range 10 {
		pg := describePartitionsPage(t, c, nil, 1, cur)
		all = append(all, pg.items...)
		if pg.next == "" {
			break
		}
		topic, part, _ := strings.Cut(pg.next, "/")
		var p int32
		fmt.Sscan(part, &p)
		cur = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: topic, Partition: p}
	}
	if want := []string{"a/0", "a/1", "b/0", "b/1", "b/2", "c/0"}; !slices.Equal(all, want) {
		t.Fatalf("paged through %v, want %v", all, want)
	}

	// Refused as a whole: a cursor outside the named topics, a negative
	// cursor partition, a limit below 1 (which would page forever).
	inv := kerr.InvalidRequest.Message
	check(describePartitionsPage(t, c, []string{"a", "c"}, 10, &kmsg.DescribeTopicPartitionsRequestCursor{Topic: "b"}), "", "a:"+inv, "c:"+inv)
	check(describePartitionsPage(t, c, []string{"a"}, 10, &kmsg.DescribeTopicPartitionsRequestCursor{Topic: "a", Partition: -1}), "", "a:"+inv)
	check(describePartitionsPage(t, c, []string{"a"}, 0, nil), "", "a:"+inv)
}
