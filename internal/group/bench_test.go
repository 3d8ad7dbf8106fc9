package group

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkCommitOffsets is one OffsetCommit of 4 partitions by a group
// member (validation, record encoding, in-memory log append).
func BenchmarkCommitOffsets(b *testing.B) {
	e := newEnv(b, time.Second)
	ids, gen := e.stableGroup("g", "c1")
	req := CommitRequest{Group: "g", MemberID: ids[0], Generation: gen}
	for p := range int32(4) {
		req.Offsets = append(req.Offsets, CommitOffset{Topic: "t1", Partition: p, LeaderEpoch: -1})
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		for j := range req.Offsets {
			req.Offsets[j].Offset = int64(i)
		}
		if errs := e.c.CommitOffsets(context.Background(), req); errs[0] != nil {
			b.Fatal(errs[0])
		}
	}
}

// BenchmarkReplay is rebuilding a partition of 100 groups with 100
// offsets each, each committed 10 times (100k records).
func BenchmarkReplay(b *testing.B) {
	e := newEnv(b, 0)
	for g := range 100 {
		for round := range 10 {
			req := CommitRequest{Group: fmt.Sprintf("g%d", g), Generation: -1}
			for p := range 100 {
				req.Offsets = append(req.Offsets, CommitOffset{Topic: "t1", Partition: int32(p % 4), Offset: int64(round)})
			}
			e.c.CommitOffsets(context.Background(), req)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		groups, n, err := e.c.replay(b.Context(), 0)
		if err != nil || len(groups) != 100 || n == 0 {
			b.Fatal(err, len(groups), n)
		}
	}
}
