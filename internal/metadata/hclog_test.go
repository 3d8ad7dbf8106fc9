package metadata

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"syscall"
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
	named.Error("failed to decode incoming command", "error", fmt.Errorf("read tcp: %w", syscall.ECONNRESET))
	out := buf.String()
	if !strings.Contains(out, `level=WARN msg="failed to decode incoming command"`) || strings.Contains(out, "level=ERROR msg=\"failed to decode incoming command\" component=raft error=\"read tcp") {
		t.Fatalf("a peer's reset connection not logged as a warning:\n%s", out)
	}
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
