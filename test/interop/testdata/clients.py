"""Drives kafka-python and confluent-kafka-python for the interop tests.

Reads one JSON spec on stdin, prints one JSON object per line on stdout
(the Go test parses them); diagnostics go to stderr. Keys, values and
header values travel as latin-1 strings so every byte survives JSON.
"""
import json
import sys
import time


def enc(s):
    return None if s is None else s.encode("latin-1")


def dec(b):
    return None if b is None else b.decode("latin-1")


def out(obj):
    print(json.dumps(obj), flush=True)


def headers_out(hs):
    return [[k, dec(v)] for k, v in (hs or [])]


def kp_produce(spec):
    from kafka import KafkaProducer

    codec = spec.get("compression", "none")
    p = KafkaProducer(
        bootstrap_servers=spec["bootstrap"],
        compression_type=None if codec == "none" else codec,
        linger_ms=spec.get("linger_ms", 20),
        request_timeout_ms=30000,
    )
    futures = []
    for r in spec["records"]:
        futures.append(p.send(
            spec["topic"],
            key=enc(r.get("key")),
            value=enc(r.get("value")),
            headers=[(k, enc(v)) for k, v in r.get("headers") or []],
            partition=r.get("partition"),
            timestamp_ms=r.get("ts") or None,
        ))
    p.flush(timeout=60)
    for f in futures:
        md = f.get(timeout=60)
        out({"partition": md.partition, "offset": md.offset})
    p.close(timeout=10)


def ck_produce(spec):
    from confluent_kafka import Producer

    conf = {
        "bootstrap.servers": spec["bootstrap"],
        "compression.type": spec.get("compression", "none"),
        "linger.ms": spec.get("linger_ms", 20),
        "enable.idempotence": False,
    }
    if spec.get("partitioner"):
        conf["partitioner"] = spec["partitioner"]
    p = Producer(conf)
    acks = [None] * len(spec["records"])

    def cb(i):
        def done(err, msg):
            acks[i] = {"error": str(err)} if err else {"partition": msg.partition(), "offset": msg.offset()}
        return done

    for i, r in enumerate(spec["records"]):
        kw = {}
        if r.get("partition") is not None:
            kw["partition"] = r["partition"]
        if r.get("ts"):
            kw["timestamp"] = r["ts"]
        p.produce(spec["topic"], key=enc(r.get("key")), value=enc(r.get("value")),
                  headers=[(k, enc(v)) for k, v in r.get("headers") or []], on_delivery=cb(i), **kw)
        p.poll(0)
    left = p.flush(60)
    if left:
        raise SystemExit("confluent producer: %d messages not delivered" % left)
    for a in acks:
        out(a)


def kp_consume(spec):
    from kafka import KafkaConsumer, TopicPartition

    c = KafkaConsumer(bootstrap_servers=spec["bootstrap"], group_id=None,
                      enable_auto_commit=False, auto_offset_reset="earliest")
    want = {}
    tps = []
    for t in spec["topics"]:
        want[t["topic"]] = t["count"]
        tps += [TopicPartition(t["topic"], p) for p in range(t["partitions"])]
    c.assign(tps)
    c.seek_to_beginning(*tps)
    got = {t: 0 for t in want}
    deadline = time.time() + spec.get("timeout", 60)
    while any(got[t] < want[t] for t in want) and time.time() < deadline:
        for tp, msgs in c.poll(timeout_ms=500).items():
            for m in msgs:
                got[m.topic] += 1
                out({"topic": m.topic, "partition": m.partition, "offset": m.offset,
                     "key": dec(m.key), "value": dec(m.value), "headers": headers_out(m.headers),
                     "ts": m.timestamp})
    c.close()


def ck_consume(spec):
    from confluent_kafka import Consumer, TopicPartition, OFFSET_BEGINNING

    c = Consumer({"bootstrap.servers": spec["bootstrap"], "group.id": "interop-assign-only",
                  "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    want = {}
    tps = []
    for t in spec["topics"]:
        want[t["topic"]] = t["count"]
        tps += [TopicPartition(t["topic"], p, OFFSET_BEGINNING) for p in range(t["partitions"])]
    c.assign(tps)
    got = {t: 0 for t in want}
    deadline = time.time() + spec.get("timeout", 60)
    while any(got[t] < want[t] for t in want) and time.time() < deadline:
        m = c.poll(0.5)
        if m is None:
            continue
        if m.error():
            print("consume error: %s" % m.error(), file=sys.stderr)
            continue
        got[m.topic()] += 1
        out({"topic": m.topic(), "partition": m.partition(), "offset": m.offset(),
             "key": dec(m.key()), "value": dec(m.value()), "headers": headers_out(m.headers()),
             "ts": m.timestamp()[1]})
    c.close()


def kp_offsets_for_times(spec):
    from kafka import KafkaConsumer, TopicPartition

    c = KafkaConsumer(bootstrap_servers=spec["bootstrap"], group_id=None, enable_auto_commit=False)
    tp = TopicPartition(spec["topic"], spec["partition"])
    out({"beginning": c.beginning_offsets([tp])[tp], "end": c.end_offsets([tp])[tp]})
    for t in spec["times"]:
        r = c.offsets_for_times({tp: t})[tp]
        out({"time": t, "offset": None if r is None else r.offset,
             "timestamp": None if r is None else r.timestamp})
    c.close()


OPS = {
    ("kafka-python", "produce"): kp_produce,
    ("kafka-python", "consume"): kp_consume,
    ("kafka-python", "offsets_for_times"): kp_offsets_for_times,
    ("confluent", "produce"): ck_produce,
    ("confluent", "consume"): ck_consume,
}

if __name__ == "__main__":
    spec = json.load(sys.stdin)
    OPS[(spec["client"], spec["op"])](spec)
