package load

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Admin creates and deletes the suite's topics on a Kafka-protocol broker.
type Admin struct {
	cl  *kgo.Client
	adm *kadm.Client
}

// NewAdmin connects to the brokers at seeds.
func NewAdmin(seeds []string) (*Admin, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RetryTimeout(30*time.Second))
	if err != nil {
		return nil, fmt.Errorf("admin client for %v: %w", seeds, err)
	}
	return &Admin{cl: cl, adm: kadm.NewClient(cl)}, nil
}

// Close closes the client.
func (a *Admin) Close() { a.cl.Close() }

// CreateTopic creates topic and waits until every partition has a leader.
func (a *Admin) CreateTopic(ctx context.Context, topic string, partitions, rf int, configs map[string]*string) error {
	resp, err := a.adm.CreateTopic(ctx, int32(partitions), int16(rf), configs, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("create topic %s (%d partitions, rf %d): %w", topic, partitions, rf, err)
	}
	return a.WaitLeaders(ctx, []string{topic}, partitions)
}

// WaitLeaders waits until each of topics lists partitions partitions, all
// with a leader.
func (a *Admin) WaitLeaders(ctx context.Context, topics []string, partitions int) error {
	for {
		md, err := a.adm.Metadata(ctx, topics...)
		if err == nil && allLed(md, topics, partitions) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for leaders of %d topics: %w (last metadata error: %v)", len(topics), ctx.Err(), err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func allLed(md kadm.Metadata, topics []string, partitions int) bool {
	for _, t := range topics {
		td, ok := md.Topics[t]
		if !ok || td.Err != nil || len(td.Partitions) != partitions {
			return false
		}
		for _, p := range td.Partitions {
			if p.Err != nil || p.Leader < 0 {
				return false
			}
		}
	}
	return true
}

// DeleteTopic deletes topic (frees kfake's memory and weir's disk between
// rounds).
func (a *Admin) DeleteTopic(ctx context.Context, topic string) error {
	resp, err := a.adm.DeleteTopics(ctx, topic)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		return fmt.Errorf("delete topic %s: %w", topic, err)
	}
	return nil
}

// EndOffsets sums the end offsets of topics' partitions, and says
// whether every partition answered.
func (a *Admin) EndOffsets(ctx context.Context, topics ...string) (int64, bool, error) {
	offs, err := a.adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		return 0, false, fmt.Errorf("list end offsets: %w", err)
	}
	var sum int64
	ok := true
	offs.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			ok = false
			return
		}
		sum += o.Offset
	})
	return sum, ok, nil
}
