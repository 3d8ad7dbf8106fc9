package metrics_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/test/harness"
)

// joinGroup is a JoinGroup v3 (no member id round trip) of a consumer
// with one protocol.
func joinGroup(group, memberID string) *kmsg.JoinGroupRequest {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version = 3
	req.Group, req.MemberID, req.ProtocolType = group, memberID, "consumer"
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 30000, 30000
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", []byte{0, 0, 0, 0, 0, 0, 0, 0}
	req.Protocols = append(req.Protocols, p)
	return req
}

// TestMetricsJoinGroupWaitIsRemoteTime: a member joining a stable
// group of one waits until the other member rejoins; that wait is the
// JoinGroup's remote time (Kafka's DelayedJoin), its local time the
// little rest.
func TestMetricsJoinGroupWaitIsRemoteTime(t *testing.T) {
	b := harness.StartBroker(t, harness.MetricsListener, "group.initial.rebalance.delay.ms=0")
	const group, hold = "joined", time.Second
	first, second, admin := b.Dial(), b.Dial(), b.Dial()
	joins := 0
	join := func(conn *harness.RawConn, memberID string) *kmsg.JoinGroupResponse {
		t.Helper()
		joins++
		resp, _ := conn.Request(joinGroup(group, memberID))
		return resp.(*kmsg.JoinGroupResponse)
	}
	// FindCoordinator creates __consumer_offsets; until its partition
	// is loaded the coordinator is not available.
	harness.WaitFor(t, time.Minute, "the group's coordinator", func() bool {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.Version, req.CoordinatorKey = 3, group
		resp, _ := admin.Request(req)
		return resp.(*kmsg.FindCoordinatorResponse).ErrorCode == 0
	})
	var a *kmsg.JoinGroupResponse
	harness.WaitFor(t, time.Minute, "the coordinator to take a join", func() bool {
		a = join(first, "")
		return a.ErrorCode == 0
	})
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Version, sync.Group, sync.Generation, sync.MemberID = 3, group, a.Generation, a.MemberID
	as := kmsg.NewSyncGroupRequestGroupAssignment()
	as.MemberID, as.MemberAssignment = a.MemberID, []byte{0, 0}
	sync.GroupAssignment = append(sync.GroupAssignment, as)
	if resp, _ := first.Request(sync); resp.(*kmsg.SyncGroupResponse).ErrorCode != 0 {
		t.Fatalf("sync: error %d", resp.(*kmsg.SyncGroupResponse).ErrorCode)
	}
	settled := func(n int) requestTimes {
		t.Helper()
		var rt requestTimes
		harness.WaitFor(t, 30*time.Second, "the joins counted", func() bool {
			rt = scrapeMetrics(t, b.MetricsURL).requestTimes("JoinGroup")
			return rt.settled(float64(n))
		})
		return rt
	}
	before := settled(joins)

	// The second member's join waits for the first to rejoin.
	type answer struct {
		resp *kmsg.JoinGroupResponse
		rtt  time.Duration
		err  error
	}
	got := make(chan answer, 1)
	joins++
	go func() {
		sent := time.Now()
		resp, _, err := second.TryRequest(joinGroup(group, ""))
		r, _ := resp.(*kmsg.JoinGroupResponse)
		got <- answer{r, time.Since(sent), err}
	}()
	harness.WaitFor(t, 30*time.Second, "the group to rebalance for the second member", func() bool {
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.Groups = []string{group}
		resp, _ := admin.Request(req)
		return resp.(*kmsg.DescribeGroupsResponse).Groups[0].State == "PreparingRebalance"
	})
	// The second join is held from before now until the first member
	// rejoins, hold later: that span is what the test measures.
	time.Sleep(hold)
	rejoinSent := time.Now()
	if r := join(first, a.MemberID); r.ErrorCode != 0 {
		t.Fatalf("rejoin: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	rejoinRTT := time.Since(rejoinSent)
	ans := <-got
	if ans.err != nil || ans.resp.ErrorCode != 0 {
		t.Fatalf("second join: %v %+v", ans.err, ans.resp)
	}

	d := settled(joins).minus(before)
	checkAddsUp(t, "JoinGroup", d)
	switch handler := d.local + d.remote; {
	case handler < hold.Seconds():
		t.Errorf("the two joins were handled in %vs, one was held %v", handler, hold)
	case d.remote < d.local:
		t.Errorf("a join held %v: remote %vs, local %vs", hold, d.remote, d.local)
	case d.remote > (ans.rtt + rejoinRTT).Seconds():
		t.Errorf("remote time %vs, the clients' round trips %v and %v", d.remote, ans.rtt, rejoinRTT)
	}
}

// TestMetricsForwardedCreateTopicsIsRemoteTime: a CreateTopics sent to
// a node that is not the active controller is forwarded to it; the wait
// for its answer (and for the topic to reach the node's metadata) is the
// request's remote time there, as the controller's wait for the Raft
// quorum is on the controller.
func TestMetricsForwardedCreateTopicsIsRemoteTime(t *testing.T) {
	c := harness.StartCluster(t, 3, harness.MetricsListener)
	var forwarder, ctrl *harness.Broker
	harness.WaitFor(t, time.Minute, "an active controller", func() bool {
		forwarder, ctrl = nil, nil
		for _, n := range c.Nodes {
			if scrapeMetrics(t, n.MetricsURL).Value("kafka_controller_kafkacontroller_activecontrollercount", nil) == 1 {
				ctrl = n
			} else {
				forwarder = n
			}
		}
		return ctrl != nil && forwarder != nil
	})
	conn := forwarder.Dial()
	if code := rawCreateTopic(t, conn, "forwarded"); code != 0 {
		t.Fatalf("create: %v", kerr.ErrorForCode(code))
	}
	var rt requestTimes
	harness.WaitFor(t, 30*time.Second, "the CreateTopics counted", func() bool {
		rt = scrapeMetrics(t, forwarder.MetricsURL).requestTimes("CreateTopics")
		return rt.settled(1)
	})
	checkAddsUp(t, "CreateTopics", rt)
	if rt.remote <= 0 {
		t.Errorf("a forwarded CreateTopics: remote %vs, local %vs", rt.remote, rt.local)
	}
	// The controller answered the forwarded request after the quorum
	// committed the topic (unless leadership moved meanwhile, the one
	// CreateTopics it served).
	var ct requestTimes
	harness.WaitFor(t, 30*time.Second, "the controller's CreateTopics counted", func() bool {
		ct = scrapeMetrics(t, ctrl.MetricsURL).requestTimes("CreateTopics")
		return ct.count >= 1 && ct.settled(ct.count)
	})
	if ct.count == 1 && ct.remote <= 0 {
		t.Errorf("the controller's CreateTopics: remote %vs, local %vs", ct.remote, ct.local)
	}
}
