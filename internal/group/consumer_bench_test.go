package group

import (
	"fmt"
	"testing"
)

// BenchmarkUniformAssign: a new member joining 99 others on 1000
// partitions (10 topics), the assignor's worst common case.
func BenchmarkUniformAssign(b *testing.B) {
	specs := map[string]int32{}
	var names []string
	for i := range 10 {
		n := fmt.Sprintf("t%d", i)
		specs[n], names = 100, append(names, n)
	}
	topics := topicSet(specs)
	var members []assignMember
	for i := range 99 {
		members = append(members, assignMember{id: fmt.Sprintf("m%03d", i), topics: subscribe(names...)})
	}
	members = withCurrent(members, assign(AssignorUniform, members, topics))
	members = append(members, assignMember{id: "new", topics: subscribe(names...)})
	b.ResetTimer()
	for b.Loop() {
		assign(AssignorUniform, members, topics)
	}
}

// BenchmarkConsumerHeartbeat: steady-state full heartbeats of a stable
// 10-member group (no change, nothing written).
func BenchmarkConsumerHeartbeat(b *testing.B) {
	e := newCEnv(b)
	var ms []*cmemberSim
	for i := range 10 {
		m, _ := e.join("g", fmt.Sprintf("m%d", i), "t1", "t2")
		ms = append(ms, m)
	}
	settle(b, ms...)
	b.ResetTimer()
	i := 0
	for b.Loop() {
		ms[i%len(ms)].beat()
		i++
	}
}
