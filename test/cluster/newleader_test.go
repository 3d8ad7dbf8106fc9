package cluster

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/test/harness"
)

// TestNewLeaderAnswersAtOnce: when leadership moves, the old leader
// answers NOT_LEADER_OR_FOLLOWER naming the new one (KIP-951) as soon as
// its own metadata shows the move, which may be before the new leader's
// does. A Produce or Fetch sent to the named broker straight after must
// be served, not refused: it waits until it has caught up with the
// metadata the controller had committed, then answers. Refused, a client
// backs off (franz-go 250 ms) before it tries again.
//
// Each round moves the leadership of one partition to the next replica
// (a reassignment reordering the replicas, then a preferred election)
// while one goroutine sends the current leader produces (even rounds) or
// consumer fetches (odd rounds) until it is told who leads now; the same
// request to the named broker goes out on a connection opened
// beforehand. Nothing here races: the hint comes from committed metadata,
// so the named broker's catching up with the controller's commit index
// always finds it leading.
//
// Then, with the active controller paused, a follower asked to take a
// produce still answers NOT_LEADER_OR_FOLLOWER naming the leader, from
// the metadata it has: not being able to ask the controller bounds the
// wait, it never hangs.
func TestNewLeaderAnswersAtOnce(t *testing.T) {
	c := harness.StartCluster(t, 3)
	guardNodes(t, c)
	const topic = "moving-leader"
	createAssignedTopic(t, c, topic, [][]int32{{1, 2, 3}}, nil)
	conns := map[int32]*harness.RawConn{}
	for id := int32(1); id <= 3; id++ {
		conns[id] = c.Node(id).Dial()
	}
	adm := kadm.NewClient(c.Client())
	id := topicID(t, c, topic)
	ctx := harness.Ctx(t, 5*time.Minute)

	replicas := []int32{1, 2, 3}
	const rounds = 12
	for round := range rounds {
		from := replicas[0]
		replicas = append(replicas[1:], replicas[0])
		to := replicas[0]

		type told struct {
			leader, epoch int32
			answers       int
			err           error
		}
		what := "produce"
		send := func(conn *harness.RawConn, n int) (answer, error) {
			return rawProduce(conn, topic, fmt.Sprintf("r%d-%d", round, n))
		}
		if round%2 == 1 {
			what = "fetch"
			send = func(conn *harness.RawConn, _ int) (answer, error) { return rawFetch(conn, id) }
		}
		hint := make(chan told, 1)
		go func() {
			n := 0
			for {
				n++
				a, err := send(conns[from], n)
				switch {
				case err != nil:
					hint <- told{err: err}
					return
				case a.code == kerr.NotLeaderForPartition.Code && a.leader >= 0:
					hint <- told{leader: a.leader, epoch: a.epoch, answers: n}
					return
				case a.code != 0:
					hint <- told{err: fmt.Errorf("%s %d to the old leader %d: %v", what, n, from, kerr.ErrorForCode(a.code))}
					return
				}
			}
		}()

		resp, err := adm.AlterPartitionAssignments(ctx, kadm.AlterPartitionAssignmentsReq{topic: {0: replicas}})
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			t.Fatalf("round %d: reorder replicas to %v: %v", round, replicas, err)
		}
		// The reorder moves no data: it completes at once, and the
		// preferred replica is then elected.
		c.WaitPartition(topic, 0, opTimeout, fmt.Sprintf("replicas %v", replicas), func(st harness.PartitionState) bool {
			return fmt.Sprint(st.Replicas) == fmt.Sprint(replicas)
		})
		if _, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{topic: {0: {}}}); err != nil {
			t.Fatalf("round %d: elect %d: %v", round, to, err)
		}

		var h told
		select {
		case h = <-hint:
		case <-time.After(opTimeout):
			t.Fatalf("round %d: the old leader %d never named a new one", round, from)
		}
		if h.err != nil {
			t.Fatalf("round %d: %v", round, h.err)
		}
		if h.leader != to {
			t.Fatalf("round %d: the old leader %d names %d (epoch %d), want %d", round, from, h.leader, h.epoch, to)
		}
		sent := time.Now()
		a, err := send(conns[to], 0)
		took := time.Since(sent)
		if err != nil {
			t.Fatalf("round %d: %s to the new leader %d: %v", round, what, to, err)
		}
		if a.code != 0 {
			t.Fatalf("round %d: the new leader %d, named by %d (epoch %d), refused a %s right after: %v (current leader %d epoch %d)",
				round, to, from, h.epoch, what, kerr.ErrorForCode(a.code), a.leader, a.epoch)
		}
		t.Logf("round %d: leadership %d -> %d (epoch %d) after %d × %s to the old leader; the new one served the next in %v",
			round, from, to, h.epoch, h.answers, what, took.Round(100*time.Microsecond))
	}

	leader := replicas[0]
	// Every node's metadata shows the last move first: a follower that
	// cannot reach the controller answers from what it has.
	waitEveryNode(t, c, topic, 0, opTimeout, fmt.Sprintf("leader %d", leader), func(st harness.PartitionState) bool {
		return st.Leader == leader
	})
	ctrl := c.AgreedController(opTimeout)
	follower := replicas[1]
	if follower == ctrl {
		follower = replicas[2]
	}
	pauseNode(t, c.Node(ctrl))
	start := time.Now()
	a, err := rawProduce(conns[follower], topic, "controller-paused")
	took := time.Since(start)
	c.Node(ctrl).Resume()
	if err != nil {
		t.Fatalf("produce to follower %d with controller %d paused: %v", follower, ctrl, err)
	}
	if a.code != kerr.NotLeaderForPartition.Code || a.leader != leader {
		t.Fatalf("produce to follower %d with controller %d paused: %v naming %d, want NOT_LEADER_OR_FOLLOWER naming %d",
			follower, ctrl, kerr.ErrorForCode(a.code), a.leader, leader)
	}
	t.Logf("follower %d answered NOT_LEADER_OR_FOLLOWER naming %d in %v with controller %d paused", follower, leader, took.Round(time.Millisecond), ctrl)
}

// answer is a one-partition answer's error and the leader it names.
type answer struct {
	code          int16
	leader, epoch int32
}

// TestStoppingLeaderAnswersWaitingProduce: a leader stopped with SIGTERM
// hands its leadership over (controlled shutdown) and then answers the
// requests it holds before it closes their connections:
// NOT_LEADER_OR_FOLLOWER naming the new leader, so the client moves at
// once instead of retrying a dead connection after a backoff. The
// controller's go-ahead may come before the stopping broker has applied
// the move itself; it catches up first.
//
// The request is an acks=all produce that cannot complete: one follower
// is paused, and stays in the ISR (replica.lag.time.max.ms and the
// session are two minutes). The test sends SIGTERM only once the
// leader's produce purgatory holds it.
func TestStoppingLeaderAnswersWaitingProduce(t *testing.T) {
	c := harness.StartCluster(t, 3, harness.MetricsListener, "replica.lag.time.max.ms=120000", "broker.session.timeout.ms=120000")
	guardNodes(t, c)
	ctrl := c.AgreedController(opTimeout)
	// Neither the paused follower nor the stopping leader is the
	// controller: the controlled shutdown needs one, and a Raft leader
	// stopping with a peer paused waits out the transport's timeout.
	follower := ctrl
	paused := otherNodes(3, ctrl)[0]
	leader := otherNodes(3, ctrl, paused)[0]
	const topic = "stopping-leader"
	createAssignedTopic(t, c, topic, [][]int32{{leader, follower, paused}}, nil)
	conn := c.Node(leader).Dial()
	pauseNode(t, c.Node(paused))

	type result struct {
		a   answer
		err error
	}
	done := make(chan result, 1)
	go func() {
		a, err := rawProduceAcks(conn, topic, "held", -1)
		done <- result{a, err}
	}()
	harness.WaitFor(t, opTimeout, "the produce to wait in the leader's purgatory", func() bool {
		return harness.ScrapeMetrics(t, c.Node(leader).MetricsURL).Value("kafka_server_delayedoperationpurgatory_purgatorysize",
			map[string]string{"delayedOperation": "Produce"}) == 1
	})
	stopAt := time.Now()
	c.Node(leader).Stop()
	stopped := time.Since(stopAt)
	if code, exited := c.Node(leader).ExitCode(); !exited || code != 0 {
		t.Fatalf("leader %d: exit code %d (exited %v) after SIGTERM", leader, code, exited)
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("the produce held by the stopping leader %d got no answer: %v", leader, r.err)
	}
	if r.a.code != kerr.NotLeaderForPartition.Code || r.a.leader < 0 || r.a.leader == leader {
		t.Fatalf("the produce held by the stopping leader %d: %v naming %d, want NOT_LEADER_OR_FOLLOWER naming the new leader",
			leader, kerr.ErrorForCode(r.a.code), r.a.leader)
	}
	t.Logf("the stopping leader %d answered its held produce NOT_LEADER_OR_FOLLOWER naming %d (epoch %d); it stopped in %v",
		leader, r.a.leader, r.a.epoch, stopped.Round(time.Millisecond))
}

// rawProduce sends one record with acks=1 over conn (Produce v11: the
// answer names the current leader when refused).
func rawProduce(conn *harness.RawConn, topic, value string) (answer, error) {
	return rawProduceAcks(conn, topic, value, 1)
}

// rawProduceAcks is rawProduce with the acks given.
func rawProduceAcks(conn *harness.RawConn, topic, value string, acks int16) (answer, error) {
	req := kmsg.NewPtrProduceRequest()
	req.Version = 11
	req.Acks, req.TimeoutMillis = acks, 60000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	batch, err := buildBatch(value)
	if err != nil {
		return answer{}, err
	}
	rp.Partition, rp.Records = 0, batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, _, err := conn.TryRequest(req)
	if err != nil {
		return answer{}, err
	}
	pr := resp.(*kmsg.ProduceResponse)
	if len(pr.Topics) != 1 || len(pr.Topics[0].Partitions) != 1 {
		return answer{}, fmt.Errorf("produce answer names %d topics", len(pr.Topics))
	}
	sp := pr.Topics[0].Partitions[0]
	return answer{sp.ErrorCode, sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch}, nil
}

// rawFetch sends a consumer Fetch for partition 0 of the topic with id
// from offset 0 (consumerFetch).
func rawFetch(conn *harness.RawConn, id [16]byte) (answer, error) {
	sp, err := consumerFetch(conn, id, 0)
	if err != nil {
		return answer{}, err
	}
	return answer{sp.ErrorCode, sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch}, nil
}

// consumerFetch sends a consumer Fetch v16 (the answer names the current
// leader when refused) for partition 0 of the topic with id from offset,
// waiting for nothing, and returns the partition's answer.
func consumerFetch(conn *harness.RawConn, id [16]byte, offset int64) (kmsg.FetchResponseTopicPartition, error) {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(16)
	req.ReplicaID, req.ReplicaState.ID, req.ReplicaState.Epoch = -1, -1, -1
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 0, 1, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.TopicID = id
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = 0, offset, 1<<20, -1
	ft.Partitions = append(ft.Partitions, fp)
	req.Topics = append(req.Topics, ft)
	resp, _, err := conn.TryRequest(req)
	if err != nil {
		return kmsg.FetchResponseTopicPartition{}, err
	}
	fr := resp.(*kmsg.FetchResponse)
	if len(fr.Topics) != 1 || len(fr.Topics[0].Partitions) != 1 {
		return kmsg.FetchResponseTopicPartition{}, fmt.Errorf("fetch answer names %d topics", len(fr.Topics))
	}
	return fr.Topics[0].Partitions[0], nil
}
