package producerstate

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"slices"
)

// Snapshot file layout: Kafka's producer snapshot version 1, big-endian.
//
//	version   int16   = 1
//	crc       uint32  CRC-32C of every byte after this field
//	count     int32   number of entries
//	entries   count x 46 bytes:
//	  producerId             int64
//	  epoch                  int16
//	  lastSequence           int32   -1 when the entry holds no batch
//	  lastOffset             int64   -1 when the entry holds no batch
//	  offsetDelta            int32   lastOffset - firstOffset of the batch
//	  timestamp              int64   the batch's max timestamp
//	  coordinatorEpoch       int32   -1 (no transactions yet)
//	  currentTxnFirstOffset  int64   -1 (no transactions yet)
//
// Kafka writes one entry per producer (its last batch). We write one entry
// per retained batch, oldest first, so the last five batches survive a
// restart; a reader that keeps the last entry per producer id, as Kafka's
// does, still gets exactly the state Kafka would have written.
const (
	snapshotVersion = 1
	headerLen       = 2 + 4 + 4
	entryLen        = 8 + 2 + 4 + 8 + 4 + 8 + 4 + 8
	crcStart        = 6 // the CRC covers bytes [6, end)
)

// ErrCorruptSnapshot: a snapshot file failed its checks. The state is
// then rebuilt from an older snapshot or the log.
var ErrCorruptSnapshot = errors.New("corrupt producer snapshot")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// encodeSnapshot serialises the producers, ordered by id so equal states
// give equal files.
func encodeSnapshot(producers map[int64]*entry) []byte {
	ids := make([]int64, 0, len(producers))
	n := 0
	for id, e := range producers {
		ids = append(ids, id)
		n += max(len(e.batches), 1)
	}
	slices.Sort(ids)
	b := make([]byte, headerLen, headerLen+n*entryLen)
	be := binary.BigEndian
	be.PutUint16(b[0:], snapshotVersion)
	be.PutUint32(b[6:], uint32(n))
	for _, id := range ids {
		e := producers[id]
		if len(e.batches) == 0 {
			b = appendEntry(b, id, e.epoch, -1, -1, 0, e.lastTimestamp)
			continue
		}
		for _, m := range e.batches {
			b = appendEntry(b, id, e.epoch, m.lastSeq, m.lastOffset, int32(m.lastOffset-m.firstOffset), m.timestamp)
		}
	}
	be.PutUint32(b[2:], crc32.Checksum(b[crcStart:], castagnoli))
	return b
}

func appendEntry(b []byte, id int64, epoch int16, lastSeq int32, lastOffset int64, delta int32, ts int64) []byte {
	be := binary.BigEndian
	b = be.AppendUint64(b, uint64(id))
	b = be.AppendUint16(b, uint16(epoch))
	b = be.AppendUint32(b, uint32(lastSeq))
	b = be.AppendUint64(b, uint64(lastOffset))
	b = be.AppendUint32(b, uint32(delta))
	b = be.AppendUint64(b, uint64(ts))
	b = be.AppendUint32(b, math.MaxUint32)    // coordinator epoch -1
	return be.AppendUint64(b, math.MaxUint64) // no ongoing transaction
}

// decodeSnapshot parses a snapshot file. Every failure wraps
// ErrCorruptSnapshot.
func decodeSnapshot(b []byte) (map[int64]*entry, error) {
	if len(b) < headerLen {
		return nil, fmt.Errorf("%w: %d bytes, header needs %d", ErrCorruptSnapshot, len(b), headerLen)
	}
	be := binary.BigEndian
	if v := int16(be.Uint16(b)); v != snapshotVersion {
		return nil, fmt.Errorf("%w: version %d, want %d", ErrCorruptSnapshot, v, snapshotVersion)
	}
	if stored, got := be.Uint32(b[2:]), crc32.Checksum(b[crcStart:], castagnoli); stored != got {
		return nil, fmt.Errorf("%w: crc %08x, computed %08x", ErrCorruptSnapshot, stored, got)
	}
	count := int64(int32(be.Uint32(b[6:])))
	if count < 0 || int64(len(b)-headerLen) != count*entryLen {
		return nil, fmt.Errorf("%w: %d entries in %d bytes", ErrCorruptSnapshot, count, len(b))
	}
	producers := make(map[int64]*entry)
	for p := headerLen; p < len(b); p += entryLen {
		r := b[p : p+entryLen]
		id := int64(be.Uint64(r))
		epoch := int16(be.Uint16(r[8:]))
		lastSeq := int32(be.Uint32(r[10:]))
		lastOffset := int64(be.Uint64(r[14:]))
		delta := int32(be.Uint32(r[22:]))
		ts := int64(be.Uint64(r[26:]))
		if id < 0 {
			return nil, fmt.Errorf("%w: producer id %d", ErrCorruptSnapshot, id)
		}
		e := producers[id]
		if e == nil {
			e = &entry{epoch: epoch}
			producers[id] = e
		}
		if epoch != e.epoch {
			e.epoch, e.batches = epoch, e.batches[:0]
		}
		e.lastTimestamp = ts
		if lastOffset < 0 {
			continue // an entry that carries only the epoch
		}
		if lastSeq < 0 || delta < 0 || int64(delta) > lastOffset {
			return nil, fmt.Errorf("%w: producer %d: last sequence %d, last offset %d, offset delta %d",
				ErrCorruptSnapshot, id, lastSeq, lastOffset, delta)
		}
		e.add(batchMeta{
			firstSeq:    decrementSeq(lastSeq, delta),
			lastSeq:     lastSeq,
			firstOffset: lastOffset - int64(delta),
			lastOffset:  lastOffset,
			timestamp:   ts,
		})
	}
	return producers, nil
}
