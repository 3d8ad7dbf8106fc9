package broker

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/internal/group"
)

// memGroupLog is an in-memory __consumer_offsets for handler tests.
type memGroupLog struct {
	mu   sync.Mutex
	recs map[int32][]group.Record
}

func (l *memGroupLog) Append(_ context.Context, p int32, recs []group.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recs[p] = append(l.recs[p], recs...)
	return nil
}

func (l *memGroupLog) Replay(_ context.Context, p int32, fn func(group.Record) error) error {
	l.mu.Lock()
	recs := append([]group.Record(nil), l.recs[p]...)
	l.mu.Unlock()
	for _, r := range recs {
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

type noTopics struct{}

func (noTopics) PartitionExists(string, int32) bool { return false }

// groupsOnlyBroker is a Broker with just a group coordinator owning a
// one-partition __consumer_offsets: enough for the group handlers.
func groupsOnlyBroker(t *testing.T) *Broker {
	t.Helper()
	c := group.New(group.Config{
		Log: &memGroupLog{recs: map[int32][]group.Record{}}, Topics: noTopics{},
		Logger:            slog.New(slog.DiscardHandler),
		MinSessionTimeout: time.Second, MaxSessionTimeout: time.Minute,
	})
	t.Cleanup(c.Close)
	c.Elect(0, 1)
	deadline := time.Now().Add(30 * time.Second)
	for !c.Owned()[0] {
		if time.Now().After(deadline) {
			t.Fatal("coordinator partition not loaded")
		}
		time.Sleep(time.Millisecond)
	}
	return &Broker{groups: c}
}

// LeaveGroup v3+ reports member errors per member only: Kafka's top-level
// error is the group's own (NONE here), and admin clients fail the whole
// request on a top-level error.
func TestLeaveGroupMemberErrorsStayPerMember(t *testing.T) {
	b := groupsOnlyBroker(t)
	for _, v := range []int16{3, 5} {
		req := kmsg.NewPtrLeaveGroupRequest()
		req.Version, req.Group = v, "g"
		m := kmsg.NewLeaveGroupRequestMember()
		m.MemberID = "unknown"
		req.Members = append(req.Members, m)
		r, err := b.handleLeaveGroup(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		resp := r.(*kmsg.LeaveGroupResponse)
		if resp.ErrorCode != 0 {
			t.Errorf("v%d: top-level error %v, want none", v, kerr.ErrorForCode(resp.ErrorCode))
		}
		if len(resp.Members) != 1 || resp.Members[0].ErrorCode != kerr.UnknownMemberID.Code {
			t.Errorf("v%d: members %+v, want one with UNKNOWN_MEMBER_ID", v, resp.Members)
		}
	}
	// Before v3 there are no member entries: the member's error is the
	// top-level one.
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Version, req.Group, req.MemberID = 1, "g", "unknown"
	r, err := b.handleLeaveGroup(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if code := r.(*kmsg.LeaveGroupResponse).ErrorCode; code != kerr.UnknownMemberID.Code {
		t.Errorf("v1: error %v, want UNKNOWN_MEMBER_ID", kerr.ErrorForCode(code))
	}
}
