package replication

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Defaults of WireDialer, kgo's own: the follower's client was a kgo client
// before, and the fault tests' timings were set against these.
const (
	DefaultDialTimeout    = 10 * time.Second
	DefaultRequestTimeout = 10 * time.Second // on top of a Fetch's MaxWait
	// maxResponse bounds a response's size prefix (kgo's BrokerMaxReadBytes):
	// a corrupt prefix must not make the follower allocate gigabytes.
	maxResponse = 100 << 20
	// keepBuffer is the most a client keeps of a larger response buffer
	// once responses are small again.
	keepBuffer = 16 << 20
)

// errProtocol marks an answer that breaks the protocol: the connection is
// dropped.
var errProtocol = errors.New("protocol error")

// WireDialer reaches leaders over TCP with a client of its own: one
// connection per fetcher (versions negotiated by ApiVersions when it
// opens), requests encoded and responses decoded by kmsg, and every
// response read into one buffer the client keeps. A response's byte fields
// (a Fetch's record batches) alias that buffer until the client's next
// request, which the fetcher's one-request-at-a-time use allows.
//
// Why not kgo, which it was: kgo reads each response into a new buffer,
// which the runtime zeroes before the socket overwrites it. In a 3-node
// RF 3 produce run that zeroing was 3.5% of the machine's CPU, and the
// garbage (a replica.fetch.response.max.bytes buffer per fetch) made the
// broker collect often enough to empty its request-buffer pools.
type WireDialer struct {
	// Resolve returns a broker's inter-broker "host:port".
	Resolve func(id int32) (addr string, ok bool)
	// LocalID names this broker in the client id.
	LocalID int32
	// DialTimeout bounds a connection attempt with its ApiVersions
	// exchange (0: DefaultDialTimeout). RequestTimeout bounds a request
	// beyond a Fetch's MaxWait (0: DefaultRequestTimeout).
	DialTimeout, RequestTimeout time.Duration
}

// Dial implements Dialer. No connection is made until the first request.
func (d *WireDialer) Dial(_ context.Context, leaderID int32) (LeaderClient, error) {
	addr, ok := d.Resolve(leaderID)
	if !ok {
		return nil, fmt.Errorf("%w %d", ErrNoEndpoint, leaderID)
	}
	c := &wireClient{
		leaderID:    leaderID,
		addr:        addr,
		dialTimeout: d.DialTimeout,
		timeout:     d.RequestTimeout,
		// Kafka's replica fetcher client id, so the leader's logs name us.
		format: kmsg.NewRequestFormatter(kmsg.FormatterClientID(fmt.Sprintf("broker-%d-fetcher", d.LocalID))),
	}
	if c.dialTimeout <= 0 {
		c.dialTimeout = DefaultDialTimeout
	}
	if c.timeout <= 0 {
		c.timeout = DefaultRequestTimeout
	}
	return c, nil
}

// wireClient is one connection to a leader, used by one goroutine at a
// time. Any failure closes the connection (a cancelled request too: the
// leader then ends its long poll at once, and the next request does not
// queue behind it); the next request dials again.
type wireClient struct {
	leaderID    int32
	addr        string
	dialTimeout time.Duration
	timeout     time.Duration
	format      *kmsg.RequestFormatter
	conn        net.Conn
	versions    map[int16][2]int16 // the leader's min and max per API key
	correlation int32
	out, in     []byte // request and response buffers, reused
}

func (c *wireClient) Fetch(ctx context.Context, req *kmsg.FetchRequest) (*kmsg.FetchResponse, error) {
	resp := new(kmsg.FetchResponse)
	wait := time.Duration(req.MaxWaitMillis) * time.Millisecond
	if err := c.request(ctx, req, resp, max(wait, 0)); err != nil {
		return nil, fmt.Errorf("fetch from broker %d at %s: %w", c.leaderID, c.addr, err)
	}
	return resp, nil
}

func (c *wireClient) OffsetForLeaderEpoch(ctx context.Context, req *kmsg.OffsetForLeaderEpochRequest) (*kmsg.OffsetForLeaderEpochResponse, error) {
	resp := new(kmsg.OffsetForLeaderEpochResponse)
	if err := c.request(ctx, req, resp, 0); err != nil {
		return nil, fmt.Errorf("offset for leader epoch from broker %d at %s: %w", c.leaderID, c.addr, err)
	}
	return resp, nil
}

func (c *wireClient) Close() error {
	if c.conn == nil {
		return nil
	}
	err := c.conn.Close()
	c.conn = nil
	return err
}

// request sends req at the negotiated version and decodes the answer into
// resp, dialing first if there is no connection. wait is how long the
// leader may hold the request before answering.
func (c *wireClient) request(ctx context.Context, req kmsg.Request, resp kmsg.Response, wait time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if c.conn == nil {
		if err := c.connect(ctx); err != nil {
			return err
		}
	}
	v, err := c.version(req)
	if err != nil {
		return err
	}
	req.SetVersion(v)
	conn := c.conn
	// A cancelled context ends the exchange by failing its I/O at once;
	// the connection is then closed below.
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	err = c.exchange(req, resp, time.Now().Add(c.timeout+wait))
	if !stop() || ctx.Err() != nil {
		err = ctx.Err()
	}
	if err != nil {
		c.Close()
	}
	return err
}

// version is the newest version of req's API both sides speak.
func (c *wireClient) version(req kmsg.Request) (int16, error) {
	ours := req.MaxVersion()
	if req.Key() == kmsg.Fetch.Int16() {
		ours = MaxFetchVersion
	}
	theirs, ok := c.versions[req.Key()]
	if !ok || theirs[0] > ours {
		return 0, fmt.Errorf("broker %d does not serve %s at v0-v%d: %w",
			c.leaderID, kmsg.NameForKey(req.Key()), ours, kerr.UnsupportedVersion)
	}
	return min(ours, theirs[1]), nil
}

// connect dials the leader and learns its versions.
func (c *wireClient) connect(ctx context.Context) error {
	dctx, cancel := context.WithTimeout(ctx, c.dialTimeout)
	defer cancel()
	conn, err := (&net.Dialer{}).DialContext(dctx, "tcp", c.addr)
	if err != nil {
		return fmt.Errorf("dial: %w", err)
	}
	c.conn = conn
	stop := context.AfterFunc(dctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	deadline, _ := dctx.Deadline()
	// v3 first (flexible); a broker that does not know it answers
	// UNSUPPORTED_VERSION with its versions at v0.
	for _, v := range []int16{3, 0} {
		req := kmsg.NewPtrApiVersionsRequest()
		req.SetVersion(v)
		req.ClientSoftwareName, req.ClientSoftwareVersion = "weir", "replica-fetcher"
		resp := new(kmsg.ApiVersionsResponse)
		if err = c.exchange(req, resp, deadline); err != nil {
			break
		}
		if resp.ErrorCode == kerr.UnsupportedVersion.Code && v > 0 {
			continue
		}
		if err = kerr.ErrorForCode(resp.ErrorCode); err != nil {
			break
		}
		c.versions = make(map[int16][2]int16, len(resp.ApiKeys))
		for _, k := range resp.ApiKeys {
			c.versions[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
		}
		return nil
	}
	if ctx.Err() != nil {
		err = ctx.Err()
	}
	c.Close()
	return fmt.Errorf("api versions: %w", err)
}

// exchange writes req and reads its answer into resp, all by deadline.
func (c *wireClient) exchange(req kmsg.Request, resp kmsg.Response, deadline time.Time) error {
	if err := c.conn.SetDeadline(deadline); err != nil {
		return err
	}
	c.correlation++
	c.out = c.format.AppendRequest(c.out[:0], req, c.correlation)
	if _, err := c.conn.Write(c.out); err != nil {
		return fmt.Errorf("write %s: %w", kmsg.NameForKey(req.Key()), err)
	}
	var size [4]byte
	if _, err := io.ReadFull(c.conn, size[:]); err != nil {
		return fmt.Errorf("read %s response: %w", kmsg.NameForKey(req.Key()), err)
	}
	n := int(int32(binary.BigEndian.Uint32(size[:])))
	if n < 4 || n > maxResponse {
		return fmt.Errorf("%w: %s response of %d bytes", errProtocol, kmsg.NameForKey(req.Key()), n)
	}
	if cap(c.in) < n || (cap(c.in) > keepBuffer && n <= keepBuffer/4) {
		c.in = make([]byte, n)
	}
	body := c.in[:n]
	if _, err := io.ReadFull(c.conn, body); err != nil {
		return fmt.Errorf("read %s response: %w", kmsg.NameForKey(req.Key()), err)
	}
	return decodeResponse(req, resp, body, c.correlation)
}

// decodeResponse decodes a response frame's body (after the size) that
// answers req sent with correlation id corr.
func decodeResponse(req kmsg.Request, resp kmsg.Response, body []byte, corr int32) error {
	r := kbin.Reader{Src: body}
	if got := r.Int32(); got != corr {
		return fmt.Errorf("%w: response to request %d answers %d", errProtocol, corr, got)
	}
	// Flexible responses have header v1 (tags), except ApiVersions,
	// whose response header stays v0 so any client can read it.
	if req.IsFlexible() && req.Key() != kmsg.ApiVersions.Int16() {
		for k := r.Uvarint(); k > 0 && r.Ok(); k-- {
			r.Uvarint() // tag
			r.Span(int(r.Uvarint()))
		}
	}
	if err := r.Complete(); err != nil {
		return fmt.Errorf("%w: %s response header: %v", errProtocol, kmsg.NameForKey(req.Key()), err)
	}
	resp.SetVersion(req.GetVersion())
	if err := resp.ReadFrom(r.Src); err != nil {
		return fmt.Errorf("%w: %s v%d response: %v", errProtocol, kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	return nil
}
