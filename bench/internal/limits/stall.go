package limits

import (
	"sync"
	"time"
)

// stallNap is the probe's sleep: shorter than the timer's resolution, so
// every wake-up is as early as the machine can manage.
const stallNap = 200 * time.Microsecond

// StallProbe sleeps stallNap in a loop on a goroutine of its own and
// records how much later than asked each sleep ended. Run beside a
// latency measurement, its tail is how long the machine (the guest's
// scheduler, or the host's under a virtual machine) kept a ready
// goroutine from running: a stall that every client and broker on the
// machine shares, and a floor under their latency tails.
type StallProbe struct {
	stop chan struct{}
	done sync.WaitGroup
	late []time.Duration
}

// StartStallProbe starts a probe; Stop ends it.
func StartStallProbe() *StallProbe {
	p := &StallProbe{stop: make(chan struct{})}
	p.done.Add(1)
	go func() {
		defer p.done.Done()
		for {
			t := time.Now()
			time.Sleep(stallNap)
			p.late = append(p.late, time.Since(t)-stallNap)
			select {
			case <-p.stop:
				return
			default:
			}
		}
	}()
	return p
}

// Stop ends the probe and returns how late each of its wake-ups was (at
// least one).
func (p *StallProbe) Stop() []time.Duration {
	close(p.stop)
	p.done.Wait()
	return p.late
}
