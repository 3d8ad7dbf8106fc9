package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestDescribeConfigsEmptyNamesMeansAll: Kafka's ConfigHelper treats an
// empty configuration_keys list like a null one (every key); clients that
// build the request with an empty list get the full listing from Kafka.
func TestDescribeConfigsEmptyNamesMeansAll(t *testing.T) {
	b := startTestBroker(t)
	c := b.dial()
	c.createTopic("cfg", 1, map[string]string{"retention.ms": "1234"})

	for _, v := range []int16{1, 4} {
		req := kmsg.NewPtrDescribeConfigsRequest()
		req.SetVersion(v)
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, "cfg"
		r.ConfigNames = []string{}
		req.Resources = append(req.Resources, r)
		resp := c.request(req).(*kmsg.DescribeConfigsResponse)
		res := resp.Resources[0]
		if res.ErrorCode != 0 {
			t.Fatalf("v%d: error code %d", v, res.ErrorCode)
		}
		found := false
		for _, e := range res.Configs {
			if e.Name == "retention.ms" && e.Value != nil && *e.Value == "1234" {
				found = true
			}
		}
		if !found {
			t.Fatalf("v%d: empty config name list answered %d configs without retention.ms=1234", v, len(res.Configs))
		}
	}
}
