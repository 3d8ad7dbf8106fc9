package server

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"math"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// FileRegion is a range of a file that a response carries as one of its
// byte fields, sent from the file (sendfile) instead of through memory.
// The handler pins the file before answering; the server releases every
// region of a response once it is written, or dropped unwritten.
type FileRegion interface {
	// Size is the region's length in bytes; it never changes.
	Size() int64
	// ReadAt reads from the region, off relative to its start.
	ReadAt(p []byte, off int64) (int, error)
	// SendTo writes [off, off+n) of the region to w; fewer bytes than n
	// is an error.
	SendTo(w io.Writer, off, n int64) (int64, error)
	// Release unpins the file. Called once; regions must tolerate more.
	Release()
}

// RegionField is a byte field of a response that a FileRegion fills.
type RegionField struct {
	Field  *[]byte // the field, as kmsg encodes it; left empty by the handler
	Region FileRegion
}

// RegionResponse is a response whose byte fields may come from files
// (Fetch's record sets). Regions lists them in encoding order; the
// pointers must stay valid until the response is written.
type RegionResponse interface {
	kmsg.Response
	Regions() []RegionField
}

// rawMinBytes: a response whose regions add up to less than this has
// them read through the connection's write buffer, so that it goes out in
// one write. A sendfile per
// partition plus a write per gap costs more syscalls than copying a few
// KiB (a consumer at the tail fetches many small record sets): with one
// 16 KiB batch per response, sending it raw cost 1.4x the CPU of copying
// it (BenchmarkFetch in internal/broker); with 3 MiB, a half.
const rawMinBytes = 64 << 10

// markerLen is the size of the placeholder put in a region's field while
// the response is encoded: a per-server random nonce, then the field's
// index. kmsg writes the placeholder behind its length prefix; the server
// finds it again, writes the region's real length over the prefix and
// sends the region in the placeholder's stead.
const (
	nonceLen  = 12
	markerLen = nonceLen + 4
)

func newNonce() [nonceLen]byte {
	var n [nonceLen]byte
	_, _ = rand.Read(n[:]) // crypto/rand.Read never fails on Linux
	return n
}

// rawPart is one piece of a response on the wire: bytes, or a region.
type rawPart struct {
	b []byte
	r FileRegion
}

// appendHeader starts a response frame: a size placeholder, the
// correlation id, and the header's tagged fields for flexible responses
// (but ApiVersions, whose response header is always v0).
func appendHeader(buf []byte, h header, resp kmsg.Response) []byte {
	buf = append(buf, 0, 0, 0, 0)
	buf = binary.BigEndian.AppendUint32(buf, uint32(h.CorrelationID))
	if resp.IsFlexible() && h.APIKey != apiVersionsKey {
		buf = append(buf, 0)
	}
	return buf
}

// encodeRaw encodes resp into buf with a placeholder in every region's
// field, then cuts buf into the parts to send: the bytes up to each
// field's length prefix (rewritten with the region's real length), the
// region, and so on, ending with the bytes after the last region. The
// frame's size prefix counts the regions. ok=false (with buf still
// usable) means the placeholders were not found where expected; the
// caller then copies the regions instead. Fields are restored before it
// returns.
func encodeRaw(buf []byte, h header, resp kmsg.Response, fields []RegionField, nonce [nonceLen]byte) ([]byte, []rawPart, bool, error) {
	markers := make([]byte, markerLen*len(fields))
	saved := make([][]byte, len(fields))
	for i, f := range fields {
		m := markers[i*markerLen : (i+1)*markerLen]
		copy(m, nonce[:])
		binary.BigEndian.PutUint32(m[nonceLen:], uint32(i))
		saved[i] = *f.Field
		*f.Field = m
	}
	buf = appendHeader(buf[:0], h, resp)
	body := len(buf)
	buf = resp.AppendTo(buf)
	for i, f := range fields {
		*f.Field = saved[i]
	}
	flexible := resp.IsFlexible()
	parts := make([]rawPart, 0, 2*len(fields)+1)
	from := 0 // start of the bytes not yet in parts
	at := body
	total := int64(len(buf)) - 4
	for i, f := range fields {
		j := bytes.Index(buf[at:], nonce[:])
		if j < 0 {
			return buf, nil, false, nil
		}
		j += at
		if j+markerLen > len(buf) || binary.BigEndian.Uint32(buf[j+nonceLen:]) != uint32(i) {
			return buf, nil, false, nil
		}
		size := f.Region.Size()
		var prefixAt, prefixLen int
		if flexible {
			// Compact bytes: uvarint(len+1); a 16-byte placeholder's is 1 byte.
			prefixAt, prefixLen = j-1, 1
			if j-1 < at || buf[j-1] != markerLen+1 {
				return buf, nil, false, nil
			}
		} else {
			prefixAt, prefixLen = j-4, 4
			if j-4 < at || binary.BigEndian.Uint32(buf[j-4:]) != markerLen {
				return buf, nil, false, nil
			}
		}
		// The real prefix is written over the old one and the
		// placeholder (at most 5 of their 17 or 20 bytes).
		var n int
		if flexible {
			n = binary.PutUvarint(buf[prefixAt:j+markerLen], uint64(size)+1)
		} else {
			if size > math.MaxInt32 {
				return buf, nil, false, nil
			}
			binary.BigEndian.PutUint32(buf[prefixAt:], uint32(size))
			n = 4
		}
		total += int64(n-prefixLen-markerLen) + size
		parts = append(parts, rawPart{b: buf[from : prefixAt+n]})
		if size > 0 {
			parts = append(parts, rawPart{r: f.Region})
		}
		from = j + markerLen
		at = from
	}
	if total > math.MaxInt32 {
		return buf, nil, false, fmt.Errorf("response to %s v%d is %d bytes, too large to frame",
			kmsg.NameForKey(h.APIKey), h.APIVersion, total)
	}
	binary.BigEndian.PutUint32(buf, uint32(total))
	parts = append(parts, rawPart{b: buf[from:]})
	return buf, parts, true, nil
}

// fillRegions reads every region into its field, for the copying path:
// one allocation for all of them, in scratch if it is large enough.
// It returns the memory used, to be charged while the response lives.
func fillRegions(fields []RegionField, scratch []byte) ([]byte, error) {
	var sum int64
	for _, f := range fields {
		sum += f.Region.Size()
	}
	if sum > math.MaxInt32 {
		return nil, fmt.Errorf("record sets of %d bytes, too large to frame", sum)
	}
	mem := scratch[:0]
	if int64(cap(mem)) < sum {
		mem = make([]byte, 0, sum)
	}
	mem = mem[:sum]
	if mem == nil {
		mem = []byte{} // empty record sets are empty, not null
	}
	off := 0
	for _, f := range fields {
		n := int(f.Region.Size())
		b := mem[off : off+n : off+n]
		if m, err := f.Region.ReadAt(b, 0); m < n {
			return nil, fmt.Errorf("read record set: %d of %d bytes: %w", m, n, err)
		}
		*f.Field = b
		off += n
	}
	return mem, nil
}

// releaseRegions unpins the regions of a response, if it has any.
func releaseRegions(resp kmsg.Response) {
	rr, ok := resp.(RegionResponse)
	if !ok {
		return
	}
	for _, f := range rr.Regions() {
		f.Region.Release()
	}
}
