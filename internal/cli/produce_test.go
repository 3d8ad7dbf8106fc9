package cli

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestProduceReport(t *testing.T) {
	var out, errOut bytes.Buffer
	rep := &produceReport{out: &out, errOut: &errOut, verbose: true}
	rep.done(1, &kgo.Record{Partition: 2, Offset: 17}, nil)
	boom := errors.New("NOT_LEADER_OR_FOLLOWER")
	for line := 2; line < 2+maxReportedFailures+3; line++ {
		rep.done(line, &kgo.Record{}, boom)
	}
	if out.String() != "2@17\n" {
		t.Errorf("verbose output %q", out.String())
	}
	if n := strings.Count(errOut.String(), "\n"); n != maxReportedFailures {
		t.Errorf("%d failure lines printed, want the first %d", n, maxReportedFailures)
	}
	if !strings.HasPrefix(errOut.String(), "line 2: NOT_LEADER_OR_FOLLOWER\n") {
		t.Errorf("failures %q", errOut.String())
	}
	if rep.sent != 1 || rep.failed != maxReportedFailures+3 || rep.firstErr != boom {
		t.Errorf("sent %d failed %d first %v", rep.sent, rep.failed, rep.firstErr)
	}

	// With acks=0 the broker never says the offset: print -1 like Java.
	out.Reset()
	rep = &produceReport{out: &out, errOut: &errOut, verbose: true, noAcks: true}
	rep.done(1, &kgo.Record{Partition: 1}, nil)
	if out.String() != "1@-1\n" {
		t.Errorf("acks=0 verbose output %q", out.String())
	}
}

func TestProduceQuietWithoutVerbose(t *testing.T) {
	var out, errOut bytes.Buffer
	rep := &produceReport{out: &out, errOut: &errOut}
	rep.done(1, &kgo.Record{Partition: 0, Offset: 1}, nil)
	if out.Len() != 0 || errOut.Len() != 0 {
		t.Errorf("success printed %q / %q", out.String(), errOut.String())
	}
}
