// Package config holds weir's broker and topic configuration, with Kafka's
// key names, defaults and validation rules. It imports nothing of weir's.
//
// Broker configuration:
//
//	b, warnings, err := config.Load("config/server.properties", []string{"log.dirs=/data"})
//	// log each warning (unknown keys); refuse to start on err, which names the key.
//	b.NodeID, b.LogDirs, b.LogSegmentBytes, b.LogRetentionMs ...
//	b.ClientListeners()      // listeners to serve Kafka clients on
//	b.ControllerListener()   // listener of the Raft controller
//	b.AdvertisedFor("PLAINTEXT", boundPort) // host, port for Metadata answers
//	b.Entries()              // DescribeConfigs on a BROKER resource
//
// New(map) builds the same from key/value pairs and Default() is the
// configuration with nothing set. Every Broker field holds its effective
// value: synonyms are resolved (log.retention.ms over .minutes over .hours,
// log.roll.ms over log.roll.hours, log.dirs over log.dir, log.flush.interval.ms
// falling back to log.flush.scheduler.interval.ms), advertised.listeners
// defaults to listeners minus the controller listeners, and
// controller.quorum.voters to this node on its controller listener. A
// listener or voter port of 0 means "pick one at bind time": the broker
// resolves it with AdvertisedFor and its own bound address.
//
// Topic configuration (CreateTopics, AlterConfigs, DescribeConfigs):
//
//	config.ValidateTopicName(name)           // wraps ErrInvalidTopicName
//	config.ValidateTopicConfig(key, value)   // wraps ErrUnknownConfig or ErrInvalidConfig
//	tc := b.ResolveTopic(overrides)          // typed TopicConfig over broker defaults
//	b.TopicEntries(overrides)                // DescribeConfigs on a TOPIC resource
//	b.TopicDefaults()                        // key -> default value
//
// Dynamic broker configuration (dynamic.go): the broker-wide defaults of
// topic configs may be changed at runtime, for one broker or cluster-wide;
// the broker keeps them in the metadata log and applies them with
//
//	config.ValidateDynamicBrokerConfig(key, value) // ErrUnknownConfig, ErrNotDynamic or ErrInvalidConfig
//	eff, err := b.WithDynamic(clusterDefaults, perBroker) // effective configuration
//	eff.Entries(), eff.TopicEntries(overrides), eff.DefaultEntries()
//
// Source and Type carry Kafka's numbering (kmsg.ConfigSource and
// kmsg.ConfigType), so the broker converts them with a cast: a broker
// value comes from this broker's dynamic configs (DYNAMIC_BROKER_CONFIG),
// the cluster-wide ones (DYNAMIC_DEFAULT_BROKER_CONFIG), the file or
// overrides (STATIC_BROKER_CONFIG) or the default (DEFAULT_CONFIG); topic
// overrides are DYNAMIC_TOPIC_CONFIG. Broker keys that cannot change at
// runtime are read-only.
//
// config/server.properties at the repository root documents every broker
// key with its default; a test keeps it in step with this package.
package config
