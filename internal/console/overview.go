package console

import (
	"cmp"
	"net/http"
	"slices"

	"github.com/twmb/franz-go/pkg/kadm"
)

type brokerRow struct {
	ID         int32
	Endpoint   string
	Rack       string
	Leaders    int
	Replicas   int
	Controller bool
	DiskUsed   int64 // -1: not reported
}

type overviewData struct {
	ClusterID       string
	Controller      int32
	Brokers         []brokerRow
	Topics          int
	Partitions      int
	UnderReplicated []partitionRow
	Offline         []partitionRow
}

// overview: the brokers, the controller, totals and the partitions that
// need attention, from one Metadata request and one DescribeLogDirs.
func (s *Server) overview(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.reqCtx(r)
	defer cancel()
	md, err := s.adm.Metadata(ctx)
	if err != nil {
		s.render(w, r, http.StatusBadGateway, "error", page{Title: "Overview", Nav: "overview", Error: "Metadata: " + err.Error()})
		return
	}
	d := overviewData{ClusterID: md.Cluster, Controller: md.Controller}
	rows := map[int32]*brokerRow{}
	for _, b := range md.Brokers {
		row := brokerRow{ID: b.NodeID, Endpoint: endpoint(b), Controller: b.NodeID == md.Controller, DiskUsed: -1}
		if b.Rack != nil {
			row.Rack = *b.Rack
		}
		d.Brokers = append(d.Brokers, row)
	}
	for i := range d.Brokers {
		rows[d.Brokers[i].ID] = &d.Brokers[i]
	}
	for _, t := range md.Topics.Sorted() {
		if t.Err != nil {
			continue
		}
		d.Topics++
		for _, p := range t.Partitions.Sorted() {
			d.Partitions++
			if b := rows[p.Leader]; b != nil {
				b.Leaders++
			}
			for _, id := range p.Replicas {
				if b := rows[id]; b != nil {
					b.Replicas++
				}
			}
			row := newPartitionRow(p)
			switch {
			case p.Leader < 0:
				d.Offline = append(d.Offline, row)
			case len(p.ISR) < len(p.Replicas):
				d.UnderReplicated = append(d.UnderReplicated, row)
			}
		}
	}
	if dirs, err := s.adm.DescribeAllLogDirs(ctx, nil); err == nil {
		dirs.Each(func(ld kadm.DescribedLogDir) {
			b := rows[ld.Broker]
			if b == nil || ld.Err != nil {
				return
			}
			if b.DiskUsed < 0 {
				b.DiskUsed = 0
			}
			for _, ps := range ld.Topics {
				for _, p := range ps {
					b.DiskUsed += p.Size
				}
			}
		})
	}
	slices.SortFunc(d.Brokers, func(a, b brokerRow) int { return cmp.Compare(a.ID, b.ID) })
	s.render(w, r, http.StatusOK, "overview", page{Title: "Overview", Nav: "overview", Data: d})
}

func endpoint(b kadm.BrokerDetail) string {
	return kadmHostPort(b.Host, b.Port)
}
