package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/internal/config"
)

func TestParseAddConfig(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string // fmt of the pairs, or "error"
	}{
		{[]string{"a=1"}, "[[a 1]]"},
		{[]string{"a=1,b=2", "c=3"}, "[[a 1] [b 2] [c 3]]"},
		{[]string{" a = 1 , b=x=y"}, "[[a 1] [b x=y]]"},
		{[]string{"cleanup.policy=[compact,delete],retention.ms=5"}, "[[cleanup.policy compact,delete] [retention.ms 5]]"},
		{[]string{"a="}, "[[a ]]"},
		{[]string{"a=1,"}, "[[a 1]]"},
		{[]string{"a=1,2"}, "error"},
		{[]string{"=1"}, "error"},
		{[]string{"novalue"}, "error"},
	} {
		got, err := parseAddConfig(c.args)
		s := fmt.Sprint(got)
		if err != nil {
			s = "error"
		}
		if s != c.want {
			t.Errorf("parseAddConfig(%q) = %s (%v), want %s", c.args, s, err, c.want)
		}
	}
	if got := parseDeleteConfig([]string{"a, b", "c", ","}); fmt.Sprint(got) != "[a b c]" {
		t.Errorf("parseDeleteConfig = %q", got)
	}
}

func TestConfigAlters(t *testing.T) {
	alters, err := configAlters([][2]string{{"a", "1"}}, []string{"b"})
	if err != nil || len(alters) != 2 || alters[0].Op != kadm.SetConfig || *alters[0].Value != "1" ||
		alters[1].Op != kadm.DeleteConfig || alters[1].Name != "b" {
		t.Errorf("configAlters = %+v, %v", alters, err)
	}
	for _, c := range []struct {
		adds    [][2]string
		deletes []string
	}{
		{nil, nil},
		{[][2]string{{"a", "1"}, {"a", "2"}}, nil},
		{[][2]string{{"a", "1"}}, []string{"a"}},
		{nil, []string{"a", "a"}},
	} {
		if _, err := configAlters(c.adds, c.deletes); err == nil {
			t.Errorf("configAlters(%q, %q) accepted", c.adds, c.deletes)
		}
	}
}

// TestWriteConfigsMasksSensitive: a sensitive value is never printed, in
// the table or in JSON, nor through its synonyms.
func TestWriteConfigsMasksSensitive(t *testing.T) {
	secret := "hunter2"
	configs := []kadm.Config{
		{Key: "a.password", Value: &secret, Sensitive: true, Source: kmsg.ConfigSourceDynamicBrokerConfig,
			Synonyms: []kadm.ConfigSynonym{{Key: "a.password", Value: &secret, Source: kmsg.ConfigSourceDynamicBrokerConfig}}},
		{Key: "b.unset", Source: kmsg.ConfigSourceDefaultConfig},
		{Key: "c.static", Value: &secret, Source: kmsg.ConfigSourceStaticBrokerConfig},
	}
	e := configEntity{broker: 1}
	for _, format := range []string{outputTable, outputJSON} {
		var buf bytes.Buffer
		if err := writeConfigs(&buf, format, e, configs, true); err != nil {
			t.Fatal(err)
		}
		if strings.Count(buf.String(), secret) != 1 {
			t.Errorf("%s output shows the sensitive value (or hides the plain one):\n%s", format, buf.String())
		}
	}
	var buf bytes.Buffer
	if err := writeConfigs(&buf, outputTable, e, configs, true); err != nil {
		t.Fatal(err)
	}
	want := "NAME        VALUE        SOURCE\n" +
		"a.password  (sensitive)  DYNAMIC_BROKER_CONFIG\n" +
		"b.unset     null         DEFAULT_CONFIG\n" +
		"c.static    hunter2      STATIC_BROKER_CONFIG\n"
	if buf.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", buf.String(), want)
	}
	// Without --all, only what was set on the broker itself.
	buf.Reset()
	if err := writeConfigs(&buf, outputJSON, e, configs, false); err != nil {
		t.Fatal(err)
	}
	var doc describedConfigs
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Configs) != 1 || doc.Configs[0].Name != "a.password" || doc.Configs[0].Value != nil || !doc.Configs[0].Sensitive ||
		doc.EntityType != "brokers" || doc.EntityName != "1" {
		t.Errorf("dynamic JSON = %+v", doc)
	}
}

// TestConfigAlterHelpNamesTheDynamicKeys: the help of config alter lists
// exactly the broker keys the broker accepts at runtime.
func TestConfigAlterHelpNamesTheDynamicKeys(t *testing.T) {
	long := newConfigAlterCmd(&clientFlags{}).Long
	start := strings.Index(long, "Brokers take at runtime")
	end := strings.Index(long, "A value set on one")
	if start < 0 || end < start {
		t.Fatalf("config alter help lost its list of dynamic keys:\n%s", long)
	}
	var listed []string
	for _, w := range strings.FieldsFunc(long[start:end], func(r rune) bool { return r == ' ' || r == ',' || r == '\n' || r == ':' }) {
		if w = strings.TrimSuffix(w, "."); strings.Contains(w, ".") {
			listed = append(listed, w)
		}
	}
	slices.Sort(listed)
	if want := config.DynamicBrokerKeys(); !slices.Equal(listed, want) {
		t.Errorf("config alter help lists %q,\nthe broker takes %q", listed, want)
	}
}
