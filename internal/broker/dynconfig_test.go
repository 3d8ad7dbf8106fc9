package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// describeBroker returns the configs of a broker resource by name.
func (c *rawConn) describeBroker(name string) (int16, map[string]kmsg.DescribeConfigsResponseResourceConfig) {
	c.t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.SetVersion(4) // sources are v1+
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeBroker, name
	req.Resources = append(req.Resources, r)
	res := c.request(req).(*kmsg.DescribeConfigsResponse).Resources[0]
	out := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
	for _, e := range res.Configs {
		out[e.Name] = e
	}
	return res.ErrorCode, out
}

// TestBrokerConfigRequests: the request paths of dynamic broker configs
// other than kadm's incremental SET/DELETE: validate-only, legacy
// AlterConfigs (replace everything), APPEND (refused), and what
// DescribeConfigs shows for each broker resource.
func TestBrokerConfigRequests(t *testing.T) {
	b := startTestBroker(t)
	c := b.dial()
	c.createTopic("t", 1, nil)

	inc := kmsg.NewPtrIncrementalAlterConfigsRequest()
	inc.ValidateOnly = true
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeBroker, ""
	r.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "log.retention.ms", Op: kmsg.IncrementalAlterConfigOpSet, Value: kmsg.StringPtr("1000")}}
	inc.Resources = append(inc.Resources, r)
	if code := c.request(inc).(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode; code != 0 {
		t.Fatalf("validate-only: error %d", code)
	}
	if code, cfgs := c.describeBroker(""); code != 0 || len(cfgs) != 0 {
		t.Errorf("after validate-only, resource \"\" = %d %v, want no configs", code, cfgs)
	}

	legacy := func(kvs map[string]string) int16 {
		req := kmsg.NewPtrAlterConfigsRequest()
		rr := kmsg.NewAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBroker, "1"
		for k, v := range kvs {
			rr.Configs = append(rr.Configs, kmsg.AlterConfigsRequestResourceConfig{Name: k, Value: kmsg.StringPtr(v)})
		}
		req.Resources = append(req.Resources, rr)
		return c.request(req).(*kmsg.AlterConfigsResponse).Resources[0].ErrorCode
	}
	if code := legacy(map[string]string{"message.max.bytes": "5000"}); code != 0 {
		t.Fatalf("AlterConfigs: error %d", code)
	}
	_, cfgs := c.describeBroker("1")
	if e := cfgs["message.max.bytes"]; e.Value == nil || *e.Value != "5000" || e.Source != kmsg.ConfigSourceDynamicBrokerConfig || e.ReadOnly {
		t.Errorf("message.max.bytes = %+v", e)
	}
	if e := cfgs["log.dirs"]; !e.ReadOnly || e.Source != kmsg.ConfigSourceStaticBrokerConfig {
		t.Errorf("log.dirs = %+v, want read-only and static", e)
	}
	// AlterConfigs replaces the whole set.
	if code := legacy(map[string]string{"log.retention.ms": "1000"}); code != 0 {
		t.Fatalf("AlterConfigs: error %d", code)
	}
	_, cfgs = c.describeBroker("1")
	if e := cfgs["message.max.bytes"]; e.Source != kmsg.ConfigSourceDefaultConfig {
		t.Errorf("message.max.bytes after the replacing AlterConfigs = %+v", e)
	}
	if code := legacy(map[string]string{"log.dirs": "/x"}); code != kerr.InvalidRequest.Code {
		t.Errorf("AlterConfigs of log.dirs: error %d, want INVALID_REQUEST", code)
	}

	// The topic follows this broker's value.
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.SetVersion(4)
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName, rr.ConfigNames = kmsg.ConfigResourceTypeTopic, "t", []string{"retention.ms"}
	req.Resources = append(req.Resources, rr)
	if e := c.request(req).(*kmsg.DescribeConfigsResponse).Resources[0].Configs; len(e) != 1 || e[0].Value == nil ||
		*e[0].Value != "1000" || e[0].Source != kmsg.ConfigSourceDynamicBrokerConfig {
		t.Errorf("topic retention.ms = %+v", e)
	}

	inc = kmsg.NewPtrIncrementalAlterConfigsRequest()
	r = kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeBroker, "1"
	r.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "log.cleanup.policy", Op: kmsg.IncrementalAlterConfigOpAppend, Value: kmsg.StringPtr("compact")}}
	inc.Resources = append(inc.Resources, r)
	if code := c.request(inc).(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode; code != kerr.InvalidRequest.Code {
		t.Errorf("APPEND to a broker config: error %d, want INVALID_REQUEST", code)
	}
	if code, _ := c.describeBroker("2"); code != kerr.InvalidRequest.Code {
		t.Errorf("describe another broker's resource: error %d, want INVALID_REQUEST", code)
	}
}
