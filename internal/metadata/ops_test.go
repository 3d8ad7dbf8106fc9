package metadata

import (
	"bytes"
	"errors"
	"slices"
	"testing"
)

// TestUnregisterBroker: only a fenced broker can be unregistered; it then
// leaves every ISR it shared and its registration is gone, while the
// partitions keep it as a replica. Unknown ids and stale epochs are
// refused.
func TestUnregisterBroker(t *testing.T) {
	m, epochs := threeBrokers(t)
	m.fails(ErrBrokerNotRegistered, cmdUnregisterBroker, unregisterBrokerCmd{brokerRef{9, 0}})
	m.fails(ErrInvalidRequest, cmdUnregisterBroker, unregisterBrokerCmd{brokerRef{1, epochs[1]}})
	m.fails(ErrStaleBrokerEpoch, cmdUnregisterBroker, unregisterBrokerCmd{brokerRef{1, epochs[1] + 1}})
	m.ok(cmdFenceBroker, fenceBrokerCmd{brokerRef{1, epochs[1]}})
	m.ok(cmdUnregisterBroker, unregisterBrokerCmd{brokerRef{1, epochs[1]}})
	if _, ok := m.im.Broker(1); ok {
		t.Fatal("broker 1 still registered")
	}
	if got := m.im.BrokerIDs(); !slices.Equal(got, []int32{2, 3}) {
		t.Fatalf("brokers %v", got)
	}
	for p := range int32(3) {
		st := m.part("t", p)
		if slices.Contains(st.ISR, 1) || st.Leader == 1 || !slices.Contains(st.Replicas, 1) {
			t.Fatalf("t-%d after unregistering 1: %+v", p, st)
		}
	}
	// solo's ISR is 1 alone: never emptied, and it stays offline.
	if st := m.part("solo", 0); st.Leader != -1 || !slices.Equal(st.ISR, []int32{1}) {
		t.Fatalf("solo after unregistering 1: %+v", st)
	}
	// The same broker may come back as a new registration.
	m.register(1, 2, "")
	if b := m.broker(1); !b.Fenced {
		t.Fatalf("re-registered broker %+v", b)
	}
}

// TestRegisterControllerSurvivesSnapshot: controller registrations are
// checked, replaced by a new registration of the same id, and carried
// through a snapshot.
func TestRegisterControllerSurvivesSnapshot(t *testing.T) {
	m := newMachine(t)
	ep := []Endpoint{{Listener: "CONTROLLER", Host: "127.0.0.1", Port: 9093}}
	m.fails(ErrInvalidRequest, cmdRegisterController, registerControllerCmd{ControllerRecord{ID: 2}})
	m.fails(ErrInvalidRequest, cmdRegisterController, registerControllerCmd{ControllerRecord{ID: 2, Endpoints: []Endpoint{{Host: "h", Port: 0}}}})
	m.ok(cmdRegisterController, registerControllerCmd{ControllerRecord{ID: 2, Endpoints: ep}})
	before := m.im
	ep2 := []Endpoint{{Listener: "CONTROLLER", Host: "127.0.0.1", Port: 9094}}
	m.ok(cmdRegisterController, registerControllerCmd{ControllerRecord{ID: 2, Endpoints: ep2}})
	if c, _ := before.ControllerRegistration(2); c.RaftAddr() != "127.0.0.1:9093" {
		t.Fatalf("an older image changed: %+v", c)
	}
	if c, ok := m.im.ControllerRegistration(2); !ok || c.RaftAddr() != "127.0.0.1:9094" {
		t.Fatalf("controller 2: %+v %v", c, ok)
	}
	var buf bytes.Buffer
	if err := encodeSnapshot(&buf, m.im); err != nil {
		t.Fatal(err)
	}
	back, err := decodeSnapshot(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(stateBytes(t, back), buf.Bytes()) {
		t.Fatalf("snapshot round trip differs:\n%s\n%s", stateBytes(t, back), buf.Bytes())
	}
}

// TestQuorumOpsSingleVoter: on a quorum of one, the voter cannot be
// removed, added again, or a non-member removed; Quorum names it.
func TestQuorumOpsSingleVoter(t *testing.T) {
	c := newTestController(t, 1)
	ctx := testCtx(t)
	st, err := c.Quorum()
	if err != nil {
		t.Fatal(err)
	}
	if st.LeaderID != 1 || len(st.Servers) != 1 || !st.Servers[0].Voter || st.CommitIndex == 0 {
		t.Fatalf("quorum %+v", st)
	}
	if err := c.AddVoter(ctx, 1, c.RaftAddr()); !errors.Is(err, ErrDuplicateVoter) {
		t.Fatalf("AddVoter(self): %v", err)
	}
	if err := c.DemoteVoter(ctx, 1); !errors.Is(err, ErrInvalidRequest) {
		t.Fatalf("DemoteVoter(only voter): %v", err)
	}
	if err := c.DemoteVoter(ctx, 7); !errors.Is(err, ErrVoterNotFound) {
		t.Fatalf("DemoteVoter(7): %v", err)
	}
	if err := c.RemoveNonvoter(ctx, 1); err != nil {
		t.Fatalf("RemoveNonvoter(voter) must leave it alone: %v", err)
	}
	if err := c.UnregisterBroker(ctx, 5); !errors.Is(err, ErrBrokerNotRegistered) {
		t.Fatalf("UnregisterBroker(5): %v", err)
	}
	if st2, _ := c.Quorum(); len(st2.Voters()) != 1 {
		t.Fatalf("voters changed: %+v", st2)
	}
}
