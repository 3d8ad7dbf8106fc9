package cli_test

import (
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/weir-project/weir/test/harness"
)

// describeLines parses `weir topic describe` output: each line's
// tab-separated "Name: value" fields, the leading tab of partition lines
// dropped.
func describeLines(t *testing.T, out string) []map[string]string {
	t.Helper()
	var rows []map[string]string
	for _, l := range lines(out) {
		row := map[string]string{}
		for _, f := range strings.Split(strings.TrimPrefix(l, "\t"), "\t") {
			k, v, found := strings.Cut(f, ": ")
			if !found {
				// "Configs: " with nothing set ends in a bare "Configs:".
				k, v, found = strings.Cut(f, ":")
			}
			if !found {
				t.Fatalf("describe field %q in line %q is not \"Name: value\"", f, l)
			}
			row[k] = v
		}
		rows = append(rows, row)
	}
	return rows
}

// checkDescribe checks the whole description of one topic against the
// cluster as kadm sees it.
func checkDescribe(t *testing.T, adm *kadm.Client, out, topic string, partitions int, configs string) {
	t.Helper()
	md, err := adm.Metadata(harness.Ctx(t, opTimeout), topic)
	if err != nil {
		t.Fatalf("metadata: %v", err)
	}
	td := md.Topics[topic]
	if td.Err != nil {
		t.Fatalf("metadata of %s: %v", topic, td.Err)
	}
	rows := describeLines(t, out)
	if len(rows) != 1+partitions {
		t.Fatalf("describe %s: %d lines, want %d:\n%s", topic, len(rows), 1+partitions, out)
	}
	wantHead := map[string]string{
		"Topic":             topic,
		"TopicId":           base64.RawURLEncoding.EncodeToString(td.ID[:]),
		"PartitionCount":    fmt.Sprint(partitions),
		"ReplicationFactor": "1",
		"Configs":           configs,
	}
	if fmt.Sprint(rows[0]) != fmt.Sprint(wantHead) {
		t.Errorf("describe header = %v, want %v", rows[0], wantHead)
	}
	node := fmt.Sprint(md.Brokers.NodeIDs()[0])
	for p, row := range rows[1:] {
		want := map[string]string{
			"Topic": topic, "Partition": fmt.Sprint(p), "Leader": node, "Replicas": node, "Isr": node,
		}
		if fmt.Sprint(row) != fmt.Sprint(want) {
			t.Errorf("describe partition line %d = %v, want %v", p, row, want)
		}
	}
}

func TestTopicCommands(t *testing.T) {
	b := harness.StartBroker(t, "auto.create.topics.enable=false")
	adm := newAdmin(t, b)
	bs := bootstrap(b)

	r := ok(t, "", "topic", "create", "orders", "--partitions", "3", "--config", "retention.ms=60000",
		"--config", "max.message.bytes=200000", bs)
	if r.stdout != "Created topic orders.\n" {
		t.Errorf("create printed %q", r.stdout)
	}
	ok(t, "", "topic", "create", "alpha", "--partitions=1", bs)

	// What the CLI created is what the cluster has.
	td := endOffsets(t, adm, "orders")
	if len(td) != 3 {
		t.Fatalf("orders has %d partitions, want 3", len(td))
	}
	rcs, err := adm.DescribeTopicConfigs(harness.Ctx(t, opTimeout), "orders")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On("orders", nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("describe configs of orders: %v %v", err, rc.Err)
	}
	for _, c := range rc.Configs {
		if c.Key == "retention.ms" && c.MaybeValue() != "60000" {
			t.Errorf("retention.ms of orders = %q, want 60000", c.MaybeValue())
		}
	}

	t.Run("list", func(t *testing.T) {
		got := lines(ok(t, "", "topic", "list", bs).stdout)
		if !slices.IsSorted(got) || !slices.Contains(got, "alpha") || !slices.Contains(got, "orders") {
			t.Errorf("list = %q, want sorted and holding alpha and orders", got)
		}
		for _, name := range lines(ok(t, "", "topic", "list", "--exclude-internal", bs).stdout) {
			if strings.HasPrefix(name, "__") {
				t.Errorf("list --exclude-internal shows %q", name)
			}
		}
	})

	t.Run("describe", func(t *testing.T) {
		out := ok(t, "", "topic", "describe", "orders", bs).stdout
		checkDescribe(t, adm, out, "orders", 3, "max.message.bytes=200000,retention.ms=60000")
		out = ok(t, "", "topic", "describe", "alpha", bs).stdout
		checkDescribe(t, adm, out, "alpha", 1, "")

		var heads []string
		for _, row := range describeLines(t, ok(t, "", "topic", "describe", bs).stdout) {
			if _, part := row["Partition"]; !part {
				heads = append(heads, row["Topic"])
			}
		}
		if !slices.Contains(heads, "alpha") || !slices.Contains(heads, "orders") {
			t.Errorf("describe without names shows topics %q", heads)
		}
		failsWith(t, "", []string{"topic", "describe", "missing", bs}, `"missing"`, "UNKNOWN_TOPIC_OR_PARTITION")
	})

	t.Run("alter-config", func(t *testing.T) {
		r := ok(t, "", "topic", "alter-config", "orders", "--set", "retention.ms=120000",
			"--set", "segment.bytes=1048576", "--delete", "max.message.bytes", bs)
		if r.stdout != "Completed updating config for topic orders.\n" {
			t.Errorf("alter-config printed %q", r.stdout)
		}
		out := ok(t, "", "topic", "describe", "orders", bs).stdout
		checkDescribe(t, adm, out, "orders", 3, "retention.ms=120000,segment.bytes=1048576")

		ok(t, "", "topic", "alter-config", "orders", "--delete", "retention.ms", bs)
		out = ok(t, "", "topic", "describe", "orders", bs).stdout
		checkDescribe(t, adm, out, "orders", 3, "segment.bytes=1048576")

		failsWith(t, "", []string{"topic", "alter-config", "orders", "--set", "retention.ms=soon", bs},
			`"orders"`, "INVALID_CONFIG")
		failsWith(t, "", []string{"topic", "alter-config", "missing", "--set", "retention.ms=1", bs},
			`"missing"`, "UNKNOWN_TOPIC_OR_PARTITION")
	})

	t.Run("create errors", func(t *testing.T) {
		failsWith(t, "", []string{"topic", "create", "orders", bs}, `"orders"`, "TOPIC_ALREADY_EXISTS")
		ok(t, "", "topic", "create", "orders", "--if-not-exists", bs)
		for _, name := range []string{"bad name", "bad/name", "..", strings.Repeat("x", 250)} {
			failsWith(t, "", []string{"topic", "create", name, bs}, "INVALID_TOPIC_EXCEPTION")
		}
		failsWith(t, "", []string{"topic", "create", "badcfg", "--config", "retention.ms=abc", bs},
			`"badcfg"`, "INVALID_CONFIG")
		failsWith(t, "", []string{"topic", "create", "badcfg", "--config", "cleanup.policy=sometimes", bs},
			"INVALID_CONFIG")
		// Nothing half-created by the refusals.
		if got := lines(ok(t, "", "topic", "list", bs).stdout); slices.Contains(got, "badcfg") {
			t.Errorf("refused topic badcfg exists: %q", got)
		}
	})

	t.Run("delete", func(t *testing.T) {
		ok(t, "", "topic", "delete", "alpha", bs)
		harness.WaitFor(t, opTimeout, "alpha to be gone", func() bool {
			tds, err := adm.ListTopics(harness.Ctx(t, opTimeout))
			return err == nil && !tds.Has("alpha") && tds.Has("orders")
		})
		if got := lines(ok(t, "", "topic", "list", bs).stdout); slices.Contains(got, "alpha") {
			t.Errorf("list after delete = %q", got)
		}
		failsWith(t, "", []string{"topic", "delete", "alpha", bs}, `"alpha"`, "UNKNOWN_TOPIC_OR_PARTITION")
	})
}

// silentListener accepts connections and never answers: a broker that is
// reachable but hung.
func silentListener(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() { defer wg.Done(); io.Copy(io.Discard, c) }()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

// TestUnreachableBroker: without a broker every command fails with one
// readable line, and a broker that never answers is given up on within
// --connect-timeout, not --request-timeout and not never. (TestNoBroker
// covers the client commands.)
func TestUnreachableBroker(t *testing.T) {
	t.Parallel()
	refused := "--bootstrap-server=" + refusedAddr(t)
	failsWith(t, "", []string{"topic", "list", refused, "--request-timeout=5s"}, "no broker reachable", "refused")
	failsWith(t, "", []string{"topic", "create", "x", refused, "--request-timeout=5s"}, "no broker reachable", "refused")

	silent := "--bootstrap-server=" + silentListener(t)
	for _, args := range [][]string{
		{"topic", "list", silent, "--connect-timeout=1s"},
		{"topic", "create", "x", silent, "--connect-timeout=1s"},
		{"produce", "x", silent, "--connect-timeout=1s"},
	} {
		start := time.Now()
		failsWith(t, "a\n", args, "no broker reachable", "no answer within --connect-timeout 1s")
		if el := time.Since(start); el > 25*time.Second {
			t.Errorf("weir %q took %s", args, el)
		}
	}
}
