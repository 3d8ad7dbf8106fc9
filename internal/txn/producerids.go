// Package txn hands out producer ids (InitProducerId); the transaction
// coordinator will live here too.
package txn

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
)

// IDSource reserves blocks of producer ids that are never handed out
// again, across the cluster and across restarts (the metadata
// controller's Raft-backed AllocateProducerIDs).
type IDSource interface {
	AllocateProducerIDs(ctx context.Context, n int64) (first int64, err error)
}

// DefaultBlockSize is how many ids one allocation reserves, as Kafka's
// ProducerIdManager does (1000 per AllocateProducerIds request).
const DefaultBlockSize = 1000

// ErrExhausted: the id space is used up (never in practice: 2^63 ids).
var ErrExhausted = errors.New("producer ids exhausted")

// ProducerIDs hands out producer ids from blocks reserved through an
// IDSource. Ids of a block not used before a restart are skipped, never
// reused. Safe for concurrent use.
type ProducerIDs struct {
	src   IDSource
	block int64

	mu         sync.Mutex
	next, end  int64 // the current block is [next, end)
	allocating chan struct{}
	allocErr   error
}

// NewProducerIDs allocates blocks of blockSize ids (<= 0: DefaultBlockSize).
func NewProducerIDs(src IDSource, blockSize int64) *ProducerIDs {
	if blockSize <= 0 {
		blockSize = DefaultBlockSize
	}
	return &ProducerIDs{src: src, block: blockSize}
}

// Next returns a fresh producer id, reserving a new block when the current
// one is used up. Concurrent callers share one reservation in flight.
func (p *ProducerIDs) Next(ctx context.Context) (int64, error) {
	for {
		p.mu.Lock()
		if p.next < p.end {
			id := p.next
			p.next++
			p.mu.Unlock()
			return id, nil
		}
		wait := p.allocating
		if wait == nil {
			wait = make(chan struct{})
			p.allocating = wait
			p.mu.Unlock()
			p.refill(ctx, wait)
		} else {
			p.mu.Unlock()
		}
		select {
		case <-wait:
		case <-ctx.Done():
			return 0, fmt.Errorf("wait for a producer id block: %w", ctx.Err())
		}
		p.mu.Lock()
		err := p.allocErr
		empty := p.next >= p.end
		p.mu.Unlock()
		if err != nil && empty {
			// A reservation made under another caller's context may have
			// failed only because that caller gave up: try our own.
			if ctx.Err() == nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
				continue
			}
			return 0, err
		}
	}
}

// refill reserves one block and wakes everyone waiting on done.
func (p *ProducerIDs) refill(ctx context.Context, done chan struct{}) {
	first, err := p.src.AllocateProducerIDs(ctx, p.block)
	if err == nil && first > math.MaxInt64-p.block {
		err = fmt.Errorf("%w: block at %d", ErrExhausted, first)
	}
	if err == nil && first < 0 {
		err = fmt.Errorf("producer id block at negative id %d", first)
	}
	p.mu.Lock()
	if err != nil {
		p.allocErr = fmt.Errorf("reserve %d producer ids: %w", p.block, err)
	} else {
		p.next, p.end, p.allocErr = first, first+p.block, nil
	}
	p.allocating = nil
	p.mu.Unlock()
	close(done)
}
