package server

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Each bad input closes its own connection; the server keeps serving new
// connections and the handler never sees the request.

func TestFrameSizeOutOfBoundsClosesConnection(t *testing.T) {
	const limit = 1024
	ts := startServer(t, newTestHandler(), func(cfg *Config) { cfg.MaxRequestBytes = limit })
	for _, size := range []uint32{0x7fffffff, 0x80000000, 0xffffffff, limit + 1, 1 << 30} {
		t.Run(fmt.Sprintf("%#x", size), func(t *testing.T) {
			c := dial(t, ts.addr)
			// Only the prefix and a few bytes: a server that allocated and
			// waited for the frame would leave the connection open.
			send(t, c, append(binary.BigEndian.AppendUint32(nil, size), 0, 18, 0, 0))
			expectClosed(t, c)
			expectServing(t, ts.addr)
		})
	}
	if n := ts.h.total(); n != 0 {
		t.Fatalf("handler called %d times", n)
	}
}

func TestFrameAtSizeLimitAccepted(t *testing.T) {
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("some-topic")}}
	frame := encodeRequest(req, 1, 1, strp("c"))
	limit := int32(len(frame) - 4)
	ts := startServer(t, newTestHandler(), func(cfg *Config) { cfg.MaxRequestBytes = limit })
	c := dial(t, ts.addr)
	send(t, c, frame)
	if corr, _ := readResponse(t, c); corr != 1 {
		t.Fatalf("correlation id %d, want 1", corr)
	}
}

func TestMalformedRequestsCloseConnection(t *testing.T) {
	// Metadata v1 body: int32 topic count, then int16-length names.
	twoTopics := kmsg.NewPtrMetadataRequest()
	twoTopics.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("alpha")}, {Topic: kmsg.StringPtr("beta")}}
	truncated := encodeRequest(twoTopics, 1, 1, nil)
	truncated = rawFrame(truncated[4 : len(truncated)-3])

	header := func(key, version int16, clientID int16) []byte {
		b := binary.BigEndian.AppendUint16(nil, uint16(key))
		b = binary.BigEndian.AppendUint16(b, uint16(version))
		b = binary.BigEndian.AppendUint32(b, 1)
		return binary.BigEndian.AppendUint16(b, uint16(clientID))
	}
	million := rawFrame(append(header(3, 1, -1), 0x00, 0x0f, 0x42, 0x40, 0, 3, 'a', 'b', 'c'))
	compactMillion := rawFrame(append(header(3, 9, -1), 0, // header tags
		0xc1, 0x84, 0x3d, // uvarint 1,000,001: compact array of 1,000,000
		4, 'a', 'b', 'c'))

	cases := map[string][]byte{
		"http":                      []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
		"empty frame":               rawFrame(nil),
		"short header":              rawFrame([]byte{0, 3, 0, 1, 0}),
		"all 0xff":                  rawFrame(bytes.Repeat([]byte{0xff}, 64)),
		"client id past end":        rawFrame(append(header(3, 1, 100), 'a', 'b')),
		"client id length -2":       rawFrame(header(3, 1, -2)),
		"unknown key 9999":          rawFrame(append(header(9999, 0, -1), 0, 0, 0, 0)),
		"unknown key -1":            rawFrame(append(header(-1, 0, -1), 0, 0, 0, 0)),
		"unconfigured key Fetch":    encodeRequest(kmsg.NewPtrFetchRequest(), 4, 1, nil),
		"unconfigured LeaderAndIsr": encodeRequest(kmsg.NewPtrLeaderAndISRRequest(), 1, 1, nil),
		"Metadata v13 (max 12)":     encodeRequest(kmsg.NewPtrMetadataRequest(), 13, 1, nil),
		"Metadata v-1":              rawFrame(append(header(3, -1, -1), 0, 0, 0, 0)),
		"Produce v2 (min 3)":        encodeRequest(kmsg.NewPtrProduceRequest(), 2, 1, nil),
		"truncated body":            truncated,
		"1M topics claimed":         million,
		"1M topics compact":         compactMillion,
		"bad header tags":           rawFrame(append(header(3, 9, -1), 5, 1)),
		"header tag size past end":  rawFrame(append(header(3, 9, -1), 1, 0, 50, 'x')),
		"header tag count overflow": rawFrame(append(header(3, 9, -1), 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f)),
	}
	ts := startServer(t, newTestHandler(), nil)
	for name, frame := range cases {
		t.Run(name, func(t *testing.T) {
			c := dial(t, ts.addr)
			send(t, c, frame)
			expectClosed(t, c)
			expectServing(t, ts.addr)
		})
	}
	if n := ts.h.total(); n != 0 {
		t.Fatalf("handler called %d times for malformed requests", n)
	}
}

func TestRequestsBeforeBadFrameAreAnswered(t *testing.T) {
	ts := startServer(t, newTestHandler(), nil)
	c := dial(t, ts.addr)
	send(t, c,
		encodeRequest(kmsg.NewPtrMetadataRequest(), 1, 1, nil),
		encodeRequest(kmsg.NewPtrApiVersionsRequest(), 2, 2, nil),
		rawFrame(bytes.Repeat([]byte{0xff}, 16)),
		encodeRequest(kmsg.NewPtrMetadataRequest(), 1, 3, nil))
	for _, want := range []int32{1, 2} {
		if corr, _ := readResponse(t, c); corr != want {
			t.Fatalf("correlation id %d, want %d", corr, want)
		}
	}
	expectClosed(t, c)
	if n := ts.h.count(3); n != 1 {
		t.Fatalf("handler saw %d Metadata requests, want 1 (none after the bad frame)", n)
	}
}

func TestNewValidatesConfig(t *testing.T) {
	h := newTestHandler()
	lst := []Listener{{Name: "A", Addr: "127.0.0.1:0"}}
	bad := map[string]Config{
		"no listeners":       {APIs: testAPIs},
		"duplicate listener": {Listeners: []Listener{lst[0], lst[0]}},
		"bad address":        {Listeners: []Listener{{Name: "A", Addr: "127.0.0.1:notaport"}}},
		"unknown API key":    {Listeners: lst, APIs: map[int16][2]int16{9999: {0, 1}}},
		"min above max":      {Listeners: lst, APIs: map[int16][2]int16{3: {5, 2}}},
		"negative min":       {Listeners: lst, APIs: map[int16][2]int16{3: {-1, 2}}},
		"min above kmsg max": {Listeners: lst, APIs: map[int16][2]int16{3: {500, 600}}},
	}
	for name, cfg := range bad {
		if s, err := New(cfg, h, nil); err == nil {
			s.Close()
			t.Errorf("%s: New succeeded", name)
		}
	}
	if _, err := New(Config{Listeners: lst}, nil, nil); err == nil {
		t.Error("nil handler: New succeeded")
	}

	s, err := New(Config{Listeners: lst, APIs: map[int16][2]int16{3: {0, 1000}}}, h, nil)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer s.Close()
	if r := s.versions.ranges[3]; r.max != kmsg.NewPtrMetadataRequest().MaxVersion() {
		t.Errorf("Metadata max %d, want capped at kmsg's %d", r.max, kmsg.NewPtrMetadataRequest().MaxVersion())
	}
	if r, ok := s.versions.ranges[apiVersionsKey]; !ok || r.min != 0 || r.max != kmsg.NewPtrApiVersionsRequest().MaxVersion() {
		t.Errorf("ApiVersions range %+v (present %v), want [0, kmsg max]", r, ok)
	}
	if a := s.Addr("A"); a == nil || a.(interface{ String() string }).String() == "127.0.0.1:0" {
		t.Errorf("Addr(A) = %v, want the resolved port", a)
	}
	if a := s.Addr("nope"); a != nil {
		t.Errorf("Addr(nope) = %v, want nil", a)
	}
}
