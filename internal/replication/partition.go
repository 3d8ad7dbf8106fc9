package replication

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/weir-project/weir/internal/replica"
	"github.com/weir-project/weir/internal/storage"
)

// Replica is the follower side of a local partition replica, as package
// replica provides it (*replica.Partition satisfies it). Every call that
// changes the log takes the leader epoch the fetcher works for and fails
// with replica.ErrNotFollower once the replica follows another leader or
// epoch, or replica.ErrRemoved once it is gone.
type Replica interface {
	TopicPartition() storage.TopicPartition
	FollowerState() (replica.FollowerState, error)
	// Offsets gives the local high watermark, the truncation point of
	// last resort for a log that has data but no epoch history.
	Offsets() replica.Offsets
	EndOffsetForEpoch(epoch int32) (foundEpoch int32, endOffset int64)
	AppendAsFollower(leaderEpoch int32, records []byte) (storage.AppendInfo, error)
	TruncateTo(leaderEpoch int32, offset int64) error
	TruncateFullyAndStartAt(leaderEpoch int32, offset int64) error
	UpdateFollowerHW(leaderEpoch int32, leaderHW int64) error
	UpdateFollowerLogStart(leaderEpoch int32, leaderLogStart int64) error
}

var _ Replica = (*replica.Partition)(nil)

// State is where a followed partition is in its cycle.
type State int

const (
	// Truncating: the log is being cut back to where it agrees with the
	// leader's (OffsetForLeaderEpoch), before any fetch.
	Truncating State = iota
	// Fetching: batches are fetched from the log end and appended.
	Fetching
	// Stopped: the replica no longer follows this leader epoch (it moved
	// on or was removed); the broker's next Follow or Unfollow decides.
	Stopped
)

func (s State) String() string {
	switch s {
	case Truncating:
		return "truncating"
	case Fetching:
		return "fetching"
	case Stopped:
		return "stopped"
	}
	return "unknown"
}

// Status is one followed partition as the manager sees it, for tests,
// metrics and DescribeLogDirs-style reporting.
type Status struct {
	TopicPartition storage.TopicPartition
	LeaderID       int32
	LeaderEpoch    int32
	State          State
	// DelayedUntil is set while the partition backs off after an error.
	DelayedUntil time.Time
	// LastError is the error that caused the latest backoff or stop; nil
	// once a fetch succeeds again.
	LastError error
	// LogEnd is the local log end after the latest fetch or truncation.
	LogEnd int64
	// LeaderHighWatermark is the leader's high watermark from the latest
	// fetch response (-1 before the first).
	LeaderHighWatermark int64
	// Lag is how far the local log end is behind the leader's high
	// watermark (Kafka's ConsumerLag for replica fetchers).
	Lag int64
	// Throttled: fetched under the reassignment throttle.
	Throttled bool
}

// partition is one Follow: a replica following one leader at one epoch.
// A new leader or epoch makes a new partition; the old one is retired.
type partition struct {
	r       Replica
	tp      storage.TopicPartition
	topicID [16]byte
	leader  int32
	epoch   int32
	log     *slog.Logger

	// applyMu serialises the fetcher's changes to the replica with
	// retire: once retire has returned, gone is set and nothing more
	// reaches the replica from this partition. Held across disk I/O.
	applyMu sync.Mutex
	gone    bool

	// cannotWrite: the last fetch was built for a log that cannot take
	// writes (noteWritable).
	cannotWrite atomic.Bool

	// mu guards the fields below: written by the fetcher goroutine, read
	// by Status.
	mu       sync.Mutex
	state    State
	delayTo  time.Time
	lastErr  error
	askEpoch int32 // next epoch to ask the leader about; -1: the latest local one
	// oorAt is the log end at the last OFFSET_OUT_OF_RANGE that led to an
	// epoch truncation (-1: none); the same answer at the same log end
	// again means truncation cannot fix it, so back off.
	oorAt    int64
	logEnd   int64
	leaderHW int64
	// disagreements counts the answers in a row that said the leader's
	// metadata and ours disagree (delayAfter).
	disagreements int

	// loggedAt is the level lastErr was logged at.
	loggedAt slog.Level

	// throttled: fetched under the reassignment throttle (throttle.go).
	throttled atomic.Bool
}

func newPartition(r Replica, topicID [16]byte, leader, epoch int32, log *slog.Logger) *partition {
	tp := r.TopicPartition()
	return &partition{
		r: r, tp: tp, topicID: topicID, leader: leader, epoch: epoch,
		log:      log.With("topic", tp.Topic, "partition", tp.Partition, "leader", leader, "leader_epoch", epoch),
		state:    Truncating,
		askEpoch: -1,
		oorAt:    -1,
		logEnd:   -1,
		leaderHW: -1,
	}
}

// retire makes the partition inert: it waits for a change in progress and
// keeps every later one away from the replica.
func (p *partition) retire() {
	p.applyMu.Lock()
	p.gone = true
	p.applyMu.Unlock()
	p.mu.Lock()
	p.state = Stopped
	p.mu.Unlock()
}

func (p *partition) status() Status {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := Status{
		TopicPartition: p.tp, LeaderID: p.leader, LeaderEpoch: p.epoch, State: p.state,
		LastError: p.lastErr, LogEnd: p.logEnd, LeaderHighWatermark: p.leaderHW,
		Throttled: p.throttled.Load(),
	}
	if time.Now().Before(p.delayTo) {
		s.DelayedUntil = p.delayTo
	}
	if p.leaderHW >= 0 && p.logEnd >= 0 && p.leaderHW > p.logEnd {
		s.Lag = p.leaderHW - p.logEnd
	}
	return s
}

// ready reports the partition's state if it is due for work at now, or
// false with the time it is due (zero if never: stopped).
func (p *partition) ready(now time.Time) (State, bool, time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state == Stopped {
		return p.state, false, time.Time{}
	}
	if now.Before(p.delayTo) {
		return p.state, false, p.delayTo
	}
	return p.state, true, time.Time{}
}

// delay backs the partition off after err, optionally sending it back to
// truncation. The error is logged when it differs from the previous one,
// so a partition retrying the same failure does not log every backoff.
func (p *partition) delay(backoff time.Duration, err error, truncate bool) {
	p.delayLogged(backoff, err, truncate, slog.LevelWarn)
}

// delayLogged is delay logging at level: an error first logged below
// Warn is logged again when it comes at Warn.
func (p *partition) delayLogged(backoff time.Duration, err error, truncate bool, level slog.Level) {
	p.mu.Lock()
	if p.state == Stopped {
		p.mu.Unlock()
		return
	}
	same := p.lastErr != nil && p.lastErr.Error() == err.Error() && level <= p.loggedAt
	p.lastErr = err
	if !same {
		p.loggedAt = level
	}
	p.delayTo = time.Now().Add(backoff)
	if truncate {
		p.state, p.askEpoch = Truncating, -1
	}
	p.mu.Unlock()
	if !same {
		p.log.Log(context.Background(), level, "replica fetch failed; backing off", "backoff", backoff, "truncate_first", truncate, "err", err)
	}
}

// disagreementBackoff is the first pause after an answer saying that the
// leader's metadata and ours disagree; it doubles with each such answer in
// a row, up to the configured backoff.
const disagreementBackoff = 20 * time.Millisecond

// disagreementCodes are the answers that mean the leader and this
// follower see different metadata: the leader has not applied the topic
// or the leadership yet (UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_ID,
// NOT_LEADER_OR_FOLLOWER, UNKNOWN_LEADER_EPOCH), or has but not opened
// the replica yet (LEADER_NOT_AVAILABLE), or this follower is behind
// (FENCED_LEADER_EPOCH, NOT_LEADER_OR_FOLLOWER).
var disagreementCodes = []int16{
	kerr.UnknownTopicOrPartition.Code, kerr.UnknownTopicID.Code, kerr.NotLeaderForPartition.Code,
	kerr.UnknownLeaderEpoch.Code, kerr.FencedLeaderEpoch.Code, kerr.LeaderNotAvailable.Code,
}

// delayAfter backs the partition off after an error answer: a
// disagreement on the metadata is usually over within milliseconds (a
// follower of a new topic asks before its leader has applied it), so it
// is retried soon and then ever less often; any other error waits the
// whole backoff.
func (p *partition) delayAfter(backoff time.Duration, code int16, err error, truncate bool) {
	if slices.Contains(disagreementCodes, code) {
		p.mu.Lock()
		n := min(p.disagreements, 16)
		p.disagreements++
		p.mu.Unlock()
		if short := disagreementBackoff << n; short < backoff {
			// Every new topic goes through this: it is worth a
			// warning only once it has lasted into the whole backoff.
			p.delayLogged(short, err, truncate, slog.LevelDebug)
			return
		}
	}
	p.delay(backoff, err, truncate)
}

// setFetching moves a partition whose truncation is complete to fetching.
func (p *partition) setFetching(logEnd int64) {
	p.mu.Lock()
	was := p.state
	p.state, p.askEpoch, p.logEnd = Fetching, -1, logEnd
	p.mu.Unlock()
	if was != Fetching {
		p.log.Info("started fetching", "offset", logEnd)
	}
}

// nextAsk is the epoch a walk back through epochs asks about next (-1:
// none, ask about the latest local epoch).
func (p *partition) nextAsk() int32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.askEpoch
}

// setAsk continues a walk back through epochs (KIP-279) at epoch.
func (p *partition) setAsk(epoch int32, logEnd int64) {
	p.mu.Lock()
	p.askEpoch, p.logEnd = epoch, logEnd
	p.mu.Unlock()
}

// retruncate sends the partition back to truncation after an
// OFFSET_OUT_OF_RANGE at logEnd; the second one at the same log end backs
// off first, since truncating did not help.
func (p *partition) retruncate(backoff time.Duration, logEnd int64, err error) {
	p.mu.Lock()
	again := p.oorAt == logEnd
	p.oorAt = logEnd
	if !again {
		p.state, p.askEpoch = Truncating, -1
	}
	p.mu.Unlock()
	if again {
		p.delay(backoff, err, true)
		return
	}
	p.log.Info("fetch offset out of range: truncating by leader epoch again", "offset", logEnd, "err", err)
}

// fetched records a successful fetch.
func (p *partition) fetched(logEnd, leaderHW int64) {
	p.mu.Lock()
	p.logEnd, p.leaderHW, p.lastErr, p.oorAt, p.disagreements = logEnd, leaderHW, nil, -1, 0
	p.mu.Unlock()
}

// stop ends the partition's fetching because the replica moved on or was
// removed: the broker's next Follow or Unfollow decides what comes next.
func (p *partition) stop(err error) {
	p.mu.Lock()
	was := p.state
	p.state, p.lastErr = Stopped, err
	p.mu.Unlock()
	if was != Stopped {
		if errors.Is(err, replica.ErrRemoved) {
			p.log.Info("stopped following: replica removed")
		} else {
			p.log.Info("stopped following: replica moved to another leader or epoch", "err", err)
		}
	}
}

// noteWritable records whether the local log can take writes (err nil)
// as a fetch is built, logging each change once: while it cannot, the
// fetches ask for no data and the leader takes this replica out of the
// ISR (replica.FollowerFetch.CannotWrite).
func (p *partition) noteWritable(err error) {
	was := p.cannotWrite.Swap(err != nil)
	if err == nil && !was {
		return // the fetch hot path: one atomic, no lock
	}
	if err != nil {
		p.mu.Lock()
		p.lastErr = err
		p.mu.Unlock()
	}
	switch {
	case err != nil && !was:
		p.log.Warn("local log cannot take writes; fetching no data until it can", "err", err)
	case err == nil && was:
		p.log.Info("local log takes writes again; fetching")
	}
}
