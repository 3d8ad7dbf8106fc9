package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// What the reassignment commands share: Kafka's reassignment JSON, the
// cluster's current assignment, and the requests that execute, verify,
// cancel and throttle a plan.

// throttleKey is weir's reassignment throttle, a dynamic broker config.
const throttleKey = "replica.reassignment.throttle.bytes.per.sec"

// reassignmentJSON is kafka-reassign-partitions' file format.
type reassignmentJSON struct {
	Version    int               `json:"version"`
	Partitions []reassignmentRow `json:"partitions"`
}

type reassignmentRow struct {
	Topic     string   `json:"topic"`
	Partition int32    `json:"partition"`
	Replicas  []int32  `json:"replicas"`
	LogDirs   []string `json:"log_dirs,omitempty"`
}

// toJSON is the file for rows, log_dirs "any" as Kafka prints them.
func toJSON(rows []planPartition) reassignmentJSON {
	out := reassignmentJSON{Version: 1, Partitions: []reassignmentRow{}}
	for _, r := range rows {
		dirs := make([]string, len(r.Replicas))
		for i := range dirs {
			dirs[i] = "any"
		}
		out.Partitions = append(out.Partitions, reassignmentRow{Topic: r.Topic, Partition: r.Partition, Replicas: r.Replicas, LogDirs: dirs})
	}
	return out
}

// compactJSON is one line of JSON, as kafka-reassign-partitions prints a
// plan (ready to be saved to a file).
func compactJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// readReassignmentFile reads and checks a reassignment JSON file.
func readReassignmentFile(path string) ([]planPartition, error) {
	if path == "" {
		return nil, errors.New("--reassignment-json-file is required")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read reassignment file: %w", err)
	}
	return parseReassignment(b)
}

func parseReassignment(b []byte) ([]planPartition, error) {
	var f reassignmentJSON
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("reassignment file: %w", err)
	}
	if f.Version != 1 {
		return nil, fmt.Errorf("reassignment file: version %d not supported (want 1)", f.Version)
	}
	if len(f.Partitions) == 0 {
		return nil, errors.New("reassignment file: no partitions")
	}
	seen := map[string]bool{}
	var out []planPartition
	for _, p := range f.Partitions {
		name := p.Topic + "-" + strconv.Itoa(int(p.Partition))
		switch {
		case p.Topic == "":
			return nil, errors.New("reassignment file: a partition without a topic")
		case seen[name]:
			return nil, fmt.Errorf("reassignment file: duplicate reassignment of %s", name)
		case len(p.Replicas) == 0:
			return nil, fmt.Errorf("reassignment file: %s has no replicas", name)
		case len(p.LogDirs) > 0 && len(p.LogDirs) != len(p.Replicas):
			return nil, fmt.Errorf("reassignment file: %s has %d log_dirs for %d replicas", name, len(p.LogDirs), len(p.Replicas))
		}
		for j, r := range p.Replicas {
			if slices.Contains(p.Replicas[:j], r) {
				return nil, fmt.Errorf("reassignment file: %s lists broker %d twice", name, r)
			}
		}
		for _, d := range p.LogDirs {
			if d != "any" {
				return nil, fmt.Errorf("reassignment file: %s: log_dirs other than \"any\" are not supported here (move replicas between log dirs separately)", name)
			}
		}
		seen[name] = true
		out = append(out, planPartition{Topic: p.Topic, Partition: p.Partition, Replicas: p.Replicas})
	}
	return out, nil
}

// clusterView is what planning needs: the live brokers and the current
// replicas of the partitions of the topics asked for.
type clusterView struct {
	brokers []planBroker
	parts   []planPartition
}

// viewCluster reads the live brokers and the assignment of topics (nil:
// every topic, internal ones included).
func viewCluster(ctx context.Context, adm *kadm.Client, topics []string) (clusterView, error) {
	md, err := adm.Metadata(ctx, topics...)
	if err != nil {
		return clusterView{}, fmt.Errorf("metadata: %w", err)
	}
	var v clusterView
	for _, b := range md.Brokers {
		rack := ""
		if b.Rack != nil {
			rack = *b.Rack
		}
		v.brokers = append(v.brokers, planBroker{ID: b.NodeID, Rack: rack})
	}
	slices.SortFunc(v.brokers, func(a, b planBroker) int { return int(a.ID - b.ID) })
	for _, t := range md.Topics.Sorted() {
		if t.Err != nil {
			return clusterView{}, fmt.Errorf("topic %s: %w", t.Topic, t.Err)
		}
		for _, p := range t.Partitions.Sorted() {
			v.parts = append(v.parts, planPartition{Topic: t.Topic, Partition: p.Partition, Replicas: slices.Clone(p.Replicas)})
		}
	}
	sortPlanPartitions(v.parts)
	return v, nil
}

// inProgress lists the reassignments in progress ("topic-partition" ->
// adding, removing), of the given topics (nil: all).
type ongoing struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Replicas  []int32 `json:"replicas"`
	Adding    []int32 `json:"addingReplicas"`
	Removing  []int32 `json:"removingReplicas"`
}

func listReassignments(ctx context.Context, cl kmsg.Requestor, topics []string) ([]ongoing, error) {
	req := kmsg.NewPtrListPartitionReassignmentsRequest()
	if topics != nil {
		md := kmsg.NewPtrMetadataRequest()
		md.AllowAutoTopicCreation = false
		for _, t := range topics {
			mt := kmsg.NewMetadataRequestTopic()
			mt.Topic = kmsg.StringPtr(t)
			md.Topics = append(md.Topics, mt)
		}
		mresp, err := md.RequestWith(ctx, cl)
		if err != nil {
			return nil, fmt.Errorf("metadata: %w", err)
		}
		for _, t := range mresp.Topics {
			rt := kmsg.NewListPartitionReassignmentsRequestTopic()
			rt.Topic = *t.Topic
			for _, p := range t.Partitions {
				rt.Partitions = append(rt.Partitions, p.Partition)
			}
			req.Topics = append(req.Topics, rt)
		}
		if len(req.Topics) == 0 {
			return nil, nil
		}
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("list partition reassignments: %w", err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, fmt.Errorf("list partition reassignments: %w", withBrokerMessage(err, deref(resp.ErrorMessage)))
	}
	var out []ongoing
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out = append(out, ongoing{Topic: t.Topic, Partition: p.Partition, Replicas: p.Replicas, Adding: p.AddingReplicas, Removing: p.RemovingReplicas})
		}
	}
	slices.SortFunc(out, func(a, b ongoing) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition - b.Partition)
	})
	return out, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// alterReassignments sends the targets (nil replicas: cancel) and returns
// the partitions that failed, with their errors, in order.
func alterReassignments(ctx context.Context, cl kmsg.Requestor, timeout time.Duration, rows []planPartition, cancel bool) ([]string, error) {
	req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	req.TimeoutMillis = int32(timeout.Milliseconds())
	byTopic := map[string]int{}
	for _, r := range rows {
		i, ok := byTopic[r.Topic]
		if !ok {
			rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
			rt.Topic = r.Topic
			req.Topics = append(req.Topics, rt)
			i = len(req.Topics) - 1
			byTopic[r.Topic] = i
		}
		rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
		rp.Partition = r.Partition
		if !cancel {
			rp.Replicas = r.Replicas
		}
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("alter partition reassignments: %w", err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, fmt.Errorf("alter partition reassignments: %w", withBrokerMessage(err, deref(resp.ErrorMessage)))
	}
	var failed []string
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				if cancel && errors.Is(err, kerr.NoReassignmentInProgress) {
					continue
				}
				failed = append(failed, fmt.Sprintf("%s-%d: %v", t.Topic, p.Partition, withBrokerMessage(err, deref(p.ErrorMessage))))
			}
		}
	}
	return failed, nil
}

// verifyRow is one partition's state against its target.
type verifyRow struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Target    []int32 `json:"target"`
	Replicas  []int32 `json:"replicas"`
	// State: completed, in progress, or failed (no reassignment in
	// progress and the replicas are not the target).
	State string `json:"state"`
}

// verify compares the plan with the cluster as the active controller
// sees it: the replicas and the reassignments in progress from one image,
// the freshest, so that a move just started is never mistaken for one
// that failed (another broker's image may trail by a moment).
func verify(ctx context.Context, cl *kgo.Client, rows []planPartition) ([]verifyRow, error) {
	topics := planTopics(rows)
	ctrl, cur, err := controllerAssignment(ctx, cl, topics)
	if err != nil {
		return nil, err
	}
	prog, err := listReassignments(ctx, ctrl, topics)
	if err != nil {
		return nil, err
	}
	busy := map[string]bool{}
	for _, o := range prog {
		busy[o.Topic+"\x00"+strconv.Itoa(int(o.Partition))] = true
	}
	var out []verifyRow
	for _, r := range rows {
		k := r.Topic + "\x00" + strconv.Itoa(int(r.Partition))
		v := verifyRow{Topic: r.Topic, Partition: r.Partition, Target: r.Replicas, Replicas: cur[k], State: "completed"}
		switch {
		case busy[k]:
			v.State = "in progress"
		case !slices.Equal(cur[k], r.Replicas):
			v.State = "failed"
		}
		out = append(out, v)
	}
	return out, nil
}

// controllerAssignment finds the active controller and reads the replicas
// of topics' partitions from it.
func controllerAssignment(ctx context.Context, cl *kgo.Client, topics []string) (kmsg.Requestor, map[string][]int32, error) {
	req := kmsg.NewPtrMetadataRequest()
	req.AllowAutoTopicCreation = false
	for _, t := range topics {
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, mt)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, nil, fmt.Errorf("metadata: %w", err)
	}
	ctrl := kmsg.Requestor(cl)
	if resp.ControllerID >= 0 {
		b := cl.Broker(int(resp.ControllerID))
		if again, err := req.RequestWith(ctx, b); err == nil {
			resp, ctrl = again, b
		}
	}
	cur := map[string][]int32{}
	for _, t := range resp.Topics {
		if t.Topic == nil {
			continue
		}
		for _, p := range t.Partitions {
			cur[*t.Topic+"\x00"+strconv.Itoa(int(p.Partition))] = p.Replicas
		}
	}
	return ctrl, cur, nil
}

func planTopics(rows []planPartition) []string {
	var topics []string
	for _, r := range rows {
		if !slices.Contains(topics, r.Topic) {
			topics = append(topics, r.Topic)
		}
	}
	return topics
}

// setThrottle sets (bytes >= 0) or removes (bytes < 0) the cluster-wide
// reassignment throttle.
func setThrottle(ctx context.Context, adm *kadm.Client, bytes int64) error {
	op := kadm.AlterConfig{Name: throttleKey}
	if bytes >= 0 {
		v := strconv.FormatInt(bytes, 10)
		op.Op, op.Value = kadm.SetConfig, &v
	} else {
		op.Op = kadm.DeleteConfig
	}
	resp, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{op})
	if err == nil {
		for _, r := range resp {
			if r.Err != nil {
				err = withBrokerMessage(r.Err, r.ErrMessage)
			}
		}
	}
	if err != nil {
		return fmt.Errorf("set %s: %w", throttleKey, err)
	}
	return nil
}

// executePlan starts the moves of rows that differ from the current
// assignment, printing the current assignment for a rollback first.
func executePlan(ctx context.Context, cl *kgo.Client, adm *kadm.Client, out io.Writer, timeout time.Duration, rows []planPartition, additional bool, throttle int64) error {
	if !additional {
		prog, err := listReassignments(ctx, cl, nil)
		if err != nil {
			return err
		}
		if len(prog) > 0 {
			return fmt.Errorf("cannot execute: %d partition reassignments are in progress (first %s-%d); use --additional, or --cancel them", len(prog), prog[0].Topic, prog[0].Partition)
		}
	}
	_, cur, err := controllerAssignment(ctx, cl, planTopics(rows))
	if err != nil {
		return err
	}
	var before []planPartition
	for _, r := range rows {
		replicas, ok := cur[r.Topic+"\x00"+strconv.Itoa(int(r.Partition))]
		if !ok {
			return fmt.Errorf("%w: %s-%d", kerr.UnknownTopicOrPartition, r.Topic, r.Partition)
		}
		before = append(before, planPartition{Topic: r.Topic, Partition: r.Partition, Replicas: replicas})
	}
	fmt.Fprintf(out, "Current partition replica assignment\n\n%s\n\nSave this to use as the --reassignment-json-file option during rollback\n", compactJSON(toJSON(before)))
	if throttle >= 0 {
		if err := setThrottle(ctx, adm, throttle); err != nil {
			return err
		}
		fmt.Fprintf(out, "Throttle set to %d bytes/s for the adding replicas (%s); run --verify when done to remove it.\n", throttle, throttleKey)
	}
	failed, err := alterReassignments(ctx, cl, timeout, rows, false)
	if err != nil {
		return err
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d partition reassignments failed: %s", len(failed), len(rows), strings.Join(failed, "; "))
	}
	var names []string
	for _, r := range rows {
		names = append(names, r.Topic+"-"+strconv.Itoa(int(r.Partition)))
	}
	_, err = fmt.Fprintf(out, "Successfully started partition reassignments for %s\n", strings.Join(names, ","))
	return err
}

// waitDone polls verify until no partition of rows is in progress, and
// reports the ones that ended elsewhere than their target.
func waitDone(ctx context.Context, cl *kgo.Client, out io.Writer, rows []planPartition) error {
	last := -1
	for {
		vs, err := verify(ctx, cl, rows)
		if err != nil {
			return err
		}
		done, failed := 0, []string{}
		for _, v := range vs {
			switch v.State {
			case "completed":
				done++
			case "failed":
				failed = append(failed, fmt.Sprintf("%s-%d (replicas %v, not %v)", v.Topic, v.Partition, v.Replicas, v.Target))
			}
		}
		if done != last {
			fmt.Fprintf(out, "%d of %d partitions moved\n", done, len(rows))
			last = done
		}
		if done+len(failed) == len(rows) {
			if len(failed) > 0 {
				return fmt.Errorf("%d reassignments did not reach their target: %s", len(failed), strings.Join(failed, "; "))
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for the reassignments: %w", ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}
