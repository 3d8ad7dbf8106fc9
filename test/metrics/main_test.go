// Package metrics_test checks the metrics listener from outside: a real
// broker, real clients (franz-go, kcat), and its /metrics scraped and
// parsed as Prometheus would.
package metrics_test

import (
	"testing"

	"github.com/weir-project/weir/test/harness"
)

func TestMain(m *testing.M) { harness.Main(m) }
