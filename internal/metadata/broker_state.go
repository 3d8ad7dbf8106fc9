package metadata

import (
	"fmt"
	"math"
	"slices"
)

// applyRegisterBroker records a registration and returns the broker epoch.
//
//   - Same non-zero incarnation as the current registration: a retried
//     request; nothing changes and the epoch is the one it got before.
//   - Otherwise the broker restarted (or is new). The old incarnation, if
//     any, is fenced first: it leaves the ISRs and leaderships as on
//     fence_broker. The new one gets epoch = index and starts fenced; it is
//     unfenced once its heartbeat says it has caught up.
//   - A restart that does not name the old incarnation's epoch as its
//     previous one may have lost unflushed records: dropUnflushed.
//   - Zero incarnation (a legacy registration, from logs written before the
//     lifecycle existed or from RegisterBroker): epoch 0 and unfenced at
//     once, the only registration those logs know. Its epoch must not
//     depend on the index: a node that restored a version 1 snapshot
//     (which holds no epochs) must agree with one that replayed the log.
func applyRegisterBroker(im *Image, index uint64, c *registerBrokerCmd) (int64, error) {
	b := c.Broker
	if b.ID < 0 {
		return 0, fmt.Errorf("register broker: invalid id %d", b.ID)
	}
	if b.Port < 0 || b.Port > math.MaxUint16 {
		return 0, fmt.Errorf("register broker %d: invalid port %d", b.ID, b.Port)
	}
	old := im.brokers[b.ID]
	legacy := b.Incarnation == [16]byte{}
	if !legacy && old != nil && old.Incarnation == b.Incarnation {
		return old.Epoch, nil
	}
	e := newPartitionEdit(im)
	if old != nil && old.Incarnation != b.Incarnation {
		unflushed := !legacy && old.Incarnation != ([16]byte{}) && c.PreviousEpoch != nil && *c.PreviousEpoch != old.Epoch
		fenceFromPartitions(e, b.ID, unflushed)
	}
	b.Endpoints = slices.Clone(b.Endpoints)
	b.InControlledShutdown = false
	if legacy {
		b.Epoch, b.Fenced = 0, false
		im.brokers[b.ID] = &b
		electOffline(e, b.ID)
		return 0, nil
	}
	b.Epoch, b.Fenced = int64(index), true
	im.brokers[b.ID] = &b
	return b.Epoch, nil
}

// checkBrokerEpoch returns broker id's registration, or ErrStaleBrokerEpoch
// if the broker is not registered at that epoch.
func checkBrokerEpoch(im *Image, id int32, epoch int64) (*Broker, error) {
	b := im.brokers[id]
	if b == nil {
		return nil, fmt.Errorf("%w: broker %d is not registered", ErrStaleBrokerEpoch, id)
	}
	if b.Epoch != epoch {
		return nil, fmt.Errorf("%w: broker %d is registered with epoch %d, not %d", ErrStaleBrokerEpoch, id, b.Epoch, epoch)
	}
	return b, nil
}

// setBroker replaces a registration by a changed copy; an unchanged one
// keeps its pointer, which is how DiffBrokers tells changes apart.
func setBroker(im *Image, b *Broker, change func(*Broker)) {
	nb := *b
	change(&nb)
	if nb.Fenced != b.Fenced || nb.InControlledShutdown != b.InControlledShutdown {
		im.brokers[b.ID] = &nb
	}
}

// applyFenceBroker fences a registration (session timeout, or the broker
// asked): it leaves ISRs and leaderships (fenceFromPartitions), and the
// index is kept as FencedAt. Fencing a fenced broker changes nothing.
func applyFenceBroker(im *Image, index uint64, c *fenceBrokerCmd) error {
	b, err := checkBrokerEpoch(im, c.ID, c.Epoch)
	if err != nil {
		return fmt.Errorf("fence broker: %w", err)
	}
	setBroker(im, b, func(nb *Broker) {
		if !nb.Fenced {
			nb.Fenced, nb.FencedAt = true, int64(index)
		}
	})
	fenceFromPartitions(newPartitionEdit(im), c.ID, false)
	return nil
}

// applyUnfenceBroker unfences a registration whose heartbeat says it has
// caught up with the metadata, and elects it where a partition is offline
// and it is in the ISR. A broker in controlled shutdown stays fenced, as
// Kafka never lets one leave that state.
func applyUnfenceBroker(im *Image, c *unfenceBrokerCmd) error {
	b, err := checkBrokerEpoch(im, c.ID, c.Epoch)
	if err != nil {
		return fmt.Errorf("unfence broker: %w", err)
	}
	if b.InControlledShutdown {
		return fmt.Errorf("%w: unfence broker %d: it is in controlled shutdown", ErrInvalidRequest, c.ID)
	}
	setBroker(im, b, func(nb *Broker) { nb.Fenced = false })
	electOffline(newPartitionEdit(im), c.ID)
	return nil
}

// applyBeginControlledShutdown marks a registration as shutting down and
// moves its leaderships and ISR memberships away where it can
// (drainFromPartitions). Repeating it moves whatever became movable.
func applyBeginControlledShutdown(im *Image, c *controlledShutdownCmd) error {
	b, err := checkBrokerEpoch(im, c.ID, c.Epoch)
	if err != nil {
		return fmt.Errorf("begin controlled shutdown: %w", err)
	}
	setBroker(im, b, func(nb *Broker) { nb.InControlledShutdown = true })
	drainFromPartitions(newPartitionEdit(im), c.ID)
	return nil
}
