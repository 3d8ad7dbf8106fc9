package cli

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kgo"
)

// recordFormatter writes one consumed record to w, newline-terminated.
type recordFormatter func(w io.Writer, r *kgo.Record) error

// newFormatter returns the printer for --format: value, kv (key, keySep,
// value; a null key prints as "null" like kafka-console-consumer) or json.
func newFormatter(format, keySep string) (recordFormatter, error) {
	switch strings.ToLower(format) {
	case "value":
		return func(w io.Writer, r *kgo.Record) error {
			return writeAll(w, r.Value, nil)
		}, nil
	case "kv":
		return func(w io.Writer, r *kgo.Record) error {
			key := r.Key
			if key == nil {
				key = []byte("null")
			}
			return writeAll(w, key, []byte(keySep), r.Value, nil)
		}, nil
	case "json":
		return func(w io.Writer, r *kgo.Record) error {
			b, err := formatJSON(r)
			if err != nil {
				return err
			}
			return writeAll(w, b, nil)
		}, nil
	}
	return nil, fmt.Errorf("--format %q: want value, kv or json", format)
}

// writeAll writes the parts followed by a newline.
func writeAll(w io.Writer, parts ...[]byte) error {
	for _, p := range parts {
		if _, err := w.Write(p); err != nil {
			return fmt.Errorf("write output: %w", err)
		}
	}
	if _, err := w.Write([]byte{'\n'}); err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return nil
}

// jsonRecord is the --format json shape. Keys, values and header values are
// JSON strings when they are valid UTF-8; other bytes are base64-encoded
// and flagged by a sibling *_encoding field, so nothing is lost.
type jsonRecord struct {
	Topic         string       `json:"topic"`
	Partition     int32        `json:"partition"`
	Offset        int64        `json:"offset"`
	Timestamp     int64        `json:"timestamp"`
	Key           *string      `json:"key"`
	KeyEncoding   string       `json:"key_encoding,omitempty"`
	Value         *string      `json:"value"`
	ValueEncoding string       `json:"value_encoding,omitempty"`
	Headers       []jsonHeader `json:"headers"`
}

// jsonHeader keeps headers as an ordered list: Kafka allows repeated keys.
type jsonHeader struct {
	Key           string  `json:"key"`
	Value         *string `json:"value"`
	ValueEncoding string  `json:"value_encoding,omitempty"`
}

// encodeBytes renders b for JSON: nil stays null, valid UTF-8 stays text,
// anything else becomes base64 with encoding "base64".
func encodeBytes(b []byte) (s *string, encoding string) {
	if b == nil {
		return nil, ""
	}
	if utf8.Valid(b) {
		v := string(b)
		return &v, ""
	}
	v := base64.StdEncoding.EncodeToString(b)
	return &v, "base64"
}

func formatJSON(r *kgo.Record) ([]byte, error) {
	jr := jsonRecord{
		Topic:     r.Topic,
		Partition: r.Partition,
		Offset:    r.Offset,
		Timestamp: r.Timestamp.UnixMilli(),
		Headers:   make([]jsonHeader, 0, len(r.Headers)),
	}
	jr.Key, jr.KeyEncoding = encodeBytes(r.Key)
	jr.Value, jr.ValueEncoding = encodeBytes(r.Value)
	for _, h := range r.Headers {
		jh := jsonHeader{Key: h.Key}
		jh.Value, jh.ValueEncoding = encodeBytes(h.Value)
		jr.Headers = append(jr.Headers, jh)
	}
	b, err := json.Marshal(jr)
	if err != nil {
		return nil, fmt.Errorf("format record %s[%d]@%d as JSON: %w", r.Topic, r.Partition, r.Offset, err)
	}
	return b, nil
}
