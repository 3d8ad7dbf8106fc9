package verify

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Two kinds of consumers read all along: assigned ones (every partition,
// from the start, to the end) and the members of one consumer group, who
// commit what they read after every poll. A final read after the faults
// have healed reads every partition once more, from the start to its end.

// recordPolls records one poll op per topic partition that returned
// records, and returns the next offset to read of each.
func recordPolls(rec *Recorder, st *stats, proc string, fs kgo.Fetches) map[string]map[int32]kgo.EpochOffset {
	next := map[string]map[int32]kgo.EpochOffset{}
	fs.EachPartition(func(p kgo.FetchTopicPartition) {
		if len(p.Records) == 0 {
			return
		}
		recs := make([]Rec, len(p.Records))
		for i, r := range p.Records {
			recs[i] = Rec{P: r.Partition, O: r.Offset, V: string(r.Value)}
		}
		rec.Add(Op{F: FPoll, Type: TOK, Proc: proc, Topic: p.Topic, Records: recs})
		st.polled.Add(int64(len(recs)))
		last := p.Records[len(p.Records)-1]
		if next[p.Topic] == nil {
			next[p.Topic] = map[int32]kgo.EpochOffset{}
		}
		next[p.Topic][p.Partition] = kgo.EpochOffset{Epoch: last.LeaderEpoch, Offset: last.Offset + 1}
	})
	return next
}

func allFromStart(topics []TopicInfo) map[string]map[int32]kgo.Offset {
	out := map[string]map[int32]kgo.Offset{}
	for _, t := range topics {
		out[t.Name] = map[int32]kgo.Offset{}
		for p := range t.Partitions {
			out[t.Name][p] = kgo.NewOffset().AtStart()
		}
	}
	return out
}

// consumerOpts are what every consumer shares.
func consumerOpts() []kgo.Opt {
	return []kgo.Opt{
		kgo.FetchMaxWait(500 * time.Millisecond),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	}
}

// runAssigned reads every partition of topics from the start until ctx
// ends, telling read how far it has read the judged topic (the deleter
// deletes only what every assigned consumer has read).
func runAssigned(ctx context.Context, cl *kgo.Client, rec *Recorder, st *stats, proc, judged string, read *readProgress) {
	for ctx.Err() == nil {
		read.advance(proc, recordPolls(rec, st, proc, cl.PollFetches(ctx))[judged])
	}
}

// member is one consumer group member.
type member struct {
	name, group string
	cl          *kgo.Client
	rec         *Recorder
	st          *stats
}

// memberOpts are a group member's options; its rebalances are recorded
// (the partitions each callback names: assigned, revoked or lost).
func memberOpts(group, protocol string, topics []TopicInfo, rec *Recorder, proc string) []kgo.Opt {
	var names []string
	for _, t := range topics {
		names = append(names, t.Name)
	}
	changed := func(how string) func(context.Context, *kgo.Client, map[string][]int32) {
		return func(_ context.Context, _ *kgo.Client, ps map[string][]int32) {
			for _, t := range names {
				if len(ps[t]) > 0 {
					rec.Add(Op{F: FRebalance, Type: TOK, Proc: proc, Group: group, Topic: t, Detail: how,
						Owned: slices.Sorted(slices.Values(ps[t]))})
				}
			}
		}
	}
	opts := consumerOpts()
	if protocol == GroupConsumer {
		// KIP-848, with the coordinator's default assignor (uniform).
		opts = append(opts, kgo.ServerSideBalancer(), kgo.Balancers(kgo.CooperativeStickyBalancer()))
	}
	return append(opts,
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(names...),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.SessionTimeout(6*time.Second),
		kgo.HeartbeatInterval(500*time.Millisecond),
		kgo.RebalanceTimeout(20*time.Second),
		kgo.OnPartitionsAssigned(changed("assigned")),
		kgo.OnPartitionsRevoked(changed("revoked")),
		kgo.OnPartitionsLost(changed("lost")),
	)
}

// run polls, records, and commits after every poll until ctx ends.
func (m *member) run(ctx context.Context) {
	for ctx.Err() == nil {
		// The membership before the poll stamps the commit after it: if
		// the poll spans a rejoin the stamp is stale and the coordinator
		// refuses the commit (one commit fewer, which is safe) rather
		// than take offsets read under a fenced membership.
		id, gen := m.cl.GroupMetadata()
		next := recordPolls(m.rec, m.st, m.name, m.cl.PollFetches(ctx))
		// With no membership before the poll there is none to commit
		// as: a commit from outside the group (generation -1) is taken
		// whenever the group is empty, from anyone.
		if len(next) > 0 && ctx.Err() == nil && id != "" && gen >= 0 {
			m.commit(ctx, id, gen, next)
		}
		m.cl.AllowRebalance()
	}
}

// commit commits next synchronously (before any rebalance: polls block
// them) as member id of generation (or member epoch) gen, recording one
// commit per topic: invoked, then ok with the partitions the coordinator
// took, or info with the rest.
//
// It sends the OffsetCommit itself, stamped with the membership of the
// poll, rather than through CommitOffsetsSync: that waits out a rejoin in
// progress and stamps the commit with the new membership, so offsets read
// under a membership the coordinator had already fenced (another member
// has committed past them since) were accepted as a new member's, and the
// group's commit went backwards with no broker at fault (seed 22 with
// --overlap 2: a coordinator paused, then moved). Stamped with the poll's
// membership, such a commit is the coordinator's to refuse, and a
// coordinator that took it would be found out.
func (m *member) commit(ctx context.Context, id string, gen int32, next map[string]map[int32]kgo.EpochOffset) {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.MemberID, req.Generation = m.group, id, gen
	for _, topic := range sortedKeys(next) {
		m.rec.Add(Op{F: FCommit, Type: TInvoke, Proc: m.name, Group: m.group, Topic: topic, Offsets: plainOffsets(next[topic])})
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = topic
		for _, p := range sortedKeys(next[topic]) {
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch = p, next[topic][p].Offset, next[topic][p].Epoch
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	resp, err := req.RequestWith(cctx, m.cl)
	for _, topic := range sortedKeys(next) {
		ok, failed := map[int32]int64{}, map[int32]int64{}
		var firstErr error
		for p, eo := range next[topic] {
			perr := err
			if perr == nil {
				perr = partitionCommitErr(resp, topic, p)
			}
			if perr != nil {
				failed[p] = eo.Offset
				firstErr = cmp.Or(firstErr, perr)
			} else {
				ok[p] = eo.Offset
			}
		}
		if len(ok) > 0 {
			m.rec.Add(Op{F: FCommit, Type: TOK, Proc: m.name, Group: m.group, Topic: topic, Offsets: ok})
			m.st.commits.Add(1)
		}
		if len(failed) > 0 {
			m.rec.Add(Op{F: FCommit, Type: TInfo, Proc: m.name, Group: m.group, Topic: topic, Offsets: failed, Err: firstErr.Error()})
		}
	}
}

func plainOffsets(ps map[int32]kgo.EpochOffset) map[int32]int64 {
	out := map[int32]int64{}
	for p, eo := range ps {
		out[p] = eo.Offset
	}
	return out
}

// partitionCommitErr is the error the commit response gives a partition
// (one it does not mention did not commit).
func partitionCommitErr(resp *kmsg.OffsetCommitResponse, topic string, p int32) error {
	if resp == nil {
		return errors.New("no commit response")
	}
	for _, t := range resp.Topics {
		if t.Topic != topic {
			continue
		}
		for _, rp := range t.Partitions {
			if rp.Partition == p {
				return kerr.ErrorForCode(rp.ErrorCode)
			}
		}
	}
	return fmt.Errorf("%s-%d missing from the commit response", topic, p)
}

// finalRead reads every partition from its start to its end offset (the
// high watermark, asked for once the cluster is healthy), recording the
// reads as process "final". A partition deleted up to its end (the
// deleter deletes what the consumers read) has nothing to read.
func finalRead(ctx context.Context, cl *kgo.Client, adm *kadm.Client, topics []TopicInfo, rec *Recorder, st *stats) error {
	var names []string
	for _, t := range topics {
		names = append(names, t.Name)
	}
	list := func(what string, f func(context.Context, ...string) (kadm.ListedOffsets, error)) (kadm.ListedOffsets, error) {
		for {
			l, err := f(ctx, names...)
			if err == nil {
				err = l.Error()
			}
			if err == nil {
				return l, nil
			}
			select {
			case <-ctx.Done():
				return nil, fmt.Errorf("final read: %s offsets: %w", what, err)
			case <-time.After(500 * time.Millisecond):
			}
		}
	}
	ends, err := list("end", adm.ListEndOffsets)
	if err != nil {
		return err
	}
	// Asked after the ends: a start is never past the end it is
	// compared with.
	starts, err := list("start", adm.ListStartOffsets)
	if err != nil {
		return err
	}
	want := map[tp]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if s, ok := starts.Lookup(o.Topic, o.Partition); ok && s.Offset < o.Offset {
			want[tp{o.Topic, o.Partition}] = o.Offset
		}
	})
	for len(want) > 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("final read: %d partitions not read to their end: %w", len(want), err)
		}
		for topic, ps := range recordPolls(rec, st, "final", fs) {
			for p, eo := range ps {
				at := tp{topic, p}
				if eo.Offset >= want[at] {
					delete(want, at)
				}
			}
		}
	}
	return nil
}
