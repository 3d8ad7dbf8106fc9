package proc

import (
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
)

// FreePorts returns n distinct loopback ports that could be bound just
// now, drawn below the kernel's ephemeral range (which starts at 32768) so
// no outgoing connection takes one before the broker binds it. For
// brokers that must know their peers' ports before they start (a
// cluster's controller.quorum.voters); others bind port 0.
func FreePorts(n int) ([]int, error) {
	const lo, hi = 20000, 32000
	var out []int
	for tries := 0; len(out) < n; tries++ {
		if tries > 10000 {
			return nil, fmt.Errorf("no %d free loopback ports found", n)
		}
		p := lo + rand.IntN(hi-lo)
		if slices.Contains(out, p) {
			continue
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			continue
		}
		l.Close()
		out = append(out, p)
	}
	return out, nil
}
