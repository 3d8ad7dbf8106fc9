package metadata

import (
	"context"
	"fmt"
	"testing"
)

func benchController(b *testing.B) *Controller {
	b.Helper()
	c, err := Open(testConfig(b.TempDir()))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	ctx := context.Background()
	if err := c.WaitLeader(ctx); err != nil {
		b.Fatal(err)
	}
	if err := c.RegisterBroker(ctx, Broker{ID: 1, Host: "127.0.0.1", Port: 9092}); err != nil {
		b.Fatal(err)
	}
	return c
}

// BenchmarkCreateTopic measures one committed (fsynced) topic creation.
func BenchmarkCreateTopic(b *testing.B) {
	c := benchController(b)
	ctx := context.Background()
	for i := 0; b.Loop(); i++ {
		if _, err := c.CreateTopic(ctx, CreateTopic{Name: fmt.Sprintf("bench-%d", i), NumPartitions: 3, ReplicationFactor: 1}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAllocateProducerIDsParallel measures committed allocations
// from many goroutines, which raft batches into shared fsyncs.
func BenchmarkAllocateProducerIDsParallel(b *testing.B) {
	c := benchController(b)
	ctx := context.Background()
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.AllocateProducerIDs(ctx, 1000); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkVerifyLeader measures what a heartbeat's leadership check
// costs the quorum: 64 callers at once (brokers heartbeating together),
// against a sole voter and against a leader with two followers on
// loopback. barriers/op is the Raft entries appended per call: below 1
// is how much concurrent heartbeats share.
func BenchmarkVerifyLeader(b *testing.B) {
	for _, voters := range []int{1, 3} {
		b.Run(fmt.Sprintf("voters=%d", voters), func(b *testing.B) {
			c := benchController(b)
			ctx := context.Background()
			for id := 2; id <= voters; id++ {
				cfg := testConfig(b.TempDir())
				cfg.NodeID, cfg.Join = int32(id), true
				f, err := Open(cfg)
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { _ = f.Close() })
				if err := c.AddVoter(ctx, cfg.NodeID, f.RaftAddr()); err != nil {
					b.Fatal(err)
				}
			}
			if err := c.VerifyLeader(ctx); err != nil {
				b.Fatal(err)
			}
			first := c.raft.LastIndex()
			b.SetParallelism(32) // 64 callers on 2 cores
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := c.VerifyLeader(ctx); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(c.raft.LastIndex()-first)/float64(b.N), "barriers/op")
		})
	}
}
