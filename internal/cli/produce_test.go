package cli

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestProduceReport: the first failure is told once, by the final error;
// later failures print a line each only if they differ from it, at most
// maxReportedFailures of them.
func TestProduceReport(t *testing.T) {
	var out, errOut bytes.Buffer
	rep := &produceReport{out: &out, errOut: &errOut, verbose: true}
	rep.done(1, &kgo.Record{Partition: 2, Offset: 17}, nil)
	boom := errors.New("NOT_LEADER_OR_FOLLOWER")
	for line := 2; line < 5; line++ {
		rep.done(line, &kgo.Record{}, boom)
	}
	if errOut.Len() != 0 {
		t.Errorf("failures like the first printed %q; the final error tells them", errOut.String())
	}
	other := errors.New("MESSAGE_TOO_LARGE")
	for line := 5; line < 5+maxReportedFailures+3; line++ {
		rep.done(line, &kgo.Record{}, other)
	}
	if out.String() != "2@17\n" {
		t.Errorf("verbose output %q", out.String())
	}
	if n := strings.Count(errOut.String(), "\n"); n != maxReportedFailures {
		t.Errorf("%d failure lines printed, want the first %d that differ", n, maxReportedFailures)
	}
	if !strings.HasPrefix(errOut.String(), "line 5: MESSAGE_TOO_LARGE\n") {
		t.Errorf("failures %q", errOut.String())
	}
	if rep.sent != 1 || rep.failed != 3+maxReportedFailures+3 || rep.firstErr != boom {
		t.Errorf("sent %d failed %d first %v", rep.sent, rep.failed, rep.firstErr)
	}
	want := `produce to "t": 11 of 12 records failed, the first (line 2): NOT_LEADER_OR_FOLLOWER`
	if err := rep.failure("t"); err == nil || err.Error() != want || !errors.Is(err, boom) {
		t.Errorf("final error %v, want %q", err, want)
	}
	one := &produceReport{out: &out, errOut: &errOut}
	one.done(3, &kgo.Record{}, boom)
	if err := one.failure("t"); err.Error() != `produce to "t": 1 of 1 records failed (line 3): NOT_LEADER_OR_FOLLOWER` {
		t.Errorf("final error %v", err)
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
