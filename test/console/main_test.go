// Package console drives weir's web console (console.listener) in
// headless Chromium against a real broker with data: every page renders
// without console errors, the message browser shows records (headers,
// JSON, untrusted markup as text), an offset reset or a partition
// increase from the console is what a Kafka client then sees, a fenced
// broker and the throughput graph show on the overview, and a POST
// without its CSRF token is refused.
package console

import (
	"testing"

	"github.com/weir-project/weir/test/harness"
)

func TestMain(m *testing.M) { harness.Main(m) }
