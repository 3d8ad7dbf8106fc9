package broker

import "testing"

func TestReconciledIndex(t *testing.T) {
	var r reconciledIndex
	v, ch := r.next()
	if v != 0 {
		t.Fatalf("start at %d", v)
	}
	if r.Advance(0) {
		t.Fatal("advanced to the same index")
	}
	select {
	case <-ch:
		t.Fatal("woken without a change")
	default:
	}
	if !r.Advance(5) || r.Load() != 5 {
		t.Fatal("no advance to 5")
	}
	<-ch // closed by the advance
	if r.Advance(3) || r.Load() != 5 {
		t.Fatal("went back to 3")
	}
	_, ch = r.next()
	r.Advance(6)
	<-ch
}
