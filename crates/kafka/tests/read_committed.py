"""An outside reader of one topic with confluent-kafka (no Runnel code).

    python3 read_committed.py BOOTSTRAP TOPIC COUNT ISOLATION

Reads TOPIC from its start in a consumer group of its own, with isolation.level=ISOLATION
(read_committed or read_uncommitted), until it has read COUNT records and nothing more arrives
for 5 seconds (or 300 seconds have passed), and prints one JSON object:
{"partitions": {"0": ["<value as text>", ...], ...}, "read": N}, each partition's values in
offset order.
"""

import json
import sys
import time
import uuid

from confluent_kafka import Consumer, KafkaException


def main():
    bootstrap, topic, count, isolation = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"outside-reader-{uuid.uuid4()}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "isolation.level": isolation,
        }
    )
    consumer.subscribe([topic])
    partitions = {}
    read = 0
    started = time.monotonic()
    last = started
    while time.monotonic() - started < 300:
        message = consumer.poll(0.5)
        if message is None:
            if read >= count and time.monotonic() - last > 5:
                break
            continue
        if message.error():
            raise KafkaException(message.error())
        partitions.setdefault(str(message.partition()), []).append(message.value().decode())
        read += 1
        last = time.monotonic()
    consumer.close()
    json.dump({"partitions": partitions, "read": read}, sys.stdout)


if __name__ == "__main__":
    main()
