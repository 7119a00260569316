"""A plain Kafka client with Confluent's Avro serializers and a schema registry (confluent-kafka,
no Runnel code) feeding the sensor-data app and reading what it writes.

    python3 registry_interop.py produce BOOTSTRAP REGISTRY SCHEMA FIRST COUNT [FIELD]
        registers SCHEMA (the app's SensorData schema, JSON) with one more string field, FIELD
        (default `site`), that has a default, under subject sensor-data-value, and writes COUNT
        readings numbered from FIRST with it (FIELD set to "north-sea") to topic sensor-data
        through AvroSerializer
    python3 registry_interop.py consume BOOTSTRAP REGISTRY N
        reads N records from valid-metrics and invalid-metrics through AvroDeserializer (each
        value's schema looked up by the id it starts with) and prints them as JSON, with the
        subjects and ids of the schemas they were written with
"""

import json
import sys
import time

from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext


def produce(bootstrap, registry, schema, first, count, field):
    evolved = json.loads(schema)
    evolved["fields"].append({"name": field, "type": "string", "default": "unknown"})
    client = SchemaRegistryClient({"url": registry})
    serializer = AvroSerializer(client, json.dumps(evolved))
    producer = Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random",
                         "enable.idempotence": True})
    for sequence in range(first, first + count):
        device = f"device-{sequence % 3}"
        reading = {
            "device_id": device,
            "timestamp": 1_700_000_000_000 + sequence,
            "sequence": sequence,
            "measurements": {"power": 1000.0 + sequence,
                             "rotor_speed": -1.0 if sequence % 5 == 4 else 10.0 + sequence,
                             "wind_speed": 5.0},
            field: "north-sea",
        }
        value = serializer(reading, SerializationContext("sensor-data", MessageField.VALUE))
        producer.produce("sensor-data", key=device.encode(), value=value,
                         timestamp=1_700_000_000_000 + sequence)
    if producer.flush(30) != 0:
        sys.exit("not every reading was delivered")


def consume(bootstrap, registry, expected):
    client = SchemaRegistryClient({"url": registry})
    deserializer = AvroDeserializer(client)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"interop-{time.time()}",
                         "auto.offset.reset": "earliest", "isolation.level": "read_committed",
                         "session.timeout.ms": 6000, "max.poll.interval.ms": 10000})
    consumer.subscribe(["valid-metrics", "invalid-metrics"])
    valid, invalid, ids = [], [], set()
    deadline = time.time() + 90
    while len(valid) + len(invalid) < expected and time.time() < deadline:
        message = consumer.poll(0.5)
        if message is None or message.error():
            continue
        topic = message.topic()
        ids.add(int.from_bytes(message.value()[1:5], "big"))
        value = deserializer(message.value(), SerializationContext(topic, MessageField.VALUE))
        (valid if topic == "valid-metrics" else invalid).append(value)
    consumer.close()
    subjects = {subject: client.get_latest_version(subject).schema_id
                for subject in client.get_subjects()}
    print(json.dumps({"valid": valid, "invalid": invalid, "ids": sorted(ids),
                      "subjects": subjects}))


if __name__ == "__main__":
    command, bootstrap, registry = sys.argv[1], sys.argv[2], sys.argv[3]
    if command == "produce":
        field = sys.argv[7] if len(sys.argv) > 7 else "site"
        produce(bootstrap, registry, sys.argv[4], int(sys.argv[5]), int(sys.argv[6]), field)
    else:
        consume(bootstrap, registry, int(sys.argv[4]))
