"""One consumer group member for the groups tests.

Usage: member.py '<json spec>' with client ("kafka-python" or
"confluent"), bootstrap, topic, group, name, session_ms. It prints one
JSON line per record ({"p": partition, "o": offset, "v": value}), commits
synchronously after every poll that returned records, and on SIGTERM
closes the consumer (leaving the group) and exits 0.
"""
import json
import signal
import sys

spec = json.loads(sys.argv[1])
stop = False


def on_term(signum, frame):
    global stop
    stop = True


signal.signal(signal.SIGTERM, on_term)


def emit(p, o, v):
    sys.stdout.write(json.dumps({"p": p, "o": o, "v": v.decode("latin-1")}) + "\n")
    sys.stdout.flush()


def run_kafka_python():
    from kafka import KafkaConsumer
    c = KafkaConsumer(spec["topic"], bootstrap_servers=spec["bootstrap"], group_id=spec["group"],
                      client_id=spec["name"], auto_offset_reset="earliest", enable_auto_commit=False,
                      session_timeout_ms=spec["session_ms"], heartbeat_interval_ms=500,
                      fetch_max_wait_ms=200)
    while not stop:
        batches = c.poll(timeout_ms=200)
        for tp, recs in batches.items():
            for r in recs:
                emit(tp.partition, r.offset, r.value)
        if batches:
            c.commit()
    c.close()


def run_confluent():
    from confluent_kafka import Consumer
    c = Consumer({"bootstrap.servers": spec["bootstrap"], "group.id": spec["group"],
                  "client.id": spec["name"], "auto.offset.reset": "earliest",
                  "enable.auto.commit": False, "session.timeout.ms": spec["session_ms"],
                  "heartbeat.interval.ms": 500, "fetch.wait.max.ms": 200})
    c.subscribe([spec["topic"]])
    while not stop:
        msgs = c.consume(num_messages=500, timeout=0.2)
        got = False
        for m in msgs:
            if m.error():
                continue
            got = True
            emit(m.partition(), m.offset(), m.value())
        if got:
            c.commit(asynchronous=False)
    c.close()


if spec["client"] == "kafka-python":
    run_kafka_python()
else:
    run_confluent()
