package server

import (
	"math/bits"
	"sync"
)

// Request frames are read into buffers that grow as their bytes arrive
// (frameReader.grow), a Produce frame to a few MiB. Allocating them
// fresh for every request, and copying each one through every doubling,
// was a quarter of the broker's CPU under produce load (the allocation
// zeroed by the runtime, then the copies, then the GC). frameBufs keeps
// them for reuse instead.
//
// A frame smaller than minChunk gets a buffer of exactly its size, never
// a pooled one: most such frames are not Produce and never come back.
//
// Buffers come in power-of-two classes from minChunk up, so that a
// buffer put back serves any later frame of its class. A frame takes an
// idle buffer large enough for all of it if there is one, and then never
// grows; otherwise it grows through pooled (or new) buffers of its
// classes, each outgrown one going back at once.
//
// Only the memory the frame's bytes need is charged to the request
// budget (memPool), as before: a buffer taken from the pool is memory
// the process already holds, idle. sync.Pool hands idle buffers back to
// the garbage collector after two collections without use, so a burst of
// large requests does not pin memory.
//
// A frame's buffer goes back to the pool only once nothing refers to its
// bytes. That is known for Produce (the batches are copied into the log
// when appended, and nothing else of the request is kept): its frame is
// recycled once answered. Other requests' decoded fields may alias the
// frame (kmsg does not copy byte fields) and be kept, as a JoinGroup's
// protocol metadata is, so their frames are left to the collector.

// maxPooledClass is the largest class kept: minChunk<<13 = 128 MiB,
// above the default socket.request.max.bytes (100 MiB).
const maxPooledClass = 13

// frameBuf is one pooled buffer; pooling the pointer keeps Put from
// allocating.
type frameBuf struct{ b []byte }

// frameBufs is a server's pool of frame buffers.
type frameBufs struct {
	classes [maxPooledClass + 1]sync.Pool
}

// bufClass is the smallest class whose buffers hold n bytes, and false
// past the largest class.
func bufClass(n int) (int, bool) {
	if n <= minChunk {
		return 0, true
	}
	k := bits.Len(uint((n - 1) / minChunk))
	return k, k <= maxPooledClass
}

// idle returns a pooled buffer of at least n bytes, or nil.
func (p *frameBufs) idle(n int) *frameBuf {
	if p == nil {
		return nil
	}
	k, ok := bufClass(n)
	if !ok {
		return nil
	}
	fb, _ := p.classes[k].Get().(*frameBuf)
	return fb
}

// get returns a buffer of at least n bytes: an idle one for the whole
// frame of size bytes if there is one, else one for n bytes, pooled or
// new. Its contents are whatever was there: callers overwrite what they
// use.
func (p *frameBufs) get(n, size int) *frameBuf {
	// A smallest-class buffer for each small frame was 16 KiB of garbage
	// per Fetch or heartbeat: a consumer's fetches alone made the broker
	// collect many times a second.
	if size < minChunk {
		return &frameBuf{b: make([]byte, size)}
	}
	if fb := p.idle(size); fb != nil {
		return fb
	}
	if fb := p.idle(n); fb != nil {
		return fb
	}
	k, ok := bufClass(n)
	if !ok {
		return &frameBuf{b: make([]byte, n)}
	}
	return &frameBuf{b: make([]byte, minChunk<<k)}
}

// put returns a buffer nothing refers to any more.
func (p *frameBufs) put(fb *frameBuf) {
	if p == nil || fb == nil {
		return
	}
	// A buffer serves its class if it holds the class's size: classes are
	// looked up by the size needed, rounded up.
	c := cap(fb.b)
	if c < minChunk {
		return
	}
	k := bits.Len(uint(c/minChunk)) - 1
	if k > maxPooledClass {
		return
	}
	fb.b = fb.b[:cap(fb.b)]
	p.classes[k].Put(fb)
}
