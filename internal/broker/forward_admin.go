package broker

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/internal/metadata"
)

// isAdminWrite reports whether req changes the metadata: such requests
// are served by the active controller (KIP-590 forwarding).
func isAdminWrite(req kmsg.Request) bool {
	switch req.(type) {
	case *kmsg.CreateTopicsRequest, *kmsg.DeleteTopicsRequest, *kmsg.CreatePartitionsRequest,
		*kmsg.AlterConfigsRequest, *kmsg.IncrementalAlterConfigsRequest,
		*kmsg.AlterPartitionAssignmentsRequest:
		return true
	}
	return false
}

// forwardAdmin forwards a client's metadata change to the active
// controller and, before answering, waits until this broker's image shows
// its effect, so that a client asking this broker next sees what it was
// told. Both within the request's own timeout (adminTimeout): a client
// stops reading a little past it (franz-go at the timeout plus 10 s), so
// a forward that outlived it, while a controller election dragged on,
// went unanswered as far as the client could tell. Past it, or when the
// controller cannot be reached, every item is answered with the error
// (REQUEST_TIMED_OUT, which clients retry), as Kafka's forwarding broker
// answers, rather than with a closed connection.
func (b *Broker) forwardAdmin(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	ctx, cancel := context.WithTimeout(ctx, adminTimeout(req))
	defer cancel()
	version := req.GetVersion()
	resp, err := b.forward(ctx, req)
	if err != nil {
		b.log.Warn("forward to the controller failed", "request", kmsg.NameForKey(req.Key()), "err", err)
		return forwardFailed(req, err), nil
	}
	resp.SetVersion(version)
	switch r := resp.(type) {
	case *kmsg.CreateTopicsResponse:
		if req.(*kmsg.CreateTopicsRequest).ValidateOnly {
			break
		}
		for _, t := range r.Topics {
			if t.ErrorCode == 0 {
				name, id := t.Topic, t.TopicID
				b.waitImage(ctx, func(im *metadata.Image) bool {
					got := im.TopicByName(name)
					return got != nil && (id == [16]byte{} || got.ID == id)
				})
			}
		}
	case *kmsg.DeleteTopicsResponse:
		for _, t := range r.Topics {
			if t.ErrorCode == 0 && t.Topic != nil {
				name := *t.Topic
				b.waitImage(ctx, func(im *metadata.Image) bool { return im.TopicByName(name) == nil })
			}
		}
	case *kmsg.AlterPartitionAssignmentsResponse:
		ar := req.(*kmsg.AlterPartitionAssignmentsRequest)
		b.waitImage(ctx, func(im *metadata.Image) bool { return reassignmentsVisible(im, ar, r) })
	case *kmsg.CreatePartitionsResponse:
		want := map[string]int32{}
		for _, rt := range req.(*kmsg.CreatePartitionsRequest).Topics {
			want[rt.Topic] = rt.Count
		}
		if req.(*kmsg.CreatePartitionsRequest).ValidateOnly {
			break
		}
		for _, t := range r.Topics {
			if n, ok := want[t.Topic]; ok && t.ErrorCode == 0 {
				name := t.Topic
				b.waitImage(ctx, func(im *metadata.Image) bool {
					got := im.TopicByName(name)
					return got != nil && int32(len(got.Partitions)) >= n
				})
			}
		}
	}
	return resp, nil
}

// adminTimeout is how long a forwarded admin request may take: its
// TimeoutMillis where it has one (at least 1 s, as the controller takes
// it), else untimedAdmin.
func adminTimeout(req kmsg.Request) time.Duration {
	ms := int32(-1)
	if t, ok := req.(kmsg.TimeoutRequest); ok {
		ms = t.Timeout()
	}
	if ms < 0 {
		return untimedAdmin
	}
	return time.Duration(max(ms, 1000)) * time.Millisecond
}

// untimedAdmin bounds the forward of an admin request without a timeout
// field (AlterConfigs, IncrementalAlterConfigs): below franz-go's read
// deadline for such requests (10 s), the shortest of the clients' (the
// Java AdminClient's request.timeout.ms is 30 s, librdkafka's
// socket.timeout.ms 60 s), and far above a controller election's
// seconds.
const untimedAdmin = 8 * time.Second

// forwardFailed answers every item of an admin request that could not
// be forwarded with err's code.
func forwardFailed(req kmsg.Request, err error) kmsg.Response {
	code, msg := errorCode(err), errorMessage(err)
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	switch r := req.(type) {
	case *kmsg.CreateTopicsRequest:
		out := resp.(*kmsg.CreateTopicsResponse)
		for _, t := range r.Topics {
			st := kmsg.NewCreateTopicsResponseTopic()
			st.Topic, st.ErrorCode, st.ErrorMessage = t.Topic, code, msg
			out.Topics = append(out.Topics, st)
		}
	case *kmsg.DeleteTopicsRequest:
		out := resp.(*kmsg.DeleteTopicsResponse)
		for _, t := range r.Topics {
			st := kmsg.NewDeleteTopicsResponseTopic()
			st.Topic, st.TopicID, st.ErrorCode, st.ErrorMessage = t.Topic, t.TopicID, code, msg
			out.Topics = append(out.Topics, st)
		}
		for _, name := range r.TopicNames {
			st := kmsg.NewDeleteTopicsResponseTopic()
			st.Topic, st.ErrorCode, st.ErrorMessage = kmsg.StringPtr(name), code, msg
			out.Topics = append(out.Topics, st)
		}
	case *kmsg.CreatePartitionsRequest:
		out := resp.(*kmsg.CreatePartitionsResponse)
		for _, t := range r.Topics {
			st := kmsg.NewCreatePartitionsResponseTopic()
			st.Topic, st.ErrorCode, st.ErrorMessage = t.Topic, code, msg
			out.Topics = append(out.Topics, st)
		}
	case *kmsg.AlterConfigsRequest:
		out := resp.(*kmsg.AlterConfigsResponse)
		for _, rr := range r.Resources {
			sr := kmsg.NewAlterConfigsResponseResource()
			sr.ResourceType, sr.ResourceName, sr.ErrorCode, sr.ErrorMessage = rr.ResourceType, rr.ResourceName, code, msg
			out.Resources = append(out.Resources, sr)
		}
	case *kmsg.IncrementalAlterConfigsRequest:
		out := resp.(*kmsg.IncrementalAlterConfigsResponse)
		for _, rr := range r.Resources {
			sr := kmsg.NewIncrementalAlterConfigsResponseResource()
			sr.ResourceType, sr.ResourceName, sr.ErrorCode, sr.ErrorMessage = rr.ResourceType, rr.ResourceName, code, msg
			out.Resources = append(out.Resources, sr)
		}
	case *kmsg.AlterPartitionAssignmentsRequest:
		// The request's own outcome is the top-level error.
		out := resp.(*kmsg.AlterPartitionAssignmentsResponse)
		out.ErrorCode, out.ErrorMessage = code, msg
		out.AllowReplicationFactorChange = r.Version < 1 || r.AllowReplicationFactorChange
	}
	return resp
}
