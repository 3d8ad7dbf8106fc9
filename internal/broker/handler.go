package broker

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/internal/controller"
	"github.com/weir-project/weir/internal/server"
	"github.com/weir-project/weir/internal/waitclock"
)

// supported lists the APIs we serve and the version range of each. The
// maximum is further capped at what kmsg can encode (see apiVersions).
// Produce starts at v3 and Fetch at v4: older versions use the pre-0.11
// message formats, which we do not store.
var supported = map[int16][2]int16{
	kmsg.Produce.Int16():                 {3, 13},
	kmsg.Fetch.Int16():                   {4, 17},
	kmsg.ListOffsets.Int16():             {0, 10},
	kmsg.Metadata.Int16():                {0, 13},
	kmsg.DescribeTopicPartitions.Int16(): {0, 0},
	kmsg.OffsetForLeaderEpoch.Int16():    {0, 4},
	kmsg.CreateTopics.Int16():            {0, 7},
	kmsg.DeleteTopics.Int16():            {0, 6},
	kmsg.DeleteRecords.Int16():           {0, 2},
	kmsg.DescribeConfigs.Int16():         {0, 4},
	kmsg.AlterConfigs.Int16():            {0, 2},
	kmsg.CreatePartitions.Int16():        {0, 3},
	kmsg.IncrementalAlterConfigs.Int16(): {0, 1},
	kmsg.DescribeCluster.Int16():         {0, 2},
	kmsg.DescribeLogDirs.Int16():         {0, 4},
	// Partition reassignment (reassign.go); v1 is KIP-860.
	kmsg.AlterPartitionAssignments.Int16():  {0, 1},
	kmsg.ListPartitionReassignments.Int16(): {0, 0},
	kmsg.InitProducerID.Int16():             {0, 5},
	// Groups (groups.go): up to kmsg's newest; OffsetCommit/OffsetFetch
	// v10 (topic ids) are not served yet.
	kmsg.FindCoordinator.Int16(): {0, 6},
	kmsg.JoinGroup.Int16():       {0, 9},
	kmsg.SyncGroup.Int16():       {0, 5},
	kmsg.Heartbeat.Int16():       {0, 4},
	kmsg.LeaveGroup.Int16():      {0, 5},
	kmsg.OffsetCommit.Int16():    {0, 9},
	kmsg.OffsetFetch.Int16():     {0, 9},
	kmsg.ListGroups.Int16():      {0, 5},
	kmsg.DescribeGroups.Int16():  {0, 6},
	kmsg.DeleteGroups.Int16():    {0, 3},
	kmsg.OffsetDelete.Int16():    {0, 0},
	// KIP-848 (consumergroups.go).
	kmsg.ConsumerGroupHeartbeat.Int16(): {0, 1},
	kmsg.ConsumerGroupDescribe.Int16():  {0, 1},
	// The controller's APIs, served on the CONTROLLER listener only
	// (package controller).
	kmsg.BrokerRegistration.Int16():  {0, 4},
	kmsg.BrokerHeartbeat.Int16():     {0, 1},
	kmsg.AlterPartition.Int16():      {0, 3},
	kmsg.AllocateProducerIDs.Int16(): {0, 0},
}

// apiVersions is the table the server advertises in ApiVersions.
func apiVersions() map[int16][2]int16 {
	all := mergedAPIs()
	out := make(map[int16][2]int16, len(all))
	for key, r := range all {
		req := kmsg.RequestForKey(key)
		if req == nil {
			continue
		}
		if max := req.MaxVersion(); r[1] > max {
			r[1] = max
		}
		out[key] = r
	}
	return out
}

// Handle serves one request; it implements server.Handler.
func (b *Broker) Handle(ctx context.Context, rc *server.RequestContext, req kmsg.Request) (kmsg.Response, error) {
	// The handlers' waits (acks=-1, long polls, group commits and joins,
	// forwarding to the controller) are told to rc, which counts them as
	// the request's remote time.
	ctx = waitclock.With(ctx, rc)
	onController := rc.Listener == b.opts.ControllerListener
	if resp, ok, err := b.handleOps(ctx, onController, req); ok {
		return resp, err
	}
	switch {
	case controller.Handles(req):
		if !onController || b.ctrlSvc == nil {
			return nil, fmt.Errorf("%s is served on the controller listener of a controller only", kmsg.NameForKey(req.Key()))
		}
		return b.ctrlSvc.Handle(ctx, req)
	case isAdminWrite(req) && !onController && !b.meta.IsLeader():
		return b.forwardAdmin(ctx, req)
	}
	switch r := req.(type) {
	case *kmsg.ProduceRequest:
		return b.handleProduce(ctx, rc, r)
	case *kmsg.FetchRequest:
		return b.handleFetch(ctx, rc, r)
	case *kmsg.ListOffsetsRequest:
		return b.handleListOffsets(ctx, r)
	case *kmsg.MetadataRequest:
		return b.handleMetadata(ctx, r)
	case *kmsg.OffsetForLeaderEpochRequest:
		return b.handleOffsetForLeaderEpoch(ctx, r)
	case *kmsg.CreateTopicsRequest:
		return b.handleCreateTopics(ctx, rc, r)
	case *kmsg.DeleteTopicsRequest:
		return b.handleDeleteTopics(ctx, r)
	case *kmsg.DeleteRecordsRequest:
		return b.handleDeleteRecords(ctx, r)
	case *kmsg.DescribeConfigsRequest:
		return b.handleDescribeConfigs(ctx, r)
	case *kmsg.AlterConfigsRequest:
		return b.handleAlterConfigs(ctx, r)
	case *kmsg.IncrementalAlterConfigsRequest:
		return b.handleIncrementalAlterConfigs(ctx, r)
	case *kmsg.CreatePartitionsRequest:
		return b.handleCreatePartitions(ctx, r)
	case *kmsg.DescribeLogDirsRequest:
		return b.handleDescribeLogDirs(ctx, r)
	case *kmsg.AlterPartitionAssignmentsRequest:
		return b.handleAlterPartitionReassignments(ctx, r)
	case *kmsg.ListPartitionReassignmentsRequest:
		return b.handleListPartitionReassignments(ctx, r)
	case *kmsg.DescribeClusterRequest:
		return b.handleDescribeCluster(ctx, r)
	case *kmsg.InitProducerIDRequest:
		return b.handleInitProducerID(ctx, r)
	case *kmsg.FindCoordinatorRequest:
		return b.handleFindCoordinator(ctx, rc, r)
	case *kmsg.JoinGroupRequest:
		return b.handleJoinGroup(ctx, rc, r)
	case *kmsg.SyncGroupRequest:
		return b.handleSyncGroup(ctx, r)
	case *kmsg.HeartbeatRequest:
		return b.handleHeartbeat(ctx, r)
	case *kmsg.LeaveGroupRequest:
		return b.handleLeaveGroup(ctx, r)
	case *kmsg.OffsetCommitRequest:
		return b.handleOffsetCommit(ctx, r)
	case *kmsg.OffsetFetchRequest:
		return b.handleOffsetFetch(ctx, r)
	case *kmsg.ListGroupsRequest:
		return b.handleListGroups(ctx, r)
	case *kmsg.DescribeGroupsRequest:
		return b.handleDescribeGroups(ctx, r)
	case *kmsg.DeleteGroupsRequest:
		return b.handleDeleteGroups(ctx, r)
	case *kmsg.OffsetDeleteRequest:
		return b.handleOffsetDelete(ctx, r)
	case *kmsg.ConsumerGroupHeartbeatRequest:
		return b.handleConsumerGroupHeartbeat(ctx, rc, r)
	case *kmsg.DescribeTopicPartitionsRequest:
		return b.handleDescribeTopicPartitions(r), nil
	case *kmsg.ConsumerGroupDescribeRequest:
		return b.handleConsumerGroupDescribe(ctx, r)
	default:
		return nil, fmt.Errorf("no handler for API key %d", req.Key())
	}
}
