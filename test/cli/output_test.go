package cli_test

import (
	"encoding/base64"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weir-project/weir/test/harness"
)

// TestOutputJSON: every listing and describe command prints one JSON
// document with --output json, holding what the cluster holds (checked
// with kadm); tables are aligned under their header; a format other
// than table or json is refused before any network.
func TestOutputJSON(t *testing.T) {
	b := groupBroker(t)
	adm := newAdmin(t, b)
	bs := bootstrap(b)
	ok(t, "", "topic", "create", "oj", "--partitions", "2", "--config", "retention.ms=60000", bs)
	createTopic(t, adm, "oj2", 1)
	commit(t, adm, "oj-g", map[string]map[int32]int64{"oj": {0: 0}})
	m := consumerMember(t, b, "oj-m", "oj-848", "oj2")
	harness.WaitFor(t, 60*time.Second, "the consumer group stable", func() bool {
		d, ok := describedCG(t, adm, "oj-848")
		return ok && d.State == "Stable" && len(d.AssignedPartitions()["oj2"]) == 1
	})
	defer m.Close()

	t.Run("topic list", func(t *testing.T) {
		var got []struct {
			Topic    string `json:"topic"`
			Internal bool   `json:"internal"`
		}
		decodeJSON(t, ok(t, "", "topic", "list", "-o", "json", bs).stdout, &got)
		want := map[string]bool{"oj": false, "oj2": false, "__consumer_offsets": true}
		if len(got) != len(want) {
			t.Fatalf("json %+v", got)
		}
		for _, tp := range got {
			if internal, ok := want[tp.Topic]; !ok || internal != tp.Internal {
				t.Errorf("topic %+v", tp)
			}
		}
		decodeJSON(t, ok(t, "", "topic", "list", "--exclude-internal", "--output=json", bs).stdout, &got)
		if len(got) != 2 || got[0].Topic != "oj" || got[1].Topic != "oj2" {
			t.Errorf("--exclude-internal json %+v", got)
		}
	})

	type partition struct {
		Topic           string  `json:"topic"`
		Partition       int32   `json:"partition"`
		Leader          *int32  `json:"leader"`
		Replicas        []int32 `json:"replicas"`
		Isr             []int32 `json:"isr"`
		OfflineReplicas []int32 `json:"offlineReplicas"`
	}
	t.Run("topic describe", func(t *testing.T) {
		var got []struct {
			Topic             string            `json:"topic"`
			TopicID           string            `json:"topicId"`
			PartitionCount    int               `json:"partitionCount"`
			ReplicationFactor int               `json:"replicationFactor"`
			Internal          bool              `json:"internal"`
			Configs           map[string]string `json:"configs"`
			Partitions        []partition       `json:"partitions"`
		}
		decodeJSON(t, ok(t, "", "topic", "describe", "oj", "-o", "json", bs).stdout, &got)
		md, err := adm.Metadata(harness.Ctx(t, opTimeout), "oj")
		if err != nil {
			t.Fatal(err)
		}
		td := md.Topics["oj"]
		node := md.Brokers.NodeIDs()[0]
		if len(got) != 1 || got[0].Topic != "oj" || got[0].TopicID != base64.RawURLEncoding.EncodeToString(td.ID[:]) ||
			got[0].PartitionCount != 2 || got[0].ReplicationFactor != 1 || got[0].Internal ||
			len(got[0].Configs) != 1 || got[0].Configs["retention.ms"] != "60000" || len(got[0].Partitions) != 2 {
			t.Fatalf("json %+v", got)
		}
		for i, p := range got[0].Partitions {
			if p.Topic != "oj" || p.Partition != int32(i) || p.Leader == nil || *p.Leader != node ||
				!slices.Equal(p.Replicas, []int32{node}) || !slices.Equal(p.Isr, []int32{node}) || len(p.OfflineReplicas) != 0 {
				t.Errorf("partition %+v", p)
			}
		}
		// A filter that selects nothing is an empty list, not nothing.
		var none []partition
		decodeJSON(t, ok(t, "", "topic", "describe", "--under-replicated-partitions", "-o", "json", bs).stdout, &none)
		if none == nil || len(none) != 0 {
			t.Errorf("filtered json %+v", none)
		}
	})

	t.Run("group list", func(t *testing.T) {
		var got []struct {
			Group        string `json:"group"`
			Type         string `json:"type"`
			State        string `json:"state"`
			ProtocolType string `json:"protocolType"`
		}
		decodeJSON(t, ok(t, "", "group", "list", "-o", "json", bs).stdout, &got)
		if len(got) != 2 || got[0].Group != "oj-848" || got[0].Type != "consumer" || got[0].State != "Stable" ||
			got[1].Group != "oj-g" || got[1].Type != "classic" || got[1].State != "Empty" {
			t.Errorf("json %+v", got)
		}
		if out := ok(t, "", "group", "list", bs).stdout; out != "oj-848\noj-g\n" {
			t.Errorf("plain list %q", out)
		}
		rows := parseTable(t, ok(t, "", "group", "list", "--type", "--state", bs).stdout, "GROUP", "TYPE", "STATE")
		if len(rows) != 2 || rows[0]["TYPE"] != "consumer" || rows[0]["STATE"] != "Stable" || rows[1]["TYPE"] != "classic" || rows[1]["STATE"] != "Empty" {
			t.Errorf("table %v", rows)
		}
	})

	t.Run("cluster status", func(t *testing.T) {
		var got struct {
			ClusterID  string `json:"clusterId"`
			Controller int32  `json:"controller"`
			Brokers    []struct {
				ID    int32   `json:"id"`
				Host  string  `json:"host"`
				Port  int32   `json:"port"`
				Rack  *string `json:"rack"`
				State string  `json:"state"`
			} `json:"brokers"`
			Partitions struct {
				Total           int `json:"total"`
				Offline         int `json:"offline"`
				UnderMinISR     int `json:"underMinIsr"`
				UnderReplicated int `json:"underReplicated"`
			} `json:"partitions"`
			Unhealthy []struct {
				partition
				Problem string `json:"problem"`
			} `json:"unhealthy"`
		}
		decodeJSON(t, ok(t, "", "cluster", "status", "-o", "json", bs).stdout, &got)
		md, err := adm.Metadata(harness.Ctx(t, opTimeout))
		if err != nil {
			t.Fatal(err)
		}
		total := 0
		for _, td := range md.Topics {
			total += len(td.Partitions)
		}
		if got.ClusterID != md.Cluster || got.Controller != md.Controller || len(got.Brokers) != 1 ||
			got.Brokers[0].ID != md.Brokers[0].NodeID || got.Brokers[0].Port != md.Brokers[0].Port || got.Brokers[0].State != "live" ||
			got.Partitions.Total != total || got.Partitions.Offline+got.Partitions.UnderMinISR+got.Partitions.UnderReplicated != 0 || got.Unhealthy == nil {
			t.Errorf("json %+v\nmetadata %+v", got, md)
		}
		out := ok(t, "", "cluster", "status", bs).stdout
		_, brokers, _ := strings.Cut(out, "\n\n")
		if rows := parseTable(t, brokers, "BROKER", "ENDPOINT", "RACK", "STATE"); len(rows) != 1 || rows[0]["ENDPOINT"] != b.Addr || rows[0]["STATE"] != "live" {
			t.Errorf("cluster status:\n%s", out)
		}
	})

	for _, args := range [][]string{
		{"topic", "list"}, {"topic", "describe"}, {"group", "list"}, {"group", "describe", "oj-g"},
		{"group", "reset-offsets", "oj-g", "--all-topics", "--to-earliest"}, {"group", "delete-offsets", "oj-g", "--topic", "oj"},
		{"cluster", "status"},
	} {
		usageFails(t, append(args, "--output", "yaml", "--bootstrap-server=192.0.2.1:9"), `--output "yaml"`)
	}
}

// TestCompletion: `weir completion` writes each shell's script, and the
// completion machinery offers subcommands, flags, and topic and group
// names read from the cluster.
func TestCompletion(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish"} {
		if out := ok(t, "", "completion", shell).stdout; !strings.Contains(out, "__complete") {
			t.Errorf("completion %s does not call back into weir:\n%.300s", shell, out)
		}
	}
	complete := func(args ...string) []string {
		t.Helper()
		var got []string
		for _, l := range lines(ok(t, "", append([]string{"__complete"}, args...)...).stdout) {
			if strings.HasPrefix(l, ":") { // the directive line
				break
			}
			name, _, _ := strings.Cut(l, "\t")
			got = append(got, name)
		}
		return got
	}
	if got := complete("group", "de"); !slices.Equal(got, []string{"delete", "delete-offsets", "describe"}) {
		t.Errorf("group de<TAB>: %q", got)
	}
	if got := complete("group", "describe", "--me"); !slices.Equal(got, []string{"--members"}) {
		t.Errorf("group describe --me<TAB>: %q", got)
	}

	b := groupBroker(t)
	adm := newAdmin(t, b)
	createTopic(t, adm, "cmp-a", 1)
	createTopic(t, adm, "cmp-b", 1)
	createTopic(t, adm, "other", 1)
	commit(t, adm, "cmp-g", map[string]map[int32]int64{"cmp-a": {0: 0}})
	bs := bootstrap(b)
	if got := complete("topic", "describe", bs, "cmp"); !slices.Equal(got, []string{"cmp-a", "cmp-b"}) {
		t.Errorf("topic describe cmp<TAB>: %q", got)
	}
	if got := complete("topic", "describe", bs, "cmp-a", "cmp"); !slices.Equal(got, []string{"cmp-b"}) {
		t.Errorf("topic describe cmp-a cmp<TAB>: %q", got)
	}
	if got := complete("produce", bs, "cmp-a", ""); len(got) != 0 {
		t.Errorf("produce TOPIC <TAB> (takes one topic): %q", got)
	}
	if got := complete("group", "reset-offsets", bs, "--topic", "o"); !slices.Equal(got, []string{"other"}) {
		t.Errorf("--topic o<TAB>: %q", got)
	}
	if got := complete("group", "describe", bs, ""); !slices.Equal(got, []string{"cmp-g"}) {
		t.Errorf("group describe <TAB>: %q", got)
	}
	if got := complete("consume", "x", bs, "--group", "c"); !slices.Equal(got, []string{"cmp-g"}) {
		t.Errorf("consume --group c<TAB>: %q", got)
	}
	// Nothing listening: nothing offered, quickly.
	r := ok(t, "", "__complete", "topic", "describe", "--bootstrap-server=127.0.0.1:1", "")
	if r.elapsed > 20*time.Second || !strings.HasPrefix(r.stdout, ":") {
		t.Errorf("completion against a dead address took %s: %q", r.elapsed, r.stdout)
	}
}
