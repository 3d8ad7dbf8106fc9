package metadata

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"sync/atomic"
	"syscall"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// slogHCLog adapts slog to the hclog.Logger interface raft logs through.
// Raft is chatty at Info (every election, every snapshot), so the adapter
// drops anything below its level, Warn by default.
type slogHCLog struct {
	l     *slog.Logger
	name  string
	level *atomic.Int32 // shared with loggers derived by With/Named
	args  []any
}

var _ hclog.Logger = (*slogHCLog)(nil)

func newHCLog(l *slog.Logger, level hclog.Level) *slogHCLog {
	lv := &atomic.Int32{}
	lv.Store(int32(level))
	return &slogHCLog{l: l, level: lv}
}

func toSlogLevel(level hclog.Level) slog.Level {
	switch level {
	case hclog.Trace:
		return slog.LevelDebug - 4
	case hclog.Debug:
		return slog.LevelDebug
	case hclog.Warn:
		return slog.LevelWarn
	case hclog.Error:
		return slog.LevelError
	default:
		return slog.LevelInfo
	}
}

func (h *slogHCLog) enabled(level hclog.Level) bool {
	return level != hclog.Off && level >= hclog.Level(h.level.Load())
}

func (h *slogHCLog) Log(level hclog.Level, msg string, args ...interface{}) {
	if !h.enabled(level) {
		return
	}
	if level == hclog.Warn && isExpectedElection(msg, args) {
		level = hclog.Info // every start of a node that has no leader yet
		if !h.enabled(level) {
			return
		}
	}
	if level >= hclog.Warn && (isPeerRetry(msg) || isOwnShutdown(msg, args)) {
		// Repeated at every backoff while a peer is down: the controller
		// says once, in its own words, that the broker was fenced. And a
		// peer's connection cut by this node's own clean stop is no error.
		level = hclog.Debug
		if !h.enabled(level) {
			return
		}
	}
	if level > hclog.Warn && isPeerGone(msg, args) {
		// A peer killed in the middle of a command resets its
		// connection: the peer's failure, which fencing reports, not
		// this node's error.
		level = hclog.Warn
	}
	all := make([]any, 0, len(args)+len(h.args)+2)
	if h.name != "" {
		all = append(all, "component", h.name)
	}
	all = append(append(all, args...), h.args...)
	h.l.Log(context.Background(), toSlogLevel(level), msg, all...)
}

func (h *slogHCLog) Trace(msg string, args ...interface{}) { h.Log(hclog.Trace, msg, args...) }
func (h *slogHCLog) Debug(msg string, args ...interface{}) { h.Log(hclog.Debug, msg, args...) }
func (h *slogHCLog) Info(msg string, args ...interface{})  { h.Log(hclog.Info, msg, args...) }
func (h *slogHCLog) Warn(msg string, args ...interface{})  { h.Log(hclog.Warn, msg, args...) }
func (h *slogHCLog) Error(msg string, args ...interface{}) { h.Log(hclog.Error, msg, args...) }

func (h *slogHCLog) IsTrace() bool { return h.enabled(hclog.Trace) }
func (h *slogHCLog) IsDebug() bool { return h.enabled(hclog.Debug) }
func (h *slogHCLog) IsInfo() bool  { return h.enabled(hclog.Info) }
func (h *slogHCLog) IsWarn() bool  { return h.enabled(hclog.Warn) }
func (h *slogHCLog) IsError() bool { return h.enabled(hclog.Error) }

func (h *slogHCLog) ImpliedArgs() []interface{} { return h.args }

func (h *slogHCLog) With(args ...interface{}) hclog.Logger {
	cp := *h
	cp.args = append(append([]any{}, h.args...), args...)
	return &cp
}

func (h *slogHCLog) Name() string { return h.name }

func (h *slogHCLog) Named(name string) hclog.Logger {
	cp := *h
	if cp.name != "" {
		cp.name += "." + name
	} else {
		cp.name = name
	}
	return &cp
}

func (h *slogHCLog) ResetNamed(name string) hclog.Logger {
	cp := *h
	cp.name = name
	return &cp
}

func (h *slogHCLog) SetLevel(level hclog.Level) { h.level.Store(int32(level)) }
func (h *slogHCLog) GetLevel() hclog.Level      { return hclog.Level(h.level.Load()) }

func (h *slogHCLog) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	return slog.NewLogLogger(h.l.Handler(), slog.LevelWarn)
}

func (h *slogHCLog) StandardWriter(opts *hclog.StandardLoggerOptions) io.Writer {
	return h.StandardLogger(opts).Writer()
}

// isPeerRetry names raft's messages about an unreachable peer.
func isPeerRetry(msg string) bool {
	switch msg {
	case "failed to heartbeat to", "failed to appendEntries to", "failed to contact":
		return true
	}
	return false
}

// isOwnShutdown recognises the transport's error for a peer connection it
// was serving when it closed: every clean stop of a node logs it once.
func isOwnShutdown(msg string, args []any) bool {
	if msg != "failed to decode incoming command" {
		return false
	}
	for i := 0; i+1 < len(args); i += 2 {
		if err, ok := args[i+1].(error); ok && errors.Is(err, raft.ErrTransportShutdown) {
			return true
		}
	}
	return false
}

// isPeerGone recognises the transport's error for a command cut off by
// the peer (connection reset, or closed before the command's end).
func isPeerGone(msg string, args []any) bool {
	if msg != "failed to decode incoming command" {
		return false
	}
	for i := 0; i+1 < len(args); i += 2 {
		if err, ok := args[i+1].(error); ok && (errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.ErrUnexpectedEOF)) {
			return true
		}
	}
	return false
}

// isExpectedElection recognises raft's warning when a node that has never
// heard of a leader starts an election: that is how every start begins, not
// a problem worth a warning.
func isExpectedElection(msg string, args []any) bool {
	if msg != "heartbeat timeout reached, starting election" {
		return false
	}
	for i := 0; i+1 < len(args); i += 2 {
		if k, _ := args[i].(string); k == "last-leader-addr" {
			return fmt.Sprint(args[i+1]) == ""
		}
	}
	return false
}
