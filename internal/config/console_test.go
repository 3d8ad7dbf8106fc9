package config

import "testing"

func TestConsoleListener(t *testing.T) {
	if b := mustNew(t, nil); b.ConsoleListener != "" || b.ConsoleAddr() != "" {
		t.Fatalf("console on by default: %q", b.ConsoleListener)
	}
	for raw, want := range map[string]string{
		"http://127.0.0.1:9645": "127.0.0.1:9645",
		"http://:0":             "127.0.0.1:0",
		"http://0.0.0.0:80/":    "0.0.0.0:80",
		"http://[::1]:9645":     "[::1]:9645",
	} {
		b := mustNew(t, map[string]string{"console.listener": raw})
		if got := b.ConsoleAddr(); got != want {
			t.Errorf("console.listener=%s binds %q, want %q", raw, got, want)
		}
	}
	for _, raw := range []string{"127.0.0.1:9645", "https://127.0.0.1:9645", "http://127.0.0.1", "http://h:99999", "http://h:1/x", "http://u@h:1"} {
		if _, _, err := New(map[string]string{"console.listener": raw}); err == nil {
			t.Errorf("console.listener=%s accepted", raw)
		}
	}
}
