package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/weir-project/weir/internal/group"
	"github.com/weir-project/weir/internal/replica"
	"github.com/weir-project/weir/internal/storage"
	"github.com/weir-project/weir/internal/storage/recordbatch"
)

// offsetsReplica is a Broker holding only a replica of
// __consumer_offsets-0 in the given state, on a temp log dir.
func offsetsReplica(t *testing.T, s replica.State) (*Broker, *replica.Partition) {
	t.Helper()
	logs, err := storage.OpenManager(storage.ManagerConfig{
		Dirs: []string{t.TempDir()}, Defaults: storage.DefaultConfig(), DisableCleaner: true,
	}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := logs.Close(); err != nil {
			t.Errorf("close logs: %v", err)
		}
	})
	replicas := replica.NewManager(logs, 1)
	replicas.SetLogger(slog.New(slog.DiscardHandler))
	rp, _, err := replicas.Ensure(storage.TopicPartition{Topic: offsetsTopic, Partition: 0}, storage.DefaultConfig(), s)
	if err != nil {
		t.Fatal(err)
	}
	return &Broker{replicas: replicas}, rp
}

// A write to a partition this broker no longer leads carries Kafka's
// NOT_LEADER_OR_FOLLOWER, which the coordinator answers as NOT_COORDINATOR
// (the client finds the new coordinator) rather than as a generic failure.
func TestOffsetsLogAppendNotLeaderCarriesKafkaError(t *testing.T) {
	b, _ := offsetsReplica(t, replica.State{LeaderID: 2, LeaderEpoch: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 2}})
	err := offsetsLog{b}.Append(context.Background(), 0, []group.Record{{Key: []byte("k"), Value: []byte("v")}})
	if !errors.Is(err, kerr.NotLeaderForPartition) {
		t.Fatalf("append on a follower: %v, want NOT_LEADER_OR_FOLLOWER", err)
	}
	if !errors.Is(err, replica.ErrNotLeader) {
		t.Fatalf("append on a follower: %v lost the replica's error", err)
	}
}

// The coordinator loads its partition to the log end, as Kafka's does,
// not only to the high watermark: a new leader's log may hold records
// beyond a high watermark that has not caught up yet.
func TestOffsetsLogReplayReadsToLogEnd(t *testing.T) {
	// A two-replica ISR keeps the high watermark where it is until
	// followers report (see replica.advanceHWLocked).
	b, rp := offsetsReplica(t, replica.State{LeaderID: 1, LeaderEpoch: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 2}})
	batch, err := recordbatch.Build(recordbatch.BuildOptions{
		BaseTimestamp: time.Now().UnixMilli(), ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
	}, []recordbatch.Record{{Key: []byte("k1"), Value: []byte("v1")}, {Key: []byte("k2"), Value: nil}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rp.AppendAsLeader(batch, 1); err != nil {
		t.Fatal(err)
	}
	if o := rp.Offsets(); o.HighWater != 0 || o.LogEnd != 2 {
		t.Fatalf("offsets %+v, want HW 0 and LEO 2", o)
	}
	var got []string
	err = offsetsLog{b}.Replay(context.Background(), 0, func(r group.Record) error {
		got = append(got, fmt.Sprintf("%s=%s", r.Key, r.Value))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"k1=v1", "k2="}; !slices.Equal(got, want) {
		t.Fatalf("replayed %q, want %q", got, want)
	}
}
