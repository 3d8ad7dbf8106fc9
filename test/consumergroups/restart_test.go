package consumergroups

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-project/weir/test/harness"
)

func memberIDs(t *testing.T, cl *kgo.Client, g string) ([]string, int32) {
	t.Helper()
	d, err := describeCG(harness.Ctx(t, opTimeout), cl, g)
	if err != nil || d.ErrorCode != 0 {
		t.Fatalf("describe %s: %+v %v", g, d, err)
	}
	var ids []string
	for _, m := range d.Members {
		ids = append(ids, m.MemberID)
	}
	slices.Sort(ids)
	return ids, d.Epoch
}

func waitCommitted(t *testing.T, adm *kadm.Client, g, topic string, total int64) {
	t.Helper()
	harness.WaitFor(t, 60*time.Second, "offsets committed", func() bool {
		resp, err := adm.FetchOffsets(context.Background(), g)
		if err != nil || resp.Error() != nil {
			return false
		}
		var sum int64
		for _, o := range resp[topic] {
			sum += o.At
		}
		return sum == total
	})
}

// TestBrokerKilledKeepsConsumerGroup kills the broker with SIGKILL while
// a KIP-848 group is stable: after the restart the coordinator replays
// __consumer_offsets and has the same members, group epoch and committed
// offsets; the members carry on under their epochs and read every new
// record exactly once.
func TestBrokerKilledKeepsConsumerGroup(t *testing.T) {
	b := startBroker(t)
	adm := kadm.NewClient(b.Client())
	const topic, g, partitions = "durable", "durable-group", 4
	createTopic(t, adm, topic, partitions)
	ms := []*member{
		startMember(t, b, "d0", g, topic, kgo.CooperativeStickyBalancer()),
		startMember(t, b, "d1", g, topic, kgo.CooperativeStickyBalancer()),
	}
	waitStable(t, b.Client(), g, topic, partitions, 2)
	first := produce(t, b, topic, "a", 200)
	waitAllRead(t, ms, first)
	waitCommitted(t, adm, g, topic, 200)
	ids, epoch := memberIDs(t, b.Client(), g)

	b.Kill()
	b.Restart()

	cl := b.Client()
	harness.WaitFor(t, 60*time.Second, "group loaded after restart", func() bool {
		d, err := describeCG(context.Background(), cl, g)
		return err == nil && d.ErrorCode == 0
	})
	gotIDs, gotEpoch := memberIDs(t, cl, g)
	if !slices.Equal(gotIDs, ids) || gotEpoch != epoch {
		t.Fatalf("after restart: members %v epoch %d, before %v epoch %d", gotIDs, gotEpoch, ids, epoch)
	}
	offs := committed(t, kadm.NewClient(cl), g, topic)
	var sum int64
	for _, o := range offs {
		sum += o
	}
	if sum != 200 {
		t.Fatalf("committed offsets after restart %v (sum %d), want sum 200", offs, sum)
	}
	// The same members keep consuming: the new records are read exactly
	// once, the old ones not again.
	second := produce(t, b, topic, "b", 200)
	waitAllRead(t, ms, append(first, second...))
	waitStable(t, cl, g, topic, partitions, 2)
	if again, _ := memberIDs(t, cl, g); !slices.Equal(again, ids) {
		t.Errorf("members changed after the restart: %v, before %v", again, ids)
	}
}

// TestSilentMemberLosesPartitions: a member that stops heartbeating (as
// a killed process would) holds its partitions until
// group.consumer.session.timeout.ms passes; then the franz-go members get
// them and read the records waiting there, each exactly once.
func TestSilentMemberLosesPartitions(t *testing.T) {
	b := startBroker(t)
	cl := b.Client()
	adm := kadm.NewClient(cl)
	const topic, g, partitions = "silent", "silent-group", 4
	createTopic(t, adm, topic, partitions)
	dead := newRawMember(t, cl, g, "doomed")
	wantCode(t, "join", dead.join(topic).ErrorCode, nil)
	if dead.count() != partitions {
		t.Fatalf("first member got %v", dead.owned)
	}
	values := produce(t, b, topic, "v", 200)
	ms := []*member{
		startMember(t, b, "live0", g, topic, kgo.CooperativeStickyBalancer()),
		startMember(t, b, "live1", g, topic, kgo.CooperativeStickyBalancer()),
	}
	start := time.Now()
	waitAllRead(t, ms, values)
	// The dead member never released anything: all its partitions moved
	// only once its session expired (6 s after its last heartbeat).
	if el := time.Since(start); el < 3*time.Second {
		t.Errorf("records of the silent member's partitions read after %v, before its session could expire", el)
	}
	waitStable(t, cl, g, topic, partitions, 2)
	wantCode(t, "heartbeat of the expired member", dead.beat().ErrorCode, kerr.UnknownMemberID)
}
