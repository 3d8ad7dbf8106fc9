package console

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// The actions: each is a POST the CSRF check let through (Handler), and
// each is one or two Kafka admin requests, as a Kafka tool would send.

// fail shows an action's error on a page of its own, with the way back.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, status int, nav, what string, err error) {
	s.render(w, r, status, "error", page{Title: what, Nav: nav, Error: what + ": " + err.Error()})
}

func (s *Server) createTopic(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimSpace(r.PostFormValue("name"))
	parts, err1 := strconv.ParseInt(cmp.Or(r.PostFormValue("partitions"), "-1"), 10, 32)
	rf, err2 := strconv.ParseInt(cmp.Or(r.PostFormValue("replication"), "-1"), 10, 16)
	configs, err3 := parseConfigLines(r.PostFormValue("configs"))
	if err := errors.Join(err1, err2, err3); err != nil || name == "" {
		s.fail(w, r, http.StatusBadRequest, "topics", "Create topic", cmp.Or(err, errors.New("a topic name is required")))
		return
	}
	ctx, cancel := s.reqCtx(r)
	defer cancel()
	// -1 partitions or replication: the broker's defaults (KIP-464).
	if _, err := s.adm.CreateTopic(ctx, int32(parts), int16(rf), configs, name); err != nil {
		s.fail(w, r, http.StatusBadRequest, "topics", "Create topic "+name, err)
		return
	}
	redirect(w, r, "/topics/"+pathEscape(name), "Topic "+name+" created.")
}

// parseConfigLines reads key=value lines (blank lines ignored).
func parseConfigLines(text string) (map[string]*string, error) {
	out := map[string]*string{}
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("config line %q: want key=value", line)
		}
		v = strings.TrimSpace(v)
		out[strings.TrimSpace(k)] = &v
	}
	return out, nil
}

func (s *Server) deleteTopic(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("topic")
	if r.PostFormValue("confirm") != "yes" {
		s.render(w, r, http.StatusOK, "confirm", page{Title: "Delete topic " + name, Nav: "topics", Data: confirmData{
			Action:   "/topics/" + pathEscape(name) + "/delete",
			Question: "Delete topic " + name + " and all its records? This cannot be undone.",
			Button:   "Delete " + name,
			Back:     "/topics/" + pathEscape(name),
		}})
		return
	}
	ctx, cancel := s.reqCtx(r)
	defer cancel()
	if _, err := s.adm.DeleteTopic(ctx, name); err != nil {
		s.fail(w, r, http.StatusBadRequest, "topics", "Delete topic "+name, err)
		return
	}
	s.cfg.Client.PurgeTopicsFromClient(name) // no cached metadata of it on the next page
	redirect(w, r, "/topics", "Topic "+name+" deleted.")
}

type confirmData struct {
	Action   string
	Question string
	Button   string
	Back     string
	Fields   map[string]string // hidden fields carried to the confirmed POST
}

// alterConfigs sets or removes one topic config (IncrementalAlterConfigs).
func (s *Server) alterConfigs(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("topic")
	key := strings.TrimSpace(r.PostFormValue("key"))
	value := strings.TrimSpace(r.PostFormValue("value"))
	op := kadm.SetConfig
	verb := "set to " + value
	if r.PostFormValue("op") == "delete" {
		op, verb = kadm.DeleteConfig, "reset to its default"
	}
	if key == "" {
		s.fail(w, r, http.StatusBadRequest, "topics", "Edit config of "+name, errors.New("a config key is required"))
		return
	}
	ctx, cancel := s.reqCtx(r)
	defer cancel()
	resps, err := s.adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: op, Name: key, Value: &value}}, name)
	for _, r := range resps {
		if err == nil && r.Err != nil {
			err = kafkaErr(r.Err, r.ErrMessage)
		}
	}
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, "topics", "Edit config "+key+" of "+name, err)
		return
	}
	redirect(w, r, "/topics/"+pathEscape(name), key+" "+verb+".")
}

// addPartitions grows a topic to the partition count asked for
// (CreatePartitions, as kafka-topics --alter --partitions does). The
// first POST sends it with ValidateOnly, so that a count the controller
// refuses (INVALID_PARTITIONS for fewer partitions or the same number)
// shows at once, and asks for a confirmation: partitions cannot be taken
// back, and keyed records may map to other partitions from then on.
func (s *Server) addPartitions(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("topic")
	what := "Increase partitions of " + name
	count, err := strconv.ParseInt(strings.TrimSpace(r.PostFormValue("count")), 10, 32)
	if err != nil || count < 1 {
		s.fail(w, r, http.StatusBadRequest, "topics", what, fmt.Errorf("partition count %q: want a whole number, 1 or more", r.PostFormValue("count")))
		return
	}
	confirmed := r.PostFormValue("confirm") == "yes"
	ctx, cancel := s.reqCtx(r)
	defer cancel()
	var resps kadm.CreatePartitionsResponses
	if confirmed {
		resps, err = s.adm.UpdatePartitions(ctx, int(count), name)
	} else {
		resps, err = s.adm.ValidateUpdatePartitions(ctx, int(count), name)
	}
	if err == nil {
		if resp, ok := resps[name]; !ok {
			err = errors.New("no answer for the topic")
		} else if resp.Err != nil {
			err = kafkaErr(resp.Err, resp.ErrMessage)
		}
	}
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, "topics", what, err)
		return
	}
	if !confirmed {
		from := "its current count"
		if md, err := s.adm.Metadata(ctx, name); err == nil {
			if td, ok := md.Topics[name]; ok && td.Err == nil {
				from = strconv.Itoa(len(td.Partitions))
			}
		}
		s.render(w, r, http.StatusOK, "confirm", page{Title: what, Nav: "topics", Data: confirmData{
			Action: "/topics/" + pathEscape(name) + "/partitions",
			Question: fmt.Sprintf("Increase topic %s from %s to %d partitions? Partitions cannot be removed again, "+
				"and records with a key may go to another partition than the same key's earlier records.", name, from, count),
			Button: fmt.Sprintf("Increase to %d partitions", count),
			Back:   "/topics/" + pathEscape(name),
			Fields: map[string]string{"count": strconv.FormatInt(count, 10)},
		}})
		return
	}
	redirect(w, r, "/topics/"+pathEscape(name), fmt.Sprintf("Topic %s now has %d partitions.", name, count))
}

// kafkaErr is a Kafka error code's error with the broker's message. The
// message, when there is one, replaces the code's generic description
// (franz-go describes INVALID_PARTITIONS as "Number of partitions is
// below 1.", which a refused decrease is not).
func kafkaErr(err error, msg string) error {
	if msg == "" {
		return err
	}
	return &brokerError{err: err, msg: msg}
}

type brokerError struct {
	err error
	msg string
}

func (e *brokerError) Error() string {
	var ke *kerr.Error
	if errors.As(e.err, &ke) {
		return ke.Message + ": " + e.msg
	}
	return e.err.Error() + ": " + e.msg
}

func (e *brokerError) Unwrap() error { return e.err }

// resetPlan is a reset's confirmation: each partition's commit now and
// the offset it will be set to.
type resetPlan struct {
	To    string
	Items []resetItem
	Plan  string // the items as topic:partition:offset,..., carried by the confirm form
}

type resetItem struct {
	Topic     string
	Partition int32
	From      int64 // -1: no commit
	To        int64
}

// resetOffsets works as kafka-consumer-groups --reset-offsets: the first
// POST shows the plan (--dry-run), the confirmed one commits exactly the
// offsets shown (--execute). The broker refuses while the group has
// members, as Kafka does.
func (s *Server) resetOffsets(w http.ResponseWriter, r *http.Request) {
	group := r.PathValue("group")
	ctx, cancel := s.reqCtx(r)
	defer cancel()
	if r.PostFormValue("confirm") == "yes" {
		offsets, err := parsePlan(r.PostFormValue("plan"))
		if err != nil {
			s.fail(w, r, http.StatusBadRequest, "groups", "Reset offsets of "+group, err)
			return
		}
		if err := s.adm.CommitAllOffsets(ctx, group, offsets); err != nil {
			if errors.Is(err, kerr.UnknownMemberID) || errors.Is(err, kerr.IllegalGeneration) || errors.Is(err, kerr.RebalanceInProgress) {
				err = fmt.Errorf("%w (the group has active members: stop its consumers first)", err)
			}
			s.fail(w, r, http.StatusConflict, "groups", "Reset offsets of "+group, err)
			return
		}
		redirect(w, r, "/groups/"+pathEscape(group), "Offsets of "+group+" reset.")
		return
	}
	d, err := s.loadGroup(r, group)
	if err != nil {
		s.fail(w, r, http.StatusBadGateway, "groups", "Group "+group, err)
		return
	}
	plan, err := s.planReset(r, d)
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, "groups", "Reset offsets of "+group, err)
		return
	}
	d.Reset = plan
	s.render(w, r, http.StatusOK, "group", page{Title: "Group " + group, Nav: "groups", Data: d})
}

// planReset turns the reset form into the offsets to commit.
func (s *Server) planReset(r *http.Request, d groupData) (*resetPlan, error) {
	topic, part, to := r.PostFormValue("topic"), r.PostFormValue("partition"), r.PostFormValue("to")
	var items []resetItem
	for _, l := range d.Lag {
		if (topic != "" && topic != "*" && l.Topic != topic) || (part != "" && part != "*" && strconv.Itoa(int(l.Partition)) != part) {
			continue
		}
		items = append(items, resetItem{Topic: l.Topic, Partition: l.Partition, From: l.Committed, To: -1})
	}
	if len(items) == 0 {
		return nil, errors.New("no partitions of the group match")
	}
	ctx, cancel := s.reqCtx(r)
	defer cancel()
	var topics []string
	for _, it := range items {
		if !slices.Contains(topics, it.Topic) {
			topics = append(topics, it.Topic)
		}
	}
	var listed kadm.ListedOffsets
	var err error
	plan := &resetPlan{}
	switch to {
	case "earliest":
		plan.To = "the earliest offsets"
		listed, err = s.adm.ListStartOffsets(ctx, topics...)
	case "latest":
		plan.To = "the latest offsets"
		listed, err = s.adm.ListEndOffsets(ctx, topics...)
	case "timestamp":
		ms, perr := parseMillis(r.PostFormValue("ts"))
		if perr != nil {
			return nil, perr
		}
		plan.To = "the first offsets at or after " + formatMillis(ms)
		listed, err = s.adm.ListOffsetsAfterMilli(ctx, ms, topics...)
	case "offset":
		n, perr := strconv.ParseInt(r.PostFormValue("offset"), 10, 64)
		if perr != nil || n < 0 {
			return nil, fmt.Errorf("offset %q: want an offset (0 or more)", r.PostFormValue("offset"))
		}
		plan.To = "offset " + strconv.FormatInt(n, 10)
		for i := range items {
			items[i].To = n
		}
	default:
		return nil, fmt.Errorf("reset to %q: want earliest, latest, offset or timestamp", to)
	}
	if err != nil {
		return nil, fmt.Errorf("ListOffsets: %w", err)
	}
	if listed != nil {
		ends, err := s.adm.ListEndOffsets(ctx, topics...)
		if err != nil {
			return nil, fmt.Errorf("ListOffsets: %w", err)
		}
		for i := range items {
			o, ok := listed.Lookup(items[i].Topic, items[i].Partition)
			if !ok || o.Err != nil {
				return nil, fmt.Errorf("ListOffsets %s/%d: %w", items[i].Topic, items[i].Partition, cmp.Or(o.Err, errors.New("no answer")))
			}
			items[i].To = o.Offset
			if o.Offset < 0 { // no record at or after the time: the end
				e, _ := ends.Lookup(items[i].Topic, items[i].Partition)
				items[i].To = e.Offset
			}
		}
	}
	var b strings.Builder
	for i, it := range items {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s:%d:%d", it.Topic, it.Partition, it.To)
	}
	plan.Items, plan.Plan = items, b.String()
	return plan, nil
}

// parsePlan reads the confirm form's topic:partition:offset list (topic
// names hold no ':' or ',').
func parsePlan(text string) (kadm.Offsets, error) {
	offsets := kadm.Offsets{}
	for item := range strings.SplitSeq(text, ",") {
		f := strings.Split(item, ":")
		if len(f) != 3 || f[0] == "" {
			return nil, fmt.Errorf("reset plan item %q: want topic:partition:offset", item)
		}
		p, err1 := strconv.ParseInt(f[1], 10, 32)
		o, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil || p < 0 || o < 0 {
			return nil, fmt.Errorf("reset plan item %q: want topic:partition:offset", item)
		}
		offsets.Add(kadm.Offset{Topic: f[0], Partition: int32(p), At: o, LeaderEpoch: -1})
	}
	return offsets, nil
}
