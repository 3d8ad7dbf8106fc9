package metadata

import (
	"testing"
	"time"
)

// TestSoleVoterRaftTimings: a node that is the whole quorum gets short
// Raft timeouts by default (it elects itself at start, with no peer to
// wait for); a node with peers, a joining node, and explicit settings
// keep theirs.
func TestSoleVoterRaftTimings(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want time.Duration
	}{
		{"no voters listed", Config{NodeID: 1}, 100 * time.Millisecond},
		{"only itself", Config{NodeID: 1, Voters: map[int32]string{1: "a:1"}}, 100 * time.Millisecond},
		{"with peers", Config{NodeID: 1, Voters: map[int32]string{1: "a:1", 2: "b:1"}}, time.Second},
		{"joining", Config{NodeID: 4, Join: true}, time.Second},
		{"explicit", Config{NodeID: 1, HeartbeatTimeout: 300 * time.Millisecond, ElectionTimeout: 300 * time.Millisecond}, 300 * time.Millisecond},
	} {
		cfg := tc.cfg
		cfg.setDefaults()
		if cfg.HeartbeatTimeout != tc.want || cfg.ElectionTimeout != tc.want || cfg.LeaderLeaseTimeout > cfg.HeartbeatTimeout {
			t.Errorf("%s: heartbeat %s, election %s, lease %s; want %s, %s, at most the heartbeat", tc.name,
				cfg.HeartbeatTimeout, cfg.ElectionTimeout, cfg.LeaderLeaseTimeout, tc.want, tc.want)
		}
	}
}
