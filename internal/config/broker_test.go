package config

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "server.properties")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func mustNew(t *testing.T, props map[string]string) *Broker {
	t.Helper()
	b, warnings, err := New(props)
	if err != nil {
		t.Fatalf("New(%v): %v", props, err)
	}
	if len(warnings) > 0 {
		t.Fatalf("New(%v) warnings: %v", props, warnings)
	}
	return b
}

func TestDefaults(t *testing.T) {
	b, warnings, err := Load("", nil)
	if err != nil || len(warnings) != 0 {
		t.Fatalf("Load defaults: %v, warnings %v", err, warnings)
	}
	week := int64(7 * 24 * 3600 * 1000)
	checks := []struct {
		name      string
		got, want any
	}{
		{"node.id", b.NodeID, int32(1)},
		{"process.roles", b.ProcessRoles, []string{"broker", "controller"}},
		{"listeners", b.Listeners, []Listener{{"PLAINTEXT", "127.0.0.1", 9092}, {"CONTROLLER", "127.0.0.1", 9093}}},
		{"advertised.listeners", b.AdvertisedListeners, []Listener{{"PLAINTEXT", "127.0.0.1", 9092}}},
		{"controller.listener.names", b.ControllerListenerNames, []string{"CONTROLLER"}},
		{"protocol map", b.ProtocolMap, map[string]string{"PLAINTEXT": "PLAINTEXT", "CONTROLLER": "PLAINTEXT"}},
		{"inter.broker.listener.name", b.InterBrokerListenerName, "PLAINTEXT"},
		{"controller.quorum.voters", b.QuorumVoters, []Voter{{1, "127.0.0.1", 9093}}},
		{"log.dirs", b.LogDirs, []string{"./weir-data"}},
		{"num.partitions", b.NumPartitions, int32(1)},
		{"default.replication.factor", b.DefaultReplicationFactor, int16(1)},
		{"auto.create.topics.enable", b.AutoCreateTopicsEnable, true},
		{"delete.topic.enable", b.DeleteTopicEnable, true},
		{"log.segment.bytes", b.LogSegmentBytes, int64(1 << 30)},
		{"log.roll", b.LogRollMs, week},
		{"log.index.interval.bytes", b.LogIndexIntervalBytes, int64(4096)},
		{"log.index.size.max.bytes", b.LogIndexSizeMaxBytes, int64(10 << 20)},
		{"log.retention", b.LogRetentionMs, week},
		{"log.retention.bytes", b.LogRetentionBytes, int64(-1)},
		{"log.retention.check.interval.ms", b.LogRetentionCheckIntervalMs, int64(300000)},
		{"log.flush.interval.messages", b.LogFlushIntervalMessages, int64(math.MaxInt64)},
		{"log.flush.interval.ms", b.LogFlushIntervalMs, int64(math.MaxInt64)},
		{"log.flush.offset.checkpoint.interval.ms", b.LogFlushOffsetCheckpointIntervalMs, int64(60000)},
		{"message.max.bytes", b.MessageMaxBytes, int64(1048588)},
		{"socket.request.max.bytes", b.SocketRequestMaxBytes, int64(104857600)},
		{"connections.max.idle.ms", b.ConnectionsMaxIdleMs, int64(600000)},
		{"min.insync.replicas", b.MinInsyncReplicas, int32(1)},
		{"log.message.timestamp.type", b.LogMessageTimestampType, "CreateTime"},
		{"log.cleanup.policy", b.LogCleanupPolicy, []string{"delete"}},
		{"log.segment.delete.delay.ms", b.LogSegmentDeleteDelayMs, int64(60000)},
		{"replica.lag.time.max.ms", b.ReplicaLagTimeMaxMs, int64(30000)},
		{"unclean.leader.election.enable", b.UncleanLeaderElectionEnable, false},
		{"offsets.topic.num.partitions", b.OffsetsTopicNumPartitions, int32(50)},
		{"offsets.topic.replication.factor", b.OffsetsTopicReplicationFactor, int16(3)},
		{"group.initial.rebalance.delay.ms", b.GroupInitialRebalanceDelayMs, int64(3000)},
		{"producer.id.expiration.ms", b.ProducerIDExpirationMs, int64(86400000)},
		{"broker.session.timeout.ms", b.BrokerSessionTimeoutMs, int64(9000)},
		{"broker.rack", b.BrokerRack, ""},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %#v, want %#v", c.name, c.got, c.want)
		}
	}
	if !reflect.DeepEqual(Default(), b) {
		t.Error("Default() differs from Load with no input")
	}
}

func TestLoadFileAndOverrides(t *testing.T) {
	path := writeFile(t, `# a comment
! another comment

node.id = 7
num.partitions: 3
log.dirs=/data/a,\
         /data/b
log.segment.bytes=1048576
no.such.key=1
`)
	b, warnings, err := Load(path, []string{"num.partitions=5", "also.unknown=2", "log.retention.bytes = 1000", "retention.ms=5"})
	if err != nil {
		t.Fatal(err)
	}
	if b.NodeID != 7 || b.NumPartitions != 5 || b.LogSegmentBytes != 1048576 || b.LogRetentionBytes != 1000 {
		t.Errorf("got node.id=%d num.partitions=%d log.segment.bytes=%d log.retention.bytes=%d, want 7 5 1048576 1000",
			b.NodeID, b.NumPartitions, b.LogSegmentBytes, b.LogRetentionBytes)
	}
	if !reflect.DeepEqual(b.LogDirs, []string{"/data/a", "/data/b"}) {
		t.Errorf("log.dirs = %q", b.LogDirs)
	}
	// The default voter follows node.id.
	if !reflect.DeepEqual(b.QuorumVoters, []Voter{{7, "127.0.0.1", 9093}}) {
		t.Errorf("voters = %v", b.QuorumVoters)
	}
	if len(warnings) != 3 || !strings.Contains(warnings[2], "topic-level") || !strings.Contains(warnings[2], "log.retention.ms") ||
		!strings.Contains(warnings[0], "no.such.key") || !strings.Contains(warnings[0], path+":9") ||
		!strings.Contains(warnings[1], "also.unknown") || !strings.Contains(warnings[1], "--override") {
		t.Errorf("warnings = %q, want no.such.key (with file:line), also.unknown (override), retention.ms (topic key)", warnings)
	}
	if !b.IsSet("node.id") || !b.IsSet("num.partitions") || b.IsSet("min.insync.replicas") {
		t.Error("IsSet does not reflect what was given")
	}
}

func TestLoadErrors(t *testing.T) {
	if _, _, err := Load(filepath.Join(t.TempDir(), "missing.properties"), nil); err == nil {
		t.Error("missing file: no error")
	}
	if _, _, err := Load(writeFile(t, `a=\u00zz`), nil); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("malformed file: error %v, want one naming line 1", err)
	}
	for _, o := range []string{"novalue", "=1", " = 2"} {
		if _, _, err := Load("", []string{o}); err == nil || !strings.Contains(err.Error(), "key=value") {
			t.Errorf("override %q: error %v, want key=value complaint", o, err)
		}
	}
	// A later override wins over an earlier one; a value may contain '='.
	b, _, err := Load("", []string{"broker.rack=a", "broker.rack=b=c"})
	if err != nil || b.BrokerRack != "b=c" {
		t.Errorf("broker.rack = %q (%v), want b=c", b.BrokerRack, err)
	}
}

func TestRetentionPrecedence(t *testing.T) {
	tests := []struct {
		props map[string]string
		want  int64
	}{
		{map[string]string{"log.retention.hours": "1"}, 3600000},
		{map[string]string{"log.retention.hours": "1", "log.retention.minutes": "2"}, 120000},
		{map[string]string{"log.retention.hours": "1", "log.retention.minutes": "2", "log.retention.ms": "5"}, 5},
		{map[string]string{"log.retention.minutes": "2", "log.retention.ms": "5"}, 5},
		{map[string]string{"log.retention.ms": "-1"}, -1},
		{map[string]string{"log.retention.ms": "-7"}, -1},
		{map[string]string{"log.retention.hours": "-1"}, -1},
		{map[string]string{"log.retention.minutes": "-1", "log.retention.hours": "2"}, -1},
	}
	for _, tt := range tests {
		if got := mustNew(t, tt.props).LogRetentionMs; got != tt.want {
			t.Errorf("%v: retention %d ms, want %d", tt.props, got, tt.want)
		}
	}
}

func TestOtherSynonyms(t *testing.T) {
	b := mustNew(t, map[string]string{"log.roll.hours": "2", "log.dir": "/x", "log.flush.scheduler.interval.ms": "500"})
	if b.LogRollMs != 2*3600000 || !reflect.DeepEqual(b.LogDirs, []string{"/x"}) || b.LogFlushIntervalMs != 500 {
		t.Errorf("roll %d, dirs %q, flush %d; want 7200000, [/x], 500", b.LogRollMs, b.LogDirs, b.LogFlushIntervalMs)
	}
	b = mustNew(t, map[string]string{"log.roll.hours": "2", "log.roll.ms": "10", "log.dir": "/x", "log.dirs": "/y",
		"log.flush.scheduler.interval.ms": "500", "log.flush.interval.ms": "20"})
	if b.LogRollMs != 10 || !reflect.DeepEqual(b.LogDirs, []string{"/y"}) || b.LogFlushIntervalMs != 20 {
		t.Errorf("roll %d, dirs %q, flush %d; want 10, [/y], 20", b.LogRollMs, b.LogDirs, b.LogFlushIntervalMs)
	}
}

func TestInvalidValues(t *testing.T) {
	tests := []struct {
		key, value, reason string
	}{
		{"log.segment.bytes", "abc", "not an integer"},
		{"log.segment.bytes", "13", "at least 14"},
		{"log.segment.bytes", "3000000000", "out of range"},
		{"log.segment.bytes", "1.5", "not an integer"},
		{"node.id", "-1", "at least 0"},
		{"num.partitions", "0", "at least 1"},
		{"default.replication.factor", "40000", "between 1 and 32767"},
		{"offsets.topic.replication.factor", "0", "at least 1"},
		{"min.insync.replicas", "0", "at least 1"},
		{"message.max.bytes", "-1", "at least 0"},
		{"socket.request.max.bytes", "0", "at least 1"},
		{"log.retention.hours", "x", "not an integer"},
		{"log.retention.ms", "1h", "not an integer"},
		{"log.roll.ms", "0", "at least 1"},
		{"log.index.size.max.bytes", "3", "at least 4"},
		{"log.flush.interval.messages", "0", "at least 1"},
		{"connections.max.idle.ms", "", "not an integer"},
		{"auto.create.topics.enable", "yes", "true or false"},
		{"unclean.leader.election.enable", "1", "true or false"},
		{"log.message.timestamp.type", "createtime", "one of CreateTime, LogAppendTime"},
		{"log.cleanup.policy", "delete,remove", `"remove" is not one of`},
		{"log.cleanup.policy", "delete,delete", "listed twice"},
		{"compression.type", "brotli", "one of"},
		{"log.cleaner.min.cleanable.ratio", "1.5", "between 0 and 1"},
		{"log.cleaner.min.cleanable.ratio", "NaN", "not a number"},
		{"process.roles", "worker", `"worker" is not one of`},
		{"process.roles", "", "at least one role"},
		{"log.dirs", "/a,,/b", "empty directory"},
		{"listeners", "", "at least one listener"},
		{"listeners", "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093,EXTRA://127.0.0.1:9094", "EXTRA has no entry in listener.security.protocol.map"},
		{"listener.security.protocol.map", "PLAINTEXT:SSL,CONTROLLER:PLAINTEXT", "SSL"},
		{"listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_SSL", "only PLAINTEXT"},
		{"listener.security.protocol.map", "PLAINTEXT:BOGUS", "unknown security protocol"},
		{"listener.security.protocol.map", "PLAINTEXT", "not LISTENER_NAME:SECURITY_PROTOCOL"},
		{"controller.listener.names", "OTHER", "none of these names is in listeners"},
		{"controller.listener.names", "", "required"},
		{"inter.broker.listener.name", "CONTROLLER", "controller listener"},
		{"inter.broker.listener.name", "NOPE", "no listener named NOPE"},
		{"advertised.listeners", "PLAINTEXT://0.0.0.0:9092", "wildcard"},
		{"advertised.listeners", "OTHER://h:1", "no listener named OTHER"},
		{"controller.quorum.voters", "1@127.0.0.1", "missing port"},
	}
	for _, tt := range tests {
		t.Run(tt.key+"="+tt.value, func(t *testing.T) {
			_, _, err := Load("", []string{tt.key + "=" + tt.value})
			if err == nil {
				t.Fatalf("no error")
			}
			if !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("error %v does not wrap ErrInvalidConfig", err)
			}
			msg := err.Error()
			if !strings.Contains(msg, " "+tt.key+":") || !strings.Contains(msg, tt.reason) {
				t.Errorf("error %q should name %s and say %q", msg, tt.key, tt.reason)
			}
			var ve *ValueError
			if errors.As(err, &ve) && ve.Key == tt.key && ve.Value != tt.value && tt.key != "listeners" {
				t.Errorf("ValueError.Value = %q, want %q", ve.Value, tt.value)
			}
		})
	}
}

func TestErrorMessageFormat(t *testing.T) {
	_, _, err := Load("", []string{"log.segment.bytes=abc"})
	if want := `invalid value "abc" for log.segment.bytes: not an integer`; err == nil || err.Error() != want {
		t.Fatalf("error = %v, want %s", err, want)
	}
}

func TestValuesAreTrimmedAndCaseInsensitiveBooleans(t *testing.T) {
	b := mustNew(t, map[string]string{"num.partitions": " 4 ", "auto.create.topics.enable": " FALSE", "log.cleanup.policy": " compact , delete "})
	if b.NumPartitions != 4 || b.AutoCreateTopicsEnable || !reflect.DeepEqual(b.LogCleanupPolicy, []string{"compact", "delete"}) {
		t.Errorf("got %d %v %q", b.NumPartitions, b.AutoCreateTopicsEnable, b.LogCleanupPolicy)
	}
}

func TestRolesAndListeners(t *testing.T) {
	// A broker-only node needs explicit voters and has no controller listener.
	b := mustNew(t, map[string]string{
		"process.roles":            "broker",
		"node.id":                  "4",
		"listeners":                "PLAINTEXT://:0",
		"controller.quorum.voters": "1@10.0.0.1:9093,2@10.0.0.2:9093",
	})
	if _, ok := b.ControllerListener(); ok {
		t.Error("broker-only node has a controller listener")
	}
	if !b.HasRole("broker") || b.HasRole("controller") {
		t.Errorf("roles = %v", b.ProcessRoles)
	}
	if len(b.QuorumVoters) != 2 || b.QuorumVoters[1].Addr() != "10.0.0.2:9093" {
		t.Errorf("voters = %v", b.QuorumVoters)
	}
	if _, _, err := New(map[string]string{"process.roles": "broker", "listeners": "PLAINTEXT://:0"}); err == nil ||
		!strings.Contains(err.Error(), "controller.quorum.voters") {
		t.Errorf("broker-only without voters: error %v, want one naming controller.quorum.voters", err)
	}
	if _, _, err := New(map[string]string{"process.roles": "broker", "controller.quorum.voters": "1@h:1"}); err == nil ||
		!strings.Contains(err.Error(), "not a controller") {
		t.Errorf("broker-only binding the controller listener: error %v", err)
	}

	// Controller-only: nothing to advertise to clients.
	b = mustNew(t, map[string]string{"process.roles": "controller", "listeners": "CONTROLLER://127.0.0.1:0"})
	if len(b.AdvertisedListeners) != 0 || len(b.ClientListeners()) != 0 {
		t.Errorf("controller-only advertises %v", b.AdvertisedListeners)
	}
	if cl, ok := b.ControllerListener(); !ok || cl.Port != 0 {
		t.Errorf("controller listener = %v, %v", cl, ok)
	}

	// Listener names are case-insensitive.
	b = mustNew(t, map[string]string{
		"listeners":                      "client://127.0.0.1:0,ctl://127.0.0.1:0,REPL://127.0.0.1:0",
		"controller.listener.names":      "ctl",
		"inter.broker.listener.name":     "repl",
		"listener.security.protocol.map": "client:plaintext,CTL:PLAINTEXT,repl:PLAINTEXT",
	})
	var names []string
	for _, l := range b.ClientListeners() {
		names = append(names, l.Name)
	}
	if !reflect.DeepEqual(names, []string{"CLIENT", "REPL"}) || b.InterBrokerListenerName != "REPL" || !b.IsControllerListener("ctl") {
		t.Errorf("client listeners %v, inter-broker %q", names, b.InterBrokerListenerName)
	}
}

func TestAdvertisedFor(t *testing.T) {
	b := mustNew(t, map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0"})
	if h, p, ok := b.AdvertisedFor("plaintext", 41234); !ok || h != "127.0.0.1" || p != 41234 {
		t.Errorf("AdvertisedFor = %s:%d %v, want 127.0.0.1:41234", h, p, ok)
	}
	if _, _, ok := b.AdvertisedFor("CONTROLLER", 1); ok {
		t.Error("the controller listener is advertised by default")
	}
	b = mustNew(t, map[string]string{
		"listeners":            "PLAINTEXT://0.0.0.0:9092,CONTROLLER://127.0.0.1:9093",
		"advertised.listeners": "PLAINTEXT://broker1.example:19092",
	})
	if h, p, ok := b.AdvertisedFor("PLAINTEXT", 9092); !ok || h != "broker1.example" || p != 19092 {
		t.Errorf("explicit advertised = %s:%d %v", h, p, ok)
	}
	// A wildcard bind without advertised.listeners advertises the host name.
	b = mustNew(t, map[string]string{"listeners": "PLAINTEXT://:9092,CONTROLLER://:9093"})
	h, p, ok := b.AdvertisedFor("PLAINTEXT", 9092)
	if !ok || h == "" || h == "0.0.0.0" || p != 9092 {
		t.Errorf("wildcard advertised = %q:%d %v", h, p, ok)
	}
	if v := b.QuorumVoters; len(v) != 1 || v[0].Host != "127.0.0.1" || v[0].Port != 9093 {
		t.Errorf("default voter for a wildcard controller listener = %v", v)
	}
}

func TestBrokerEntries(t *testing.T) {
	b := mustNew(t, map[string]string{"num.partitions": "3", "log.retention.hours": "1"})
	entries := b.Entries()
	if len(entries) != len(brokerKeys) {
		t.Fatalf("%d entries, want %d", len(entries), len(brokerKeys))
	}
	byName := make(map[string]Entry)
	for i, e := range entries {
		if i > 0 && entries[i-1].Name >= e.Name {
			t.Errorf("entries not sorted at %s", e.Name)
		}
		if e.ReadOnly == IsDynamicBrokerKey(e.Name) || e.Sensitive {
			t.Errorf("%s: read-only %v sensitive %v", e.Name, e.ReadOnly, e.Sensitive)
		}
		byName[e.Name] = e
	}
	want := []struct {
		name   string
		value  string
		null   bool
		source Source
		typ    Type
	}{
		{"num.partitions", "3", false, SourceStaticBrokerConfig, TypeInt},
		{"log.retention.hours", "1", false, SourceStaticBrokerConfig, TypeInt},
		{"log.retention.ms", "", true, SourceDefaultConfig, TypeLong},
		{"min.insync.replicas", "1", false, SourceDefaultConfig, TypeInt},
		{"listeners", "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093", false, SourceDefaultConfig, TypeString},
		{"advertised.listeners", "PLAINTEXT://127.0.0.1:9092", false, SourceDefaultConfig, TypeString},
		{"controller.quorum.voters", "1@127.0.0.1:9093", false, SourceDefaultConfig, TypeList},
		{"listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT", false, SourceDefaultConfig, TypeString},
		{"broker.rack", "", true, SourceDefaultConfig, TypeString},
		{"auto.create.topics.enable", "true", false, SourceDefaultConfig, TypeBoolean},
		{"log.cleaner.min.cleanable.ratio", "0.5", false, SourceDefaultConfig, TypeDouble},
	}
	for _, w := range want {
		e, ok := byName[w.name]
		if !ok {
			t.Errorf("no entry for %s", w.name)
			continue
		}
		if e.Value != w.value || e.Null != w.null || e.Source != w.source || e.Type != w.typ {
			t.Errorf("%s = {%q null=%v source=%d type=%d}, want {%q null=%v source=%d type=%d}",
				w.name, e.Value, e.Null, e.Source, e.Type, w.value, w.null, w.source, w.typ)
		}
	}
	syn := byName["num.partitions"].Synonyms
	if len(syn) != 2 || syn[0].Source != SourceStaticBrokerConfig || syn[0].Value != "3" || syn[1].Source != SourceDefaultConfig || syn[1].Value != "1" {
		t.Errorf("num.partitions synonyms = %+v", syn)
	}
}

// Every broker key's value as rendered by Entries must load back to the
// same configuration: the rendering and the parsing agree.
func TestEntriesRoundTrip(t *testing.T) {
	b := mustNew(t, map[string]string{"log.retention.minutes": "30", "broker.rack": "r1", "log.cleanup.policy": "compact,delete"})
	props := make(map[string]string)
	for _, e := range b.Entries() {
		if !e.Null {
			props[e.Name] = e.Value
		}
	}
	again := mustNew(t, props)
	again.explicit, b.explicit = nil, nil
	if !reflect.DeepEqual(again, b) {
		t.Errorf("reloading Entries changed the configuration:\n got %+v\nwant %+v", again, b)
	}
}

// FuzzNew feeds arbitrary server.properties text through the whole of
// Load's pipeline: no input may panic, an accepted configuration must
// describe itself in entries that load back to the same values, and its
// topic defaults must be valid topic values.
func FuzzNew(f *testing.F) {
	for _, seed := range []string{
		"", "node.id=3\nlog.retention.minutes=5", "listeners=A://:0,CONTROLLER://:0\nlistener.security.protocol.map=A:PLAINTEXT,CONTROLLER:PLAINTEXT\ninter.broker.listener.name=A",
		"process.roles=broker\ncontroller.quorum.voters=1@h:1\nlisteners=PLAINTEXT://:0", "log.cleanup.policy=compact,delete\nlog.cleaner.min.cleanable.ratio=1e-3",
		"log.segment.bytes=14\nlog.roll.ms=1", "advertised.listeners=PLAINTEXT://h:0", "log.retention.hours=-3",
	} {
		f.Add([]byte(seed), uint(0), "")
	}
	f.Add([]byte(""), uint(brokerKeyIndex["listeners"]), "PLAINTEXT://[::1]:0,CONTROLLER://:1")
	f.Add([]byte(""), uint(brokerKeyIndex["log.cleaner.min.cleanable.ratio"]), "0.25")
	f.Add([]byte(""), uint(brokerKeyIndex["log.retention.ms"]), "-9")
	// data is a properties file; key picks one known key to set to value,
	// so that the fuzzer reaches every validator without guessing names.
	f.Fuzz(func(t *testing.T, data []byte, key uint, value string) {
		props, err := ParseProperties(data)
		if err != nil {
			return
		}
		m := make(map[string]string)
		for _, p := range props {
			m[p.Key] = p.Value
		}
		if value != "" {
			m[brokerKeys[key%uint(len(brokerKeys))].name] = value
		}
		b, _, err := New(m)
		if err != nil {
			if !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("error %v does not wrap ErrInvalidConfig", err)
			}
			return
		}
		again := make(map[string]string)
		for _, e := range b.Entries() {
			if !e.Null {
				again[e.Name] = e.Value
			}
		}
		b2, _, err := New(again)
		if err != nil {
			t.Fatalf("entries of an accepted config do not load: %v\n%v", err, again)
		}
		want := b.Entries()
		for i, e := range b2.Entries() {
			if w := want[i]; e.Value != w.Value {
				t.Fatalf("%s: %q after reload, was %q", e.Name, e.Value, w.Value)
			}
		}
		for k, v := range b.TopicDefaults() {
			if err := ValidateTopicConfig(k, v); err != nil {
				t.Fatalf("topic default %s=%q invalid: %v", k, v, err)
			}
		}
	})
}

// TestControllerObserverConfig: a controller missing from
// controller.quorum.voters is accepted (it joins the quorum as an
// observer, KIP-853) and keeps the list as given.
func TestControllerObserverConfig(t *testing.T) {
	b, _, err := Load("", []string{"controller.quorum.voters=2@127.0.0.1:9093"})
	if err != nil {
		t.Fatal(err)
	}
	if len(b.QuorumVoters) != 1 || b.QuorumVoters[0].ID != 2 {
		t.Fatalf("voters %v", b.QuorumVoters)
	}
}
