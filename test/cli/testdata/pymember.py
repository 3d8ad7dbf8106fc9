"""A kafka-python consumer group member for the weir group tests.

Usage: pymember.py '<json spec>' with bootstrap, topic, group, name. It
prints one line per record read ("partition offset value"), commits
synchronously after every poll that returned records, and on SIGTERM
closes the consumer (leaving the group) and exits 0.
"""
import json
import signal
import sys

from kafka import KafkaConsumer

spec = json.loads(sys.argv[1])
stop = False


def on_term(signum, frame):
    global stop
    stop = True


signal.signal(signal.SIGTERM, on_term)

c = KafkaConsumer(spec["topic"], bootstrap_servers=spec["bootstrap"], group_id=spec["group"],
                  client_id=spec["name"], auto_offset_reset="earliest", enable_auto_commit=False,
                  session_timeout_ms=10000, heartbeat_interval_ms=500, fetch_max_wait_ms=200)
while not stop:
    batches = c.poll(timeout_ms=200)
    for tp, recs in batches.items():
        for r in recs:
            sys.stdout.write("%d %d %s\n" % (tp.partition, r.offset, r.value.decode("latin-1")))
    sys.stdout.flush()
    if batches:
        c.commit()
c.close()
