"""End-to-end latency of q0 on Apache Kafka under a paced load, measured from outside the
engine, so that Runnel, Flink and Kafka Streams are timed by the same clock (issue 32).

Each run gives the engine fresh input topics and a fresh output topic, all with
`message.timestamp.type=LogAppendTime`: the broker stamps every record with the time it
appended it. The engine starts first and is left until it idles (its start-up done, its
consumers waiting on the empty topics); then Runnel's generator writes the events, paced at
the rate asked for, and the run ends once the engine has committed every bid, or a while
after. A bid's latency is its output record's append time minus its input record's: from
the moment the broker could hand the bid to the engine to the moment it holds the result,
which takes in the engine's fetch, its work, its producer's batching and the produce
request. q0 copies every bid unchanged and all three engines write it with the same Avro
schema, so an output record's bytes are its input record's: they are matched by their
hash, for one in `SAMPLE` of them (every record is read; the sample keeps the lookups and
memory small). Bids appended in the first `--latency-warm-up` seconds are left out.

The load is a fraction of the engine's saturated rate, measured the same way with the
generator writing as fast as it can: the rate at which the engine wrote its results
between the warm-up and the generator's last bid, counted in events. The generator, the
engine and the broker share the machine's cores, so that rate is what the engine keeps up
with beside a generator, not what it does alone over a backlog (the throughput runs).

Append times are in milliseconds, so figures are whole milliseconds. The generator and the
broker run on the same cores as the engine, as in the throughput runs.
"""

import statistics
import subprocess
import sys
import time

from confluent_kafka import TIMESTAMP_LOG_APPEND_TIME, Consumer, TopicPartition
from confluent_kafka.admin import NewTopic

from harness import session_processes

# One record in SAMPLE is matched (chosen by its value's hash, the same on both sides).
SAMPLE = 8
QUANTILES = (0.5, 0.99, 0.999)


def sampled(key):
    """Whether a record whose value hashes to `key` is one of the sample."""
    return key % SAMPLE == 0


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


def appended(bootstrap, topic, keep, window=None):
    """Every record of `topic` whose value's hash `keep` accepts: {hash: append time in ms},
    with hashes seen twice left out (two records with the same bytes cannot be told apart);
    how many records there were; and how many were appended within `window` (a pair of
    append times, the second excluded)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"latency-{topic}",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest",
                         "fetch.max.bytes": 64 << 20})
    low, high = window or (0, 0)
    try:
        metadata = consumer.list_topics(topic, timeout=10).topics[topic]
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
                for p in metadata.partitions}
        consumer.assign([TopicPartition(topic, p, 0) for p in ends])
        left = sum(ends.values())
        count, within, times, repeated = 0, 0, {}, set()
        while left > 0:
            for message in consumer.consume(num_messages=10_000, timeout=5):
                if message.error():
                    raise RuntimeError(f"reading {topic}: {message.error()}")
                if message.offset() >= ends[message.partition()]:
                    continue
                left -= 1
                count += 1
                kind, stamp = message.timestamp()
                if kind != TIMESTAMP_LOG_APPEND_TIME:
                    raise RuntimeError(f"{topic} has no append times (timestamp type {kind})")
                if low <= stamp < high:
                    within += 1
                key = hash(message.value())
                if not keep(key):
                    continue
                if key in times:
                    repeated.add(key)
                times[key] = stamp
        for key in repeated:
            del times[key]
        return times, count, within
    finally:
        consumer.close()


def quantile(ordered, q):
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def measure(arguments, cluster, work, run, rate, count, stop):
    """Runs `run` (a harness Run over fresh topics) while the generator writes `count`
    events, paced at `rate` events/s (0: as fast as it can); returns the latencies of the
    sampled bids after the warm-up, and the rate at which the engine wrote its results
    between the warm-up and the generator's last bid, in events (bids and the persons and
    auctions between them) per second."""
    bids = next(topic for topic in run.inputs if topic.endswith("-bids"))
    prefix = bids.removesuffix("bids")
    for stream in ("persons", "auctions", "bids"):
        create_appended_topic(cluster, f"{prefix}{stream}", arguments.partitions)
    for topic in run.written:
        create_appended_topic(cluster, topic, arguments.partitions)
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
    sent, sent_count, _ = appended(cluster.bootstrap, bids, sampled)
    first, last = min(sent.values()), max(sent.values())
    start = first + arguments.latency_warm_up * 1000
    if last - start < 5000:
        raise RuntimeError(f"the load lasted {(last - first) / 1000:.1f} s, too short to measure "
                           "after the warm-up (more events, or a longer --latency-seconds)")
    received, received_count, results_in_window = appended(cluster.bootstrap, run.output,
                                                           sampled, (start, last))
    latencies = sorted(received[key] - stamp for key, stamp in sent.items()
                       if stamp >= start and key in received)
    measured = sum(1 for stamp in sent.values() if stamp >= start)
    if not latencies:
        raise RuntimeError(f"no output of {run.output} matched a bid of {bids}")
    return {"latencies": latencies, "missing": measured - len(latencies),
            "sent": sent_count, "received": received_count,
            "rate": sent_count / max((last - first) / 1000, 1e-3),
            "output_rate": results_in_window / ((last - start) / 1000) * count / sent_count,
            "idle_after": idle_after}


def summary(result):
    """One line: the quantiles and what was matched."""
    ordered = result["latencies"]
    figures = ", ".join(f"p{q * 100:g} {quantile(ordered, q)} ms" for q in QUANTILES)
    return (f"{figures}, max {ordered[-1]} ms over {len(ordered):,} sampled bids "
            f"({result['missing']:,} unmatched); {result['sent']:,} bids in at "
            f"{result['rate']:,.0f}/s, {result['received']:,} out")


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


def report(message):
    print(message, file=sys.stderr, flush=True)
