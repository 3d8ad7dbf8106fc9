package metadata

import (
	"context"
	"fmt"
	"maps"
	"strconv"
)

// Dynamic broker configs (Kafka's KIP-226, kept in the metadata log as
// KRaft keeps them in ConfigRecords): values set at runtime with
// IncrementalAlterConfigs (or AlterConfigs) on a BROKER resource. The
// resource "" is the cluster-wide default every broker takes; "N" is
// broker N alone, and wins over the default. Which keys may be set, and
// what a value must look like, is the broker's business
// (Config.ValidateBrokerConfig); the state machine only keeps them.

const cmdAlterBrokerConfigs cmdType = "alter_broker_configs"

// alterBrokerConfigsCmd changes the dynamic configs of one broker resource.
type alterBrokerConfigsCmd struct {
	Resource   string             `json:"resource"`
	Set        map[string]*string `json:"set"` // nil value deletes the key
	ReplaceAll bool               `json:"replaceAll,omitempty"`
}

// ClusterDefaultResource names the cluster-wide default broker resource.
const ClusterDefaultResource = ""

// BrokerResource is the resource name of broker id's own dynamic configs.
func BrokerResource(id int32) string { return strconv.Itoa(int(id)) }

// checkBrokerResource accepts "" and a broker id in its canonical decimal
// form (so "01" and "1" cannot name the same broker twice).
func checkBrokerResource(name string) error {
	if name == ClusterDefaultResource {
		return nil
	}
	n, err := strconv.ParseInt(name, 10, 32)
	if err != nil || n < 0 || strconv.Itoa(int(n)) != name {
		return fmt.Errorf("%w: broker resource %q is not a broker id (or \"\" for the cluster default)", ErrInvalidRequest, name)
	}
	return nil
}

// BrokerConfigs returns the dynamic configs of a broker resource (nil if
// none). The map is shared with the image and must not be modified.
func (im *Image) BrokerConfigs(resource string) map[string]string {
	return im.brokerConfigs[resource]
}

// BrokerConfigsChanged reports whether broker id's dynamic configs, its
// own or the cluster default, differ between two images.
func BrokerConfigsChanged(old, cur *Image, id int32) bool {
	for _, r := range []string{ClusterDefaultResource, BrokerResource(id)} {
		if !maps.Equal(old.BrokerConfigs(r), cur.BrokerConfigs(r)) {
			return true
		}
	}
	return false
}

// AlterBrokerConfigs changes the dynamic configs of a broker resource: the
// cluster default ("") or a registered broker's id. A nil value deletes a
// key; replaceAll (legacy AlterConfigs) drops every key not named in set.
// Every value set is checked with Config.ValidateBrokerConfig first.
func (c *Controller) AlterBrokerConfigs(ctx context.Context, resource string, set map[string]*string, replaceAll, validateOnly bool) error {
	if err := c.checkLeader(); err != nil {
		return err
	}
	if err := checkBrokerResource(resource); err != nil {
		return err
	}
	if resource != ClusterDefaultResource {
		id, _ := strconv.ParseInt(resource, 10, 32)
		if _, ok := c.Image().Broker(int32(id)); !ok {
			return fmt.Errorf("%w: broker %s is not registered", ErrInvalidRequest, resource)
		}
	}
	for k, v := range set {
		var err error
		switch {
		case k == "":
			err = fmt.Errorf("%w: empty config name", ErrInvalidConfig)
		case v != nil:
			err = c.cfg.ValidateBrokerConfig(k, *v)
		}
		if err != nil {
			return fmt.Errorf("alter configs of broker resource %q: %w", resource, err)
		}
	}
	if validateOnly {
		return nil
	}
	cmd := alterBrokerConfigsCmd{Resource: resource, Set: set, ReplaceAll: replaceAll}
	if _, err := c.propose(ctx, cmdAlterBrokerConfigs, cmd); err != nil {
		return fmt.Errorf("alter configs of broker resource %q: %w", resource, err)
	}
	return nil
}

func applyAlterBrokerConfigs(im *Image, c *alterBrokerConfigsCmd) error {
	if err := checkBrokerResource(c.Resource); err != nil {
		return err
	}
	next := mergeConfigs(im.brokerConfigs[c.Resource], c.Set, c.ReplaceAll)
	for k := range next {
		if k == "" {
			return fmt.Errorf("%w: broker resource %q: empty config name", ErrInvalidConfig, c.Resource)
		}
	}
	im.putBrokerConfigs(c.Resource, next)
	clearSatisfiedELRs(im)
	return nil
}

// putBrokerConfigs replaces a resource's configs (none: removes it) in an
// image being built.
func (im *Image) putBrokerConfigs(resource string, configs map[string]string) {
	if len(configs) == 0 {
		delete(im.brokerConfigs, resource)
		return
	}
	im.brokerConfigs[resource] = configs
}

// checkSnapshotBrokerConfigs checks the dynamic broker configs read from a
// snapshot, as apply would have left them.
func checkSnapshotBrokerConfigs(configs map[string]map[string]string) error {
	for r, kvs := range configs {
		if err := checkBrokerResource(r); err != nil {
			return err
		}
		if len(kvs) == 0 {
			return fmt.Errorf("broker resource %q has an empty config set", r)
		}
		for k := range kvs {
			if k == "" {
				return fmt.Errorf("broker resource %q: empty config name", r)
			}
		}
	}
	return nil
}
