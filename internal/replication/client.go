package replication

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// LeaderClient is a connection to one leader broker: the two requests a
// follower sends. An error means the request got no answer (connection
// failure, cancelled context); Kafka errors come back in the responses.
// A fetcher uses its client from one goroutine at a time.
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

// KgoDialer reaches leaders over the network with franz-go: one kgo
// client per dial, talking to the leader's inter-broker listener only (no
// metadata requests), with versions negotiated by ApiVersions.
type KgoDialer struct {
	// Resolve returns a broker's inter-broker "host:port".
	Resolve func(id int32) (addr string, ok bool)
	// LocalID names this broker in the client id.
	LocalID int32
	// Opts are extra client options (dial timeout, TLS, SASL...).
	Opts []kgo.Opt
}

// Dial implements Dialer. No connection is made until the first request.
func (d *KgoDialer) Dial(_ context.Context, leaderID int32) (LeaderClient, error) {
	addr, ok := d.Resolve(leaderID)
	if !ok {
		return nil, fmt.Errorf("%w %d", ErrNoEndpoint, leaderID)
	}
	versions := kversion.Stable()
	versions.SetMaxKeyVersion(kmsg.Fetch.Int16(), MaxFetchVersion)
	opts := append([]kgo.Opt{
		kgo.SeedBrokers(addr),
		kgo.MaxVersions(versions),
		// Kafka's replica fetcher client id, so the leader's logs name us.
		kgo.ClientID(fmt.Sprintf("broker-%d-fetcher", d.LocalID)),
	}, d.Opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("client for broker %d at %s: %w", leaderID, addr, err)
	}
	return &kgoClient{cl: cl, broker: cl.SeedBrokers()[0], leaderID: leaderID, addr: addr}, nil
}

// kgoClient sends requests to the seed broker directly: Broker.Request
// neither retries nor looks at cluster metadata, so errors reach the
// fetcher, which owns the backoff. Cancelling an in-flight Fetch makes kgo
// drop the fetch connection (and the leader then ends its long poll at
// once); the next request dials a new one.
type kgoClient struct {
	cl        *kgo.Client
	broker    *kgo.Broker
	leaderID  int32
	addr      string
	closeOnce sync.Once
	// afterCancel: the last request ended with its context, so kgo may
	// still be tearing its connection down.
	afterCancel atomic.Bool
}

func (c *kgoClient) Fetch(ctx context.Context, req *kmsg.FetchRequest) (*kmsg.FetchResponse, error) {
	resp, err := c.request(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("fetch from broker %d at %s: %w", c.leaderID, c.addr, err)
	}
	return resp.(*kmsg.FetchResponse), nil
}

func (c *kgoClient) OffsetForLeaderEpoch(ctx context.Context, req *kmsg.OffsetForLeaderEpochRequest) (*kmsg.OffsetForLeaderEpochResponse, error) {
	resp, err := c.request(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("offset for leader epoch from broker %d at %s: %w", c.leaderID, c.addr, err)
	}
	return resp.(*kmsg.OffsetForLeaderEpochResponse), nil
}

// request sends req once, or twice right after a cancelled request. kgo
// tears the cancelled request's connection down behind the cancel, so the
// next request can be queued on the dying connection and fail (kgo's "the
// broker connection has died and the request will be retried on a new
// connection") without having been sent; the fetcher would then back off
// for replica.fetch.backoff.ms before a fetch it meant to send at once.
// Sending it again goes out on a new connection. Both requests are reads
// (a repeated Fetch reports the same offsets), so a repeat is harmless.
// Any other failure goes to the fetcher.
func (c *kgoClient) request(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	resp, err := c.broker.Request(ctx, req)
	if err != nil && ctx.Err() == nil && c.afterCancel.Load() && kgo.IsRetryableBrokerErr(err) {
		resp, err = c.broker.Request(ctx, req)
	}
	c.afterCancel.Store(err != nil && ctx.Err() != nil)
	return resp, err
}

func (c *kgoClient) Close() error {
	c.closeOnce.Do(c.cl.Close)
	return nil
}
