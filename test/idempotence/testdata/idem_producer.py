"""Streams records through a librdkafka idempotent producer (confluent-kafka).

Usage: idem_producer.py BOOTSTRAP TOPIC COUNT PACE_MS [STOP_FILE]
Produces values "0".."COUNT-1" to partition 0, one every PACE_MS, then
flushes. With STOP_FILE, COUNT may be 0 (no limit): it stops producing
once that file exists, and prints "sent N" last. Prints "ack OFFSET VALUE" per delivered record and "err VALUE
REASON" per failed one on stdout (flushed, so the Go test can follow
progress); exits 0 only if every record was delivered.
"""
import os
import sys
import time

from confluent_kafka import Producer


def main():
    bootstrap, topic, count, pace_ms = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    stop_file = sys.argv[5] if len(sys.argv) > 5 else None
    conf = {
        "bootstrap.servers": bootstrap,
        "enable.idempotence": True,
        "acks": "all",
        "linger.ms": 5,
        "message.timeout.ms": 180000,
        "retry.backoff.ms": 100,
        "reconnect.backoff.ms": 100,
        "reconnect.backoff.max.ms": 1000,
    }
    # RDKAFKA_DEBUG=eos,msg,... turns on librdkafka's debug log (stderr).
    if os.environ.get("RDKAFKA_DEBUG"):
        conf["debug"] = os.environ["RDKAFKA_DEBUG"]
    p = Producer(conf)
    failed = []

    def report(err, msg):
        if err is not None:
            failed.append(msg.value())
            print("err %s %s" % (msg.value().decode(), err), flush=True)
        else:
            # A batch acknowledged implicitly (a later one of the same
            # producer succeeded after its retry timed out) has no offset.
            off = msg.offset()
            print("ack %d %s" % (-1 if off is None else off, msg.value().decode()), flush=True)

    i = 0
    while (count <= 0 or i < count) and not (stop_file and os.path.exists(stop_file)):
        while True:
            try:
                p.produce(topic, value=str(i).encode(), partition=0, on_delivery=report)
                break
            except BufferError:
                p.poll(0.1)
        p.poll(0)
        time.sleep(pace_ms / 1000.0)
        i += 1
    left = p.flush(180)
    if stop_file:
        print("sent %d" % i, flush=True)
    if left or failed:
        print("undelivered %d failed %d" % (left, len(failed)), file=sys.stderr, flush=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
