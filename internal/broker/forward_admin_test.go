package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Every item of an admin request that could not be forwarded carries the
// error, at the request's version.
func TestForwardFailedAnswersEveryItem(t *testing.T) {
	err := fmt.Errorf("send to the controller: %w", context.DeadlineExceeded)
	want := kerr.RequestTimedOut.Code

	ct := kmsg.NewPtrCreateTopicsRequest()
	ct.Version = 5
	for _, n := range []string{"a", "b"} {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic = n
		ct.Topics = append(ct.Topics, rt)
	}
	dt := kmsg.NewPtrDeleteTopicsRequest()
	dt.Version = 3
	dt.TopicNames = []string{"a", "b"}
	cp := kmsg.NewPtrCreatePartitionsRequest()
	for _, n := range []string{"a", "b"} {
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic = n
		cp.Topics = append(cp.Topics, rt)
	}
	ac := kmsg.NewPtrAlterConfigsRequest()
	ic := kmsg.NewPtrIncrementalAlterConfigsRequest()
	for _, n := range []string{"a", "b"} {
		r := kmsg.NewAlterConfigsRequestResource()
		r.ResourceName = n
		ac.Resources = append(ac.Resources, r)
		ir := kmsg.NewIncrementalAlterConfigsRequestResource()
		ir.ResourceName = n
		ic.Resources = append(ic.Resources, ir)
	}
	ra := kmsg.NewPtrAlterPartitionAssignmentsRequest()

	codes := func(resp kmsg.Response) []int16 {
		var out []int16
		switch r := resp.(type) {
		case *kmsg.CreateTopicsResponse:
			for _, t := range r.Topics {
				out = append(out, t.ErrorCode)
			}
		case *kmsg.DeleteTopicsResponse:
			for _, t := range r.Topics {
				out = append(out, t.ErrorCode)
			}
		case *kmsg.CreatePartitionsResponse:
			for _, t := range r.Topics {
				out = append(out, t.ErrorCode)
			}
		case *kmsg.AlterConfigsResponse:
			for _, t := range r.Resources {
				out = append(out, t.ErrorCode)
			}
		case *kmsg.IncrementalAlterConfigsResponse:
			for _, t := range r.Resources {
				out = append(out, t.ErrorCode)
			}
		case *kmsg.AlterPartitionAssignmentsResponse:
			out = append(out, r.ErrorCode, r.ErrorCode)
		}
		return out
	}
	for _, req := range []kmsg.Request{ct, dt, cp, ac, ic, ra} {
		name := kmsg.NameForKey(req.Key())
		if !isAdminWrite(req) {
			t.Fatalf("%s is not an admin write", name)
		}
		resp := forwardFailed(req, err)
		if resp.Key() != req.Key() || resp.GetVersion() != req.GetVersion() {
			t.Fatalf("%s answered by %s v%d", name, kmsg.NameForKey(resp.Key()), resp.GetVersion())
		}
		got := codes(resp)
		if len(got) != 2 || got[0] != want || got[1] != want {
			t.Errorf("%s: codes %v, want two of %d", name, got, want)
		}
		if len(resp.AppendTo(nil)) == 0 {
			t.Errorf("%s: empty encoding", name)
		}
	}
}

// A forward is bounded by the request's timeout, or untimedAdmin.
func TestAdminTimeout(t *testing.T) {
	ct := kmsg.NewPtrCreateTopicsRequest()
	ct.TimeoutMillis = 2500
	ra := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	ra.TimeoutMillis = 0
	for _, c := range []struct {
		req  kmsg.Request
		want time.Duration
	}{
		{ct, 2500 * time.Millisecond},
		{ra, time.Second},
		{kmsg.NewPtrIncrementalAlterConfigsRequest(), untimedAdmin},
	} {
		if got := adminTimeout(c.req); got != c.want {
			t.Errorf("%s: %v, want %v", kmsg.NameForKey(c.req.Key()), got, c.want)
		}
	}
}
