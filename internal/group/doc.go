// Package group is the consumer group coordinator: Kafka's classic group
// protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup), the KIP-848
// consumer protocol (ConsumerGroupHeartbeat with server-side assignors,
// consumer_*.go), committed offsets, and the admin operations on groups.
//
// State lives in memory per group and is made durable as records of the
// internal topic __consumer_offsets, keyed and encoded exactly as Kafka
// does (records.go). The coordinator for a group is the leader of
// partition PartitionFor(group, n) of that topic; when this broker becomes
// that leader it replays the partition (Elect) and serves its groups, and
// it forgets them when it stops leading (Resign). Offsets of deleted topics
// are removed with tombstones (TopicsDeleted, and at load: deleted.go).
//
// The package does not know the broker: it writes and replays records
// through the Log interface and checks topics through Topics, both
// implemented by the broker. Time comes from a Clock, so unit tests drive
// session and rebalance timeouts with a fake one.
//
// Concurrency: one mutex per group guards that group's state; the
// coordinator's mutex guards only the maps of partitions and groups, and
// a group's mutex is never taken while the coordinator's is held. Timers
// re-check, under the group's mutex, that they are still current before
// acting. Records are appended under the group's mutex, but the wait for
// them to replicate happens without it, and what they change is applied
// once they are committed, in log order (write.go).
package group
