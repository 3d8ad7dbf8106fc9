"""Reads one record of partition 0 of a topic, starting at a group's
committed offset, as a consumer that assigns itself the partition
(kafka-python: assign() with a group_id, without joining the group; the
committed offset comes from OffsetFetch).

argv[1] is JSON: {"bootstrap", "group", "topic"}. Prints "offset value"
of the first record and exits; the test bounds how long it may take."""
import json
import sys

from kafka import KafkaConsumer, TopicPartition

spec = json.loads(sys.argv[1])
c = KafkaConsumer(bootstrap_servers=spec["bootstrap"], group_id=spec["group"],
                  enable_auto_commit=False, auto_offset_reset="earliest",
                  fetch_max_wait_ms=200, retry_backoff_ms=100)
c.assign([TopicPartition(spec["topic"], 0)])
while True:
    for recs in c.poll(timeout_ms=200).values():
        r = recs[0]
        print(r.offset, r.value.decode(), flush=True)
        c.close()
        sys.exit(0)
