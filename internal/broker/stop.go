package broker

// The pieces of Run's stop: the controlled shutdown, the drain of client
// requests in flight, and the metadata store's close.

import (
	"context"
	"log/slog"
	"time"
)

// controlledShutdown moves this broker's leaderships to other in-sync
// replicas and takes it out of the ISRs before its logs close (Kafka's
// controlled shutdown): clients and followers move on without waiting for
// the session to expire, and nothing acknowledged is left on this broker
// alone. Bounded by controlled.shutdown.timeout.ms, and by
// broker.session.timeout.ms without an answer from any controller. It
// reports whether the controller let the broker go.
func (b *Broker) controlledShutdown() bool {
	if !b.opts.ControlledShutdown || b.lifecycle == nil {
		return false
	}
	timeout := b.opts.ControlledShutdownTimeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	start := time.Now()
	if err := b.lifecycle.ControlledShutdown(ctx, b.opts.SessionTimeout); err != nil {
		b.log.Warn("controlled shutdown incomplete; stopping anyway", slog.Any("err", err))
		return false
	}
	b.log.Info("controlled shutdown done", slog.Duration("took", time.Since(start).Round(time.Millisecond)))
	return true
}

// drainMax bounds how long a stopping broker that leads nothing any more
// waits for the requests its clients already sent: their answers name the
// new leaders, so the clients move at once instead of retrying a closed
// connection after a backoff. It is usually a few milliseconds.
const drainMax = time.Second

// drainClients answers the requests in flight on the client connections
// before they close, once this broker's replicas show the leaderships the
// controlled shutdown moved away (the controller's answer may come before
// this broker has applied them). A broker still leading partitions (one
// node, or no other replica in sync) has no one to send those clients to:
// it closes at once. Only after a controlled shutdown the controller
// granted: without a controller the catch-up could only time out.
func (b *Broker) drainClients() {
	start := time.Now()
	caughtUp := b.awaitCommitted(context.Background())
	if len(b.replicas.Leading()) > 0 {
		b.log.Debug("no drain: still leading", slog.Bool("caught_up", caughtUp))
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), drainMax)
	defer cancel()
	quiet := b.clientSrv.Drain(ctx)
	b.log.Debug("client requests drained", slog.Bool("all_answered", quiet), slog.Duration("took", time.Since(start)))
}

// closeMetadata hands Raft leadership to another voter first, if this node
// leads, so that the quorum does not wait an election timeout.
func (b *Broker) closeMetadata() error {
	if b.meta.IsLeader() && b.quorumVoterCount() > 1 {
		if err := b.meta.TransferLeadership(5 * time.Second); err != nil {
			b.log.Info("metadata leadership not handed over before stopping", slog.Any("err", err))
		}
	}
	return b.meta.Close()
}
