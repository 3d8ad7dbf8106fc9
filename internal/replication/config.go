package replication

import (
	"time"

	"github.com/weir-project/weir/internal/config"
)

// Kafka's defaults for the follower fetch settings.
const (
	DefaultMaxWait           = 500 * time.Millisecond // replica.fetch.wait.max.ms
	DefaultMinBytes          = 1                      // replica.fetch.min.bytes
	DefaultMaxBytes          = 10 << 20               // replica.fetch.response.max.bytes
	DefaultPartitionMaxBytes = 1 << 20                // replica.fetch.max.bytes
	DefaultBackoff           = time.Second            // replica.fetch.backoff.ms
	DefaultFetchers          = 1                      // num.replica.fetchers
)

// Config is what the fetchers need to know. Zero values take Kafka's
// defaults (see withDefaults).
type Config struct {
	// LocalID is this broker's id: the replica id of every request.
	LocalID int32
	// BrokerEpoch is the epoch the controller gave this broker at
	// registration (-1 while unknown); Fetch v15+ carries it so that the
	// leader can fence a restarted broker's stale fetches (KIP-903).
	// Manager.SetBrokerEpoch updates it.
	BrokerEpoch int64

	MaxWait           time.Duration // replica.fetch.wait.max.ms
	MinBytes          int32         // replica.fetch.min.bytes
	MaxBytes          int32         // replica.fetch.response.max.bytes
	PartitionMaxBytes int32         // replica.fetch.max.bytes
	// Backoff is the pause after an error before a partition (or, after a
	// connection failure, the whole fetcher) tries again; negative means
	// no pause (replica.fetch.backoff.ms=0).
	Backoff time.Duration // replica.fetch.backoff.ms
	// Fetchers is how many fetchers (each with its own connection) share
	// the partitions led by one broker.
	Fetchers int // num.replica.fetchers

	// Observer, if set, is told of the bytes appended from leaders (the
	// broker's metrics).
	Observer Observer
}

// Observer is told of what the fetchers append, at the one place they
// append it. It is called on a fetcher's goroutine, so it must be quick.
type Observer interface {
	// ReplicatedIn counts record batch bytes of topic appended here as
	// a follower (Kafka's ReplicationBytesInPerSec).
	ReplicatedIn(topic string, bytes int64)
}

// ConfigFromBroker takes the fetch settings from the broker configuration;
// the broker epoch is set later, once the broker has registered.
func ConfigFromBroker(b *config.Broker) Config {
	backoff := time.Duration(b.ReplicaFetchBackoffMs) * time.Millisecond
	if backoff == 0 {
		backoff = -1 // an explicit 0 ms, not "unset"
	}
	return Config{
		LocalID:           b.NodeID,
		BrokerEpoch:       -1,
		MaxWait:           time.Duration(b.ReplicaFetchWaitMaxMs) * time.Millisecond,
		MinBytes:          int32(b.ReplicaFetchMinBytes),
		MaxBytes:          int32(b.ReplicaFetchResponseMaxBytes),
		PartitionMaxBytes: int32(b.ReplicaFetchMaxBytes),
		Backoff:           backoff,
		Fetchers:          int(b.NumReplicaFetchers),
	}
}

// withDefaults fills unset fields. A zero MaxWait is Kafka's default, not
// "never wait": a follower that never waits would spin on an idle leader.
func (c Config) withDefaults() Config {
	if c.MaxWait <= 0 {
		c.MaxWait = DefaultMaxWait
	}
	if c.MinBytes <= 0 {
		c.MinBytes = DefaultMinBytes
	}
	if c.MaxBytes <= 0 {
		c.MaxBytes = DefaultMaxBytes
	}
	if c.PartitionMaxBytes <= 0 {
		c.PartitionMaxBytes = DefaultPartitionMaxBytes
	}
	switch {
	case c.Backoff < 0:
		c.Backoff = 0
	case c.Backoff == 0:
		c.Backoff = DefaultBackoff
	}
	if c.Fetchers <= 0 {
		c.Fetchers = DefaultFetchers
	}
	return c
}
