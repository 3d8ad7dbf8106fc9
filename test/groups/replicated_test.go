package groups

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/test/harness"
)

// TestGroupServedWhileACommitWaitsForAFollower: on three nodes with
// __consumer_offsets replicated three times, a follower of the group's
// coordinator partition is paused (SIGSTOP). An offset commit is then
// appended on the coordinator but cannot commit: the paused follower
// stays in the ISR (replica.lag.time.max.ms, broker.session.timeout.ms
// and offsets.commit.timeout.ms are ten minutes), so the high watermark cannot pass the commit until
// the follower is resumed. Meanwhile the group's heartbeats and offset
// fetches must be answered (the fetch with the last committed offset),
// which they cannot be if the coordinator holds the group's lock while
// the commit replicates. Once the follower is back the commit completes.
// The order is forced, not timed: the commit is seen appended (the
// coordinator's log grew) before the heartbeat is sent, and the follower
// is resumed only after the heartbeat and fetch are answered.
func TestGroupServedWhileACommitWaitsForAFollower(t *testing.T) {
	const offsetsTopic, topic, group = "__consumer_offsets", "committed", "g"
	// Neither the leader (replica.lag.time.max.ms) nor the controller
	// (broker.session.timeout.ms, which fences a silent broker out of
	// every ISR) may drop the paused follower while the test runs.
	c := harness.StartCluster(t, 3, "offsets.topic.replication.factor=3", "offsets.topic.num.partitions=1",
		"replica.lag.time.max.ms=600000", "offsets.commit.timeout.ms=600000", "broker.session.timeout.ms=600000")
	for _, b := range c.Nodes {
		checkLog(t, b)
	}
	createTopic(t, newAdmin(t, c.Nodes[0]), topic, 1)

	findCoordinator(t, c.Nodes[0], group)
	st := c.WaitFullISR(offsetsTopic, 0, opTimeout)
	coord := c.Node(st.Leader)
	followerID := st.Replicas[slices.IndexFunc(st.Replicas, func(id int32) bool { return id != st.Leader })]
	follower := c.Node(followerID)
	conn := coord.Dial()

	member, gen := joinAndSync(t, conn, group)
	commitReq := func(offset int64) *kmsg.OffsetCommitRequest {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version, req.Group, req.Generation, req.MemberID = 7, group, gen, member
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = 0, offset, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return req
	}
	commitCode := func(resp kmsg.Response) int16 {
		return resp.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
	}
	fetchOffset := func() int64 {
		t.Helper()
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version, req.Group = 7, group
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic, rt.Partitions = topic, []int32{0}
		req.Topics = append(req.Topics, rt)
		resp, _ := conn.Request(req)
		r := resp.(*kmsg.OffsetFetchResponse)
		if r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("offset fetch: %v / %v", kerr.ErrorForCode(r.ErrorCode), kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode))
		}
		return r.Topics[0].Partitions[0].Offset
	}
	if resp, _ := conn.Request(commitReq(1)); commitCode(resp) != 0 {
		t.Fatalf("commit with the full ISR: %v", kerr.ErrorForCode(commitCode(resp)))
	}

	logDir := filepath.Join(coord.Dir, offsetsTopic+"-0")
	before := logBytes(t, logDir)
	follower.Pause()
	t.Cleanup(func() {
		if follower.Running() {
			follower.Resume()
		}
	})
	// SIGSTOP takes effect as each thread next enters the kernel: until
	// all of them are stopped the follower may still fetch.
	type result struct {
		resp kmsg.Response
		err  error
	}
	committed := make(chan result, 1)
	commitConn := coord.Dial()
	go func() {
		resp, _, err := commitConn.TryRequest(commitReq(2))
		committed <- result{resp, err}
	}()
	harness.WaitFor(t, opTimeout, "the commit appended on the coordinator", func() bool { return logBytes(t, logDir) > before })

	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Version, hb.Group, hb.Generation, hb.MemberID = 3, group, gen, member
	if resp, _ := conn.Request(hb); resp.(*kmsg.HeartbeatResponse).ErrorCode != 0 {
		t.Fatalf("heartbeat while the commit waits: %v", kerr.ErrorForCode(resp.(*kmsg.HeartbeatResponse).ErrorCode))
	}
	if o := fetchOffset(); o != 1 {
		t.Fatalf("offset fetched while the commit waits: %d, want the committed 1", o)
	}
	// A client that asks for stable offsets (v7+, and v8's group form) is
	// told the partition's commit is in flight, with no offset.
	for _, v := range []int16{7, 8} {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version, req.Group, req.RequireStable = v, group, true
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic, rt.Partitions = topic, []int32{0}
		req.Topics = append(req.Topics, rt)
		gt := kmsg.NewOffsetFetchRequestGroupTopic()
		gt.Topic, gt.Partitions = topic, []int32{0}
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group, rg.Topics = group, []kmsg.OffsetFetchRequestGroupTopic{gt}
		req.Groups = append(req.Groups, rg)
		resp, _ := conn.Request(req)
		r := resp.(*kmsg.OffsetFetchResponse)
		code, off := int16(0), int64(0)
		if v >= 8 {
			code, off = r.Groups[0].Topics[0].Partitions[0].ErrorCode, r.Groups[0].Topics[0].Partitions[0].Offset
		} else {
			code, off = r.Topics[0].Partitions[0].ErrorCode, r.Topics[0].Partitions[0].Offset
		}
		if code != kerr.UnstableOffsetCommit.Code || off != -1 {
			t.Fatalf("v%d RequireStable fetch while the commit waits: %v offset %d, want UNSTABLE_OFFSET_COMMIT and -1", v, kerr.ErrorForCode(code), off)
		}
	}
	select {
	case r := <-committed:
		t.Fatalf("commit answered while a follower in the ISR is paused: %+v", r)
	default:
	}

	follower.Resume()
	r := <-committed // the connection's 60 s deadline bounds the wait
	if r.err != nil {
		t.Fatalf("commit after the follower resumed: %v", r.err)
	}
	if code := commitCode(r.resp); code != 0 {
		t.Fatalf("commit after the follower resumed: %v", kerr.ErrorForCode(code))
	}
	if o := fetchOffset(); o != 2 {
		t.Fatalf("offset fetched after the commit: %d, want 2", o)
	}
}

// findCoordinator asks b for group's coordinator until it has one: the
// first FindCoordinator creates __consumer_offsets, whose leader for the
// group's partition coordinates it.
func findCoordinator(t *testing.T, b *harness.Broker, group string) {
	t.Helper()
	conn := b.Dial()
	harness.WaitFor(t, opTimeout, "a coordinator for the group", func() bool {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.Version, req.CoordinatorKey = 3, group
		resp, _ := conn.Request(req)
		return resp.(*kmsg.FindCoordinatorResponse).ErrorCode == 0
	})
}

// joinAndSync makes a one-member classic group with raw requests and
// returns the member id and generation.
func joinAndSync(t *testing.T, conn *harness.RawConn, group string) (string, int32) {
	t.Helper()
	var member string
	var gen int32
	harness.WaitFor(t, opTimeout, "the group to form", func() bool {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Version, req.Group, req.MemberID, req.ProtocolType = 5, group, member, "consumer"
		req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 60000, 60000
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name, p.Metadata = "range", []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
		req.Protocols = append(req.Protocols, p)
		resp, _ := conn.Request(req)
		r := resp.(*kmsg.JoinGroupResponse)
		switch err := kerr.ErrorForCode(r.ErrorCode); err {
		case nil:
			member, gen = r.MemberID, r.Generation
			return true
		case kerr.MemberIDRequired:
			member = r.MemberID
			return false
		case kerr.CoordinatorLoadInProgress, kerr.NotCoordinator, kerr.CoordinatorNotAvailable:
			return false
		default:
			t.Fatalf("join group: %v", err)
			return false
		}
	})
	req := kmsg.NewPtrSyncGroupRequest()
	req.Version, req.Group, req.Generation, req.MemberID = 3, group, gen, member
	a := kmsg.NewSyncGroupRequestGroupAssignment()
	a.MemberID, a.MemberAssignment = member, []byte{0, 0, 0, 0, 0, 0, 0, 0}
	req.GroupAssignment = append(req.GroupAssignment, a)
	resp, _ := conn.Request(req)
	if err := kerr.ErrorForCode(resp.(*kmsg.SyncGroupResponse).ErrorCode); err != nil {
		t.Fatalf("sync group: %v", err)
	}
	return member, gen
}

// logBytes is the size of a partition's segment files.
func logBytes(t *testing.T, dir string) int64 {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("read %s: %v", dir, err)
	}
	var n int64
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".log") {
			continue
		}
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		n += info.Size()
	}
	return n
}

// TestCoordinatorMovesWhenItsNodeDies: the coordinator of a group on
// three nodes is killed (SIGKILL). The controller makes another replica
// of the group's __consumer_offsets partition its leader, which becomes
// the coordinator once its replica leads (a role change the coordinator
// follows, not a poll), loads the partition, and serves every offset the
// old one acknowledged; new commits go on there.
func TestCoordinatorMovesWhenItsNodeDies(t *testing.T) {
	const offsetsTopic, topic, group = "__consumer_offsets", "moved", "g"
	c := harness.StartCluster(t, 3, "offsets.topic.replication.factor=3", "offsets.topic.num.partitions=1")
	for _, b := range c.Nodes {
		// Raft logs the votes it cannot send to the killed node as
		// errors.
		checkLog(t, b, `msg="failed to make requestVote RPC"`)
	}
	createTopic(t, newAdmin(t, c.Nodes[0]), topic, 1)
	// One connection per node, dialed again only after a failure, so
	// that polling does not pile up connections.
	conns := map[*harness.Broker]*harness.RawConn{}
	request := func(b *harness.Broker, req kmsg.Request) (kmsg.Response, error) {
		if conns[b] == nil {
			conns[b] = b.Dial()
		}
		resp, _, err := conns[b].TryRequest(req)
		if err != nil {
			delete(conns, b)
		}
		return resp, err
	}
	commit := func(b *harness.Broker, offset int64) error {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version, req.Group, req.Generation = 7, group, -1
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = 0, offset, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := request(b, req)
		if err != nil {
			return err
		}
		return kerr.ErrorForCode(resp.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode)
	}
	fetch := func(b *harness.Broker) (int64, error) {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version, req.Group = 7, group
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic, rt.Partitions = topic, []int32{0}
		req.Topics = append(req.Topics, rt)
		resp, err := request(b, req)
		if err != nil {
			return 0, err
		}
		r := resp.(*kmsg.OffsetFetchResponse)
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			return 0, err
		}
		return r.Topics[0].Partitions[0].Offset, kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode)
	}
	findCoordinator(t, c.Nodes[0], group)
	st := c.WaitFullISR(offsetsTopic, 0, opTimeout)
	old := c.Node(st.Leader)
	harness.WaitFor(t, opTimeout, "the coordinator loaded", func() bool { return commit(old, 1) == nil })
	for o := int64(2); o <= 5; o++ {
		if err := commit(old, o); err != nil {
			t.Fatalf("commit %d: %v", o, err)
		}
	}

	old.Kill()
	var coord *harness.Broker
	harness.WaitFor(t, opTimeout, "a new coordinator serving the committed offset", func() bool {
		st, err := c.Partition(offsetsTopic, 0)
		if err != nil || st.Leader <= 0 || c.Node(st.Leader) == old {
			return false
		}
		coord = c.Node(st.Leader)
		o, err := fetch(coord)
		if err == nil && o != 5 {
			t.Fatalf("new coordinator %d serves offset %d, want the acknowledged 5", st.Leader, o)
		}
		return err == nil
	})
	if err := commit(coord, 6); err != nil {
		t.Fatalf("commit to the new coordinator: %v", err)
	}
	if o, err := fetch(coord); err != nil || o != 6 {
		t.Fatalf("offset after a commit to the new coordinator: %d %v", o, err)
	}
}
