package server

import (
	"sort"
	"unsafe"

	"github.com/weir-project/weir/internal/storage/recordbatch"
)

// checkedRange is one partition's records in a Produce frame that the
// scan validated as they arrived: frame bytes [start, start+n).
type checkedRange struct {
	start, n int
	ck       recordbatch.Checked
}

// checkedRecords is what the scan of one Produce frame validated, in
// frame order.
type checkedRecords struct {
	frame  []byte
	ranges []checkedRange
}

// lookup returns the Checked of records if they are one of the frame's
// validated ranges: decoding leaves every partition's records aliasing
// the frame, so their position in it names them.
func (c checkedRecords) lookup(records []byte) recordbatch.Checked {
	if len(records) == 0 || len(c.ranges) == 0 {
		return recordbatch.Checked{}
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(c.frame)))
	at := uintptr(unsafe.Pointer(unsafe.SliceData(records)))
	if at < base || at-base >= uintptr(len(c.frame)) {
		return recordbatch.Checked{} // not the frame's: rewritten since
	}
	off := int(at - base)
	i := sort.Search(len(c.ranges), func(i int) bool { return c.ranges[i].start >= off })
	if i == len(c.ranges) || c.ranges[i].start != off || c.ranges[i].n != len(records) {
		return recordbatch.Checked{}
	}
	return c.ranges[i].ck
}

// CheckedRecords returns what the server validated of records, one
// partition's records field of the Produce request being handled, as its
// bytes arrived (recordbatch.Checked), for the append to skip. It is the
// zero Checked for anything else: records not taken from this request's
// frame, a set that did not pass, other requests.
func (rc *RequestContext) CheckedRecords(records []byte) recordbatch.Checked {
	if rc == nil {
		return recordbatch.Checked{}
	}
	return rc.checked.lookup(records)
}
