// Package replication is the follower side of Kafka's replication
// protocol: the fetchers that keep this broker's follower replicas copies
// of their leaders' logs. Package replica holds each replica's state and
// answers the leader side; this package only calls it, through the
// Replica interface, and reaches leaders through a LeaderClient (WireDialer
// over the network, InmemNetwork in tests). It never touches broker code.
//
// # Shape
//
// The broker calls Manager.Follow(replica, topicID, leader, epoch) for
// every partition it follows, after applying the metadata to the replica,
// and Unfollow when it leads the partition or no longer hosts it. The
// manager keeps one fetcher per leader broker (num.replica.fetchers of
// them, partitions spread by hash, with more than one): one goroutine,
// one client, one Fetch request for all the partitions that broker leads
// for us. Follow with the leader and epoch already followed does nothing;
// a new leader or epoch retires the old registration and starts over.
//
// # One partition's cycle
//
//	Follow ──▶ Truncating ──▶ Fetching ──▶ (loop)
//	              ▲   │ KIP-279: ask again       │
//	              │   └──────────────┘           │
//	              └── NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH,
//	                  UNKNOWN_LEADER_EPOCH, OFFSET_OUT_OF_RANGE above
//	                  the leader's end, batches that do not line up
//
// Truncating. The local log may hold records the leader does not have (it
// led an epoch whose last writes never replicated, or followed a leader
// that was then deposed). They are found by leader epoch (KIP-101), never
// by cutting to the local high watermark, which loses committed records
// when this replica is elected before it fetched them again:
//
//	follower                                         leader
//	FollowerState: latest local epoch E
//	OffsetForLeaderEpoch{ReplicaID: us,
//	  CurrentLeaderEpoch: followed epoch,
//	  LeaderEpoch: E}                ───────────▶
//	                                 ◀───────────  (E', O): the largest epoch
//	                                               E' <= E it knows and where
//	                                               E' ended (its log end if
//	                                               E' is its current epoch)
//	EndOffsetForEpoch(E') locally: (F, ours)
//	F == E': cut at min(O, ours, log end); fetch
//	F <  E': we lack E' (KIP-279): cut at ours, ask again about F
//	no epoch <= E' here: cut at min(O, log end); fetch
//	O undefined: the leader has no epoch <= E: cut where our epoch E
//	  starts and ask about the epoch before it
//
// decideTruncation spells the rule out. A replica with an empty epoch
// cache and an empty log has nothing to cut; one with records but no
// epoch history (its leader-epoch-checkpoint was lost) keeps only what it
// knows was committed: it is cut at its high watermark, as Kafka does.
// All partitions truncating in a round share one OffsetForLeaderEpoch.
//
// Fetching. Each round sends one Fetch for every partition ready:
//
//	Fetch{ReplicaID: us (v0-14), ReplicaState{us, broker epoch} (v15+),
//	      MaxWaitMillis: replica.fetch.wait.max.ms, MinBytes: replica.fetch.min.bytes,
//	      MaxBytes: replica.fetch.response.max.bytes, IsolationLevel: 0,
//	      SessionID 0 / SessionEpoch -1 (full fetch, no session),
//	      Topics: [{Topic: name (v0-12), TopicID: id (v13+),
//	        Partitions: [{Partition, CurrentLeaderEpoch: followed epoch,
//	          FetchOffset: local log end, LogStartOffset: local log start,
//	          LastFetchedEpoch: -1, PartitionMaxBytes: replica.fetch.max.bytes}]}]}
//
// The fetch offset is the follower's log end: that is how the leader
// learns how far each follower has copied, which moves its high watermark
// and ISR. The leader answers from its log end (not its high watermark),
// long-polling until MinBytes or MaxWait, with per partition the record
// batches exactly as stored (base offsets, partition leader epochs and
// CRCs as the leader wrote them), its high watermark and log start. The
// answer is matched back by topic id (v13+) or name, and per partition,
// under a lock that Unfollow also takes:
//
//	complete batches (a trailing partial one is fetched again whole)
//	  └▶ AppendAsFollower(epoch, bytes verbatim): CRC-checked, appended,
//	     epochs recorded in the local leader epoch cache
//	UpdateFollowerHW(epoch, leader HW): local HW = min(leader HW, log end)
//	UpdateFollowerLogStart(epoch, leader log start): deletions follow
//
// then the next round starts at once. A fetch in flight is cut short when
// a partition is added to its fetcher (the client drops the connection, so the
// leader ends its long poll), so a new leader's partitions start within a
// round trip rather than after replica.fetch.wait.max.ms.
//
// # Errors
//
// Per partition: NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH (our
// metadata is behind) and UNKNOWN_LEADER_EPOCH (the leader's is) back off
// and truncate again; the broker's Follow for the new leader or epoch
// replaces the partition meanwhile. These, the unknown-topic answers and
// LEADER_NOT_AVAILABLE (the leader has the topic but has not opened its
// replica yet) mean the two brokers' metadata disagree, which is usually
// over in milliseconds (a follower of a new topic asks before its leader
// has applied it), so their backoff starts at 20 ms and doubles with each
// in a row up to replica.fetch.backoff.ms: a whole second there would
// hold the first acks=all produce to every new topic for that second.
// Such an episode is logged at DEBUG, and at WARN only once it lasts into
// the whole backoff. A long poll ends when a partition left out of it is
// due again. OFFSET_OUT_OF_RANGE below the leader's log start empties the
// log and restarts it there (TruncateFullyAndStartAt; when that start
// lies inside a batch, at the batch's base, as Kafka does); above it,
// truncation by epoch again. KAFKA_STORAGE_ERROR and local storage
// failures back off for replica.fetch.backoff.ms. Unknown topics and
// storage errors retry the same offsets: nothing is ever skipped. A
// replica that answers ErrNotFollower or ErrRemoved (it moved on to another leader or
// epoch, or was removed) stops its partition; the broker's next Follow or
// Unfollow decides. A connection failure backs every partition of the
// fetcher off and the next round dials again, resolving the leader's
// address anew. Each state change of a partition is logged once, not
// each fetch.
//
// # Guarantees
//
// After Unfollow returns, nothing from this manager reaches the replica:
// an append or truncation in progress has finished and an answer still
// in flight is dropped. The replica's own epoch check is the second line:
// every change carries the epoch the fetcher works for.
package replication
