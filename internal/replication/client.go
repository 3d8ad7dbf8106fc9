package replication

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// LeaderClient is a connection to one leader broker: the two requests a
// follower sends. An error means the request got no answer (connection
// failure, cancelled context); Kafka errors come back in the responses.
// A fetcher uses its client from one goroutine at a time. A response's
// byte fields (a Fetch's record batches) may alias the client's buffer
// and are valid until the client's next request: the fetcher appends them
// before it fetches again, so no response is copied or allocated anew.
type LeaderClient interface {
	Fetch(ctx context.Context, req *kmsg.FetchRequest) (*kmsg.FetchResponse, error)
	OffsetForLeaderEpoch(ctx context.Context, req *kmsg.OffsetForLeaderEpochRequest) (*kmsg.OffsetForLeaderEpochResponse, error)
	Close() error
}

// Dialer opens a client to a leader broker, resolving its endpoint itself
// (the manager knows broker ids only). Each fetcher dials once and again
// after a connection failure, so a leader that moved to a new address is
// found at the next attempt.
type Dialer interface {
	Dial(ctx context.Context, leaderID int32) (LeaderClient, error)
}

// MaxFetchVersion is the newest Fetch version sent: the newest our broker
// serves. Older versions are negotiated down through ApiVersions.
const MaxFetchVersion = 17

// ErrNoEndpoint: the resolver does not know the leader's address.
var ErrNoEndpoint = errors.New("no endpoint for broker")
