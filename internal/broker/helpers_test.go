package broker

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/internal/config"
	"github.com/weir-project/weir/internal/storage"
)

// testBroker is a broker run in-process on loopback ports with a temp data
// dir, stopped (and waited for) when the test ends.
type testBroker struct {
	t    testing.TB
	addr string
}

// startTestBroker runs a single-node broker with the given overrides.
func startTestBroker(t testing.TB, overrides ...string) *testBroker {
	t.Helper()
	dir := t.TempDir()
	cfg, _, err := config.Load("", append([]string{
		"log.dirs=" + dir,
		"listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
	}, overrides...))
	if err != nil {
		t.Fatalf("load config: %v", err)
	}
	ctrl, ok := cfg.ControllerListener()
	if !ok {
		t.Fatal("no controller listener")
	}
	ready := make(chan map[string]net.Addr, 1)
	opts := Options{
		NodeID:             cfg.NodeID,
		LogDirs:            cfg.LogDirs,
		ControllerAddr:     ctrl.Addr(),
		MaxRequestBytes:    int32(min(cfg.SocketRequestMaxBytes, 1<<31-1)),
		ConnectionsMaxIdle: time.Duration(cfg.ConnectionsMaxIdleMs) * time.Millisecond,
		AutoCreateTopics:   cfg.AutoCreateTopicsEnable,
		DefaultPartitions:  cfg.NumPartitions,
		DefaultReplication: cfg.DefaultReplicationFactor,
		CopyFetchRecords:   !cfg.FetchSendfileEnable,
		Config:             cfg,
		Storage: storage.ManagerConfig{
			Dirs:     cfg.LogDirs,
			Defaults: LogConfig(cfg.ResolveTopic(nil)),
		},
		Logger: slog.New(slog.DiscardHandler),
		Ready:  func(a map[string]net.Addr) { ready <- a },
	}
	for _, l := range cfg.ClientListeners() {
		opts.Listeners = append(opts.Listeners, Listener{Name: l.Name, Addr: l.Addr()})
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, opts) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("broker run: %v", err)
		}
	})
	select {
	case addrs := <-ready:
		return &testBroker{t: t, addr: addrs[opts.Listeners[0].Name].String()}
	case err := <-done:
		t.Fatalf("broker stopped before serving: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("broker did not start within 60s")
	}
	return nil
}

// rawConn speaks the Kafka protocol at exact versions, as a client would.
type rawConn struct {
	t    testing.TB
	nc   net.Conn
	br   *bufio.Reader
	corr int32
}

func (b *testBroker) dial() *rawConn {
	b.t.Helper()
	nc, err := net.DialTimeout("tcp", b.addr, 10*time.Second)
	if err != nil {
		b.t.Fatalf("dial: %v", err)
	}
	b.t.Cleanup(func() { nc.Close() })
	return &rawConn{t: b.t, nc: nc, br: bufio.NewReader(nc)}
}

// request sends req at its set version and decodes the response into a
// response of the same version.
func (c *rawConn) request(req kmsg.Request) kmsg.Response {
	c.t.Helper()
	resp, err := c.tryRequest(req)
	if err != nil {
		c.t.Fatalf("%s v%d: %v", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	return resp
}

func (c *rawConn) tryRequest(req kmsg.Request) (kmsg.Response, error) {
	c.corr++
	body := binary.BigEndian.AppendUint16(nil, uint16(req.Key()))
	body = binary.BigEndian.AppendUint16(body, uint16(req.GetVersion()))
	body = binary.BigEndian.AppendUint32(body, uint32(c.corr))
	body = binary.BigEndian.AppendUint16(body, 4)
	body = append(body, "test"...)
	if req.IsFlexible() {
		body = append(body, 0)
	}
	body = req.AppendTo(body)
	frame := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	if err := c.nc.SetDeadline(time.Now().Add(60 * time.Second)); err != nil {
		return nil, err
	}
	if _, err := c.nc.Write(append(frame, body...)); err != nil {
		return nil, fmt.Errorf("write: %w", err)
	}
	var size [4]byte
	if _, err := io.ReadFull(c.br, size[:]); err != nil {
		return nil, fmt.Errorf("read size: %w", err)
	}
	buf := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(c.br, buf); err != nil {
		return nil, fmt.Errorf("read body: %w", err)
	}
	if got := int32(binary.BigEndian.Uint32(buf)); got != c.corr {
		return nil, fmt.Errorf("correlation id %d, want %d", got, c.corr)
	}
	buf = buf[4:]
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if resp.IsFlexible() && req.Key() != kmsg.ApiVersions.Int16() {
		buf = buf[1:] // empty header tags
	}
	if err := resp.ReadFrom(buf); err != nil {
		return nil, fmt.Errorf("decode response: %w", err)
	}
	return resp, nil
}

// createTopic creates a topic and fails the test on any error.
func (c *rawConn) createTopic(name string, partitions int32, configs map[string]string) {
	c.t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.SetVersion(5)
	req.TimeoutMillis = 30000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, 1
	for k, v := range configs {
		cfg := kmsg.NewCreateTopicsRequestTopicConfig()
		cfg.Name, cfg.Value = k, kmsg.StringPtr(v)
		rt.Configs = append(rt.Configs, cfg)
	}
	req.Topics = append(req.Topics, rt)
	resp := c.request(req).(*kmsg.CreateTopicsResponse)
	if code := resp.Topics[0].ErrorCode; code != 0 {
		c.t.Fatalf("create topic %s: error code %d", name, code)
	}
}
