package broker

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/internal/config"
	"github.com/weir-project/weir/internal/metadata"
	"github.com/weir-project/weir/internal/storage"
)

// LogConfig turns a resolved topic configuration into the storage engine's.
func LogConfig(tc config.TopicConfig) storage.Config {
	return storage.Config{
		SegmentBytes:          tc.SegmentBytes,
		SegmentMs:             tc.SegmentMs,
		SegmentIndexBytes:     int(tc.SegmentIndexBytes),
		IndexIntervalBytes:    int(tc.IndexIntervalBytes),
		MaxMessageBytes:       int(tc.MaxMessageBytes),
		RetentionMs:           retentionIf(tc.Deletes(), tc.RetentionMs),
		RetentionBytes:        retentionIf(tc.Deletes(), tc.RetentionBytes),
		FlushIntervalMessages: tc.FlushMessages,
		FlushIntervalMs:       tc.FlushMs,
		LogAppendTime:         tc.LogAppendTime,
		FileDeleteDelayMs:     tc.FileDeleteDelayMs,

		Compact:                tc.Compacts(),
		DeleteRetentionMs:      tc.DeleteRetentionMs,
		MinCompactionLagMs:     tc.MinCompactionLagMs,
		MinCleanableDirtyRatio: tc.MinCleanableDirtyRatio,
	}
}

// retentionIf disables a retention limit for topics whose cleanup policy
// does not include "delete".
func retentionIf(deletes bool, v int64) int64 {
	if !deletes {
		return -1
	}
	return v
}

// logConfig resolves a topic's overrides over the broker defaults (the
// dynamic ones included).
func (b *Broker) logConfig(t *metadata.Topic) (storage.Config, int) {
	tc := b.config().ResolveTopic(t.Configs)
	return LogConfig(tc), int(tc.MinInsyncReplicas)
}

func (b *Broker) topicConfigEntries(overrides map[string]string) []config.Entry {
	return b.config().TopicEntries(overrides)
}

// msgDuplicateResource is Kafka's answer (INVALID_REQUEST) to a config
// resource named twice (ConfigAdminManager.preprocess), given to every copy.
const msgDuplicateResource = "Each resource must appear at most once."

// configResource names the resource of a config request.
type configResource struct {
	typ  kmsg.ConfigResourceType
	name string
}

// handleDescribeConfigs lists topic configs (overrides and defaults), this
// broker's configuration, and (resource "") the cluster-wide dynamic
// defaults, which is all Kafka shows for that resource.
//
// Every copy of a resource named more than once is answered
// INVALID_REQUEST "Each resource must appear at most once.", Kafka's rule
// for AlterConfigs and IncrementalAlterConfigs. Kafka itself describes
// every copy here (ConfigHelper.describeConfigs), a hundredfold
// amplification: ten bytes of request for each copy of a topic's forty
// configs.
func (b *Broker) handleDescribeConfigs(ctx context.Context, req *kmsg.DescribeConfigsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	img := b.meta.Image()
	_, dups := distinct(req.Resources, func(rr kmsg.DescribeConfigsRequestResource) configResource {
		return configResource{rr.ResourceType, rr.ResourceName}
	})
	for _, rr := range req.Resources {
		sr := kmsg.NewDescribeConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		var entries []config.Entry
		if dups[configResource{rr.ResourceType, rr.ResourceName}] {
			sr.ErrorCode, sr.ErrorMessage = kerr.InvalidRequest.Code, ptr(msgDuplicateResource)
			resp.Resources = append(resp.Resources, sr)
			continue
		}
		switch rr.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			if t := img.TopicByName(rr.ResourceName); t == nil {
				sr.ErrorCode = kerr.UnknownTopicOrPartition.Code
			} else {
				entries = b.topicConfigEntries(t.Configs)
			}
		case kmsg.ConfigResourceTypeBroker:
			switch err := b.checkBrokerResource(rr.ResourceName); {
			case err != nil:
				sr.ErrorCode, sr.ErrorMessage = kerr.InvalidRequest.Code, errorMessage(err)
			case rr.ResourceName == metadata.ClusterDefaultResource:
				entries = b.config().DefaultEntries()
			default:
				entries = b.config().Entries()
			}
		default:
			sr.ErrorCode = kerr.InvalidRequest.Code
			sr.ErrorMessage = errorMessage(fmt.Errorf("resource type %v is not supported", rr.ResourceType))
		}
		for _, e := range entries {
			// Null and empty both mean every config, as in Kafka's ConfigHelper.
			if len(rr.ConfigNames) > 0 && !slices.Contains(rr.ConfigNames, e.Name) {
				continue
			}
			sr.Configs = append(sr.Configs, describeEntry(e, req))
		}
		resp.Resources = append(resp.Resources, sr)
	}
	return resp, nil
}

func describeEntry(e config.Entry, req *kmsg.DescribeConfigsRequest) kmsg.DescribeConfigsResponseResourceConfig {
	c := kmsg.NewDescribeConfigsResponseResourceConfig()
	c.Name = e.Name
	if !e.Null {
		v := e.Value
		c.Value = &v
	}
	c.ReadOnly, c.IsSensitive = e.ReadOnly, e.Sensitive
	c.Source = kmsg.ConfigSource(e.Source)
	c.IsDefault = c.Source == kmsg.ConfigSourceDefaultConfig
	c.ConfigType = kmsg.ConfigType(e.Type)
	if req.IncludeDocumentation && e.Doc != "" {
		doc := e.Doc
		c.Documentation = &doc
	}
	if req.IncludeSynonyms {
		for _, s := range e.Synonyms {
			syn := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
			syn.Name, syn.Source = s.Name, kmsg.ConfigSource(s.Source)
			if !s.Null {
				v := s.Value
				syn.Value = &v
			}
			c.ConfigSynonyms = append(c.ConfigSynonyms, syn)
		}
	}
	return c
}

// checkBrokerResource accepts this broker's id or "" (cluster default).
func (b *Broker) checkBrokerResource(name string) error {
	if name == "" || name == strconv.Itoa(int(b.nodeID)) {
		return nil
	}
	return fmt.Errorf("broker %q is not this broker (%d)", name, b.nodeID)
}

// handleAlterConfigs replaces a topic's overrides with the given set.
//
// As in Kafka (ConfigAdminManager.preprocess), every copy of a resource
// named more than once, and a resource naming a config more than once,
// gets INVALID_REQUEST, and none of them is changed.
func (b *Broker) handleAlterConfigs(ctx context.Context, req *kmsg.AlterConfigsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	_, dups := distinct(req.Resources, func(rr kmsg.AlterConfigsRequestResource) configResource {
		return configResource{rr.ResourceType, rr.ResourceName}
	})
	for _, rr := range req.Resources {
		sr := kmsg.NewAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		set := map[string]*string{}
		for _, c := range rr.Configs {
			set[c.Name] = c.Value
		}
		switch {
		case dups[configResource{rr.ResourceType, rr.ResourceName}]:
			sr.ErrorCode, sr.ErrorMessage = kerr.InvalidRequest.Code, ptr(msgDuplicateResource)
		case len(set) < len(rr.Configs):
			sr.ErrorCode, sr.ErrorMessage = errorCode(errDuplicateConfig), errorMessage(errDuplicateConfig)
		default:
			err := b.alterResource(ctx, rr.ResourceType, rr.ResourceName, set, true, req.ValidateOnly)
			sr.ErrorCode, sr.ErrorMessage = errorCode(err), errorMessage(err)
		}
		resp.Resources = append(resp.Resources, sr)
	}
	return resp, nil
}

// errDuplicateConfig is Kafka's answer to a config named twice for one
// resource (ConfigAdminManager.preprocess).
var errDuplicateConfig = fmt.Errorf("%w: Error due to duplicate config keys", kerr.InvalidRequest)

// handleIncrementalAlterConfigs sets, deletes, appends to or subtracts
// from single topic configs.
//
// Duplicates are refused as in handleAlterConfigs.
func (b *Broker) handleIncrementalAlterConfigs(ctx context.Context, req *kmsg.IncrementalAlterConfigsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	img := b.meta.Image()
	_, dups := distinct(req.Resources, func(rr kmsg.IncrementalAlterConfigsRequestResource) configResource {
		return configResource{rr.ResourceType, rr.ResourceName}
	})
	for _, rr := range req.Resources {
		sr := kmsg.NewIncrementalAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		if dups[configResource{rr.ResourceType, rr.ResourceName}] {
			sr.ErrorCode, sr.ErrorMessage = kerr.InvalidRequest.Code, ptr(msgDuplicateResource)
			resp.Resources = append(resp.Resources, sr)
			continue
		}
		set, err := b.incrementalSet(img, rr)
		if err == nil {
			err = b.alterResource(ctx, rr.ResourceType, rr.ResourceName, set, false, req.ValidateOnly)
		}
		sr.ErrorCode, sr.ErrorMessage = errorCode(err), errorMessage(err)
		resp.Resources = append(resp.Resources, sr)
	}
	return resp, nil
}

// incrementalSet turns incremental operations into new override values
// (nil: remove the override).
func (b *Broker) incrementalSet(img *metadata.Image, rr kmsg.IncrementalAlterConfigsRequestResource) (map[string]*string, error) {
	set := map[string]*string{}
	var current map[string]string
	if rr.ResourceType == kmsg.ConfigResourceTypeTopic {
		if t := img.TopicByName(rr.ResourceName); t != nil {
			current = t.Configs
		}
	}
	for _, c := range rr.Configs {
		if _, dup := set[c.Name]; dup {
			return nil, errDuplicateConfig
		}
		switch c.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			if c.Value == nil {
				// As Kafka: deleting is DELETE's job, a null SET is a mistake.
				return nil, fmt.Errorf("%w: null value not supported for %s", kerr.InvalidRequest, c.Name)
			}
			set[c.Name] = c.Value
		case kmsg.IncrementalAlterConfigOpDelete:
			set[c.Name] = nil
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			if rr.ResourceType == kmsg.ConfigResourceTypeBroker {
				// The current value of another broker's list is not
				// known here (its static part is in its own file).
				return nil, fmt.Errorf("%w: %s on %q: broker configs can only be set or deleted", kerr.InvalidRequest, c.Op, c.Name)
			}
			typ, ok := config.TopicConfigType(c.Name)
			if !ok || kmsg.ConfigType(typ) != kmsg.ConfigTypeList {
				return nil, fmt.Errorf("%w: %s on %q: only list configs can be appended to or subtracted from", metadata.ErrInvalidConfig, c.Op, c.Name)
			}
			value := b.effectiveTopicValue(current, c.Name)
			items := splitList(value)
			for _, v := range splitList(deref(c.Value)) {
				if c.Op == kmsg.IncrementalAlterConfigOpAppend && !slices.Contains(items, v) {
					items = append(items, v)
				} else if c.Op == kmsg.IncrementalAlterConfigOpSubtract {
					items = slices.DeleteFunc(items, func(s string) bool { return s == v })
				}
			}
			joined := strings.Join(items, ",")
			set[c.Name] = &joined
		default:
			return nil, fmt.Errorf("%w: unknown operation %d on %q", kerr.InvalidRequest, c.Op, c.Name)
		}
	}
	return set, nil
}

func (b *Broker) effectiveTopicValue(overrides map[string]string, key string) string {
	if v, ok := overrides[key]; ok {
		return v
	}
	return b.config().TopicDefaults()[key]
}

func (b *Broker) alterResource(ctx context.Context, typ kmsg.ConfigResourceType, name string, set map[string]*string, replaceAll, validateOnly bool) error {
	switch typ {
	case kmsg.ConfigResourceTypeTopic:
		if err := b.meta.AlterTopicConfigs(ctx, name, set, replaceAll, validateOnly); err != nil {
			return err
		}
		if !validateOnly {
			// The change is committed; a replica that cannot take it
			// yet is retried in the background.
			b.reconcile()
		}
		return nil
	case kmsg.ConfigResourceTypeBroker:
		// The controller checks the resource (any registered broker: a
		// broker forwards its own alters here) and every value.
		if err := b.meta.AlterBrokerConfigs(ctx, name, set, replaceAll, validateOnly); err != nil {
			return err
		}
		if !validateOnly {
			b.reconcile()
		}
		return nil
	default:
		return fmt.Errorf("%w: resource type %v is not supported", kerr.InvalidRequest, typ)
	}
}

func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
