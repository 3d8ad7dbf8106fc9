package metadata

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

func TestHCLogAdapterLevels(t *testing.T) {
	var buf bytes.Buffer
	h := newHCLog(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})), hclog.Warn)
	named := h.Named("raft").With("node", 1)
	named.Info("chatty info")
	named.Warn("real warning", "peer", "x")
	named.Error("real error")
	named.Warn("heartbeat timeout reached, starting election", "last-leader-addr", "", "last-leader-id", "")
	named.Error("failed to decode incoming command", "error", raft.ErrTransportShutdown)
	named.Error("failed to decode incoming command", "error", errors.New("unknown rpc type 9"))
	out := buf.String()
	if strings.Contains(out, "chatty info") || strings.Contains(out, "starting election") || strings.Contains(out, "transport shutdown") {
		t.Fatalf("logged below Warn:\n%s", out)
	}
	for _, want := range []string{"level=WARN msg=\"real warning\" component=raft peer=x node=1", "level=ERROR msg=\"real error\"", "unknown rpc type 9"} {
		if !strings.Contains(out, want) {
			t.Fatalf("missing %q in:\n%s", want, out)
		}
	}
	if named.IsInfo() || !named.IsWarn() {
		t.Fatal("Is* guards disagree with the level")
	}
	named.SetLevel(hclog.Info) // shared with the parent logger
	if !h.IsInfo() {
		t.Fatal("SetLevel on a derived logger did not reach its parent")
	}
}
