package console

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type brokerRow struct {
	ID         int32
	Endpoint   string
	Rack       string
	Leaders    int
	Replicas   int
	Controller bool
	Fenced     bool
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
	// FencedKnown: DescribeCluster answered, so Fenced is known for
	// every broker; otherwise FencedErr says why not.
	FencedKnown bool
	FencedErr   string
	Fenced      int
	Traffic     *sparkline // nil: no traffic counters (Config.Traffic)
}

// overview: the brokers, the controller, totals and the partitions that
// need attention, from one Metadata request, one DescribeCluster (for
// the fenced brokers, which Metadata leaves out) and one DescribeLogDirs;
// and the throughput graph.
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
	s.addFenced(ctx, &d)
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
	if s.cfg.Traffic != nil {
		sp := newSparkline("Record bytes in and out per second, broker "+strconv.Itoa(int(s.cfg.NodeID)), rates(s.traffic.samples()), trafficSamples-1)
		d.Traffic = &sp
	}
	s.render(w, r, http.StatusOK, "overview", page{Title: "Overview", Nav: "overview", Data: d})
}

func endpoint(b kadm.BrokerDetail) string {
	return kadmHostPort(b.Host, b.Port)
}

// addFenced marks the fenced brokers, adding those Metadata left out,
// from DescribeCluster v2 with IncludeFencedBrokers (KIP-1073). If that
// fails, or the broker answers an older version, the page says fenced
// state is unknown and shows the Metadata brokers alone.
func (s *Server) addFenced(ctx context.Context, d *overviewData) {
	req := kmsg.NewPtrDescribeClusterRequest()
	req.IncludeFencedBrokers = true
	kr, err := req.RequestWith(ctx, s.cfg.Client)
	switch {
	case err != nil:
	case kr.ErrorCode != 0:
		err = kerr.ErrorForCode(kr.ErrorCode)
		if kr.ErrorMessage != nil {
			err = fmt.Errorf("%w: %s", err, *kr.ErrorMessage)
		}
	case kr.GetVersion() < 2:
		err = errors.New("the broker lists no fenced brokers before DescribeCluster v2")
	}
	if err != nil {
		d.FencedErr = "DescribeCluster: " + err.Error()
		return
	}
	d.FencedKnown = true
	for _, b := range kr.Brokers {
		i := slices.IndexFunc(d.Brokers, func(r brokerRow) bool { return r.ID == b.NodeID })
		if i < 0 {
			row := brokerRow{ID: b.NodeID, Endpoint: kadmHostPort(b.Host, b.Port), DiskUsed: -1}
			if b.Rack != nil {
				row.Rack = *b.Rack
			}
			d.Brokers = append(d.Brokers, row)
			i = len(d.Brokers) - 1
		}
		d.Brokers[i].Fenced = b.IsFenced
		if b.IsFenced {
			d.Fenced++
		}
	}
}
