package console

import (
	"net"
	"net/http"
	"strconv"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/weir-project/weir/internal/elr"
)

func kadmHostPort(host string, port int32) string {
	return net.JoinHostPort(host, strconv.Itoa(int(port)))
}

type partitionRow struct {
	Topic     string
	Partition int32
	Leader    int32
	Epoch     int32
	Replicas  []int32
	ISR       []int32
	Offline   []int32
	ELR       []int32 // eligible leader replicas (KIP-966)
	Start     int64   // log start offset, -1 unknown
	End       int64   // log end offset (high watermark), -1 unknown
	Size      int64   // bytes on the leader, -1 unknown
	Err       string
}

func newPartitionRow(p kadm.PartitionDetail) partitionRow {
	row := partitionRow{Topic: p.Topic, Partition: p.Partition, Leader: p.Leader, Epoch: p.LeaderEpoch,
		Replicas: p.Replicas, ISR: p.ISR, Offline: p.OfflineReplicas, Start: -1, End: -1, Size: -1}
	if p.Err != nil {
		row.Err = p.Err.Error()
	}
	return row
}

type topicRow struct {
	Name       string
	Internal   bool
	Partitions int
	RF         int
	Size       int64 // all replicas' bytes, -1 unknown
	Retention  string
	Err        string
}

// topicSizes sums DescribeLogDirs sizes per topic over every replica; ok
// is false when the brokers did not answer.
func (s *Server) topicSizes(r *http.Request) (map[string]int64, bool) {
	ctx, cancel := s.reqCtx(r)
	defer cancel()
	dirs, err := s.adm.DescribeAllLogDirs(ctx, nil)
	if err != nil {
		return nil, false
	}
	sizes := map[string]int64{}
	dirs.Each(func(ld kadm.DescribedLogDir) {
		for t, ps := range ld.Topics {
			for _, dp := range ps {
				sizes[t] += dp.Size
			}
		}
	})
	return sizes, true
}

func (s *Server) topics(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.reqCtx(r)
	defer cancel()
	md, err := s.adm.Metadata(ctx)
	if err != nil {
		s.render(w, r, http.StatusBadGateway, "error", page{Title: "Topics", Nav: "topics", Error: "Metadata: " + err.Error()})
		return
	}
	var rows []topicRow
	var names []string
	for _, t := range md.Topics.Sorted() {
		row := topicRow{Name: t.Topic, Internal: t.IsInternal, Partitions: len(t.Partitions), Size: -1}
		if t.Err != nil {
			row.Err = t.Err.Error()
		}
		for _, p := range t.Partitions {
			row.RF = max(row.RF, len(p.Replicas))
		}
		rows = append(rows, row)
		names = append(names, t.Topic)
	}
	sizes, sized := s.topicSizes(r)
	retention := map[string]string{}
	if len(names) > 0 {
		if rcs, err := s.adm.DescribeTopicConfigs(ctx, names...); err == nil {
			for _, rc := range rcs {
				for _, c := range rc.Configs {
					if c.Key == "retention.ms" && c.Value != nil {
						retention[rc.Name] = retentionText(*c.Value)
					}
				}
			}
		}
	}
	for i := range rows {
		if sized {
			rows[i].Size = sizes[rows[i].Name]
		}
		rows[i].Retention = retention[rows[i].Name]
	}
	s.render(w, r, http.StatusOK, "topics", page{Title: "Topics", Nav: "topics", Data: rows})
}

// retentionText shows retention.ms as people say it.
func retentionText(ms string) string {
	n, err := strconv.ParseInt(ms, 10, 64)
	switch {
	case err != nil:
		return ms
	case n < 0:
		return "forever"
	case n%86400000 == 0:
		return strconv.FormatInt(n/86400000, 10) + " d"
	case n%3600000 == 0:
		return strconv.FormatInt(n/3600000, 10) + " h"
	case n%60000 == 0:
		return strconv.FormatInt(n/60000, 10) + " min"
	}
	return ms + " ms"
}

type configRow struct {
	Key       string
	Value     string
	Null      bool
	Sensitive bool
	Source    string
	Default   bool
}

type topicData struct {
	Name       string
	ID         string
	Internal   bool
	Partitions []partitionRow
	Configs    []configRow
	Records    int64 // sum of end - start
	Size       int64
}

func (s *Server) topic(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("topic")
	ctx, cancel := s.reqCtx(r)
	defer cancel()
	md, err := s.adm.Metadata(ctx, name)
	if err != nil {
		s.render(w, r, http.StatusBadGateway, "error", page{Title: name, Nav: "topics", Error: "Metadata: " + err.Error()})
		return
	}
	td, ok := md.Topics[name]
	if !ok || td.Err != nil {
		msg := "unknown topic"
		if ok {
			msg = td.Err.Error()
		}
		s.render(w, r, http.StatusNotFound, "error", page{Title: name, Nav: "topics", Error: "Topic " + name + ": " + msg})
		return
	}
	d := topicData{Name: name, ID: td.ID.String(), Internal: td.IsInternal, Size: -1}
	for _, p := range td.Partitions.Sorted() {
		d.Partitions = append(d.Partitions, newPartitionRow(p))
	}
	if elrs, err := elr.Describe(ctx, s.cfg.Client, []string{name}); err == nil {
		for i := range d.Partitions {
			d.Partitions[i].ELR = elrs.Of(name, d.Partitions[i].Partition)
		}
	}
	starts, _ := s.adm.ListStartOffsets(ctx, name)
	ends, _ := s.adm.ListEndOffsets(ctx, name)
	var leaderOf = map[int32]int32{}
	for i := range d.Partitions {
		p := &d.Partitions[i]
		leaderOf[p.Partition] = p.Leader
		if o, ok := starts.Lookup(name, p.Partition); ok && o.Err == nil {
			p.Start = o.Offset
		}
		if o, ok := ends.Lookup(name, p.Partition); ok && o.Err == nil {
			p.End = o.Offset
		}
		if p.Start >= 0 && p.End >= p.Start {
			d.Records += p.End - p.Start
		}
	}
	var set kadm.TopicsSet
	set.Add(name, td.Partitions.Numbers()...)
	if dirs, err := s.adm.DescribeAllLogDirs(ctx, set); err == nil {
		d.Size = 0
		dirs.Each(func(ld kadm.DescribedLogDir) {
			for p, dp := range ld.Topics[name] {
				d.Size += dp.Size
				for i := range d.Partitions {
					if d.Partitions[i].Partition == p && leaderOf[p] == ld.Broker {
						d.Partitions[i].Size = dp.Size
					}
				}
			}
		})
	}
	rcs, err := s.adm.DescribeTopicConfigs(ctx, name)
	if err == nil && len(rcs) == 1 && rcs[0].Err == nil {
		for _, c := range rcs[0].Configs {
			row := configRow{Key: c.Key, Sensitive: c.Sensitive, Source: c.Source.String(), Null: c.Value == nil,
				Default: c.Source.String() == "DEFAULT_CONFIG" || c.Source.String() == "STATIC_BROKER_CONFIG" || c.Source.String() == "DYNAMIC_DEFAULT_BROKER_CONFIG"}
			if c.Value != nil {
				row.Value = *c.Value
			}
			d.Configs = append(d.Configs, row)
		}
	}
	s.render(w, r, http.StatusOK, "topic", page{Title: "Topic " + name, Nav: "topics", Data: d})
}
