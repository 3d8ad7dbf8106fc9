package cli

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The inputs of `weir group reset-offsets`: partitions, times and plan
// files, in the formats kafka-consumer-groups takes.

// parseDatetime reads --to-datetime: Kafka's local-time format, RFC 3339
// or Unix milliseconds.
func parseDatetime(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil && ms >= 0 {
		return ms, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.000", "2006-01-02T15:04:05"} {
		var t time.Time
		var err error
		if layout == time.RFC3339Nano {
			t, err = time.Parse(layout, s)
		} else {
			t, err = time.ParseInLocation(layout, s, time.Local)
		}
		if err == nil {
			return t.UnixMilli(), nil
		}
	}
	return 0, fmt.Errorf("--to-datetime %q: want YYYY-MM-DDTHH:mm:SS[.sss], RFC 3339 or Unix milliseconds", s)
}

// parseTopicSpec reads "topic" or "topic:0,1,2".
func parseTopicSpec(s string) (string, []int32, error) {
	topic, parts, found := strings.Cut(s, ":")
	if topic == "" {
		return "", nil, fmt.Errorf("--topic %q: empty topic", s)
	}
	if !found {
		return topic, nil, nil
	}
	var out []int32
	for _, p := range strings.Split(parts, ",") {
		n, err := strconv.ParseInt(strings.TrimSpace(p), 10, 32)
		if err != nil || n < 0 {
			return "", nil, fmt.Errorf("--topic %q: bad partition %q", s, p)
		}
		out = append(out, int32(n))
	}
	return topic, out, nil
}

// readResetPlan reads a --from-file CSV: topic,partition,offset lines for
// a single group, or group,topic,partition,offset lines.
func readResetPlan(path string, groups []string) (map[string][]resetRow, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--from-file: %w", err)
	}
	plan := map[string][]resetRow{}
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		f := strings.Split(line, ",")
		bad := fmt.Errorf("--from-file %s line %d: %q: want topic,partition,offset or group,topic,partition,offset", path, i+1, line)
		var r resetRow
		switch len(f) {
		case 3:
			if len(groups) != 1 {
				return nil, fmt.Errorf("--from-file %s line %d: a plan without a group column needs exactly one group", path, i+1)
			}
			r.Group = groups[0]
		case 4:
			r.Group, f = f[0], f[1:]
		default:
			return nil, bad
		}
		p, err1 := strconv.ParseInt(strings.TrimSpace(f[1]), 10, 32)
		at, err2 := strconv.ParseInt(strings.TrimSpace(f[2]), 10, 64)
		r.Topic = strings.TrimSpace(f[0])
		if err1 != nil || err2 != nil || p < 0 || r.Topic == "" {
			return nil, bad
		}
		r.Partition, r.NewOffset = int32(p), at
		plan[r.Group] = append(plan[r.Group], r)
	}
	for g, rows := range plan {
		if !slices.Contains(groups, g) {
			delete(plan, g)
			continue
		}
		slices.SortFunc(rows, func(a, b resetRow) int {
			if c := strings.Compare(a.Topic, b.Topic); c != 0 {
				return c
			}
			return int(a.Partition - b.Partition)
		})
	}
	return plan, nil
}
