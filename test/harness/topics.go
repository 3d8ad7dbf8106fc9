package harness

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// metadataOf is addr's own Metadata answer (brokers, controller and the
// given topics; nil topics: all), asked once without retries, so that a
// test sees what that node believes rather than what a client converged on.
func metadataOf(addr string, topics []kmsg.MetadataRequestTopic) (*kmsg.MetadataResponse, error) {
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = topics
	resp, err := RequestTo(addr, req)
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.MetadataResponse), nil
}

// RequestTo sends req to the broker at addr itself (not to whichever
// broker a client would route it to), without retries, within 5 s.
func RequestTo(addr string, req kmsg.Request) (kmsg.Response, error) {
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return nil, err
	}
	conn.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequestRetries(0), kgo.DialTimeout(2*time.Second))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return cl.SeedBrokers()[0].Request(ctx, req)
}

// TopicMetadata is a topic's partitions as this node's own Metadata
// answers it.
func (b *Broker) TopicMetadata(topic string) ([]kmsg.MetadataResponseTopicPartition, error) {
	return topicMetadataOf(b.Addr, topic)
}

func topicMetadataOf(addr, topic string) ([]kmsg.MetadataResponseTopicPartition, error) {
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	resp, err := metadataOf(addr, []kmsg.MetadataRequestTopic{rt})
	if err != nil {
		return nil, err
	}
	for _, mt := range resp.Topics {
		if mt.Topic != nil && *mt.Topic == topic {
			if err := kerr.ErrorForCode(mt.ErrorCode); err != nil {
				return nil, err
			}
			return mt.Partitions, nil
		}
	}
	return nil, fmt.Errorf("%s not in the metadata of %s", topic, addr)
}

// WaitBrokerLive waits until every running node's Metadata lists broker
// id (live: registered and unfenced).
func (c *Cluster) WaitBrokerLive(id int32, timeout time.Duration) {
	c.t.Helper()
	WaitFor(c.t, timeout, fmt.Sprintf("broker %d in every node's metadata", id), func() bool {
		for _, b := range c.Nodes {
			if !b.Running() || b.paused() {
				continue
			}
			resp, err := metadataOf(b.Addr, []kmsg.MetadataRequestTopic{})
			if err != nil {
				return false
			}
			found := false
			for _, br := range resp.Brokers {
				found = found || br.NodeID == id
			}
			if !found {
				return false
			}
		}
		return true
	})
}

// CreateAssignedTopic creates a topic whose partition p has the replicas
// assignment[p] (the first is the preferred leader), with configs, and
// waits until every partition has a leader and a full ISR. Every broker
// of the assignment is live first: a partition created while its first
// replica is still fenced would be led by another one, and the preferred
// replica gets the leadership back only minutes later.
func (c *Cluster) CreateAssignedTopic(topic string, assignment [][]int32, configs map[string]*string, timeout time.Duration) {
	c.t.Helper()
	live := map[int32]bool{}
	for _, replicas := range assignment {
		for _, id := range replicas {
			if !live[id] {
				c.WaitBrokerLive(id, timeout)
				live[id] = true
			}
		}
	}
	c.SendCreateAssignedTopic(topic, assignment, configs, timeout)
	for p, replicas := range assignment {
		c.WaitPartition(topic, int32(p), timeout, "a leader and a full ISR", func(st PartitionState) bool {
			return st.Leader >= 0 && len(st.ISR) == len(replicas)
		})
	}
}

// SendCreateAssignedTopic asks for the topic of CreateAssignedTopic and
// waits for the answer only: brokers of the assignment may be down.
func (c *Cluster) SendCreateAssignedTopic(topic string, assignment [][]int32, configs map[string]*string, timeout time.Duration) {
	c.t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = int32(timeout / time.Millisecond)
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	for p, replicas := range assignment {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = int32(p), replicas
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	}
	for k, v := range configs {
		cfg := kmsg.NewCreateTopicsRequestTopicConfig()
		cfg.Name, cfg.Value = k, v
		rt.Configs = append(rt.Configs, cfg)
	}
	req.Topics = append(req.Topics, rt)
	// A retriable answer (the controller failed over, or an attempt of
	// ours timed out while its creation was still settling) is retried;
	// "already exists" after such an attempt is that attempt's topic.
	cl := c.Client()
	attempts := 0
	WaitFor(c.t, timeout, "topic "+topic+" to be created", func() bool {
		attempts++
		resp, err := req.RequestWith(Ctx(c.t, timeout), cl)
		if err == nil && len(resp.Topics) != 1 {
			err = fmt.Errorf("%d topics in the answer", len(resp.Topics))
		}
		if err == nil {
			err = kerr.ErrorForCode(resp.Topics[0].ErrorCode)
		}
		switch {
		case err == nil, attempts > 1 && errors.Is(err, kerr.TopicAlreadyExists):
			return true
		case kerr.IsRetriable(err):
			c.t.Logf("create topic %s: %v; retrying", topic, err)
			return false
		}
		c.t.Fatalf("create topic %s with assignment %v: %v", topic, assignment, err)
		return false
	})
}
