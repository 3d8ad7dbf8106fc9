"""One confluent-kafka (librdkafka) member of a consumer group, for
groups_test.go.

Usage: group_member.py '<json spec>' with bootstrap, topic, group, name,
session_ms. It uses the eager "range" assignor (the one franz-go's
RangeBalancer speaks, so both can share a group), commits synchronously
after every batch it consumed, and prints one JSON line per event, each
stamped with the wall clock (seconds) right after the event:
  {"k": "assign", "p": partition}        partition handed to this member
  {"k": "consume", "p": ..., "o": ...}   record read
  {"k": "commit", "p": ..., "o": ...}    commit of offset o acknowledged
  {"k": "error", "e": "..."}             anything that went wrong
It runs until killed.
"""
import json
import sys
import time

from confluent_kafka import Consumer, TopicPartition

spec = json.loads(sys.argv[1])


def emit(**kw):
    kw["t"] = time.time()
    sys.stdout.write(json.dumps(kw) + "\n")
    sys.stdout.flush()


def on_assign(consumer, parts):
    for p in parts:
        emit(k="assign", p=p.partition)


c = Consumer({
    "bootstrap.servers": spec["bootstrap"],
    "group.id": spec["group"],
    "client.id": spec["name"],
    "partition.assignment.strategy": "range",
    "auto.offset.reset": "earliest",
    "enable.auto.commit": False,
    "session.timeout.ms": spec["session_ms"],
    "heartbeat.interval.ms": 500,
    "fetch.wait.max.ms": 200,
})
c.subscribe([spec["topic"]], on_assign=on_assign)
while True:
    msgs = c.consume(num_messages=200, timeout=0.2)
    nxt = {}
    for m in msgs:
        if m.error():
            emit(k="error", e=str(m.error()))
            continue
        emit(k="consume", p=m.partition(), o=m.offset())
        nxt[m.partition()] = m.offset() + 1
    if not nxt:
        continue
    try:
        done = c.commit(offsets=[TopicPartition(spec["topic"], p, o) for p, o in nxt.items()], asynchronous=False)
    except Exception as e:  # a rebalance or a coordinator move: the records are read again
        emit(k="error", e="commit: " + str(e))
        continue
    for tp in done:
        if tp.error:
            emit(k="error", e="commit: " + str(tp.error))
        else:
            emit(k="commit", p=tp.partition, o=tp.offset)
