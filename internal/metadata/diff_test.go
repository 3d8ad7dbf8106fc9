package metadata

import (
	"testing"
)

func names(ts []*Topic) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name)
	}
	return out
}

func TestDiffTopics(t *testing.T) {
	c := newTestController(t, 1)
	ctx := testCtx(t)
	for _, name := range []string{"keep", "grow", "drop", "again"} {
		if _, err := c.CreateTopic(ctx, CreateTopic{Name: name, NumPartitions: 1, ReplicationFactor: 1}); err != nil {
			t.Fatal(err)
		}
	}
	prev := c.Image()
	if d := DiffTopics(prev, prev); !d.Empty() {
		t.Fatalf("image differs from itself: %+v", d)
	}
	if err := c.CreatePartitions(ctx, "grow", 2, nil, false); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteTopic(ctx, "drop"); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteTopic(ctx, "again"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTopic(ctx, CreateTopic{Name: "again", NumPartitions: 1, ReplicationFactor: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTopic(ctx, CreateTopic{Name: "fresh", NumPartitions: 1, ReplicationFactor: 1}); err != nil {
		t.Fatal(err)
	}
	d := DiffTopics(prev, c.Image())
	check := func(what string, got []*Topic, want ...string) {
		t.Helper()
		g := names(got)
		if len(g) != len(want) {
			t.Fatalf("%s = %v, want %v", what, g, want)
		}
		for i := range want {
			if g[i] != want[i] {
				t.Fatalf("%s = %v, want %v", what, g, want)
			}
		}
	}
	check("Added", d.Added, "again", "fresh")
	check("Removed", d.Removed, "again", "drop")
	check("Changed", d.Changed, "grow")
	if d.Removed[0].ID == d.Added[0].ID {
		t.Fatal("recreated topic kept its id")
	}
}
