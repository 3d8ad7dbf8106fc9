package verify

import (
	"math"
	"slices"
)

// Availability is measured on the safety topics (the acks=all ones of a
// safe run): acknowledged sends per second inside each fault window and
// outside all of them, and how long after each heal every partition took
// writes again.

func (c *checker) availability(res *Result) {
	var acks []*send // acknowledged sends of safety topics, by ack time
	parts := map[tp]bool{}
	for _, v := range c.order {
		s := c.sends[v]
		if t := c.topics[s.at.topic]; t == nil || !t.Safety {
			continue
		}
		parts[s.at] = true
		if s.status == sendOK {
			acks = append(acks, s)
		}
	}
	slices.SortFunc(acks, func(a, b *send) int { return cmpFloat(a.ackT, b.ackT) })
	end := c.lastT
	lastSend := 0.0 // the producers' last send: recoveries are seen up to it
	for _, s := range c.sends {
		if t := c.topics[s.at.topic]; t != nil && t.Safety {
			lastSend = max(lastSend, s.invoke)
		}
	}

	// Per window.
	for i := range c.faults {
		f := &c.faults[i]
		stop := f.End
		if stop < 0 {
			stop = end
		}
		f.Acked = countBetween(acks, f.Start, stop)
		if d := stop - f.Start; d > 0 {
			f.Rate = float64(f.Acked) / d
		}
		f.Recovery = -1
		if f.End >= 0 {
			f.Recovery = c.recovery(f.End, parts)
		}
		if f.Recovery < 0 && (f.End < 0 || lastSend-f.End < recoveryHorizon) {
			f.Recovery = RecoveryUnseen
		}
	}
	res.Faults = c.faults

	// Outside every window.
	inFault, faultSecs := 0, 0.0
	for _, iv := range mergedWindows(c.faults, end) {
		inFault += countBetween(acks, iv[0], iv[1])
		faultSecs += iv[1] - iv[0]
	}
	if quiet := end - faultSecs; quiet > 0 {
		res.Baseline = float64(len(acks)-inFault) / quiet
	}

	// Per kind of fault.
	byKind := map[string]*Availability{}
	var kinds []string
	for _, f := range c.faults {
		a := byKind[f.Fault]
		if a == nil {
			a = &Availability{Fault: f.Fault}
			byKind[f.Fault] = a
			kinds = append(kinds, f.Fault)
		}
		stop := f.End
		if stop < 0 {
			stop = end
		}
		a.Count++
		a.Seconds += stop - f.Start
		a.Rate += float64(f.Acked) // summed, divided below
		switch {
		case f.Recovery == RecoveryUnseen:
		case f.Recovery < 0 || a.MaxRecover < 0:
			a.MaxRecover = -1
		default:
			a.MaxRecover = max(a.MaxRecover, f.Recovery)
		}
		if f.Recovery >= 0 {
			a.MeanRecover += f.Recovery
		}
	}
	for _, k := range kinds {
		a := byKind[k]
		recovered := 0
		for _, f := range c.faults {
			if f.Fault == k && f.Recovery >= 0 {
				recovered++
			}
		}
		if a.Seconds > 0 {
			a.Rate /= a.Seconds
		}
		if recovered > 0 {
			a.MeanRecover /= float64(recovered)
		} else {
			// None recovered: never, or every window healed too late
			// to tell.
			if a.MaxRecover == 0 {
				a.MaxRecover = RecoveryUnseen
			}
			a.MeanRecover = a.MaxRecover
		}
		res.Avail = append(res.Avail, *a)
	}
	c.timeline(res, end)
}

// recoveryHorizon is how long the producers must go on sending after a
// heal for a partition that acknowledged nothing since to count as not
// recovered: the producers' delivery timeout, so that every send invoked
// just after the heal was either acknowledged or failed within the run.
const recoveryHorizon = 30.0

// recovery is the time from heal until every partition that was sent to
// after it had acknowledged such a send; -1 if one never did.
func (c *checker) recovery(heal float64, parts map[tp]bool) float64 {
	first := map[tp]float64{}
	for _, v := range c.order {
		s := c.sends[v]
		if !parts[s.at] || s.invoke < heal {
			continue
		}
		if _, ok := first[s.at]; !ok {
			first[s.at] = math.Inf(1)
		}
		if s.status == sendOK && s.ackT < first[s.at] {
			first[s.at] = s.ackT
		}
	}
	if len(first) == 0 {
		return -1
	}
	worst := 0.0
	for _, t := range first {
		if math.IsInf(t, 1) {
			return -1
		}
		worst = max(worst, t-heal)
	}
	return worst
}

// timeline buckets the run: acknowledgements, failures and ack latency.
func (c *checker) timeline(res *Result, end float64) {
	width := 1.0
	for end/width > 600 {
		width *= 2
	}
	res.Bucket = width
	n := int(end/width) + 1
	buckets := make([]Bucket, n)
	lat := make([][]float64, n)
	for i := range buckets {
		buckets[i].T = float64(i) * width
	}
	for _, v := range c.order {
		s := c.sends[v]
		if t := c.topics[s.at.topic]; t == nil || !t.Safety || s.status == sendPending {
			continue
		}
		i := min(int(s.doneT/width), n-1)
		if s.status == sendOK {
			buckets[i].Acked++
			lat[i] = append(lat[i], (s.ackT-s.invoke)*1000)
		} else {
			buckets[i].Failed++
		}
	}
	for i := range buckets {
		if len(lat[i]) == 0 {
			continue
		}
		slices.Sort(lat[i])
		buckets[i].P50 = quantile(lat[i], 0.5)
		buckets[i].P99 = quantile(lat[i], 0.99)
		buckets[i].Max = lat[i][len(lat[i])-1]
	}
	res.Timeline = buckets
}

func quantile(sorted []float64, q float64) float64 {
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

func countBetween(acks []*send, from, to float64) int {
	lo, _ := slices.BinarySearchFunc(acks, from, func(s *send, t float64) int { return cmpFloat(s.ackT, t) })
	hi, _ := slices.BinarySearchFunc(acks, to, func(s *send, t float64) int { return cmpFloat(s.ackT, t) })
	return hi - lo
}

// mergedWindows is the union of the fault windows, as disjoint intervals.
func mergedWindows(fs []FaultWindow, end float64) [][2]float64 {
	var iv [][2]float64
	for _, f := range fs {
		stop := f.End
		if stop < 0 {
			stop = end
		}
		iv = append(iv, [2]float64{f.Start, stop})
	}
	slices.SortFunc(iv, func(a, b [2]float64) int { return cmpFloat(a[0], b[0]) })
	var out [][2]float64
	for _, x := range iv {
		if len(out) > 0 && x[0] <= out[len(out)-1][1] {
			out[len(out)-1][1] = max(out[len(out)-1][1], x[1])
			continue
		}
		out = append(out, x)
	}
	return out
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
