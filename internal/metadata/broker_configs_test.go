package metadata

import (
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"
)

func TestAlterBrokerConfigs(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.ValidateBrokerConfig = func(k, v string) error {
		switch {
		case k == "static.key":
			return fmt.Errorf("%w: Cannot update these configs dynamically: [%s]", ErrInvalidRequest, k)
		case v == "bad":
			return fmt.Errorf("%w: bad value for %s", ErrInvalidConfig, k)
		}
		return nil
	}
	c := openLeader(t, cfg)
	ctx := testCtx(t)
	if err := c.RegisterBroker(ctx, Broker{ID: 1, Host: "127.0.0.1", Port: 9091}); err != nil {
		t.Fatal(err)
	}
	before := c.Image()

	if err := c.AlterBrokerConfigs(ctx, "", map[string]*string{"a": strp("1"), "b": strp("2")}, false, false); err != nil {
		t.Fatal(err)
	}
	if err := c.AlterBrokerConfigs(ctx, "1", map[string]*string{"a": strp("9")}, false, false); err != nil {
		t.Fatal(err)
	}
	if err := c.AlterBrokerConfigs(ctx, "", map[string]*string{"b": nil, "c": strp("3")}, false, false); err != nil {
		t.Fatal(err)
	}
	im := c.Image()
	if got := im.BrokerConfigs(""); !maps.Equal(got, map[string]string{"a": "1", "c": "3"}) {
		t.Errorf("cluster default = %v", got)
	}
	if got := im.BrokerConfigs(BrokerResource(1)); !maps.Equal(got, map[string]string{"a": "9"}) {
		t.Errorf("broker 1 = %v", got)
	}
	if !BrokerConfigsChanged(before, im, 1) || !BrokerConfigsChanged(before, im, 2) || BrokerConfigsChanged(im, im, 1) {
		t.Error("BrokerConfigsChanged is wrong")
	}

	// Validation only: nothing changes. Refusals change nothing either.
	if err := c.AlterBrokerConfigs(ctx, "1", map[string]*string{"a": strp("10")}, false, true); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []struct {
		resource string
		set      map[string]*string
		want     error
	}{
		{"1", map[string]*string{"static.key": strp("1")}, ErrInvalidRequest},
		{"1", map[string]*string{"a": strp("bad")}, ErrInvalidConfig},
		{"1", map[string]*string{"": strp("1")}, ErrInvalidConfig},
		{"7", map[string]*string{"a": strp("1")}, ErrInvalidRequest},  // not registered
		{"01", map[string]*string{"a": strp("1")}, ErrInvalidRequest}, // not canonical
		{"x", map[string]*string{"a": strp("1")}, ErrInvalidRequest},
	} {
		if err := c.AlterBrokerConfigs(ctx, bad.resource, bad.set, false, false); !errors.Is(err, bad.want) {
			t.Errorf("AlterBrokerConfigs(%q, %v) = %v, want %v", bad.resource, bad.set, err, bad.want)
		}
	}
	if !maps.Equal(c.Image().BrokerConfigs("1"), map[string]string{"a": "9"}) {
		t.Errorf("refused alters changed broker 1: %v", c.Image().BrokerConfigs("1"))
	}

	// Legacy AlterConfigs replaces the whole set; an empty set removes it.
	if err := c.AlterBrokerConfigs(ctx, "1", map[string]*string{"z": strp("1")}, true, false); err != nil {
		t.Fatal(err)
	}
	if err := c.AlterBrokerConfigs(ctx, "", nil, true, false); err != nil {
		t.Fatal(err)
	}
	im = c.Image()
	if !maps.Equal(im.BrokerConfigs("1"), map[string]string{"z": "1"}) || im.BrokerConfigs("") != nil {
		t.Errorf("after replace: default %v, broker 1 %v", im.BrokerConfigs(""), im.BrokerConfigs("1"))
	}

	// They survive a restart, from the log and from a snapshot.
	want := stateBytes(t, c.Image())
	if !strings.Contains(string(want), `"brokerConfigs":{"1":{"z":"1"}}`) {
		t.Errorf("snapshot does not hold the broker configs: %s", want)
	}
	c = reopen(t, c)
	if got := stateBytes(t, c.Image()); string(got) != string(want) {
		t.Fatalf("after reopen:\n%s\nwant:\n%s", got, want)
	}
	if err := c.raft.Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	c = reopen(t, c)
	if got := stateBytes(t, c.Image()); string(got) != string(want) {
		t.Fatalf("after reopen from a snapshot:\n%s\nwant:\n%s", got, want)
	}
}

// TestAlterBrokerConfigsDefaultValidator: without a validator nothing is
// dynamic, and the refusal is Kafka's INVALID_REQUEST.
func TestAlterBrokerConfigsDefaultValidator(t *testing.T) {
	c := newTestController(t, 1)
	err := c.AlterBrokerConfigs(testCtx(t), "1", map[string]*string{"log.retention.ms": strp("1")}, false, false)
	if !errors.Is(err, ErrInvalidRequest) || !strings.Contains(err.Error(), "Cannot update these configs dynamically: [log.retention.ms]") {
		t.Errorf("AlterBrokerConfigs = %v", err)
	}
	// Deleting needs no validation: there is nothing to check but the key.
	if err := c.AlterBrokerConfigs(testCtx(t), "1", map[string]*string{"log.retention.ms": nil}, false, false); err != nil {
		t.Errorf("delete = %v", err)
	}
}
