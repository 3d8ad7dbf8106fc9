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
