package metadata

import (
	"io"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// recordingFSM keeps the data of every command applied, in order.
type recordingFSM struct {
	mu      sync.Mutex
	applied []string
	last    uint64 // index of the last command applied
}

func (f *recordingFSM) Apply(l *raft.Log) interface{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.applied, f.last = append(f.applied, string(l.Data)), l.Index
	return nil
}

func (f *recordingFSM) Snapshot() (raft.FSMSnapshot, error) { return nil, raft.ErrNothingNewToSnapshot }

func (f *recordingFSM) Restore(rc io.ReadCloser) error { return rc.Close() }

func (f *recordingFSM) log() ([]string, uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.applied), f.last
}

// TestStaleSuffixIsNotCommitted: a follower that was a leader holds two
// entries of its own term (2) that no one else has, after the ones the
// cluster shares (1-3). The new leader (term 3) checks index 3, sends no
// entries, and says it has committed up to 5 (its own commands at 4 and
// 5). The follower must not apply its stale entries 4 and 5 for them;
// the leader's next request puts its own entry at 4. hashicorp/raft
// applies the stale ones (the unbounded case, kept so that an upgrade
// that fixes it shows here); through commitBound it does not.
func TestStaleSuffixIsNotCommitted(t *testing.T) {
	for _, tc := range []struct {
		name    string
		bounded bool
		want    []string
	}{
		{"hashicorp/raft alone", false, []string{"a", "b", "stale-4", "stale-5"}},
		{"through commitBound", true, []string{"a", "b", "leader-4"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := followerApplies(t, tc.bounded); !slices.Equal(got, tc.want) {
				t.Fatalf("applied %q, want %q", got, tc.want)
			}
		})
	}
}

// followerApplies builds the follower, sends it the two requests and
// returns what its state machine applied up to index 4 or beyond.
func followerApplies(t *testing.T, bounded bool) []string {
	t.Helper()
	store := raft.NewInmemStore()
	servers := raft.Configuration{Servers: []raft.Server{
		{Suffrage: raft.Voter, ID: "f", Address: "f"},
		{Suffrage: raft.Voter, ID: "l", Address: "l"},
	}}
	cmd := func(index, term uint64, data string) *raft.Log {
		return &raft.Log{Index: index, Term: term, Type: raft.LogCommand, Data: []byte(data)}
	}
	if err := store.StoreLogs([]*raft.Log{
		{Index: 1, Term: 1, Type: raft.LogConfiguration, Data: raft.EncodeConfiguration(servers)},
		cmd(2, 1, "a"), cmd(3, 1, "b"),
		cmd(4, 2, "stale-4"), cmd(5, 2, "stale-5"),
	}); err != nil {
		t.Fatal(err)
	}
	if err := store.SetUint64([]byte("CurrentTerm"), 2); err != nil {
		t.Fatal(err)
	}
	_, fTrans := raft.NewInmemTransport("f")
	_, lTrans := raft.NewInmemTransport("l")
	fTrans.Connect("l", lTrans)
	lTrans.Connect("f", fTrans)
	var trans raft.Transport = fTrans
	if bounded {
		trans = newCommitBound(fTrans)
	}
	conf := raft.DefaultConfig()
	conf.LocalID = "f"
	conf.Logger = hclog.NewNullLogger()
	// Long enough that the follower never stands for election here.
	conf.HeartbeatTimeout, conf.ElectionTimeout, conf.LeaderLeaseTimeout = time.Hour, time.Hour, time.Hour
	fsm := &recordingFSM{}
	r, err := raft.NewRaft(conf, fsm, store, store, raft.NewInmemSnapshotStore(), trans)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Shutdown().Error() })

	send := func(req *raft.AppendEntriesRequest) {
		t.Helper()
		req.RPCHeader = raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("l"), Addr: []byte("l")}
		req.Term = 3
		var resp raft.AppendEntriesResponse
		if err := lTrans.AppendEntries("f", "f", req, &resp); err != nil {
			t.Fatal(err)
		}
		if !resp.Success {
			t.Fatalf("append entries %+v refused: %+v", req, resp)
		}
	}
	send(&raft.AppendEntriesRequest{PrevLogEntry: 3, PrevLogTerm: 1, LeaderCommitIndex: 5})
	send(&raft.AppendEntriesRequest{PrevLogEntry: 3, PrevLogTerm: 1, LeaderCommitIndex: 5,
		Entries: []*raft.Log{cmd(4, 3, "leader-4")}})
	// Raft's applied index moves before the state machine has applied:
	// wait for the state machine itself.
	deadline := time.Now().Add(30 * time.Second)
	for {
		applied, last := fsm.log()
		if last >= 4 {
			return applied
		}
		if time.Now().After(deadline) {
			t.Fatalf("the state machine applied %q, up to index %d; want index 4 or more", applied, last)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
