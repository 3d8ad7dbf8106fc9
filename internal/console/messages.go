package console

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The message browser's bounds: a request never reads more than
// maxRecords records or maxBrowseBytes bytes of keys and values, nor for
// longer than browseTimeout, whatever it asks; each field shows at most
// maxShownBytes.
const (
	defaultRecords = 20
	maxRecords     = 200
	maxBrowseBytes = 4 << 20
	maxShownBytes  = 16 << 10
	browseTimeout  = 5 * time.Second
)

type shownBytes struct {
	Format string // "json", "text", "hex" or "null"
	Text   string
	Size   int
	Cut    bool // only the first maxShownBytes are shown
}

type shownHeader struct {
	Key   string
	Value shownBytes
}

type shownRecord struct {
	Partition int32
	Offset    int64
	Timestamp int64
	Key       shownBytes
	Value     shownBytes
	Headers   []shownHeader
}

type browseForm struct {
	Partition int32
	From      string // "start", "offset", "timestamp" or "end" (the newest)
	Offset    int64
	Time      string // timestamp as typed: 2006-01-02T15:04[:05] (UTC) or milliseconds
	Limit     int
	Format    string // "auto", "text", "json" or "hex"
}

type messagesData struct {
	Topic      string
	Partitions []int32
	Form       browseForm
	Start, End int64
	Records    []shownRecord
	Stopped    string // why the read stopped before Limit records
	Next       int64  // the offset after the last record shown, -1 none
}

func (s *Server) messages(w http.ResponseWriter, r *http.Request) {
	topic := r.PathValue("topic")
	form, err := parseBrowseForm(r)
	p := page{Title: "Messages in " + topic, Nav: "topics"}
	if err != nil {
		p.Error = err.Error()
		p.Data = messagesData{Topic: topic, Form: form, Next: -1}
		s.render(w, r, http.StatusBadRequest, "messages", p)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), browseTimeout)
	defer cancel()
	d := messagesData{Topic: topic, Form: form, Start: -1, End: -1, Next: -1}
	md, err := s.adm.Metadata(ctx, topic)
	if err != nil {
		s.render(w, r, http.StatusBadGateway, "error", page{Title: p.Title, Nav: "topics", Error: "Metadata: " + err.Error()})
		return
	}
	td, ok := md.Topics[topic]
	if !ok || td.Err != nil {
		s.render(w, r, http.StatusNotFound, "error", page{Title: p.Title, Nav: "topics", Error: "Topic " + topic + ": unknown topic"})
		return
	}
	d.Partitions = td.Partitions.Numbers()
	if _, ok := td.Partitions[form.Partition]; !ok {
		p.Error = fmt.Sprintf("topic %s has no partition %d", topic, form.Partition)
		p.Data = d
		s.render(w, r, http.StatusBadRequest, "messages", p)
		return
	}
	d.Records, d.Start, d.End, d.Stopped, err = s.browse(ctx, topic, form)
	if err != nil {
		p.Error = err.Error()
	}
	if n := len(d.Records); n > 0 {
		d.Next = d.Records[n-1].Offset + 1
	}
	p.Data = d
	s.render(w, r, http.StatusOK, "messages", p)
}

func parseBrowseForm(r *http.Request) (browseForm, error) {
	q := r.URL.Query()
	f := browseForm{From: q.Get("from"), Time: q.Get("ts"), Limit: defaultRecords, Format: q.Get("format")}
	if f.From == "" {
		f.From = "start"
	}
	if f.Format == "" {
		f.Format = "auto"
	}
	var errs []error
	if v := q.Get("partition"); v != "" {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n < 0 {
			errs = append(errs, fmt.Errorf("partition %q: want a partition number", v))
		}
		f.Partition = int32(n)
	}
	if v := q.Get("offset"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			errs = append(errs, fmt.Errorf("offset %q: want an offset (0 or more)", v))
		}
		f.Offset = n
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			errs = append(errs, fmt.Errorf("limit %q: want a count of records", v))
		}
		f.Limit = min(max(n, 1), maxRecords)
	}
	switch f.From {
	case "start", "offset", "end":
	case "timestamp":
		if _, err := parseMillis(f.Time); err != nil {
			errs = append(errs, err)
		}
	default:
		errs = append(errs, fmt.Errorf("from %q: want start, offset, timestamp or end", f.From))
	}
	switch f.Format {
	case "auto", "text", "json", "hex":
	default:
		errs = append(errs, fmt.Errorf("format %q: want auto, text, json or hex", f.Format))
	}
	return f, errors.Join(errs...)
}

// parseMillis reads a timestamp as Unix milliseconds or as a UTC date and
// time (what an <input type=datetime-local> sends).
func parseMillis(v string) (int64, error) {
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		return n, nil
	}
	for _, layout := range []string{"2006-01-02T15:04:05.000", "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t.UnixMilli(), nil
		}
	}
	return 0, fmt.Errorf("timestamp %q: want milliseconds since 1970 or YYYY-MM-DDTHH:MM[:SS] (UTC)", v)
}

// browse reads at most form.Limit records of one partition from the
// chosen position with a consumer of its own, closed before returning.
func (s *Server) browse(ctx context.Context, topic string, form browseForm) (recs []shownRecord, start, end int64, stopped string, err error) {
	start, end = -1, -1
	starts, err := s.adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return nil, start, end, "", fmt.Errorf("ListOffsets: %w", err)
	}
	ends, err := s.adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, start, end, "", fmt.Errorf("ListOffsets: %w", err)
	}
	so, _ := starts.Lookup(topic, form.Partition)
	eo, _ := ends.Lookup(topic, form.Partition)
	if so.Err != nil || eo.Err != nil {
		return nil, start, end, "", fmt.Errorf("ListOffsets: %w", errors.Join(so.Err, eo.Err))
	}
	start, end = so.Offset, eo.Offset
	from := start
	switch form.From {
	case "offset":
		from = form.Offset
	case "end":
		from = max(start, end-int64(form.Limit))
	case "timestamp":
		ms, _ := parseMillis(form.Time)
		after, err := s.adm.ListOffsetsAfterMilli(ctx, ms, topic)
		if err != nil {
			return nil, start, end, "", fmt.Errorf("ListOffsets by time: %w", err)
		}
		o, _ := after.Lookup(topic, form.Partition)
		if o.Err != nil {
			return nil, start, end, "", fmt.Errorf("ListOffsets by time: %w", o.Err)
		}
		from = o.Offset
		if from < 0 {
			from = end
		}
	}
	from = max(from, start)
	if from >= end {
		return nil, start, end, "no records at or after this position (the log ends at " + strconv.FormatInt(end, 10) + ")", nil
	}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(s.cfg.Seeds...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {form.Partition: kgo.NewOffset().At(from)}}),
		kgo.FetchMaxBytes(1<<20),
		kgo.FetchMaxPartitionBytes(1<<20),
		kgo.FetchMaxWait(250*time.Millisecond),
		kgo.MaxConcurrentFetches(1),
		kgo.ClientID("weir-console"),
	)
	if err != nil {
		return nil, start, end, "", fmt.Errorf("consumer: %w", err)
	}
	defer cl.Close()
	read := 0
	for {
		fs := cl.PollRecords(ctx, form.Limit-len(recs))
		if ctx.Err() != nil {
			return recs, start, end, "stopped after " + browseTimeout.String() + " (the time limit of one read)", nil
		}
		if errs := fs.Errors(); len(errs) > 0 {
			return recs, start, end, "", fmt.Errorf("fetch: %w", errs[0].Err)
		}
		for _, rec := range fs.Records() {
			recs = append(recs, showRecord(rec, form.Format))
			read += len(rec.Key) + len(rec.Value)
			last := rec.Offset
			switch {
			case len(recs) >= form.Limit:
				return recs, start, end, "", nil
			case last+1 >= end:
				return recs, start, end, "reached the end of the log", nil
			case read >= maxBrowseBytes:
				return recs, start, end, fmt.Sprintf("stopped after %s of keys and values (the byte limit of one read)", humanBytes(maxBrowseBytes)), nil
			}
		}
	}
}

func showRecord(rec *kgo.Record, format string) shownRecord {
	sr := shownRecord{Partition: rec.Partition, Offset: rec.Offset, Timestamp: rec.Timestamp.UnixMilli(),
		Key: show(rec.Key, format), Value: show(rec.Value, format)}
	for _, h := range rec.Headers {
		sr.Headers = append(sr.Headers, shownHeader{Key: h.Key, Value: show(h.Value, format)})
	}
	return sr
}

// show renders untrusted bytes as text for the template, which escapes
// it: never as HTML. auto picks JSON (indented) for a JSON object or
// array, text for printable UTF-8, else hex.
func show(b []byte, format string) shownBytes {
	if b == nil {
		return shownBytes{Format: "null"}
	}
	sb := shownBytes{Size: len(b)}
	if format == "auto" {
		t := bytes.TrimSpace(b)
		switch {
		case len(t) > 0 && (t[0] == '{' || t[0] == '[') && json.Valid(t):
			format = "json"
		case printable(b):
			format = "text"
		default:
			format = "hex"
		}
	}
	sb.Format = format
	switch format {
	case "json":
		var out bytes.Buffer
		if len(b) <= maxShownBytes && json.Indent(&out, b, "", "  ") == nil {
			sb.Text = out.String()
			return sb
		}
		sb.Format = "text" // not JSON, or too long to indent whole
		fallthrough
	case "text":
		cut := b
		if len(cut) > maxShownBytes {
			cut, sb.Cut = cut[:maxShownBytes], true
		}
		sb.Text = strings.ToValidUTF8(string(cut), "\uFFFD")
	default:
		cut := b
		if len(cut) > maxShownBytes/2 {
			cut, sb.Cut = cut[:maxShownBytes/2], true
		}
		sb.Text = hex.EncodeToString(cut)
	}
	return sb
}

func printable(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for _, r := range string(b) {
		if !unicode.IsPrint(r) && !unicode.IsSpace(r) {
			return false
		}
	}
	return true
}
