package cluster

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/weir-project/weir/test/harness"
)

// TestAdminWithoutQuorumIsAnswered: two of three nodes are killed, so
// there is no controller and none can be elected. Admin writes sent to
// the survivor (which names itself the controller to clients, and
// forwards) must be answered with REQUEST_TIMED_OUT, which clients
// retry, within the request's own timeout: not left to the client's
// read deadline, which closes the connection and says nothing of why.
// The forward used to wait 60 s whatever the request's timeout, past
// franz-go's deadline (the timeout plus 10 s; 10 s for a request with
// no timeout) and librdkafka's.
func TestAdminWithoutQuorumIsAnswered(t *testing.T) {
	c := harness.StartCluster(t, 3)
	guardNodes(t, c)
	ctrl := c.AgreedController(opTimeout)
	survivor := otherNodes(3, ctrl)[0]
	for _, id := range otherNodes(3, survivor) {
		c.Node(id).Kill()
	}
	b := c.Node(survivor)
	adm := kadm.NewClient(b.Client())
	defer adm.Close()
	adm.SetTimeoutMillis(2000)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// franz-go: CreateTopics (a timeout field) and IncrementalAlterConfigs
	// (none). Until the survivor's Raft sees its leader gone it may still
	// take itself for the controller and answer from there; the answer is
	// the same.
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "no-quorum"); !errors.Is(err, kerr.RequestTimedOut) {
		t.Fatalf("CreateTopics without a quorum: %v, want REQUEST_TIMED_OUT", err)
	}
	altered, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: kadm.StringPtr("1000")}}, "__consumer_offsets")
	if err != nil {
		t.Fatalf("IncrementalAlterConfigs without a quorum: %v, want an answer", err)
	}
	if len(altered) != 1 || !errors.Is(altered[0].Err, kerr.RequestTimedOut) {
		t.Fatalf("IncrementalAlterConfigs without a quorum: %+v, want REQUEST_TIMED_OUT", altered)
	}

	// librdkafka (confluent-kafka): CreateTopics with a 2 s operation
	// timeout gets Kafka's error, not its own request timeout.
	needConfluentKafka(t)
	out, err := exec.Command(python, "-c", `
import sys
from confluent_kafka.admin import AdminClient, NewTopic
from confluent_kafka import KafkaException
a = AdminClient({"bootstrap.servers": sys.argv[1]})
f = a.create_topics([NewTopic("no-quorum-rdkafka", 1, 1)], operation_timeout=2, request_timeout=20)["no-quorum-rdkafka"]
try:
    f.result()
    print("created")
except KafkaException as e:
    print(e.args[0].name())
`, b.Addr).CombinedOutput()
	if got := strings.TrimSpace(string(out)); err != nil || got != "REQUEST_TIMED_OUT" {
		t.Fatalf("librdkafka CreateTopics without a quorum: %q (%v), want REQUEST_TIMED_OUT", got, err)
	}
}
