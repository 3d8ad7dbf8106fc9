// Package verify runs `weir verify` end to end: a short seeded run with
// kills, a pause, a network partition, a torn write, the controller's
// loss and (as root) a full disk must find no safety violation; an
// --unsafe run must find loss, every time; the HTML report renders in
// headless Chromium with its plots.
package verify

import (
	"testing"

	"github.com/weir-project/weir/test/harness"
)

// The binary is built without the race detector: verify measures the
// cluster's availability and latency, and a -race broker is several
// times slower. Races in the code verify drives are the business of the
// packages' own go test -race.
func TestMain(m *testing.M) { harness.MainWithoutRace(m) }
