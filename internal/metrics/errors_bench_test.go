package metrics

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkErrorsProduce1000: counting the error codes of a produce
// response for 1000 partitions (one topic), beside encoding that
// response, which every request pays anyway.
func BenchmarkErrorsProduce1000(b *testing.B) {
	resp := produceResponse(1000, map[int]int16{7: 6})
	resp.SetVersion(9)
	b.Run("count", func(b *testing.B) {
		m := New(Options{})
		b.ReportAllocs()
		for b.Loop() {
			m.countErrors("Produce", resp)
		}
	})
	b.Run("walk", func(b *testing.B) {
		var w errorWalker
		b.ReportAllocs()
		for b.Loop() {
			var t tally
			w.count(resp, &t)
		}
	})
	b.Run("encode", func(b *testing.B) {
		var buf []byte
		b.ReportAllocs()
		for b.Loop() {
			buf = resp.AppendTo(buf[:0])
		}
	})
}

// BenchmarkErrorsSmall: a response with one code (Heartbeat).
func BenchmarkErrorsSmall(b *testing.B) {
	m := New(Options{})
	resp := kmsg.NewPtrHeartbeatResponse()
	b.ReportAllocs()
	for b.Loop() {
		m.countErrors("Heartbeat", resp)
	}
}
