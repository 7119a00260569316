"""End-to-end latency of the stateless queries (q0, q1, q2) on Apache Kafka under a paced
load, measured from outside the engine, so that Runnel, Flink and Kafka Streams are timed by
the same clock (issue 32).

Each run gives the engine fresh input topics and a fresh output topic, all with
`message.timestamp.type=LogAppendTime`: the broker stamps every record with the time it
appended it. The engine starts first and is left until it idles (its start-up done, its
consumers waiting on the empty topics); then Runnel's generator writes the events, paced at
the rate asked for, and the run ends once the engine has committed every bid, or a while
after. A bid's latency is its output record's append time minus its input record's: from
the moment the broker could hand the bid to the engine to the moment it holds the result,
which takes in the engine's fetch, its work, its producer's batching and the produce
request. Bids appended in the first `--latency-warm-up` seconds are left out.

A result is matched to its bid by bytes, with no schema library: all three engines write
the same plain Avro (no unions), and every Avro long is a zigzag varint, so a field is cut
out where its varint ends (`Match`). q0 copies every bid, so a result's bytes are its bid's;
q1 changes only the price (the third field), so a result and its bid match on their bytes
without it; q2 keeps the auction and price of the bids on every 123rd auction, which match
on those two fields' bytes. A match is a hash of those bytes, and one in `Match.one_in` of
them, chosen by that hash, is kept (every record is read; the sample keeps the lookups and
memory small). A hash seen twice on a side (two bids with the same auction and price, for
q2) is left out: its results cannot be told apart.

The load is a fraction of the engine's saturated rate, measured the same way with the
generator writing as fast as it can: the rate at which the engine wrote its results
between the warm-up and the generator's last bid, counted in the events it had read to
write them. The generator, the engine and the broker share the machine's cores, so that
rate is what the engine keeps up with beside a generator, not what it does alone over a
backlog (the throughput runs).

Append times are in milliseconds, so figures are whole milliseconds. The generator and the
broker run on the same cores as the engine, as in the throughput runs.

Under `--guarantee exactly-once` a result's append time is not when a reader sees it: the
engine writes its results inside a transaction, and a `read_committed` consumer sees them
only once the transaction commits (every `--commit-interval-ms`, the same for each engine).
So a thread polls, every `POLL_SECONDS`, the last stable offset of each partition of the
output topic (`ListOffsets` with `isolation.level=read_committed`: the offset below which
every transaction is decided), and a result's time is that of the first poll whose stable
offset had passed its offset: when a `read_committed` consumer could first have read it,
late by at most the poll interval and the request's round trip.
"""

import bisect
import csv
import math
import statistics
import subprocess
import sys
import threading
import time

from confluent_kafka import TIMESTAMP_LOG_APPEND_TIME, Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import NewTopic

from harness import session_processes

QUANTILES = (0.5, 0.99, 0.999)
# How often the last stable offsets of an exactly-once run's output are polled, in seconds.
POLL_SECONDS = 0.01


def varint_end(value, start):
    """Where the Avro varint (a long or a length) that begins at `start` of `value` ends."""
    index = start
    while value[index] & 0x80:
        index += 1
    return index + 1


def long_at(value, start):
    """The Avro long (a zigzag varint) that begins at `start` of `value`."""
    number, shift = 0, 0
    for byte in value[start:varint_end(value, start)]:
        number |= (byte & 0x7F) << shift
        shift += 7
    return (number >> 1) ^ -(number & 1)


def without_price(value):
    """A bid or q1 result (auction, bidder, price, date_time, extra) without its price."""
    price = varint_end(value, varint_end(value, 0))
    return value[:price] + value[varint_end(value, price):]


def auction_and_price(bid):
    """The bytes of q2's result for `bid`, or None when its auction is not a 123rd one."""
    if long_at(bid, 0) % 123 != 0:
        return None
    auction = varint_end(bid, 0)
    price = varint_end(bid, auction)
    return bid[:auction] + bid[price:varint_end(bid, price)]


class Match:
    """How a query's results are matched to their bids: `bid` and `result` turn a record's
    value into the bytes both sides share (`bid` gives None for a bid with no result), and
    one match in `one_in` is kept."""

    def __init__(self, bid, result, one_in):
        self.bid, self.result, self.one_in = bid, result, one_in

    def kept(self, key):
        """Whether the match whose bytes hash to `key` is one of the sample."""
        return key % self.one_in == 0


def same(value):
    return value


MATCHES = {
    "q0": Match(same, same, 8),
    "q1": Match(without_price, without_price, 8),
    # One bid in 123 has a result: keep them all.
    "q2": Match(auction_and_price, same, 1),
}


def create_appended_topic(cluster, name, partitions):
    """Creates `name` with broker-side append times, kept forever."""
    config = {"retention.ms": "-1", "message.timestamp.type": "LogAppendTime"}
    topic = NewTopic(name, partitions, 1, config=config)
    cluster.admin.create_topics([topic])[name].result(timeout=30)


def wait_until_idle(process, seconds=3.0, most=0.15, timeout=180.0):
    """Waits until the engine's processes used at most `most` of a core over `seconds`:
    its start-up is over and its consumers wait on the empty topics. Returns the wait."""
    started = time.monotonic()
    window = []
    while time.monotonic() - started < timeout:
        time.sleep(0.5)
        if process.poll() is not None:
            raise RuntimeError(f"the engine exited with {process.returncode} before the load")
        window.append((time.monotonic(), sum(cpu for _, cpu, _ in session_processes(process.pid))))
        window = [sample for sample in window if sample[0] >= window[-1][0] - seconds]
        elapsed = window[-1][0] - window[0][0]
        if elapsed >= seconds - 0.6 and time.monotonic() - started >= 5:
            if (window[-1][1] - window[0][1]) / elapsed <= most:
                return time.monotonic() - started
    raise RuntimeError(f"the engine did not idle within {timeout:.0f} s")


def appended(bootstrap, topic, identify, keep, window=None):
    """Every record of `topic` whose bytes to match (`identify` of its value, None for none)
    hash to a key `keep` accepts: {key: (append time in ms, partition, offset)}, with keys
    seen twice left out (they cannot be told apart); how many records there were; and how
    many were appended within `window` (a pair of append times, the second excluded).
    Reads what a `read_committed` consumer sees, up to the last stable offsets (a
    transaction's marker takes an offset but is no record, so the end is where every
    partition's position reached)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"latency-{topic}",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest",
                         "isolation.level": "read_committed", "fetch.max.bytes": 64 << 20})
    low, high = window or (0, 0)
    try:
        metadata = consumer.list_topics(topic, timeout=10).topics[topic]
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
                for p in metadata.partitions}
        consumer.assign([TopicPartition(topic, p, 0) for p in ends])
        unread = {p for p, end in ends.items() if end > 0}
        count, within, times, repeated = 0, 0, {}, set()
        while unread:
            batch = consumer.consume(num_messages=10_000, timeout=5)
            for message in batch:
                if message.error():
                    raise RuntimeError(f"reading {topic}: {message.error()}")
                if message.offset() >= ends[message.partition()]:
                    continue
                count += 1
                kind, stamp = message.timestamp()
                if kind != TIMESTAMP_LOG_APPEND_TIME:
                    raise RuntimeError(f"{topic} has no append times (timestamp type {kind})")
                if low <= stamp < high:
                    within += 1
                shared = identify(message.value())
                if shared is None:
                    continue
                key = hash(shared)
                if not keep(key):
                    continue
                if key in times:
                    repeated.add(key)
                times[key] = (stamp, message.partition(), message.offset())
            positions = consumer.position([TopicPartition(topic, p) for p in unread])
            unread -= {position.partition for position in positions
                       if position.offset >= ends[position.partition]}
        for key in repeated:
            del times[key]
        return times, count, within
    finally:
        consumer.close()


class Visibility:
    """When the records of a topic written in transactions became visible to
    `read_committed` consumers: a thread polls the last stable offset of each partition
    every `POLL_SECONDS` and keeps the times it moved, until `stop`."""

    def __init__(self, bootstrap, topic, partitions):
        self.topic = topic
        self.consumer = Consumer({"bootstrap.servers": bootstrap,
                                  "group.id": f"visibility-{topic}",
                                  "isolation.level": "read_committed",
                                  "enable.auto.commit": False})
        # Per partition: (stable offset, wall-clock ms of the first poll that saw it).
        self.moves = {partition: [] for partition in range(partitions)}
        self.failures = 0
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.poll, name=f"visibility-{topic}", daemon=True)
        self.thread.start()

    def poll(self):
        stable = dict.fromkeys(self.moves, 0)
        while not self.stopping.wait(POLL_SECONDS):
            for partition, moves in self.moves.items():
                try:
                    _, offset = self.consumer.get_watermark_offsets(
                        TopicPartition(self.topic, partition), timeout=5, cached=False)
                except KafkaException:
                    self.failures += 1
                    continue
                if offset > stable[partition]:
                    moves.append((offset, time.time() * 1000))
                    stable[partition] = offset

    def stop(self):
        self.stopping.set()
        self.thread.join()
        self.consumer.close()

    def gaps(self):
        """The times between the stable offset's moves, in ms, over every partition: how
        often results became visible (the engine's commits, once it is busy)."""
        return [later[1] - earlier[1] for moves in self.moves.values()
                for earlier, later in zip(moves, moves[1:])]

    def visible_at(self, partition, offset):
        """The first poll (whole ms, rounded up) that saw `offset` of `partition` below the
        stable offset, or None if none did before `stop`."""
        moves = self.moves[partition]
        index = bisect.bisect_right(moves, offset, key=lambda move: move[0])
        return math.ceil(moves[index][1]) if index < len(moves) else None


def quantile(ordered, q):
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def measure(arguments, cluster, work, run, rate, count, stop):
    """Runs `run` (a harness Run of q0, q1 or q2 over fresh topics) while the generator
    writes `count` events, paced at `rate` events/s (0: as fast as it can); returns the
    latencies of the sampled bids after the warm-up, and the rate at which the engine wrote
    its results between the warm-up and the generator's last bid, in the events (bids and
    the persons and auctions between them) read to write them, per second. Under
    exactly-once a result counts from when it became visible to `read_committed` consumers
    (`Visibility`), not from its append."""
    bids = next(topic for topic in run.inputs if topic.endswith("-bids"))
    prefix = bids.removesuffix("bids")
    for stream in ("persons", "auctions", "bids"):
        create_appended_topic(cluster, f"{prefix}{stream}", arguments.partitions)
    for topic in run.written:
        create_appended_topic(cluster, topic, arguments.partitions)
    visibility = None
    if arguments.guarantee == "exactly-once":
        visibility = Visibility(cluster.bootstrap, run.output, arguments.partitions)
    log = open(work / f"{run.name}.log", "wb")
    process = subprocess.Popen(run.command, cwd=work, stdout=log, stderr=subprocess.STDOUT,
                               start_new_session=True)
    try:
        idle_after = wait_until_idle(process)
        topics = "".join(f'\n[topics.{stream}]\nname = "{prefix}{stream}"\npartitions = '
                         f'{arguments.partitions}\nproducers = ["generator.{stream}"]\n'
                         for stream in ("persons", "auctions", "bids"))
        blueprint = work / f"{run.name}-load.toml"
        blueprint.write_text(f'name = "{run.name}-load"\n\n[streamlets]\n'
                             f'generator = "generator"\n{topics}')
        subprocess.run([str(arguments.nexmark), "run", str(blueprint), "--kafka", cluster.bootstrap,
                        "--data-dir", str(work / f"{run.name}-load"), "--view", "off",
                        "--admin", "off", "--set", f"generator.count={count}",
                        "--set", f"generator.records-per-second={int(rate)}"],
                       check=True, stdout=subprocess.DEVNULL, stderr=log)
        total = sum(cluster.end_offsets(bids).values())
        waited = time.monotonic()
        while (cluster.committed(run.groups, {bids}) < total
               and time.monotonic() - waited < arguments.tail):
            if process.poll() is not None:
                raise RuntimeError(f"the engine exited with {process.returncode}")
            time.sleep(0.25)
    finally:
        stop(process)
        log.close()
        if visibility is not None:
            visibility.stop()
    match = MATCHES[run.query]
    sent, sent_count, _ = appended(cluster.bootstrap, bids, match.bid, match.kept)
    sent = {key: stamp for key, (stamp, _, _) in sent.items()}
    first, last = min(sent.values()), max(sent.values())
    start = first + arguments.latency_warm_up * 1000
    if last - start < 5000 and not rate:
        # The generator ran unpaced and the engine kept pace with it throughout.
        raise RuntimeError(f"the generator's {sent_count / max((last - first) / 1000, 1e-3):,.0f} "
                           f"bids/s lasted {(last - first) / 1000:.1f} s, too short to measure "
                           "after the warm-up (more --latency-saturation-events, or one rate for "
                           "every engine with --latency-saturated)")
    if last - start < 5000:
        raise RuntimeError(f"the load lasted {(last - first) / 1000:.1f} s, too short to measure "
                           "after the warm-up (more events, or a longer --latency-seconds)")
    received, received_count, results_in_window = appended(
        cluster.bootstrap, run.output, match.result, match.kept, (start, last))
    if visibility is None:
        seen = {key: stamp for key, (stamp, _, _) in received.items()}
    else:
        seen = {key: visibility.visible_at(partition, offset)
                for key, (_, partition, offset) in received.items()}
        seen = {key: moment for key, moment in seen.items() if moment is not None}
    latencies = sorted(seen[key] - stamp for key, stamp in sent.items()
                       if stamp >= start and key in seen)
    measured = sum(1 for stamp in sent.values() if stamp >= start)
    if not latencies:
        raise RuntimeError(f"no output of {run.output} matched a bid of {bids}")
    return {"latencies": latencies, "missing": measured - len(latencies),
            "sent": sent_count, "received": received_count,
            "rate": sent_count / max((last - first) / 1000, 1e-3),
            # Results per second, times the events read for each result.
            "output_rate": results_in_window / ((last - start) / 1000) * count / received_count,
            "idle_after": idle_after,
            "poll_failures": visibility.failures if visibility is not None else 0,
            "visible_every": statistics.median(visibility.gaps() or [0]) if visibility else None}


def summary(result):
    """One line: the quantiles and what was matched."""
    ordered = result["latencies"]
    figures = ", ".join(f"p{q * 100:g} {quantile(ordered, q)} ms" for q in QUANTILES)
    visible = ("" if result.get("visible_every") is None else
               f"; results became visible every {result['visible_every']:.0f} ms (median)")
    if result.get("poll_failures"):
        visible += f", {result['poll_failures']} polls of the stable offsets failed"
    return (f"{figures}, max {ordered[-1]} ms over {len(ordered):,} sampled bids "
            f"({result['missing']:,} unmatched); {result['sent']:,} bids in at "
            f"{result['rate']:,.0f}/s, {result['received']:,} out{visible}")


def table(results, rates, loads, engines):
    """The markdown table: per engine and load, medians over the runs of each quantile,
    and the highest p99.9 of any run."""
    lines = ["| engine | saturated events/s | load | paced events/s | bids appended per s "
             "| p50 ms | p99 ms | p99.9 ms | worst run's p99.9 ms | max ms "
             "| sampled bids per run | unmatched |",
             "|---" * 12 + "|"]
    for engine in engines:
        for load in loads:
            runs = [r for r in results.get((engine, load), []) if "failure" not in r]
            if not runs:
                failures = sorted({r["failure"] for r in results.get((engine, load), [])})
                lines.append(f"| {engine} | {rates.get(engine, 0):,.0f} | {load:.0%} "
                             f"| {', '.join(failures) or 'not run'} |" + " |" * 8)
                continue
            each = {q: [quantile(r["latencies"], q) for r in runs] for q in QUANTILES}
            lines.append(
                f"| {engine} | {rates[engine]:,.0f} | {load:.0%} | {rates[engine] * load:,.0f} "
                f"| {statistics.median(r['rate'] for r in runs):,.0f} "
                + "".join(f"| {statistics.median(each[q]):g} " for q in QUANTILES)
                + f"| {max(each[0.999])} | {max(r['latencies'][-1] for r in runs)} "
                f"| {statistics.median(len(r['latencies']) for r in runs):,.0f} "
                f"| {sum(r['missing'] for r in runs):,} |")
    return "\n".join(lines)


def write_quantiles(path, results, rates, loads, engines):
    """Writes, per engine and load, the latency quantiles of its run with the median p99 as
    scripts/latency-plot reads them (policy, rate, quantile, latency_us: every 0.1% and the
    99.95th, 99.99th and 99.999th percentiles)."""
    steps = sorted([step / 1000 for step in range(1001)] + [0.9995, 0.9999, 0.99999])
    with open(path, "w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(["policy", "rate", "quantile", "latency_us"])
        for engine in engines:
            for load in loads:
                runs = sorted((r for r in results.get((engine, load), []) if "failure" not in r),
                              key=lambda r: quantile(r["latencies"], 0.99))
                if not runs:
                    continue
                latencies = runs[(len(runs) - 1) // 2]["latencies"]
                for step in steps:
                    writer.writerow([f"{engine} at {load:.0%}", round(rates[engine] * load), step,
                                     quantile(latencies, step) * 1000])


def report(message):
    print(message, file=sys.stderr, flush=True)
