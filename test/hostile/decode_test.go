package hostile

import (
	"context"
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/weir-project/weir/test/harness"
)

// tagBomb appends a tagged-field section of distinct empty fields (4-byte
// keys, so that none overwrites another) filling b to about size bytes.
func tagBomb(b []byte, size int) []byte {
	n := (size - len(b) - binary.MaxVarintLen32) / 5
	b = binary.AppendUvarint(b, uint64(n))
	for k := range n {
		b = binary.AppendUvarint(b, uint64(1<<21+k))
		b = append(b, 0)
	}
	return b
}

// sendBomb sends a hostile frame on a fresh connection and expects the
// broker to close it quickly, without an answer; writes may fail once it
// has. It returns how long the refusal took.
func sendBomb(t *testing.T, b *harness.Broker, frame []byte) time.Duration {
	t.Helper()
	c, err := net.DialTimeout("tcp", b.Addr, opTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	go func() {
		c.SetWriteDeadline(time.Now().Add(opTimeout))
		c.Write(frame) // fails once the broker closes
	}()
	expectClosed(t, c, opTimeout)
	return time.Since(start)
}

// decodeAttack sends frame while a legit client and a raw connection keep
// being served, and checks the broker's memory.
func decodeAttack(t *testing.T, what string, frame []byte) {
	b := harness.StartBroker(t)
	l := newLegit(t, b, "legit-decode")
	other, err := net.DialTimeout("tcp", b.Addr, opTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	served(t, other, 1, "a bystander connection before")
	g, attack := guard(t, b)
	attackCtx, stop := context.WithCancel(attack)
	waitLegit := l.during(attackCtx)
	took := sendBomb(t, b, frame)
	harness.WaitFor(t, opTimeout, "a legit round trip after the bomb", func() bool { return g.tripped.Load() || l.done.Load() > 1 })
	stop()
	waitLegit()
	g.check(what)
	t.Logf("%s (%d MiB): refused after %v", what, len(frame)>>20, took.Round(time.Millisecond))
	if took > 10*time.Second {
		t.Errorf("%s: refusing took %v", what, took)
	}
	served(t, other, 2, "a bystander connection after")
}

// A 99 MiB Metadata v12 request made of ~20M unknown tagged fields: the
// old broker decoded it into a map of 1.7 GiB (7.6 s). No real Metadata
// request is that large: it is refused once its API key is read.
func TestMetadataTagBombRefused(t *testing.T) {
	body := []byte{0, 1, 0} // null topics, allow auto-creation, no authorized ops
	body = tagBomb(body, 99<<20)
	decodeAttack(t, "Metadata v12 tag bomb", frameBody(3, 12, true, 1, body))
}

// A 99 MiB Produce v9 request whose one partition carries millions of
// unknown tagged fields: Produce frames may be that large, so its body is
// scanned as it arrives and refused once decoding it would allocate more
// than twice its size.
func TestProduceTagBombRefused(t *testing.T) {
	body := []byte{0, 0xff, 0xff, 0, 0, 0x75, 0x30, 2, 2, 't', 2, 0, 0, 0, 0, 0} // one partition, null records
	body = tagBomb(body, 99<<20-2)
	body = append(body, 0, 0) // topic and request tags
	decodeAttack(t, "Produce v9 tag bomb", frameBody(0, 9, true, 1, body))
}

// A Produce v8 (not flexible: no tags) of ~16M empty topic entries would
// allocate 64 bytes for each 6 wire bytes.
func TestProduceEmptyTopicsRefused(t *testing.T) {
	const n = 16 << 20
	body := []byte{0xff, 0xff, 0, 1, 0, 0, 0x75, 0x30}
	body = binary.BigEndian.AppendUint32(body, n)
	body = append(body, make([]byte, 6*n)...) // empty names, empty partition arrays
	decodeAttack(t, "Produce v8 empty topics", frameBody(0, 8, false, 1, body))
}
