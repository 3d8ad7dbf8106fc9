package broker

import (
	"errors"
	"fmt"
	"maps"
	"sync"

	"github.com/weir-project/weir/internal/config"
	"github.com/weir-project/weir/internal/metadata"
)

// dynamicConfig caches the broker's effective configuration: the static
// one with the dynamic broker configs of the metadata image applied (the
// cluster-wide default and this broker's own). It is rebuilt only when
// those change, which is rare; every topic's resolved configuration is
// derived from it.
type dynamicConfig struct {
	mu           sync.Mutex
	cluster, own map[string]string // what cfg was built from (the image's, read-only)
	cfg          *config.Broker
}

// config is the effective broker configuration now.
func (b *Broker) config() *config.Broker {
	img := b.meta.Image()
	cluster := img.BrokerConfigs(metadata.ClusterDefaultResource)
	own := img.BrokerConfigs(metadata.BrokerResource(b.nodeID))
	d := &b.dynamic
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cfg != nil && maps.Equal(d.cluster, cluster) && maps.Equal(d.own, own) {
		return d.cfg
	}
	cfg, err := b.opts.Config.WithDynamic(cluster, own)
	if err != nil {
		// Written by a version with other rules: the rest applies.
		b.log.Warn("some dynamic broker configs are not valid here and are ignored", "err", err)
	}
	if d.cfg != nil || len(cluster)+len(own) > 0 {
		b.log.Info("dynamic broker configs in effect", "cluster", cluster, "broker", own)
	}
	d.cluster, d.own, d.cfg = cluster, own, cfg
	return cfg
}

// validateBrokerConfig checks a value set on a broker resource, for the
// controller: Kafka answers INVALID_REQUEST for a key that cannot change
// at runtime and INVALID_CONFIG for an unknown key or a bad value.
func validateBrokerConfig(key, value string) error {
	err := config.ValidateDynamicBrokerConfig(key, value)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, config.ErrNotDynamic):
		return fmt.Errorf("%w: %v", metadata.ErrInvalidRequest, err)
	}
	return fmt.Errorf("%w: %v", metadata.ErrInvalidConfig, err)
}
