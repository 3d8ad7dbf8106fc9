package metrics

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/internal/server"
)

// produceResponse answers a produce to partitions partitions of one
// topic, every one NONE but the codes given by partition.
func produceResponse(partitions int, codes map[int]int16) *kmsg.ProduceResponse {
	resp := kmsg.NewPtrProduceResponse()
	rt := kmsg.NewProduceResponseTopic()
	rt.Topic = "t"
	for p := range partitions {
		rp := kmsg.NewProduceResponseTopicPartition()
		rp.Partition, rp.ErrorCode = int32(p), codes[p]
		rt.Partitions = append(rt.Partitions, rp)
	}
	resp.Topics = append(resp.Topics, rt)
	return resp
}

// TestErrorsCountEveryCode: each error code of a response is counted
// under its API and Kafka's error name, NONE included, top-level and
// partition codes alike; a Fetch's under Fetch alone, whatever name the
// handler gave it.
func TestErrorsCountEveryCode(t *testing.T) {
	m := New(Options{})
	m.RequestDone(server.Answered{APIKey: 0, APIVersion: 9, Response: produceResponse(5, map[int]int16{
		1: kerr.NotLeaderForPartition.Code, 3: kerr.NotLeaderForPartition.Code, 4: kerr.MessageTooLarge.Code,
	})})
	fetch := kmsg.NewPtrFetchResponse()
	ft := kmsg.NewFetchResponseTopic()
	ft.Partitions = []kmsg.FetchResponseTopicPartition{kmsg.NewFetchResponseTopicPartition(), kmsg.NewFetchResponseTopicPartition()}
	ft.Partitions[1].ErrorCode = kerr.OffsetOutOfRange.Code
	fetch.Topics = append(fetch.Topics, ft)
	// The broker's Fetch response wraps the kmsg one with its file
	// regions; its own fields are not the response's.
	type regionFetch struct {
		*kmsg.FetchResponse
		regions []struct{ ErrorCode int16 }
	}
	m.RequestDone(server.Answered{APIKey: 1, APIVersion: 12, Subname: "FetchConsumer",
		Response: &regionFetch{FetchResponse: fetch, regions: make([]struct{ ErrorCode int16 }, 3)}})
	m.RequestDone(server.Answered{APIKey: 0, APIVersion: 9}) // acks=0: no response
	want := map[[2]string]float64{
		{"Produce", "NONE"}:                   2,
		{"Produce", "NOT_LEADER_OR_FOLLOWER"}: 2,
		{"Produce", "MESSAGE_TOO_LARGE"}:      1,
		// The top-level code and two partitions'.
		{"Fetch", "NONE"}:                2,
		{"Fetch", "OFFSET_OUT_OF_RANGE"}: 1,
	}
	for k, w := range want {
		if got := testutil.ToFloat64(m.errors.WithLabelValues(k[0], k[1])); got != w {
			t.Errorf("errors{request=%s,error=%s} = %v, want %v", k[0], k[1], got, w)
		}
	}
	if n := testutil.CollectAndCount(m.errors); n != len(want) {
		t.Errorf("%d error series, want %d", n, len(want))
	}
}

// TestSubnameCountsTwice: a request the handler named (a Fetch from a
// consumer or a follower) is counted under its API's name and that
// name, in every request series.
func TestSubnameCountsTwice(t *testing.T) {
	m := New(Options{})
	times := server.RequestTimes{Local: time.Millisecond, Remote: time.Second, Total: time.Second + time.Millisecond}
	m.RequestDone(server.Answered{APIKey: 1, APIVersion: 12, Subname: "FetchFollower", RequestBytes: 80, ResponseBytes: 4000, Times: times})
	m.RequestDone(server.Answered{APIKey: 1, APIVersion: 12, Subname: "FetchConsumer", RequestBytes: 90, ResponseBytes: 100, Times: times})
	fams := gather(t, m)
	for name, want := range map[string]uint64{"Fetch": 2, "FetchFollower": 1, "FetchConsumer": 1} {
		if v := testutil.ToFloat64(m.requests.WithLabelValues(name, "12")); v != float64(want) {
			t.Errorf("requests{request=%s} = %v, want %v", name, v, want)
		}
		for _, series := range []string{"kafka_network_requestmetrics_totaltime_seconds", "kafka_network_requestmetrics_requestqueuetime_seconds",
			"kafka_network_requestmetrics_localtime_seconds", "kafka_network_requestmetrics_remotetime_seconds",
			"kafka_network_requestmetrics_responsesendtime_seconds", "kafka_network_requestmetrics_requestbytes",
			"kafka_network_requestmetrics_responsebytes"} {
			if h := histogram(t, fams, series, map[string]string{"request": name}); h.GetSampleCount() != want {
				t.Errorf("%s{request=%s}: %d samples, want %d", series, name, h.GetSampleCount(), want)
			}
		}
	}
	if h := histogram(t, fams, "kafka_network_requestmetrics_responsebytes", map[string]string{"request": "FetchFollower"}); h.GetSampleSum() != 4000 {
		t.Errorf("follower response bytes %v, want 4000", h.GetSampleSum())
	}
	if h := histogram(t, fams, "kafka_network_requestmetrics_responsebytes", map[string]string{"request": "Fetch"}); h.GetSampleSum() != 4100 {
		t.Errorf("fetch response bytes %v, want 4100", h.GetSampleSum())
	}
}

// fill gives every slice in v (recursively) n elements and every
// ErrorCode a value from next, and returns how many ErrorCodes it set:
// a walk that visits every field, to check the planned walk against.
func fill(v reflect.Value, n int, next func() int16) int {
	switch v.Kind() {
	case reflect.Pointer:
		if v.Type().Elem().Kind() != reflect.Struct {
			return 0
		}
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		return fill(v.Elem(), n, next)
	case reflect.Slice:
		if v.Type().Elem().Kind() != reflect.Struct {
			return 0
		}
		v.Set(reflect.MakeSlice(v.Type(), n, n))
		set := 0
		for i := range n {
			set += fill(v.Index(i), n, next)
		}
		return set
	case reflect.Struct:
		set := 0
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if !f.IsExported() {
				continue
			}
			if f.Name == "ErrorCode" && f.Type.Kind() == reflect.Int16 {
				v.Field(i).SetInt(int64(next()))
				set++
				continue
			}
			set += fill(v.Field(i), n, next)
		}
		return set
	}
	return 0
}

// TestWalkFindsEveryErrorCode: for every response type kmsg knows, with
// two elements in every list, the planned walk counts exactly the
// ErrorCode fields a walk of every field finds, with their values.
func TestWalkFindsEveryErrorCode(t *testing.T) {
	var w errorWalker
	types := 0
	for key := range int16(1 << 10) {
		resp := kmsg.ResponseForKey(key)
		if resp == nil {
			continue
		}
		types++
		// Codes 0 to 11 in turn, as the fields come.
		code, set := int16(0), map[int16]int{}
		next := func() int16 { code = (code + 1) % 12; set[code]++; return code }
		fill(reflect.ValueOf(resp), 2, next)
		var tl tally
		w.count(resp, &tl)
		got := map[int16]int{}
		tl.each(func(c int16, n int) { got[c] += n })
		if !reflect.DeepEqual(got, set) {
			t.Errorf("%s: walk counted %v, the response has %v", kmsg.NameForKey(key), got, set)
		}
	}
	if types < 50 {
		t.Fatalf("only %d response types", types)
	}
}

// TestTallyManyCodes: more distinct codes than the tally keeps inline
// are all counted.
func TestTallyManyCodes(t *testing.T) {
	var tl tally
	for c := range int16(20) {
		for range int(c) + 1 {
			tl.add(c)
		}
	}
	got := map[int16]int{}
	tl.each(func(c int16, n int) { got[c] += n })
	for c := range int16(20) {
		if got[c] != int(c)+1 {
			t.Errorf("code %d counted %d, want %d", c, got[c], int(c)+1)
		}
	}
	if len(got) != 20 {
		t.Error(fmt.Sprint("codes ", got))
	}
}
