// Package descriptors proves that the real weir binary's open file count
// does not depend on how many partitions and segments it holds: under a
// low RLIMIT_NOFILE it creates, serves, stops, crashes and restarts with
// thousands of partitions and with thousands of segments, and every
// acknowledged record survives.
package descriptors

import (
	"testing"

	"github.com/weir-project/weir/test/harness"
)

func TestMain(m *testing.M) { harness.Main(m) }
