package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// reachable asks the bootstrap brokers for metadata, each at most once,
// and fails unless one answers within --connect-timeout. Without it kgo
// retries unreachable brokers until each request's own timeout: a consumer
// would wait forever and a producer for the whole delivery timeout, with a
// client-library error at the end. ^C ends the wait too.
func (c *clientFlags) reachable(cl *kgo.Client) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, c.connectTimeout)
	defer cancel()
	err := cl.Ping(ctx)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("no broker reachable at %s: no answer within --connect-timeout %v", c.bootstrap, c.connectTimeout)
	case ctx.Err() != nil:
		return context.Canceled // interrupted: main prints nothing
	}
	// kgo's "unable to dial: " adds nothing to the dial error itself.
	var dial *net.OpError
	if errors.As(err, &dial) {
		err = dial
	}
	return fmt.Errorf("no broker reachable at %s: %w", c.bootstrap, err)
}

// checkTopic fails, naming Kafka's error, unless topic exists and has
// every partition in parts. Consumers of a missing topic or partition
// would otherwise wait for records that can never come (kgo keeps
// retrying); consumers never create topics, so one missing now is an
// error. what says which command asks, for the message.
func (c *clientFlags) checkTopic(ctx context.Context, cl *kgo.Client, what, topic string, parts []int32) error {
	d, err := c.lookupTopic(ctx, cl, topic)
	if err != nil {
		return fmt.Errorf("%s %q: %w", what, topic, err)
	}
	return checkPartitions(what, d, parts)
}

// lookupTopic is the cluster's description of topic, without creating it.
func (c *clientFlags) lookupTopic(ctx context.Context, cl *kgo.Client, topic string) (kadm.TopicDetail, error) {
	ctx, cancel := context.WithTimeout(ctx, c.requestTimeout)
	defer cancel()
	return describeTopic(ctx, kadm.NewClient(cl), topic)
}

// describeTopic is the cluster's description of topic by Metadata (which
// creates nothing); a missing topic is UNKNOWN_TOPIC_OR_PARTITION.
func describeTopic(ctx context.Context, adm *kadm.Client, topic string) (kadm.TopicDetail, error) {
	topics, err := adm.ListTopicsWithInternal(ctx, topic)
	if err != nil {
		return kadm.TopicDetail{}, fmt.Errorf("look up the topic: %w", err)
	}
	d, ok := topics[topic]
	switch {
	case !ok:
		return d, kafkaError(kerr.UnknownTopicOrPartition, "the broker did not describe the topic")
	case errors.Is(d.Err, kerr.UnknownTopicOrPartition):
		return d, kafkaError(kerr.UnknownTopicOrPartition, "the topic does not exist")
	}
	return d, d.Err
}

// checkPartitions fails unless the described topic has every partition
// in parts.
func checkPartitions(what string, d kadm.TopicDetail, parts []int32) error {
	for _, p := range parts {
		if _, ok := d.Partitions[p]; !ok {
			return fmt.Errorf("%s %q: %w", what, d.Topic, kafkaError(kerr.UnknownTopicOrPartition,
				fmt.Sprintf("partition %d does not exist, the topic has %s", p, partitionRange(int32(len(d.Partitions))))))
		}
	}
	return nil
}

// partitionRange says which partitions a topic of n has.
func partitionRange(n int32) string {
	switch n {
	case 0:
		return "no partitions"
	case 1:
		return "1 partition (0)"
	}
	return fmt.Sprintf("%d partitions (0-%d)", n, n-1)
}
