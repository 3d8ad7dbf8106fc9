package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// groupInfo is one consumer group as the group commands need it, whatever
// its protocol: KIP-848 groups are described by ConsumerGroupDescribe,
// classic groups by DescribeGroups, as Kafka's admin client does it (it
// asks ConsumerGroupDescribe first and falls back for a group that is not
// a consumer group).
type groupInfo struct {
	Group       string
	Type        string // "consumer" (KIP-848) or "classic"
	Coordinator kadm.BrokerDetail
	State       string
	// Strategy is the classic group's protocol (its assignor) or the
	// consumer group's server-side assignor; empty while a classic group
	// has none chosen.
	Strategy string
	// Epoch and TargetEpoch are the consumer group's epoch and target
	// assignment epoch; classic groups have neither.
	Epoch, TargetEpoch *int32
	Members            []groupMember
}

// groupMember is one member of a group.
type groupMember struct {
	ID, InstanceID, ClientID, Host string
	Epoch                          *int32 // consumer groups only
	Assigned                       []topicPartitions
	Target                         []topicPartitions // consumer groups only
}

// topicPartitions is a topic and some of its partitions, sorted.
type topicPartitions struct {
	Topic      string  `json:"topic"`
	Partitions []int32 `json:"partitions"`
}

func (m groupMember) numPartitions() int {
	n := 0
	for _, t := range m.Assigned {
		n += len(t.Partitions)
	}
	return n
}

// errGroupNotFound is a group that does not exist, in Kafka's words.
func errGroupNotFound(g string) error {
	return fmt.Errorf("Consumer group '%s' does not exist.", g)
}

// inactive reports whether a group's committed offsets may be changed from
// outside it: Kafka allows that only for Empty (or Dead) groups.
func (g groupInfo) inactive() bool { return g.State == "Empty" || g.State == "Dead" }

// rebalancing reports the states kafka-consumer-groups warns about.
func (g groupInfo) rebalancing() bool {
	switch g.State {
	case "PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling":
		return true
	}
	return false
}

// describeGroups describes each group. A group that does not exist is in
// neither the map nor the error but in missing: only the caller knows
// whether that is a failure (describe) or not (reset-offsets). Other
// failures are in the error, one line for all of them.
func describeGroups(ctx context.Context, adm *kadm.Client, groups []string) (map[string]groupInfo, []string, error) {
	out := map[string]groupInfo{}
	var missing []string
	if len(groups) == 0 {
		// kadm would describe every group of the cluster.
		return out, nil, nil
	}
	var errs []error
	// A failed ConsumerGroupDescribe (a broker before Kafka 3.7 has none,
	// franz-go then fails the request) leaves every group to
	// DescribeGroups, which reports a failure that is not about the
	// protocol, such as an unreachable coordinator, itself.
	consumer, _ := adm.DescribeConsumerGroups(ctx, groups...)
	var classic []string
	for _, g := range groups {
		d, ok := consumer[g]
		switch {
		case !ok || errors.Is(d.Err, kerr.GroupIDNotFound):
			// Not a KIP-848 group: a classic one, or none at all.
			classic = append(classic, g)
		case d.Err != nil:
			errs = append(errs, fmt.Errorf("describe group %s: %w", g, d.Err))
		default:
			out[g] = fromConsumerGroup(d)
		}
	}
	if len(classic) > 0 {
		ds, err := adm.DescribeGroups(ctx, classic...)
		if err != nil && ds == nil {
			return nil, nil, fmt.Errorf("describe groups: %w", err)
		}
		for _, g := range classic {
			d, ok := ds[g]
			switch {
			case !ok && err != nil:
				errs = append(errs, fmt.Errorf("describe group %s: %w", g, err))
			case !ok || errors.Is(d.Err, kerr.GroupIDNotFound) || (d.Err == nil && d.State == "Dead"):
				missing = append(missing, g)
			case d.Err != nil:
				errs = append(errs, fmt.Errorf("describe group %s: %w", g, withBrokerMessage(d.Err, d.ErrMessage)))
			default:
				out[g] = fromClassicGroup(d)
			}
		}
	}
	return out, missing, joinLine(errs)
}

func fromConsumerGroup(d kadm.DescribedConsumerGroup) groupInfo {
	epoch, target := d.Epoch, d.AssignmentEpoch
	g := groupInfo{
		Group: d.Group, Type: "consumer", Coordinator: d.Coordinator, State: d.State,
		Strategy: d.AssignorName, Epoch: &epoch, TargetEpoch: &target,
	}
	for _, m := range d.Members {
		e := m.MemberEpoch
		gm := groupMember{
			ID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost, Epoch: &e,
			Assigned: fromTopicsSet(m.Assignment), Target: fromTopicsSet(m.TargetAssignment),
		}
		if m.InstanceID != nil {
			gm.InstanceID = *m.InstanceID
		}
		g.Members = append(g.Members, gm)
	}
	return g
}

func fromClassicGroup(d kadm.DescribedGroup) groupInfo {
	g := groupInfo{Group: d.Group, Type: "classic", Coordinator: d.Coordinator, State: d.State, Strategy: d.Protocol}
	for _, m := range d.Members {
		gm := groupMember{ID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost}
		if m.InstanceID != nil {
			gm.InstanceID = *m.InstanceID
		}
		// Only consumer-protocol assignments can be read; a Connect or
		// other group's members show no partitions, as in Kafka.
		if a, ok := m.Assigned.AsConsumer(); ok {
			s := kadm.TopicsSet{}
			for _, t := range a.Topics {
				s.Add(t.Topic, t.Partitions...)
			}
			gm.Assigned = fromTopicsSet(s)
		}
		g.Members = append(g.Members, gm)
	}
	return g
}

func fromTopicsSet(s kadm.TopicsSet) []topicPartitions {
	var out []topicPartitions
	for _, tp := range s.Sorted() {
		ps := slices.Clone(tp.Partitions)
		slices.Sort(ps)
		out = append(out, topicPartitions{Topic: tp.Topic, Partitions: ps})
	}
	return out
}

// assignmentString is Kafka's ASSIGNMENT column: "t1:0,1;t2:3", or "-".
func assignmentString(a []topicPartitions) string {
	var parts []string
	for _, t := range a {
		if len(t.Partitions) == 0 {
			continue
		}
		ps := make([]string, len(t.Partitions))
		for i, p := range t.Partitions {
			ps[i] = strconv.Itoa(int(p))
		}
		parts = append(parts, t.Topic+":"+strings.Join(ps, ","))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ";")
}

// listGroupNames is every group in the cluster, sorted (--all-groups).
func listGroupNames(ctx context.Context, adm *kadm.Client) ([]string, error) {
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		return nil, fmt.Errorf("list groups: %w", err)
	}
	return listed.Groups(), nil
}
