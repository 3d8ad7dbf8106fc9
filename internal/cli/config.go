package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// `weir config` is kafka-configs for topics and brokers: describe shows
// the values set dynamically (or, with --all, every value and where it
// comes from), alter sets and deletes them (IncrementalAlterConfigs).

func newConfigCmd() *cobra.Command {
	cf := &clientFlags{}
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Describe and alter topic and broker configs (kafka-configs)",
		Long: `Show and change the configuration of a topic or a broker, as kafka-configs
does. A topic's configs set with alter (or at creation) override the
broker's defaults for that topic. The broker-wide defaults of topic configs
(log.retention.ms, log.segment.bytes, message.max.bytes, min.insync.replicas,
...) can be changed at runtime, for one broker (--broker ID) or for every
broker (--broker-defaults); topics without their own value follow at once.
Other broker configs are read-only at runtime: set them in server.properties
or with --override.`,
		Args: cobra.NoArgs,
	}
	cf.register(cmd.PersistentFlags())
	cmd.AddCommand(newConfigDescribeCmd(cf), newConfigAlterCmd(cf))
	return cmd
}

// configEntity is the resource a config command works on: a topic, a
// broker, or the cluster-wide default of every broker.
type configEntity struct {
	topic          string
	broker         int32 // when topic is "" and not brokerDefaults
	brokerDefaults bool
}

// entityFlags are --topic, --broker and --broker-defaults, exactly one of
// which is needed.
type entityFlags struct {
	topic          string
	broker         int32
	brokerDefaults bool
}

func (f *entityFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.topic, "topic", "", "the topic whose configs to show or change")
	cmd.Flags().Int32Var(&f.broker, "broker", -1, "the id of the broker whose configs to show or change")
	cmd.Flags().BoolVar(&f.brokerDefaults, "broker-defaults", false, "the cluster-wide defaults of every broker")
}

func (f *entityFlags) entity(cmd *cobra.Command) (configEntity, error) {
	given := 0
	for _, name := range []string{"topic", "broker", "broker-defaults"} {
		if cmd.Flags().Changed(name) {
			given++
		}
	}
	switch {
	case given != 1:
		return configEntity{}, errors.New("give exactly one of --topic NAME, --broker ID or --broker-defaults")
	case cmd.Flags().Changed("topic") && f.topic == "":
		return configEntity{}, errors.New("--topic: empty topic name")
	case cmd.Flags().Changed("broker") && f.broker < 0:
		return configEntity{}, fmt.Errorf("--broker %d: want a broker id (0 or more)", f.broker)
	case f.topic != "":
		return configEntity{topic: f.topic}, nil
	case cmd.Flags().Changed("broker-defaults"):
		if !f.brokerDefaults {
			return configEntity{}, errors.New("--broker-defaults=false: name a topic or broker instead")
		}
		return configEntity{brokerDefaults: true}, nil
	}
	return configEntity{broker: f.broker}, nil
}

func (e configEntity) isTopic() bool { return e.topic != "" }

// String names the entity as kafka-configs' messages do: "topic orders",
// "broker 1", "brokers in the cluster" (the default).
func (e configEntity) String() string {
	switch {
	case e.isTopic():
		return "topic " + e.topic
	case e.brokerDefaults:
		return "brokers in the cluster"
	}
	return "broker " + strconv.Itoa(int(e.broker))
}

// entityType is kafka-configs' --entity-type for the entity.
func (e configEntity) entityType() string {
	if e.isTopic() {
		return "topics"
	}
	return "brokers"
}

// name is the entity's resource name; the cluster-wide default is "".
func (e configEntity) name() string {
	switch {
	case e.isTopic():
		return e.topic
	case e.brokerDefaults:
		return ""
	}
	return strconv.Itoa(int(e.broker))
}

// displayName is the name in --output json: Kafka calls the default
// entity <default>.
func (e configEntity) displayName() string {
	if e.brokerDefaults {
		return "<default>"
	}
	return e.name()
}

// dynamicSource is where a value set on this entity with alter comes from.
func (e configEntity) dynamicSource() kmsg.ConfigSource {
	switch {
	case e.isTopic():
		return kmsg.ConfigSourceDynamicTopicConfig
	case e.brokerDefaults:
		return kmsg.ConfigSourceDynamicDefaultBrokerConfig
	}
	return kmsg.ConfigSourceDynamicBrokerConfig
}

// completed is kafka-configs' line after a successful alter.
func (e configEntity) completed() string {
	if e.brokerDefaults {
		return "Completed updating default config for brokers in the cluster."
	}
	return fmt.Sprintf("Completed updating config for %s.", e)
}

// describe asks the cluster for every config of the entity. A broker the
// cluster does not have is named as such: the admin client would only say
// it cannot route the request.
func (e configEntity) describe(ctx context.Context, adm *kadm.Client) ([]kadm.Config, error) {
	var rcs kadm.ResourceConfigs
	var err error
	switch {
	case e.isTopic():
		rcs, err = adm.DescribeTopicConfigs(ctx, e.topic)
	case e.brokerDefaults:
		rcs, err = adm.DescribeBrokerConfigs(ctx)
	default:
		if err := checkBroker(ctx, adm, e.broker); err != nil {
			return nil, err
		}
		rcs, err = adm.DescribeBrokerConfigs(ctx, e.broker)
	}
	if err != nil {
		return nil, fmt.Errorf("describe configs of %s: %w", e, err)
	}
	rc, err := rcs.On(e.name(), nil)
	if err != nil {
		return nil, fmt.Errorf("describe configs of %s: missing from the broker's answer", e)
	}
	if rc.Err != nil {
		return nil, fmt.Errorf("describe configs of %s: %w", e, withBrokerMessage(rc.Err, rc.ErrMessage))
	}
	configs := slices.Clone(rc.Configs)
	sort.Slice(configs, func(i, j int) bool { return configs[i].Key < configs[j].Key })
	return configs, nil
}

// checkBroker fails unless id is a broker of the cluster.
func checkBroker(ctx context.Context, adm *kadm.Client, id int32) error {
	md, err := adm.BrokerMetadata(ctx)
	if err != nil {
		return fmt.Errorf("list brokers: %w", err)
	}
	ids := md.Brokers.NodeIDs()
	if slices.Contains(ids, id) {
		return nil
	}
	slices.Sort(ids)
	return fmt.Errorf("broker %d is not in the cluster (brokers: %s)", id, joinInt32s(ids))
}

// describedConfig is one config in `config describe --output json`.
type describedConfig struct {
	Name      string          `json:"name"`
	Value     *string         `json:"value"` // null: no value, or sensitive
	Source    string          `json:"source"`
	Sensitive bool            `json:"sensitive"`
	Synonyms  []configSynonym `json:"synonyms"`
}

type configSynonym struct {
	Name   string  `json:"name"`
	Value  *string `json:"value"`
	Source string  `json:"source"`
}

// describedConfigs is the whole JSON document of `config describe`.
type describedConfigs struct {
	EntityType string            `json:"entityType"`
	EntityName string            `json:"entityName"`
	Configs    []describedConfig `json:"configs"`
}

func newConfigDescribeCmd(cf *clientFlags) *cobra.Command {
	var (
		ef     entityFlags
		all    bool
		output *string
	)
	cmd := &cobra.Command{
		Use:   "describe (--topic NAME | --broker ID | --broker-defaults) [--all]",
		Short: "Show a topic's or broker's configs and their source",
		Long: `Show the configs set dynamically on a topic, a broker or the cluster-wide
broker defaults (with config alter, or at topic creation), as kafka-configs
--describe does; with --all (topic or broker), every config and where its
value comes from:

  DYNAMIC_TOPIC_CONFIG           set on this topic
  DYNAMIC_BROKER_CONFIG          set on this broker at runtime
  DYNAMIC_DEFAULT_BROKER_CONFIG  set for every broker at runtime
  STATIC_BROKER_CONFIG           from the broker's server.properties or --override
  DEFAULT_CONFIG                 the default

Sensitive values (passwords) are never shown. --output json adds each
config's synonyms: where else its value could come from, in order.`,
		Example: `  weir config describe --topic orders
  weir config describe --topic orders --all
  weir config describe --broker 1 --all --output json
  weir config describe --broker-defaults

  Kafka: kafka-configs.sh --bootstrap-server HOST:9092 --describe --topic orders --all
         kafka-configs.sh --bootstrap-server HOST:9092 --describe --broker 1 --all
         kafka-configs.sh --bootstrap-server HOST:9092 --describe --broker-defaults`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(*output); err != nil {
				return err
			}
			e, err := ef.entity(cmd)
			if err != nil {
				return err
			}
			return withAdmin(cmd, cf, func(ctx context.Context, adm *kadm.Client) error {
				configs, err := e.describe(ctx, adm)
				if err != nil {
					return err
				}
				return writeConfigs(cmd.OutOrStdout(), *output, e, configs, all)
			})
		},
	}
	ef.register(cmd)
	cmd.Flags().BoolVar(&all, "all", false, "every config with its source, not only those set dynamically")
	output = addOutputFlag(cmd)
	return cmd
}

// writeConfigs prints the entity's dynamic configs, or all of them: a
// NAME VALUE SOURCE table, or a JSON document with the synonyms too.
func writeConfigs(w io.Writer, format string, e configEntity, configs []kadm.Config, all bool) error {
	doc := describedConfigs{EntityType: e.entityType(), EntityName: e.displayName(), Configs: []describedConfig{}}
	t := &table{header: []string{"NAME", "VALUE", "SOURCE"}}
	for _, c := range configs {
		if !all && c.Source != e.dynamicSource() {
			continue
		}
		dc := describedConfig{Name: c.Key, Value: c.Value, Source: c.Source.String(), Sensitive: c.Sensitive, Synonyms: []configSynonym{}}
		if c.Sensitive {
			dc.Value = nil
		}
		for _, s := range c.Synonyms {
			v := s.Value
			if c.Sensitive {
				v = nil
			}
			dc.Synonyms = append(dc.Synonyms, configSynonym{Name: s.Key, Value: v, Source: s.Source.String()})
		}
		doc.Configs = append(doc.Configs, dc)
		t.add(c.Key, configValue(c), c.Source.String())
	}
	return printOutput(w, format, t, doc)
}

// configValue is how the table shows a value: masked when sensitive,
// "null" when there is none (as kafka-configs prints it), and "" as "".
func configValue(c kadm.Config) string {
	switch {
	case c.Sensitive:
		return "(sensitive)"
	case c.Value == nil:
		return "null"
	case *c.Value == "":
		return `""`
	}
	return *c.Value
}

func newConfigAlterCmd(cf *clientFlags) *cobra.Command {
	var (
		ef            entityFlags
		adds, deletes []string
	)
	cmd := &cobra.Command{
		Use:   "alter (--topic NAME | --broker ID | --broker-defaults) [--add-config k=v[,k2=v2]] [--delete-config k[,k2]]",
		Short: "Set or delete configs of a topic or broker (kafka-configs --alter)",
		Long: `Set (--add-config) or delete (--delete-config) configs of a topic, a broker
or the cluster-wide broker defaults, as kafka-configs --alter does
(IncrementalAlterConfigs). Deleting a config returns it to the value
below it (the broker's, then the default). Both flags take a
comma-separated list and may be repeated; a value holding commas goes in
brackets, key=[a,b].

Brokers take at runtime the broker-wide defaults of topic configs:
log.retention.ms, log.retention.minutes, log.retention.hours,
log.retention.bytes, log.segment.bytes, log.roll.ms, log.roll.hours,
log.index.size.max.bytes, log.index.interval.bytes, message.max.bytes,
min.insync.replicas, log.cleanup.policy, log.message.timestamp.type,
log.flush.interval.messages, log.flush.interval.ms,
log.segment.delete.delay.ms, log.cleaner.delete.retention.ms,
log.cleaner.min.compaction.lag.ms, log.cleaner.min.cleanable.ratio,
compression.type, and the partition reassignment throttle,
replica.reassignment.throttle.bytes.per.sec. A value set on one broker wins
over the cluster-wide one, which wins over server.properties.

Deleting a config that is not set fails, as in Kafka ("Invalid config(s)").
An unknown config or a bad value fails with Kafka's INVALID_CONFIG, and a
broker config that cannot change at runtime with INVALID_REQUEST
("Cannot update these configs dynamically"); nothing is changed then.`,
		Example: `  weir config alter --topic orders --add-config retention.ms=3600000,cleanup.policy=[compact,delete]
  weir config alter --topic orders --delete-config retention.ms
  weir config alter --broker-defaults --add-config log.retention.hours=24
  weir config alter --broker 1 --add-config message.max.bytes=2097152

  Kafka: kafka-configs.sh --bootstrap-server HOST:9092 --alter --topic orders --add-config retention.ms=3600000
         kafka-configs.sh --bootstrap-server HOST:9092 --alter --broker-defaults --add-config log.retention.hours=24`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			e, err := ef.entity(cmd)
			if err != nil {
				return err
			}
			parsed, err := parseAddConfig(adds)
			if err != nil {
				return err
			}
			keys := parseDeleteConfig(deletes)
			alters, err := configAlters(parsed, keys)
			if err != nil {
				return fmt.Errorf("alter configs of %s: %w", e, err)
			}
			return withAdmin(cmd, cf, func(ctx context.Context, adm *kadm.Client) error {
				if err := alterConfigs(ctx, adm, e, alters, keys); err != nil {
					return err
				}
				_, err := fmt.Fprintln(cmd.OutOrStdout(), e.completed())
				return err
			})
		},
	}
	ef.register(cmd)
	cmd.Flags().StringArrayVar(&adds, "add-config", nil, "configs to set, key=value[,key2=value2] (repeatable)")
	cmd.Flags().StringArrayVar(&deletes, "delete-config", nil, "configs to delete (back to the default), key[,key2] (repeatable)")
	return cmd
}

// alterConfigs applies alters to the entity. As kafka-configs does, it
// first checks that every config to delete is set on the entity, so that
// a mistyped name fails instead of deleting nothing.
func alterConfigs(ctx context.Context, adm *kadm.Client, e configEntity, alters []kadm.AlterConfig, deletes []string) error {
	if len(deletes) > 0 {
		configs, err := e.describe(ctx, adm)
		if err != nil {
			return err
		}
		var missing []string
		for _, k := range deletes {
			if !slices.ContainsFunc(configs, func(c kadm.Config) bool { return c.Key == k && c.Source == e.dynamicSource() }) {
				missing = append(missing, k)
			}
		}
		if len(missing) > 0 {
			return fmt.Errorf("alter configs of %s: Invalid config(s): %s (not set there, so there is nothing to delete)",
				e, strings.Join(missing, ","))
		}
	}
	var resps kadm.AlterConfigsResponses
	var err error
	switch {
	case e.isTopic():
		resps, err = adm.AlterTopicConfigs(ctx, alters, e.topic)
	case e.brokerDefaults:
		resps, err = adm.AlterBrokerConfigs(ctx, alters)
	default:
		if err := checkBroker(ctx, adm, e.broker); err != nil {
			return err
		}
		resps, err = adm.AlterBrokerConfigs(ctx, alters, e.broker)
	}
	if err != nil {
		return fmt.Errorf("alter configs of %s: %w", e, err)
	}
	r, err := resps.On(e.name(), nil)
	if err != nil {
		return fmt.Errorf("alter configs of %s: missing from the broker's answer", e)
	}
	if r.Err != nil {
		return fmt.Errorf("alter configs of %s: %w", e, withBrokerMessage(r.Err, r.ErrMessage))
	}
	return nil
}
