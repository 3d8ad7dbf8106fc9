// Package metadata keeps the cluster metadata (brokers, topics, partition
// assignment, leaders, epochs, ISR, topic configs, dynamic broker configs,
// producer id blocks) in a Raft
// replicated state machine on hashicorp/raft, and offers the controller
// operations that change it, in the manner of Kafka's KRaft controller. A
// single node is a Raft cluster of one voter; broker-only nodes join as
// non-voters (Config.Join, Controller.AddNonvoter) and keep an Image too.
//
// Readers take an immutable *Image (Controller.Image) and wait for the next
// one with Controller.Changes; only the Raft leader accepts changes. A
// broker follows changes by diff (DiffTopics, ChangedPartitions,
// DiffBrokers, BrokerConfigsChanged).
//
// # The state machine
//
// Every change is a command in the Raft log, applied by a pure function of
// the previous image and the command's bytes. The leader decides whatever
// is not deterministic (topic ids, placement, whether an unclean election
// is allowed) before proposing; the state machine re-checks every rule
// against the image as it is when the command applies, so a command
// proposed on a stale view is refused (or does what is still valid) the
// same way on every replica. A refused command changes nothing.
//
// # Broker lifecycle
//
// A broker process registers with a random incarnation id
// (RegisterIncarnation). Its broker epoch is the Raft index of that
// registration, so a later run always has a larger one; the same
// incarnation registering again (a retry) keeps its epoch. A new
// registration starts fenced, and an earlier incarnation of the same id is
// fenced first. The broker then heartbeats; the heartbeat handler (not in
// this package: sessions and timers are soft state of the controller)
// calls, with the broker epoch:
//
//   - UnfenceBroker once the broker has caught up with the metadata (as in
//     KRaft: its heartbeat's metadata offset, the Image.Index of the image
//     it has applied, has reached its broker epoch);
//   - FenceBroker when its session times out or it asks WantFence;
//   - BeginControlledShutdown when it asks WantShutDown, answering
//     ShouldShutDown from Image.ShouldShutDown and fencing the broker once
//     that is true.
//
// A command naming another epoch than the broker's registration is refused
// with ErrStaleBrokerEpoch. Logs and version 1 snapshots from before the
// lifecycle hold legacy registrations (no incarnation): those are unfenced
// with epoch 0, and Controller.RegisterBroker still makes one.
//
// # Partition rules
//
// A broker is eligible when it is registered, unfenced and not in
// controlled shutdown. The election rule, used everywhere a leader is
// needed, takes the first replica, in replica order, that is in the ISR and
// eligible; with none the partition is offline (leader -1) and its ISR
// unchanged. A current leader that stays eligible is never replaced except
// by a preferred election.
//
//   - Fencing a broker takes it out of every ISR it is in, except where it
//     is the only member (Kafka never empties an ISR); partitions it led
//     elect a new leader.
//   - Unfencing a broker elects it where a partition is offline and its ISR
//     holds it (and, where unclean.leader.election.enable allows, the
//     controller then elects uncleanly: ElectUncleanLeaders).
//   - Controlled shutdown moves the broker's leaderships to other eligible
//     ISR members and takes it out of the ISRs that have other members; a
//     partition no one else can lead keeps it, so it stays available until
//     the broker stops (Kafka instead makes such a partition offline at
//     once).
//   - AlterPartition, from the leader at its broker epoch, is a
//     compare-and-set on the leader and partition epochs; the new ISR must
//     hold the leader, be a subset of the replicas, and have only eligible
//     members (at the broker epochs given, if any).
//   - ElectLeaders: preferred makes the first replica leader if it is in
//     the ISR and eligible; unclean gives an offline partition its first
//     eligible replica as leader with ISR = {it}, recovering (KIP-704).
//   - Reassignment (AlterPartitionReassignments, reassign.go): the target
//     replicas are recorded with the adding and removing ones; once every
//     adding replica is in the ISR the removing ones leave replicas and
//     ISR in the same change, and a removed leader hands over to the first
//     in-sync, eligible replica of the target. Cancelling reverts.
//   - New partitions (CreateTopic, CreatePartitions) are placed on eligible
//     brokers only, rack-aware when brokers have racks; their ISR is their
//     eligible replicas and the first of those leads.
//
// Every change of a partition's state bumps its partition epoch; a change
// of leader (to -1 included) also bumps its leader epoch. The ISR is kept
// in replica order.
package metadata
