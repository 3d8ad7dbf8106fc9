package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/test/harness"
)

// replicaDir is the log dir DescribeLogDirs reports for partition 0 of
// topic on b ("" if none).
func replicaDir(t *testing.T, cl *kgo.Client, topic string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kresp, err := cl.SeedBrokers()[0].Request(ctx, kmsg.NewPtrDescribeLogDirsRequest())
	if err != nil {
		return ""
	}
	resp := kresp.(*kmsg.DescribeLogDirsResponse)
	for _, d := range resp.Dirs {
		for _, rt := range d.Topics {
			for _, p := range rt.Partitions {
				if rt.Topic == topic && p.Partition == 0 {
					return d.Dir
				}
			}
		}
	}
	return ""
}

// alterDir sends AlterReplicaLogDirs for partition 0 of topic and returns
// its error code.
func alterDir(t *testing.T, cl *kgo.Client, dir, topic string) int16 {
	t.Helper()
	req := kmsg.NewPtrAlterReplicaLogDirsRequest()
	d := kmsg.NewAlterReplicaLogDirsRequestDir()
	d.Dir = dir
	rt := kmsg.NewAlterReplicaLogDirsRequestDirTopic()
	rt.Topic, rt.Partitions = topic, []int32{0}
	d.Topics = append(d.Topics, rt)
	req.Dirs = append(req.Dirs, d)
	// To this broker itself: kgo would otherwise route by the metadata.
	kresp, err := cl.SeedBrokers()[0].Request(harness.Ctx(t, opTimeout), req)
	if err != nil {
		t.Fatalf("AlterReplicaLogDirs: %v", err)
	}
	resp := kresp.(*kmsg.AlterReplicaLogDirsResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("AlterReplicaLogDirs answer %+v", resp.Topics)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

// TestAlterReplicaLogDirs: a broker with two log dirs moves a replica
// from one to the other while an idempotent acks=all producer writes to
// it; every acknowledged record is read back exactly once, in order,
// after the move and after a restart, and the replica stays in its new
// dir. Bad requests get Kafka's codes.
func TestAlterReplicaLogDirs(t *testing.T) {
	d1, d2 := t.TempDir(), t.TempDir()
	c := harness.StartCluster(t, 1, "log.dirs="+d1+","+d2)
	guardNodes(t, c)
	b := c.Node(1)
	const topic = "mv"
	createTopic(t, c, topic, 1, 1, nil)
	cl := rawClient(t, b)
	from := replicaDir(t, cl, topic)
	to := d2
	if from == d2 {
		to = d1
	} else if from != d1 {
		t.Fatalf("mv-0 reported in %q, not in %s or %s", from, d1, d2)
	}

	wantCode(t, "relative dir", alterDir(t, cl, "relative/dir", topic), kerr.LogDirNotFound)
	wantCode(t, "dir not in log.dirs", alterDir(t, cl, t.TempDir(), topic), kerr.LogDirNotFound)
	wantCode(t, "unknown topic", alterDir(t, cl, to, "nope"), kerr.UnknownTopicOrPartition)
	if code := alterDir(t, cl, from, topic); code != 0 {
		t.Fatalf("move to the dir it is in: %v", kerr.ErrorForCode(code))
	}

	acks := harness.StartAckStream(t, c, harness.StreamConfig{Topic: topic, Records: 1500, Pace: time.Millisecond})
	acks.WaitAcks(t, 300, 2*time.Minute, "acks before the move")
	if code := alterDir(t, cl, to, topic); code != 0 {
		t.Fatalf("move: %v", kerr.ErrorForCode(code))
	}
	harness.WaitFor(t, opTimeout, "mv-0 to be served from "+to, func() bool { return replicaDir(t, cl, topic) == to })
	<-acks.Done()
	acks.Finish()
	acks.RequireNoFailures(t, "the producer")
	if n := harness.CheckExactlyOnce(t, []string{b.Addr}, topic, 0, 0, acks.AckLog); n < 1500 {
		t.Fatalf("%d records stored, want 1500", n)
	}
	b.Stop()
	<-waitExit(b)
	b.Restart()
	if got := replicaDir(t, rawClient(t, b), topic); got != to {
		t.Fatalf("after a restart mv-0 is in %q, want %s", got, to)
	}
	harness.CheckExactlyOnce(t, []string{b.Addr}, topic, 0, 0, acks.AckLog)
}
