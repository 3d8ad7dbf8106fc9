package console

import (
	"cmp"
	"net/http"
	"slices"
	"strings"
)

type groupRow struct {
	Name     string
	State    string
	Type     string
	Protocol string
	Members  int
	Lag      int64 // -1 unknown
	Err      string
}

func (s *Server) groups(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.reqCtx(r)
	defer cancel()
	listed, err := s.adm.ListGroups(ctx)
	if err != nil {
		s.render(w, r, http.StatusBadGateway, "error", page{Title: "Consumer groups", Nav: "groups", Error: "ListGroups: " + err.Error()})
		return
	}
	var rows []groupRow
	if names := listed.Groups(); len(names) > 0 {
		lags, err := s.adm.Lag(ctx, names...)
		if err != nil {
			s.render(w, r, http.StatusBadGateway, "error", page{Title: "Consumer groups", Nav: "groups", Error: "group lag: " + err.Error()})
			return
		}
		for _, l := range listed.Sorted() {
			row := groupRow{Name: l.Group, State: l.State, Type: l.GroupType, Protocol: l.ProtocolType, Lag: -1}
			if gl, ok := lags[l.Group]; ok {
				row.State, row.Members = gl.State, len(gl.Members)
				if err := cmp.Or(gl.DescribeErr, gl.FetchErr); err != nil {
					row.Err = err.Error()
				} else {
					row.Lag = gl.Lag.Total()
				}
			}
			rows = append(rows, row)
		}
	}
	s.render(w, r, http.StatusOK, "groups", page{Title: "Consumer groups", Nav: "groups", Data: rows})
}

type lagRow struct {
	Topic     string
	Partition int32
	Committed int64 // -1: no commit
	Start     int64
	End       int64
	Lag       int64 // -1 unknown
	Member    string
	Client    string
	Err       string
}

type memberRow struct {
	ID       string
	Instance string
	Client   string
	Host     string
	Assigned []string // "topic: 0, 1, 2"
}

type groupData struct {
	Name     string
	State    string
	Protocol string
	Assignor string
	Members  []memberRow
	Lag      []lagRow
	Total    int64
	Topics   []string
	Reset    *resetPlan // the confirmation step of a reset, if asked
}

// loadGroup gathers a group's state, members, commits and lag.
func (s *Server) loadGroup(r *http.Request, name string) (groupData, error) {
	ctx, cancel := s.reqCtx(r)
	defer cancel()
	d := groupData{Name: name}
	lags, err := s.adm.Lag(ctx, name)
	if err != nil {
		return d, err
	}
	gl, ok := lags[name]
	if !ok {
		return d, nil
	}
	if gl.DescribeErr != nil {
		return d, gl.DescribeErr
	}
	d.State, d.Protocol, d.Assignor, d.Total = gl.State, gl.ProtocolType, gl.Protocol, gl.Lag.Total()
	for _, m := range gl.Members {
		row := memberRow{ID: m.MemberID, Client: m.ClientID, Host: m.ClientHost}
		if m.InstanceID != nil {
			row.Instance = *m.InstanceID
		}
		if c, ok := m.Assigned.AsConsumer(); ok {
			for _, t := range c.Topics {
				row.Assigned = append(row.Assigned, t.Topic+": "+joinInts(t.Partitions))
			}
		}
		d.Members = append(d.Members, row)
	}
	topics := map[string]bool{}
	for _, l := range gl.Lag.Sorted() {
		row := lagRow{Topic: l.Topic, Partition: l.Partition, Committed: l.Commit.At, Start: l.Start.Offset, End: l.End.Offset, Lag: l.Lag}
		if l.Member != nil {
			row.Member, row.Client = l.Member.MemberID, l.Member.ClientID
		}
		if l.Err != nil {
			row.Err = l.Err.Error()
		}
		d.Lag = append(d.Lag, row)
		topics[l.Topic] = true
	}
	for t := range topics {
		d.Topics = append(d.Topics, t)
	}
	slices.Sort(d.Topics)
	slices.SortFunc(d.Lag, func(a, b lagRow) int {
		return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return d, nil
}

func (s *Server) group(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("group")
	d, err := s.loadGroup(r, name)
	if err != nil {
		s.render(w, r, http.StatusBadGateway, "error", page{Title: "Group " + name, Nav: "groups", Error: "group " + name + ": " + err.Error()})
		return
	}
	s.render(w, r, http.StatusOK, "group", page{Title: "Group " + name, Nav: "groups", Data: d})
}
