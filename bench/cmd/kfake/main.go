// Command kfake runs franz-go's in-memory fake Kafka broker (pkg/kfake)
// as a process of its own, so the suite measures its CPU apart from the
// clients'. It prints "kfake listening on ADDR" and runs until SIGTERM.
//
// With -sink it is the suite's client limit instead: every Produce is
// answered at once as stored (offsets counted per partition) and its
// records dropped, so what a producer reaches against it is what the
// client itself can do on this machine, with a broker that costs next to
// nothing. Metadata and topic admin are kfake's own.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func main() {
	port := flag.Int("port", 0, "client port on 127.0.0.1 (0: any free one)")
	sink := flag.Bool("sink", false, "answer every Produce as stored and keep nothing (the client limit)")
	flag.Parse()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(*port))
	if err != nil {
		fmt.Fprintln(os.Stderr, "kfake:", err)
		os.Exit(1)
	}
	if *sink {
		installSink(c)
	}
	fmt.Println("kfake listening on", c.ListenAddrs()[0])
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	c.Close()
}

// installSink answers Produce requests without storing them. kfake runs
// its control functions on its one request loop, so the offsets need no
// lock.
func installSink(c *kfake.Cluster) {
	next := map[string]map[int32]int64{} // by topic name or id
	c.ControlKey(int16(kmsg.Produce), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := kreq.(*kmsg.ProduceRequest)
		resp := req.ResponseKind().(*kmsg.ProduceResponse)
		for _, t := range req.Topics {
			key := t.Topic + string(t.TopicID[:])
			offs := next[key]
			if offs == nil {
				offs = map[int32]int64{}
				next[key] = offs
			}
			rt := kmsg.NewProduceResponseTopic()
			rt.Topic, rt.TopicID = t.Topic, t.TopicID // v13+ names topics by id
			for _, p := range t.Partitions {
				rp := kmsg.NewProduceResponseTopicPartition()
				rp.Partition = p.Partition
				rp.BaseOffset = offs[p.Partition]
				offs[p.Partition] += int64(recordCount(p.Records))
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		if req.Acks == 0 {
			return nil, nil, true
		}
		return resp, nil, true
	})
}

// recordCount adds up the record counts of the v2 batches in b (at byte
// 57 of each batch header; its length at byte 8 counts from byte 12).
func recordCount(b []byte) int32 {
	var n int32
	for len(b) >= 61 {
		length := int(int32(uint32(b[8])<<24 | uint32(b[9])<<16 | uint32(b[10])<<8 | uint32(b[11])))
		if length < 49 || 12+length > len(b) {
			break
		}
		n += int32(uint32(b[57])<<24 | uint32(b[58])<<16 | uint32(b[59])<<8 | uint32(b[60]))
		b = b[12+length:]
	}
	return n
}
