"""A plain Kafka client (confluent-kafka, no Runnel code) feeding the sensor-data app.

    python3 interop.py produce BOOTSTRAP COUNT   writes COUNT readings to topic sensor-data
    python3 interop.py consume BOOTSTRAP N       reads N metrics from valid-metrics and invalid-metrics, prints them as JSON

Values are Avro binary encodings written by hand from the schemas in the app's descriptor, keys
are the device id as UTF-8, and partitions come from Kafka's murmur2 partitioner
(partitioner=murmur2_random), as docs/wire-format.md describes.
"""

import json
import struct
import sys
import time

from confluent_kafka import Consumer, Producer, TopicPartition


def zigzag(n):
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while n & ~0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def avro_string(s):
    data = s.encode()
    return zigzag(len(data)) + data


def avro_double(x):
    return struct.pack("<d", x)


class Reader:
    def __init__(self, data):
        self.data, self.at = data, 0

    def long(self):
        shift, n = 0, 0
        while True:
            byte = self.data[self.at]
            self.at += 1
            n |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                return (n >> 1) ^ -(n & 1)

    def string(self):
        length = self.long()
        text = self.data[self.at:self.at + length].decode()
        self.at += length
        return text

    def double(self):
        (x,) = struct.unpack_from("<d", self.data, self.at)
        self.at += 8
        return x

    def metric(self):
        return {
            "device_id": self.string(),
            "timestamp": self.long(),
            "sequence": self.long(),
            "name": self.string(),
            "value": self.double(),
        }


def murmur2(data):
    """Kafka's murmur2 (org.apache.kafka.common.utils.Utils.murmur2), unsigned 32-bit."""
    m, r, mask = 0x5BD1E995, 24, 0xFFFFFFFF
    h = (0x9747B28C ^ len(data)) & mask
    full = len(data) // 4 * 4
    for i in range(0, full, 4):
        k = int.from_bytes(data[i:i + 4], "little")
        k = (k * m) & mask
        k ^= k >> r
        k = (k * m) & mask
        h = (h * m) & mask
        h ^= k
    tail = data[full:]
    if len(tail) >= 3:
        h ^= tail[2] << 16
    if len(tail) >= 2:
        h ^= tail[1] << 8
    if len(tail) >= 1:
        h ^= tail[0]
        h = (h * m) & mask
    h ^= h >> 13
    h = (h * m) & mask
    h ^= h >> 15
    return h


def reading(sequence):
    """SensorData {device_id, timestamp, sequence, measurements {power, rotor_speed, wind_speed}};
    every 5th reading has a negative rotor speed."""
    device = f"device-{sequence % 3}"
    rotor = -1.0 if sequence % 5 == 4 else 10.0 + sequence
    value = (avro_string(device) + zigzag(1_700_000_000_000 + sequence) + zigzag(sequence)
             + avro_double(1000.0 + sequence) + avro_double(rotor) + avro_double(5.0))
    return device, value


def produce(bootstrap, count):
    producer = Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random",
                         "enable.idempotence": True})
    for sequence in range(count):
        device, value = reading(sequence)
        producer.produce("sensor-data", key=device.encode(), value=value,
                         timestamp=1_700_000_000_000 + sequence)
    if producer.flush(30) != 0:
        sys.exit("not every reading was delivered")


def consume(bootstrap, expected):
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"interop-{time.time()}",
                         "auto.offset.reset": "earliest", "isolation.level": "read_committed",
                         "session.timeout.ms": 6000, "max.poll.interval.ms": 10000})
    consumer.subscribe(["valid-metrics", "invalid-metrics"])
    valid, invalid, misplaced = [], [], 0
    partitions = {}
    deadline = time.time() + 60
    while len(valid) + len(invalid) < expected and time.time() < deadline:
        message = consumer.poll(0.5)
        if message is None or message.error():
            continue
        topic = message.topic()
        if topic not in partitions:
            metadata = consumer.list_topics(topic, timeout=10)
            partitions[topic] = len(metadata.topics[topic].partitions)
        reader = Reader(message.value())
        if topic == "valid-metrics":
            metric = reader.metric()
            valid.append(metric)
            key = message.key()
            if key != metric["device_id"].encode():
                misplaced += 1
            elif (murmur2(key) & 0x7FFFFFFF) % partitions[topic] != message.partition():
                misplaced += 1
        else:
            metric = reader.metric()
            invalid.append({"metric": metric, "error": reader.string()})
    consumer.close()
    print(json.dumps({"valid": valid, "invalid": invalid, "misplaced": misplaced}))


if __name__ == "__main__":
    command, bootstrap = sys.argv[1], sys.argv[2]
    if command == "produce":
        produce(bootstrap, int(sys.argv[3]))
    else:
        consume(bootstrap, int(sys.argv[3]))
