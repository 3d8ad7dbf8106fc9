package server

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// memRegion is a FileRegion over bytes in memory.
type memRegion struct {
	b        []byte
	released atomic.Int32
	sent     atomic.Int32 // SendTo calls
}

func (m *memRegion) Size() int64 { return int64(len(m.b)) }

func (m *memRegion) ReadAt(p []byte, off int64) (int, error) {
	if off >= int64(len(m.b)) {
		return 0, io.EOF
	}
	n := copy(p, m.b[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (m *memRegion) SendTo(w io.Writer, off, n int64) (int64, error) {
	m.sent.Add(1)
	k, err := w.Write(m.b[off : off+n])
	return int64(k), err
}

func (m *memRegion) Release() { m.released.Add(1) }

// regionFetch is a FetchResponse with some record sets as regions.
type regionFetch struct {
	*kmsg.FetchResponse
	at      [][2]int // topic, partition
	regions []*memRegion
}

func (r *regionFetch) Regions() []RegionField {
	out := make([]RegionField, len(r.at))
	for i, at := range r.at {
		out[i] = RegionField{Field: &r.Topics[at[0]].Partitions[at[1]].RecordBatches, Region: r.regions[i]}
	}
	return out
}

// inMemory is the same response with the record sets in its fields.
func (r *regionFetch) inMemory() *kmsg.FetchResponse {
	c := *r.FetchResponse
	c.Topics = make([]kmsg.FetchResponseTopic, len(r.Topics))
	for i, t := range r.Topics {
		c.Topics[i] = t
		c.Topics[i].Partitions = append([]kmsg.FetchResponseTopicPartition(nil), t.Partitions...)
	}
	for i, at := range r.at {
		c.Topics[at[0]].Partitions[at[1]].RecordBatches = r.regions[i].b
	}
	return &c
}

// randomFetch builds a fetch response of the given version: several
// topics and partitions, errors, empty record sets, aborted transactions,
// tagged fields where the version has them, and record sets of sizes
// around the varint boundaries of compact lengths.
func randomFetch(rng *rand.Rand, version int16) *regionFetch {
	sizes := []int{0, 1, 126, 127, 128, 1000, 16382, 16383, 16384, 70000, 300000}
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(version)
	resp.ThrottleMillis = rng.Int32N(100)
	resp.SessionID = 0
	rf := &regionFetch{FetchResponse: resp}
	for ti := range rng.IntN(4) + 1 {
		t := kmsg.NewFetchResponseTopic()
		t.Topic = fmt.Sprintf("topic-%d-%s", ti, string(bytes.Repeat([]byte{'x'}, rng.IntN(40))))
		t.TopicID[0] = byte(ti + 1)
		for pi := range rng.IntN(5) + 1 {
			p := kmsg.NewFetchResponseTopicPartition()
			p.Partition = int32(pi)
			p.HighWatermark, p.LastStableOffset, p.LogStartOffset = rng.Int64N(1<<40), rng.Int64N(1<<40), rng.Int64N(1<<20)
			p.RecordBatches = []byte{}
			switch rng.IntN(4) {
			case 0: // an error, no records
				p.ErrorCode = 6
				p.HighWatermark, p.LastStableOffset, p.LogStartOffset = -1, -1, -1
				p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = 2, 7
			case 1: // empty
			default:
				size := sizes[rng.IntN(len(sizes))]
				b := make([]byte, size)
				for i := 0; i+8 <= len(b); i += 8 {
					binary.LittleEndian.PutUint64(b[i:], rng.Uint64())
				}
				for i := len(b) &^ 7; i < len(b); i++ {
					b[i] = byte(rng.Uint32())
				}
				rf.at = append(rf.at, [2]int{ti, pi})
				rf.regions = append(rf.regions, &memRegion{b: b})
				if rng.IntN(3) == 0 {
					a := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
					a.ProducerID, a.FirstOffset = 9, 10
					p.AbortedTransactions = append(p.AbortedTransactions, a)
				}
				if version >= 12 && rng.IntN(3) == 0 {
					p.DivergingEpoch.Epoch, p.DivergingEpoch.EndOffset = 3, 44
				}
			}
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	if version >= 16 {
		b := kmsg.NewFetchResponseBroker()
		b.NodeID, b.Host, b.Port = 2, "host-2", 9092
		resp.Brokers = append(resp.Brokers, b)
	}
	return rf
}

// assemble is what a raw response puts on the wire.
func assemble(t *testing.T, parts []rawPart) []byte {
	t.Helper()
	var out bytes.Buffer
	for _, p := range parts {
		if p.r != nil {
			if _, err := p.r.SendTo(&out, 0, p.r.Size()); err != nil {
				t.Fatal(err)
			}
			continue
		}
		out.Write(p.b)
	}
	return out.Bytes()
}

// decodeFetch decodes a response frame (size, correlation id, header
// tags for flexible versions, body) with kmsg.
func decodeFetch(t *testing.T, frame []byte, version int16) *kmsg.FetchResponse {
	t.Helper()
	if got := int(binary.BigEndian.Uint32(frame)); got != len(frame)-4 {
		t.Fatalf("frame size prefix %d, frame has %d bytes after it", got, len(frame)-4)
	}
	body := frame[8:]
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(version)
	if resp.IsFlexible() {
		body = body[1:]
	}
	if err := resp.ReadFrom(body); err != nil {
		t.Fatalf("decode v%d: %v", version, err)
	}
	return resp
}

// TestEncodeRawMatchesInMemory: for every Fetch version, random responses
// written raw (encoded bytes with regions between) are byte for byte the
// in-memory encoding, and kmsg decodes them to the same response.
func TestEncodeRawMatchesInMemory(t *testing.T) {
	nonce := newNonce()
	h := header{APIKey: 1, CorrelationID: 77}
	max := kmsg.NewPtrFetchResponse().MaxVersion()
	rng := rand.New(rand.NewPCG(1, 2))
	for v := int16(4); v <= max; v++ {
		for i := range 12 {
			h.APIVersion = v
			checkRaw(t, h, randomFetch(rng, v), nonce, fmt.Sprintf("v%d #%d", v, i))
		}
	}
}

// checkRaw compares the raw, in-memory and copied encodings of rf.
func checkRaw(t *testing.T, h header, rf *regionFetch, nonce [nonceLen]byte, what string) {
	t.Helper()
	v := h.APIVersion
	want, err := encodeResponse(nil, h, rf.inMemory())
	if err != nil {
		t.Fatal(err)
	}
	_, parts, ok, err := encodeRaw(nil, h, rf.FetchResponse, rf.Regions(), nonce)
	if err != nil || !ok {
		t.Fatalf("%s: encodeRaw ok=%v err=%v", what, ok, err)
	}
	got := assemble(t, parts)
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: raw frame (%d bytes) differs from in-memory (%d bytes)", what, len(got), len(want))
	}
	if !reflect.DeepEqual(decodeFetch(t, got, v), decodeFetch(t, want, v)) {
		t.Fatalf("%s: decoded responses differ", what)
	}
	for j, f := range rf.Regions() {
		if len(*f.Field) != 0 {
			t.Fatalf("%s: field %d not restored after encoding", what, j)
		}
	}
	// The copying path gives the same frame.
	if _, err := fillRegions(rf.Regions(), nil); err != nil {
		t.Fatal(err)
	}
	copied, err := encodeResponse(nil, h, rf.FetchResponse)
	if err != nil || !bytes.Equal(copied, want) {
		t.Fatalf("%s: copied path differs (err %v)", what, err)
	}
}

// FuzzEncodeRaw: any response shape (from the seed), version and topic
// name (any bytes, placed before the first record set) encodes raw to
// the in-memory frame.
func FuzzEncodeRaw(f *testing.F) {
	f.Add(uint64(1), int16(4), []byte("t"))
	f.Add(uint64(2), int16(12), []byte{0x11, 0, 0, 0, 0x10})
	f.Add(uint64(3), int16(17), bytes.Repeat([]byte{0}, 300))
	nonce := newNonce()
	maxV := kmsg.NewPtrFetchResponse().MaxVersion()
	f.Fuzz(func(t *testing.T, seed uint64, v int16, name []byte) {
		v = 4 + int16(uint16(v)%uint16(maxV-3))
		rf := randomFetch(rand.New(rand.NewPCG(seed, seed>>1)), v)
		rf.Topics[0].Topic = string(name)
		checkRaw(t, header{APIKey: 1, APIVersion: v, CorrelationID: int32(seed)}, rf, nonce, fmt.Sprintf("seed %d v%d", seed, v))
	})
}

// TestEncodeRawPlaceholderMissing: a field that is not part of the
// response is not found, and the caller falls back to copying.
func TestEncodeRawPlaceholderMissing(t *testing.T) {
	rf := randomFetch(rand.New(rand.NewPCG(3, 4)), 12)
	var stray []byte
	fields := append(rf.Regions(), RegionField{Field: &stray, Region: &memRegion{b: []byte("x")}})
	_, _, ok, err := encodeRaw(nil, header{APIKey: 1, APIVersion: 12}, rf.FetchResponse, fields, newNonce())
	if ok || err != nil {
		t.Fatalf("encodeRaw with a stray field: ok=%v err=%v, want not ok", ok, err)
	}
}

// fetchAPIs is testAPIs with Fetch.
func fetchAPIs() map[int16][2]int16 {
	apis := maps.Clone(testAPIs)
	apis[1] = [2]int16{4, kmsg.NewPtrFetchRequest().MaxVersion()}
	return apis
}

// readFrame reads one whole response frame.
func readFrame(t *testing.T, c net.Conn) []byte {
	t.Helper()
	if err := c.SetReadDeadline(time.Now().Add(waitLimit)); err != nil {
		t.Fatal(err)
	}
	var prefix [4]byte
	if _, err := io.ReadFull(c, prefix[:]); err != nil {
		t.Fatalf("read response size: %v", err)
	}
	frame := make([]byte, 4+binary.BigEndian.Uint32(prefix[:]))
	copy(frame, prefix[:])
	if _, err := io.ReadFull(c, frame[4:]); err != nil {
		t.Fatalf("read response: %v", err)
	}
	return frame
}

// TestServeRegionResponses: over a connection, with sendfile on and off,
// pipelined fetches are answered in order with the in-memory frames,
// every region is released once, and the memory pool is back to zero.
func TestServeRegionResponses(t *testing.T) {
	for _, copyRegions := range []bool{false, true} {
		t.Run(fmt.Sprintf("copy=%v", copyRegions), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(5, 6))
			h := newTestHandler()
			made := make(chan *regionFetch, 64)
			h.fetch = func(r *kmsg.FetchRequest) kmsg.Response {
				rf := randomFetch(rng, r.Version)
				made <- rf
				return rf
			}
			ts := startServer(t, h, func(cfg *Config) {
				cfg.APIs = fetchAPIs()
				cfg.CopyFileRegions = copyRegions
			})
			c := dial(t, ts.addr)
			var frames [][]byte
			var versions []int16
			for v := int16(4); v <= kmsg.NewPtrFetchRequest().MaxVersion(); v++ {
				frames = append(frames, encodeRequest(kmsg.NewPtrFetchRequest(), v, int32(v), strp("t")))
				versions = append(versions, v)
			}
			send(t, c, frames...)
			var answered []*regionFetch
			for i, v := range versions {
				got := readFrame(t, c)
				rf := <-made
				answered = append(answered, rf)
				if corr := int32(binary.BigEndian.Uint32(got[4:])); corr != int32(v) {
					t.Fatalf("response %d: correlation id %d, want %d (out of order)", i, corr, v)
				}
				want, err := encodeResponse(nil, header{APIKey: 1, APIVersion: v, CorrelationID: int32(v)}, rf.inMemory())
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					at := 0
					for at < len(got) && at < len(want) && got[at] == want[at] {
						at++
					}
					t.Fatalf("v%d: frame (%d bytes) differs from in-memory (%d bytes) at byte %d", v, len(got), len(want), at)
				}
			}
			waitUntil(t, "regions released and pool empty", func() bool {
				for _, rf := range answered {
					for _, r := range rf.regions {
						if r.released.Load() != 1 {
							return false
						}
					}
				}
				return ts.srv.pool.inUse() == 0
			})
			var sent int32
			for _, rf := range answered {
				for _, r := range rf.regions {
					sent += r.sent.Load()
				}
			}
			if copyRegions != (sent == 0) {
				t.Fatalf("copy=%v but %d regions were sent raw", copyRegions, sent)
			}
		})
	}
}

// bigFetch answers every fetch with one partition whose record set is a
// region of size bytes.
func bigFetch(size int, made chan<- *regionFetch) func(*kmsg.FetchRequest) kmsg.Response {
	return func(r *kmsg.FetchRequest) kmsg.Response {
		resp := kmsg.NewPtrFetchResponse()
		t := kmsg.NewFetchResponseTopic()
		t.Topic = "big"
		p := kmsg.NewFetchResponseTopicPartition()
		p.RecordBatches = []byte{}
		t.Partitions = append(t.Partitions, p)
		resp.Topics = append(resp.Topics, t)
		rf := &regionFetch{FetchResponse: resp, at: [][2]int{{0, 0}}, regions: []*memRegion{{b: bytes.Repeat([]byte{7}, size)}}}
		made <- rf
		return rf
	}
}

// TestRegionResponseMemoryCharge: while a response waits for a client
// that does not read, only its encoded bytes are charged to the memory
// pool, not its 32 MiB region, whether the region goes by sendfile or
// through the write buffer; the charge is returned once the client has
// read the response.
func TestRegionResponseMemoryCharge(t *testing.T) {
	const size = 32 << 20 // more than loopback socket buffers hold
	for _, copyRegions := range []bool{false, true} {
		t.Run(fmt.Sprintf("copy=%v", copyRegions), func(t *testing.T) {
			h := newTestHandler()
			made := make(chan *regionFetch, 1)
			h.fetch = bigFetch(size, made)
			ts := startServer(t, h, func(cfg *Config) {
				cfg.APIs = fetchAPIs()
				cfg.CopyFileRegions = copyRegions
				cfg.TransferTimeout = -1
			})
			c := dial(t, ts.addr)
			// A fixed receive buffer (no autotuning): with the sender's
			// (at most tcp_wmem's 4 MiB) far less than the region.
			if err := c.(*net.TCPConn).SetReadBuffer(64 << 10); err != nil {
				t.Fatal(err)
			}
			send(t, c, encodeRequest(kmsg.NewPtrFetchRequest(), 12, 1, strp("t")))
			rf := <-made
			// The response is being written once the client sees its
			// first bytes; the rest waits for the client to read.
			if err := c.SetReadDeadline(time.Now().Add(waitLimit)); err != nil {
				t.Fatal(err)
			}
			var prefix [4]byte
			if _, err := io.ReadFull(c, prefix[:]); err != nil {
				t.Fatal(err)
			}
			if used := ts.srv.pool.inUse(); used >= 1<<20 {
				t.Fatalf("%d bytes charged while writing a %d-byte region, want only the encoded bytes", used, size)
			}
			if rf.regions[0].released.Load() != 0 {
				t.Fatal("region released before its response was written")
			}
			rest := make([]byte, binary.BigEndian.Uint32(prefix[:]))
			if _, err := io.ReadFull(c, rest); err != nil {
				t.Fatal(err)
			}
			got := decodeFetch(t, append(prefix[:], rest...), 12)
			if !bytes.Equal(got.Topics[0].Partitions[0].RecordBatches, rf.regions[0].b) {
				t.Fatal("record set differs")
			}
			waitUntil(t, "region released and pool empty", func() bool {
				return rf.regions[0].released.Load() == 1 && ts.srv.pool.inUse() == 0
			})
		})
	}
}

// TestRegionsReleasedWhenClientLeaves: a response whose client is gone
// before it is written still releases its regions, once.
func TestRegionsReleasedWhenClientLeaves(t *testing.T) {
	h := newTestHandler()
	made := make(chan *regionFetch, 1)
	h.fetch = bigFetch(8<<20, made)
	ts := startServer(t, h, func(cfg *Config) { cfg.APIs = fetchAPIs() })
	c := dial(t, ts.addr)
	send(t, c, encodeRequest(kmsg.NewPtrFetchRequest(), 12, 1, strp("t")))
	rf := <-made
	c.Close()
	waitUntil(t, "region released and pool empty", func() bool {
		return rf.regions[0].released.Load() == 1 && ts.srv.pool.inUse() == 0
	})
}

// strayFetch lists a field that is not part of its response.
type strayFetch struct {
	*regionFetch
	stray []byte
	r     *memRegion
}

func (s *strayFetch) Regions() []RegionField {
	return append(s.regionFetch.Regions(), RegionField{Field: &s.stray, Region: s.r})
}

// TestServePlaceholdersNotFound: when the raw encoding cannot place the
// regions, the response is still answered right (regions copied into
// it), and every region released.
func TestServePlaceholdersNotFound(t *testing.T) {
	h := newTestHandler()
	made := make(chan *strayFetch, 1)
	rng := rand.New(rand.NewPCG(7, 8))
	h.fetch = func(r *kmsg.FetchRequest) kmsg.Response {
		s := &strayFetch{regionFetch: randomFetch(rng, r.Version), r: &memRegion{b: []byte("stray")}}
		made <- s
		return s
	}
	ts := startServer(t, h, func(cfg *Config) { cfg.APIs = fetchAPIs() })
	c := dial(t, ts.addr)
	send(t, c, encodeRequest(kmsg.NewPtrFetchRequest(), 13, 1, strp("t")))
	got := readFrame(t, c)
	s := <-made
	want, err := encodeResponse(nil, header{APIKey: 1, APIVersion: 13, CorrelationID: 1}, s.inMemory())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("frame (%d bytes) differs from in-memory (%d bytes)", len(got), len(want))
	}
	waitUntil(t, "regions released and pool empty", func() bool {
		for _, r := range append(s.regions, s.r) {
			if r.released.Load() != 1 {
				return false
			}
		}
		return ts.srv.pool.inUse() == 0
	})
}
