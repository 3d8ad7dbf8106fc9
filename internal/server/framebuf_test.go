package server

import (
	"bufio"
	"bytes"
	"context"
	"testing"
)

func TestBufClass(t *testing.T) {
	for _, c := range []struct {
		n, class int
		ok       bool
	}{
		{0, 0, true}, {1, 0, true}, {minChunk, 0, true}, {minChunk + 1, 1, true},
		{2 * minChunk, 1, true}, {2*minChunk + 1, 2, true}, {3 << 20, 8, true},
		{minChunk << maxPooledClass, maxPooledClass, true}, {minChunk<<maxPooledClass + 1, 0, false},
	} {
		k, ok := bufClass(c.n)
		if ok != c.ok || ok && k != c.class {
			t.Errorf("bufClass(%d) = %d, %v; want %d, %v", c.n, k, ok, c.class, c.ok)
		}
		if ok && minChunk<<k < c.n {
			t.Errorf("class %d of %d bytes holds only %d", k, c.n, minChunk<<k)
		}
	}
}

// A buffer put back serves later frames it is large enough for, and never
// one it is too small for.
func TestFrameBufsReuse(t *testing.T) {
	var p frameBufs
	fb := p.get(100<<10, 100<<10) // class 128 KiB
	if cap(fb.b) != 128<<10 {
		t.Fatalf("new buffer for 100 KiB has %d bytes, want the class's 128 KiB", cap(fb.b))
	}
	p.put(fb)
	if got := p.idle(129 << 10); got != nil {
		t.Fatalf("a %d-byte buffer was handed out for 129 KiB", cap(got.b))
	}
	// sync.Pool may drop what it holds at any time, so which buffer comes
	// back is not checked, only that it is large enough.
	if got := p.get(64<<10+1, 64<<10+1); cap(got.b) < 64<<10+1 {
		t.Fatalf("buffer of %d bytes for %d", cap(got.b), 64<<10+1)
	}
	odd := &frameBuf{b: make([]byte, 48<<10)} // serves class 32 KiB
	p.put(odd)
	if got := p.idle(33 << 10); got == odd {
		t.Fatal("a 48 KiB buffer was handed out for a 33 KiB+ class (64 KiB)")
	}
	p.put(&frameBuf{b: make([]byte, 100)}) // below every class: dropped
	var none *frameBufs
	if got := none.get(10, 10); len(got.b) < 10 {
		t.Fatal("a nil pool must still allocate")
	}
}

// A frame smaller than the smallest class (a Fetch, a heartbeat) gets a
// buffer of its own size and leaves the pool alone: such frames are not
// recycled, so a pooled or class-sized buffer would be 16 KiB of garbage
// per request.
func TestSmallFrameGetsItsOwnSize(t *testing.T) {
	var p frameBufs
	pooled := &frameBuf{b: make([]byte, minChunk)}
	p.put(pooled)
	fb := p.get(100, 100)
	if cap(fb.b) != 100 {
		t.Fatalf("a 100-byte frame got a %d-byte buffer", cap(fb.b))
	}
	if allocs := testing.AllocsPerRun(100, func() { p.get(100, 100) }); allocs > 2 {
		t.Fatalf("%v allocations for a small frame's buffer", allocs)
	}
}

// Frames read one after another through recycled buffers carry exactly
// their own bytes: a reused buffer's old contents never show through.
func TestRecycledFramesKeepTheirBytes(t *testing.T) {
	vt, err := newVersionTable(testAPIs)
	if err != nil {
		t.Fatal(err)
	}
	frames := [][]byte{bigProduceFrame(3, 300<<10), bigProduceFrame(1, 50<<10), bigProduceFrame(2, 700<<10), bigProduceFrame(3, 300<<10)}
	mid := frames[3][len(frames[3])/2:][:1000] // inside a batch: same size as the first, other bytes
	for i := range mid {
		mid[i] ^= 0x5a
	}
	fr := &frameReader{br: bufio.NewReaderSize(bytes.NewReader(bytes.Join(frames, nil)), ioBufferSize), versions: vt,
		bufs: &frameBufs{}, limits: frameLimits{maxBytes: 100 << 20, maxNonProduce: 100 << 20}}
	pool := newMemPool(0)
	for i, want := range frames {
		res := pool.reserve()
		fm, err := fr.next(context.Background(), res)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if !bytes.Equal(fm.buf, want[4:]) {
			t.Fatalf("frame %d: %d bytes read differ from the %d sent", i, len(fm.buf), len(want)-4)
		}
		if int64(cap(fm.buf)) > res.size() {
			t.Fatalf("frame %d: capacity %d beyond the %d bytes reserved", i, cap(fm.buf), res.size())
		}
		fr.bufs.put(fm.fb)
		res.release()
	}
}
