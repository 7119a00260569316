"""Steady-state Nexmark on Apache Kafka: Runnel, Flink (Java) and Kafka Streams read the same
events from Kafka topics and write their results to Kafka, interleaved, and each is measured
after its warm-up through the input offsets it commits.

The events are written once, by Runnel's generator streamlet (`nexmark run` over a blueprint
with the generator alone), into the topics PREFIX-persons, PREFIX-auctions and PREFIX-bids
as plain Avro (docs/wire-format.md), each record stamped with its event time; a later run
with the same count and partitions reuses them. Every engine then reads them from the
earliest offset under a consumer group of its own and writes its results to a fresh topic:

- runnel: the query's blueprint (crates/nexmark/blueprints) without the generator, its
  input topics renamed to the filled ones and declaring the generator's schemas (what SQL
  tables read), `nexmark run --kafka`; with `--guarantee
  exactly-once`, each query streamlet as `<query>-exactly-once` (SQL: `delivery`);
- kafka-streams: scripts/nexmark/kafka-streams (Kafka Streams 4.x topologies);
- flink: scripts/nexmark/flink-kafka (Flink's Nexmark SQL in Java, the Kafka SQL connector).

Every engine commits what it consumed every second, or every `--commit-interval-ms`
(Runnel's `--commit-interval`, Kafka Streams' `commit.interval.ms`, Flink's checkpoint
interval; under exactly-once, each also commits its transaction then). The harness samples, every
250 ms, the CPU time of every process of the engine's session and the offsets its groups
committed on the input topics. A run ends when they reach the topics' ends; "steady" figures
cover the part of the run between the engine committing 20 % and 90 % of the input (the
`--warm-up` and `--done` marks), so start-up, the first fetches and JIT compilation fall
outside them, and so does the end, where engines commit their last offsets late. A steady
part is at most `--steady-seconds` long (300 s: the issue's "20 million events or 5
minutes, whichever comes first"): an engine slower than that is measured over its first
300 s after the warm-up, the run then ends, and the table marks its outputs as "capped"
(those it had written by then).
The harness creates every topic it reads or writes with `retention.ms=-1`: the events'
times are from 2024, and the broker's default retention would delete them.
The broker's CPU is reported apart: it is shared and the same for every engine.

With `--latency-loads 0.5,0.8` (and `--queries` among q0, q1 and q2), the throughput runs
are followed by latency runs: each engine under a paced load at those fractions of its
saturated rate, timed from outside by the broker's append times, under exactly-once by when
its results became visible to `read_committed` consumers (kafka_latency.py says how);
`--latency-csv` writes their quantiles for scripts/latency-plot.

    python kafka_harness.py --events 20000000 --runs 3 --queries q0,q1,q2 \
        --streams-classpath CP --flink-classpath CP --output results.md
"""

import argparse
import functools
import json
import os
import signal
import statistics
import subprocess
import sys
import time
import tomllib
import uuid
from pathlib import Path

from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

import kafka_latency
from harness import CLOCK_TICKS, ROOT, machine, session_processes

ENGINES = ("runnel", "kafka-streams", "flink")
# Also selectable: "runnel-sql", the query's SQL streamlet (crates/nexmark/blueprints/<query>-sql.toml),
# and with --baseline, "runnel-baseline" and "runnel-sql-baseline": the same run by an older build.
SQL_ENGINE = "runnel-sql"
BASELINE = "-baseline"
STREAMS = ("persons", "auctions", "bids")
SAMPLE_SECONDS = 0.25
# Kafka Streams has no watermarks: each task closes windows on the newest time it saw, and
# over a backlog one of two threads races ahead and the other's records are dropped as late.
# With one thread its windowed results are complete (scripts/nexmark/kafka-streams/README.md).
WINDOWED = ("q5", "q7", "q8", "q11")


def process_cpu(pid):
    """CPU seconds (user + system) of one process, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
    except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
        return None


class Cluster:
    """The Kafka cluster: its admin client, and the broker's process for its CPU time."""

    def __init__(self, bootstrap, broker_pid):
        self.bootstrap = bootstrap
        self.broker_pid = broker_pid
        self.admin = AdminClient({"bootstrap.servers": bootstrap})

    def end_offsets(self, topic, low=False):
        """The end offset of every partition of `topic` (its first offset with `low`), or
        None when it does not exist."""
        # Listing every topic: asking for one by name would have the broker create it.
        metadata = self.admin.list_topics(timeout=10).topics.get(topic)
        if metadata is None or metadata.error is not None:
            return None
        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "nexmark-harness"})
        try:
            return {partition: consumer.get_watermark_offsets(TopicPartition(topic, partition),
                                                              timeout=10)[0 if low else 1]
                    for partition in metadata.partitions}
        finally:
            consumer.close()

    def committed(self, groups, topics):
        """The sum of the offsets `groups` committed on the partitions of `topics`."""
        total = 0
        for group in groups:
            request = [ConsumerGroupTopicPartitions(group)]
            for future in self.admin.list_consumer_group_offsets(request).values():
                for partition in future.result(timeout=10).topic_partitions:
                    if partition.topic in topics and partition.offset >= 0:
                        total += partition.offset
        return total

    def delete_topics(self, prefixes):
        """Deletes every topic whose name starts with one of `prefixes`."""
        names = [name for name in self.admin.list_topics(timeout=10).topics
                 if name.startswith(tuple(prefixes))]
        if names:
            for future in self.admin.delete_topics(names, operation_timeout=30).values():
                future.result(timeout=60)
            while set(names) & set(self.admin.list_topics(timeout=10).topics):
                time.sleep(0.2)

    def create_topic(self, name, partitions):
        """Creates `name` kept forever: the events' times are from 2024, so the broker's
        default retention (7 days by record time) would delete them as they arrive."""
        topic = NewTopic(name, partitions, 1, config={"retention.ms": "-1"})
        self.admin.create_topics([topic])[name].result(timeout=30)

    def broker_cpu(self):
        return process_cpu(self.broker_pid) if self.broker_pid else 0.0


def events_prefix(arguments):
    return f"nexmark-{arguments.events}-p{arguments.partitions}"


def fill(arguments, cluster, work):
    """Writes the events into the three topics, unless a run before left them complete."""
    prefix = events_prefix(arguments)
    counts = [cluster.end_offsets(f"{prefix}-{stream}") for stream in STREAMS]
    starts = [cluster.end_offsets(f"{prefix}-{stream}", low=True) for stream in STREAMS]
    if (all(counts) and sum(sum(c.values()) for c in counts) == arguments.events
            and not any(sum(s.values()) for s in starts)):
        print(f"events: reusing {prefix}-*", file=sys.stderr)
        return
    # The generator's checkpoints are topics of the fill app, named after the prefix too: a
    # fill that left them would resume from them and write nothing.
    cluster.delete_topics([f"{prefix}-"])
    for stream in STREAMS:
        cluster.create_topic(f"{prefix}-{stream}", arguments.partitions)
    topics = "".join(f'\n[topics.{stream}]\nname = "{prefix}-{stream}"\npartitions = '
                     f'{arguments.partitions}\nproducers = ["generator.{stream}"]\n'
                     for stream in STREAMS)
    blueprint = work / "fill.toml"
    blueprint.write_text(f'name = "{prefix}-fill"\n\n[streamlets]\ngenerator = "generator"\n{topics}')
    started = time.monotonic()
    subprocess.run([str(arguments.nexmark), "run", str(blueprint), "--kafka", cluster.bootstrap,
                    "--data-dir", str(work / "fill-data"), "--view", "off", "--admin", "off",
                    "--set", f"generator.count={arguments.events}"], check=True,
                   stdout=subprocess.DEVNULL)
    seconds = time.monotonic() - started
    print(f"events: {arguments.events:,} written to {prefix}-* in {seconds:.1f} s "
          f"({arguments.events / seconds:,.0f} events/s)", file=sys.stderr)


@functools.cache
def generator_schema(nexmark, stream):
    """The JSON of the Avro schema the generator writes `stream` with, from the descriptor."""
    described = json.loads(subprocess.run([str(nexmark), "describe"], check=True,
                                          capture_output=True, text=True).stdout)
    generator = next(s for s in described["streamlets"] if s["type"] == "generator")
    outlet = next(o for o in generator["outlets"] if o["name"] == stream)
    return json.dumps(outlet["schema"]["definition"])


def toml_value(value):
    """A TOML literal of a blueprint value (strings, integers, lists and tables of them)."""
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a TOML basic string
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {toml_value(v)}" for k, v in value.items()) + " }"
    raise SystemExit(f"cannot write {value!r} into a blueprint")


class Run:
    """One engine running one query: its command, its consumer groups and its input topics."""

    def __init__(self, arguments, work, engine, query, number, kind="nxk", prefix=None):
        """`prefix`: the input topics' (default: the filled events')."""
        self.engine, self.query = engine, query
        self.name = f"{kind}-{query}-{engine}-{number}-{uuid.uuid4().hex[:6]}"
        self.output = f"{self.name}-results"
        self.committed = 0
        # Topics the run writes, created by the harness so that they keep records forever.
        self.written = [self.output]
        # Topics between two streamlets of the run, with the groups that read them: the run
        # ends once they too have read all of them (q4's second streamlet, say).
        self.between = []
        prefix = prefix or events_prefix(arguments)
        guarantee = arguments.guarantee
        if engine.removesuffix(BASELINE) in ("runnel", SQL_ENGINE):
            if engine.endswith(BASELINE) and arguments.baseline is None:
                raise SystemExit(f"{engine} needs --baseline")
            binary = arguments.baseline if engine.endswith(BASELINE) else arguments.nexmark
            blueprint = f"{query}-sql" if engine.startswith(SQL_ENGINE) else query
            self.command, self.groups, streams = self.runnel(arguments, work, prefix, blueprint,
                                                             binary)
        else:
            base = query.removesuffix("-sql")
            streams = {"q3": ["persons", "auctions"], "q4": ["auctions", "bids"],
                       "q8": ["persons", "auctions"], "q9": ["auctions", "bids"]}.get(base, ["bids"])
            self.groups = [self.name]
            if engine == "kafka-streams":
                self.command = ["java", *arguments.java_options, "-cp", arguments.streams_classpath,
                                "runnel.nexmark.streams.Main", "--bootstrap", arguments.bootstrap,
                                "--query", base, "--application-id", self.name, "--output",
                                self.output, "--guarantee", guarantee, "--threads",
                                str(1 if base in WINDOWED else arguments.parallelism),
                                "--state-dir", str(work / self.name),
                                "--commit-interval-ms", str(arguments.commit_interval_ms),
                                "--input-prefix", f"{prefix}-"]
                for setting in arguments.streams_settings:
                    self.command += ["--setting", setting]
            elif engine == "flink":
                self.command = ["java", *arguments.java_options, "-cp", arguments.flink_classpath,
                                "runnel.nexmark.flink.Main", "--bootstrap", arguments.bootstrap,
                                "--query", base, "--group", self.name, "--output", self.output,
                                "--guarantee", guarantee, "--parallelism",
                                str(arguments.parallelism), "--input-prefix", f"{prefix}-",
                                "--checkpoint-interval-ms", str(arguments.commit_interval_ms)]
            else:
                raise SystemExit(f"unknown engine {engine}")
        self.inputs = {f"{prefix}-{stream}" for stream in streams}

    def runnel(self, arguments, work, prefix, blueprint, binary):
        """`binary` running the blueprint reading the filled topics, and the groups its
        inlets join."""
        source = tomllib.loads((ROOT / "crates/nexmark/blueprints" / f"{blueprint}.toml").read_text())
        streamlets = {name: kind for name, kind in source["streamlets"].items() if kind != "generator"}
        lines = [f'name = "{self.name}"', "", "[streamlets]"]
        for name, kind in streamlets.items():
            if arguments.guarantee == "exactly-once":
                # The app registers each query again as `<query>-exactly-once`; a SQL
                # streamlet says its delivery in its table.
                kind = (dict(kind, delivery="exactly-once") if isinstance(kind, dict)
                        else f"{kind}-exactly-once")
            lines.append(f"{name} = {toml_value(kind)}")
        groups, streams = [], []
        for topic, settings in source.get("topics", {}).items():
            producers = [p for p in settings.get("producers", []) if not p.startswith("generator.")]
            consumers = settings.get("consumers", [])
            if not consumers and not producers:
                continue  # an event stream this query does not read
            lines += ["", f"[topics.{topic}]"]
            if topic in STREAMS:
                # The generator filled the topic before: its schema is declared, as for any
                # topic written from outside the blueprint (a SQL table reads it from there).
                lines.append(f'name = "{prefix}-{topic}"')
                lines.append(f"schema = {toml_value(generator_schema(arguments.nexmark, topic))}")
                groups += [f"{self.name}.{consumer}" for consumer in consumers]
                streams.append(topic)
            else:
                name = self.output if topic.endswith("-results") else f"{self.name}-{topic}"
                lines.append(f'name = "{name}"')
                if name != self.output:
                    self.written.append(name)  # between two streamlets, as q4's winning bids
                    if consumers:
                        self.between.append((name, [f"{self.name}.{c}" for c in consumers]))
            lines.append(f"partitions = {arguments.partitions}")
            for key, value in settings.items():
                if key not in ("name", "partitions", "producers"):
                    lines.append(f"{key} = {toml_value(value)}")
            if producers:
                lines.append(f"producers = {toml_value(producers)}")
        blueprint = work / f"{self.name}.toml"
        blueprint.write_text("\n".join(lines) + "\n")
        command = [str(binary), "run", str(blueprint), "--kafka", arguments.bootstrap,
                   "--data-dir", str(work / self.name), "--view", "off", "--admin", "off",
                   "--commit-interval", f"{arguments.commit_interval_ms}ms"]
        for setting in arguments.runnel_kafka_settings:
            command += ["--kafka-setting", setting]
        return command, groups, streams


def caught_up(cluster, run):
    """Whether the groups reading the topics between the run's streamlets read all of them."""
    return all(cluster.committed(groups, {topic}) >= sum((cluster.end_offsets(topic) or {}).values())
               for topic, groups in run.between)


def run_once(arguments, cluster, work, run):
    """Runs `run` until its groups committed every input record; returns its figures."""
    total = sum(sum(cluster.end_offsets(topic).values()) for topic in run.inputs)
    warm_mark, done_mark = arguments.warm_up * total, arguments.done * total
    log = open(work / f"{run.name}.log", "wb")
    started = time.monotonic()
    broker_started = cluster.broker_cpu()
    process = subprocess.Popen(run.command, cwd=work, stdout=log, stderr=subprocess.STDOUT,
                               start_new_session=True)
    for topic in run.written:
        cluster.create_topic(topic, arguments.partitions)
    cpu_by_pid, peak_rss, warm, done, end, failure = {}, 0, None, None, None, None
    capped = False
    progress = (0.0, -1)  # when the committed count last moved, and to what
    try:
        while True:
            time.sleep(SAMPLE_SECONDS)
            processes = session_processes(process.pid)
            for pid, cpu, _ in processes:
                cpu_by_pid[pid] = cpu
            peak_rss = max(peak_rss, sum(rss for _, _, rss in processes))
            committed = run.committed = cluster.committed(run.groups, run.inputs)
            sample = {"time": time.monotonic() - started, "cpu": sum(cpu_by_pid.values()),
                      "committed": committed, "broker": cluster.broker_cpu() - broker_started}
            if warm is None and committed >= warm_mark:
                warm = sample
            if done is None and committed >= done_mark:
                done = sample
            if done is None and warm and sample["time"] - warm["time"] >= arguments.steady_seconds:
                done = end = sample
                capped = True
                break
            # The end of the input (and of the topics between the run's streamlets), or a
            # while after the done mark: an engine may commit its last offsets late once
            # nothing more arrives (Flink's Kafka source, up to 10 s).
            if ((committed >= total and caught_up(cluster, run))
                    or (done and sample["time"] - done["time"] > arguments.tail)):
                end = sample
                break
            if process.poll() is not None:
                failure = f"exit {process.returncode}"
                break
            if committed != progress[1]:
                progress = (sample["time"], committed)
            elif done is None and sample["time"] - progress[0] > arguments.stall:
                # An engine failing and restarting in a loop commits nothing more.
                failure = f"stalled for {arguments.stall:.0f} s"
                break
            if sample["time"] > arguments.timeout:
                failure = "timeout"
                break
    finally:
        stop(process)
        log.close()
    if failure:
        tail = (work / f"{run.name}.log").read_text(errors="replace").strip().splitlines()[-3:]
        print(f"    {run.engine} {run.query}: {failure} at {run.committed:,} of {total:,}: "
              f"{' | '.join(tail)[:400]}", file=sys.stderr)
        return {"failure": failure}
    outputs = sum((cluster.end_offsets(run.output) or {}).values())
    steady = done["committed"] - warm["committed"]
    if done["time"] - warm["time"] < 10 * SAMPLE_SECONDS or steady <= 0:
        print(f"    {run.engine} {run.query}: too short to measure after the warm-up "
              "(more --events)", file=sys.stderr)
        return {"failure": "too short"}
    return {"records": total, "outputs": outputs, "wall": end["time"], "cpu": end["cpu"],
            "rss": peak_rss, "steady_rate": steady / (done["time"] - warm["time"]),
            "steady_cpu": (done["cpu"] - warm["cpu"]) / steady,
            "steady_broker": (done["broker"] - warm["broker"]) / steady,
            "warm_time": warm["time"], "warm_cpu": warm["cpu"], "capped": capped}


def stop(process):
    """SIGTERM to the engine's whole session, SIGKILL after 15 s."""
    for sig, grace in ((signal.SIGTERM, 15), (signal.SIGKILL, 5)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=grace)
            os.killpg(process.pid, signal.SIGKILL)  # whatever the leader left behind
            return
        except subprocess.TimeoutExpired:
            continue
        except ProcessLookupError:
            return


def median(values):
    return statistics.median(values) if values else None


def table(arguments, results, engines):
    """The markdown table of `results`; with runnel-sql among the engines, a last column
    gives the SQL streamlet's events per CPU-second over each other engine's."""
    sql = SQL_ENGINE in engines
    columns = 12 if sql else 11
    lines = ["| query | engine | steady events/s | steady events per CPU-s (min to max) "
             "| CPU us per event, steady | broker CPU us per event | whole run: wall s, CPU s "
             "| warm-up: wall s, CPU s | peak RSS MiB | outputs | Runnel's events per CPU-s over this |"
             + (" Runnel SQL's over this |" if sql else ""),
             "|---" * columns + "|"]

    def efficiencies(engine, query):
        runs = [r for r in results.get((engine, query), []) if "failure" not in r]
        return runs, [1 / r["steady_cpu"] for r in runs]

    for query in arguments.queries:
        base = median(efficiencies("runnel", query)[1] or [0]) or None
        sql_base = median(efficiencies(SQL_ENGINE, query)[1] or [0]) or None
        for engine in engines:
            runs, efficiency = efficiencies(engine, query)
            if not runs:
                failures = sorted({r["failure"] for r in results.get((engine, query), [])})
                lines.append(f"| {query} | {engine} | {', '.join(failures) or 'not run'} |"
                             + " |" * (columns - 2))
                continue
            row = {"efficiency": median(efficiency)}
            ratio = f"{base / row['efficiency']:.2f}x" if base and engine != "runnel" else ""
            if sql:
                over = (f"{sql_base / row['efficiency']:.2f}x"
                        if sql_base and engine != SQL_ENGINE else "")
                ratio += f" | {over}"
            lines.append(
                f"| {query} | {engine} | {median([r['steady_rate'] for r in runs]):,.0f} "
                f"| {row['efficiency']:,.0f} ({min(efficiency):,.0f} to {max(efficiency):,.0f}) "
                f"| {median([r['steady_cpu'] for r in runs]) * 1e6:.2f} "
                f"| {median([r['steady_broker'] for r in runs]) * 1e6:.2f} "
                f"| {median([r['wall'] for r in runs]):.1f}, {median([r['cpu'] for r in runs]):.1f} "
                f"| {median([r['warm_time'] for r in runs]):.1f}, {median([r['warm_cpu'] for r in runs]):.1f} "
                f"| {median([r['rss'] for r in runs]) / 2**20:,.0f} "
                f"| {median([r['outputs'] for r in runs]):,.0f}"
                f"{' (capped)' if any(r.get('capped') for r in runs) else ''} | {ratio} |")
    return "\n".join(lines)


def start_cluster(arguments, work):
    """Starts a one-node Apache Kafka with scripts/kafka-dev; returns bootstrap and pid."""
    directory = work / "kafka"
    bootstrap = subprocess.run([str(ROOT / "scripts/kafka-dev"), "start", "--dir", str(directory)],
                               check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1]
    return bootstrap, int((directory / "node-1" / "pid").read_text())


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=20_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--queries", default="q0,q1,q2")
    parser.add_argument("--engines", default=",".join(ENGINES))
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--parallelism", type=int, default=2,
                        help="Flink's parallelism and Kafka Streams' threads")
    parser.add_argument("--guarantee", default="at-least-once", choices=("at-least-once", "exactly-once"))
    parser.add_argument("--commit-interval-ms", type=int, default=1000,
                        help="how often every engine commits (and under exactly-once, "
                             "commits its transaction)")
    parser.add_argument("--warm-up", type=float, default=0.2,
                        help="fraction of the input committed before the steady part begins")
    parser.add_argument("--done", type=float, default=0.9,
                        help="fraction of the input committed when the steady part ends")
    parser.add_argument("--steady-seconds", type=float, default=300,
                        help="the longest steady part: a run still short of the done mark "
                             "this long after its warm-up is measured up to there and ended")
    parser.add_argument("--tail", type=float, default=30,
                        help="seconds after the done mark to wait for the last commits")
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--stall", type=float, default=120,
                        help="seconds without a new commit before the done mark that fail a run")
    parser.add_argument("--target", default=os.environ.get("CARGO_TARGET_DIR", str(ROOT / "target")))
    parser.add_argument("--baseline", default=None,
                        help="a target directory whose release/nexmark runs the engines "
                             "runnel-baseline and runnel-sql-baseline")
    parser.add_argument("--streams-classpath", default="", help="the Kafka Streams peer's -cp")
    parser.add_argument("--flink-classpath", default="", help="the Flink peer's -cp")
    parser.add_argument("--runnel-kafka-setting", action="append", default=[],
                        dest="runnel_kafka_settings", metavar="KEY=VALUE",
                        help="a librdkafka setting for Runnel's engines (`--kafka-setting`)")
    parser.add_argument("--streams-setting", action="append", default=[],
                        dest="streams_settings", metavar="KEY=VALUE",
                        help="a Kafka Streams setting for its engine, e.g. producer.linger.ms=5 "
                             "(its default is 100)")
    parser.add_argument("--java-option", action="append", default=[], dest="java_options")
    parser.add_argument("--bootstrap", default=None,
                        help="an existing cluster (default: start one in WORK/kafka)")
    parser.add_argument("--broker-pid", type=int, default=None,
                        help="with --bootstrap: the broker's process, for its CPU time")
    parser.add_argument("--work", type=Path, required=True, help="scratch directory, kept")
    parser.add_argument("--output", type=Path, required=True, help="the markdown table goes here")
    parser.add_argument("--latency-loads", default=None,
                        help="after the throughput runs: each query's end-to-end latency at these "
                             "fractions of each engine's saturated rate, e.g. 0.5,0.8 "
                             "(kafka_latency.py)")
    parser.add_argument("--latency-saturation-events", type=int, default=8_000_000,
                        help="events the generator writes unpaced to find each engine's "
                             "saturated rate")
    parser.add_argument("--latency-saturated", type=float, default=None,
                        help="take this as every engine's saturated rate (events/s) instead of "
                             "measuring it: to compare settings at the same load")
    parser.add_argument("--latency-seconds", type=float, default=30,
                        help="seconds of paced load per latency run")
    parser.add_argument("--latency-warm-up", type=float, default=10,
                        help="seconds at the start of a latency run left out")
    parser.add_argument("--latency-only", action="store_true",
                        help="with --latency-loads: skip the throughput runs (and the fill)")
    parser.add_argument("--latency-csv", type=Path, default=None,
                        help="write the latency quantiles of each engine and load here, for "
                             "scripts/latency-plot (with several queries, PATH-QUERY.SUFFIX)")
    arguments = parser.parse_args()
    arguments.queries = arguments.queries.split(",")
    if arguments.latency_only and arguments.latency_loads is None:
        raise SystemExit("--latency-only needs --latency-loads")
    unmatched = [q for q in arguments.queries if q not in kafka_latency.MATCHES]
    if arguments.latency_loads is not None and unmatched:
        raise SystemExit(f"--latency-loads measures {', '.join(kafka_latency.MATCHES)}, "
                         f"not {', '.join(unmatched)}")
    arguments.nexmark = Path(arguments.target) / "release" / "nexmark"
    if arguments.baseline is not None:
        arguments.baseline = Path(arguments.baseline) / "release" / "nexmark"
    engines = arguments.engines.split(",")
    if any(engine.startswith(SQL_ENGINE) for engine in engines):
        missing = [q for q in arguments.queries
                   if not (ROOT / "crates/nexmark/blueprints" / f"{q}-sql.toml").exists()]
        if missing:
            raise SystemExit(f"{SQL_ENGINE}: no SQL blueprint for {', '.join(missing)} "
                             "(crates/nexmark/blueprints/<query>-sql.toml)")
    work = arguments.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    broker_pid = arguments.broker_pid
    if arguments.bootstrap is None:
        arguments.bootstrap, broker_pid = start_cluster(arguments, work)
    cluster = Cluster(arguments.bootstrap, broker_pid)
    report = "" if arguments.latency_only else throughput_runs(arguments, cluster, work, engines)
    if arguments.latency_loads is not None:
        report += "\n" + latency_runs(arguments, cluster, work, engines) + "\n"
    arguments.output.write_text(report)
    print(report)


def throughput_runs(arguments, cluster, work, engines):
    """Each query on each engine over the filled topics, interleaved over `--runs` rounds;
    returns the table."""
    fill(arguments, cluster, work)
    results, load = {}, [os.getloadavg()[0]]
    for number in range(arguments.runs):
        for query in arguments.queries:
            # Rotate the order so no engine always runs first (or after the same one).
            order = engines[number % len(engines):] + engines[:number % len(engines)]
            for engine in order:
                earlier = results.get((engine, query), [])
                if earlier and all("failure" in r for r in earlier):
                    continue
                run = Run(arguments, work, engine, query, number + 1)
                try:
                    result = run_once(arguments, cluster, work, run)
                finally:
                    cluster.delete_topics([run.name])
                results.setdefault((engine, query), []).append(result)
                if "failure" not in result:
                    print(f"run {number + 1} {query} {engine}: {result['steady_rate']:,.0f} events/s, "
                          f"{result['steady_cpu'] * 1e6:.2f} us CPU per event steady "
                          f"(broker {result['steady_broker'] * 1e6:.2f}); whole run "
                          f"{result['wall']:.1f} s, {result['cpu']:.1f} s CPU, "
                          f"{result['rss'] / 2**20:.0f} MiB, {result['outputs']:,} outputs",
                          file=sys.stderr, flush=True)
                load.append(os.getloadavg()[0])
    header = (f"{arguments.events:,} events in {arguments.partitions} partitions per topic, "
              f"{arguments.runs} interleaved runs per query and engine (medians), "
              f"{arguments.guarantee}, parallelism {arguments.parallelism}, steady between "
              f"{arguments.warm_up:.0%} and {arguments.done:.0%} of the input committed; "
              f"{machine()}; load average during the run "
              f"{min(load):.1f} to {max(load):.1f}.")
    return header + "\n\n" + table(arguments, results, engines) + "\n"


def latency_runs(arguments, cluster, work, engines):
    """The latency of each query at each of `--latency-loads` times each engine's saturated
    rate (the rate it keeps up with while the generator writes as fast as it can beside
    it), the engines and loads interleaved over `--runs` rounds; returns their sections."""
    loads = [float(load) for load in arguments.latency_loads.split(",")]
    sections = []
    for query in arguments.queries:
        results, rates, load_average = {}, {}, [os.getloadavg()[0]]

        def once(engine, number, rate, count):
            prefix = f"nxl-{uuid.uuid4().hex[:8]}"
            run = Run(arguments, work, engine, query, number, kind="nxl", prefix=prefix)
            try:
                return kafka_latency.measure(arguments, cluster, work, run, rate, count, stop)
            except (RuntimeError, subprocess.CalledProcessError) as error:
                return {"failure": str(error)[:300]}
            finally:
                cluster.delete_topics([prefix, run.name])
                load_average.append(os.getloadavg()[0])

        for engine in engines:
            if arguments.latency_saturated:
                rates[engine] = arguments.latency_saturated
                continue
            result = once(engine, 0, 0, arguments.latency_saturation_events)
            if "failure" in result:
                kafka_latency.report(f"saturation {query} {engine}: {result['failure']}")
                continue
            rates[engine] = result["output_rate"]
            kafka_latency.report(f"saturation {query} {engine}: {rates[engine]:,.0f} events/s "
                                 f"(generator at {result['rate']:,.0f} bids/s)")
        for number in range(arguments.runs):
            order = engines[number % len(engines):] + engines[:number % len(engines)]
            for load in loads:
                for engine in (e for e in order if e in rates):
                    rate = rates[engine] * load
                    result = once(engine, number + 1, rate, int(rate * arguments.latency_seconds))
                    kafka_latency.report(f"latency run {number + 1} {query} {engine} at {load:.0%}: "
                                         + (result.get("failure") or kafka_latency.summary(result)))
                    results.setdefault((engine, load), []).append(result)
        if arguments.latency_csv is not None:
            path = arguments.latency_csv
            if len(arguments.queries) > 1:
                path = path.with_name(f"{path.stem}-{query}{path.suffix}")
            kafka_latency.write_quantiles(path, results, rates, loads, engines)
        saturated = (f"every engine's saturated rate taken as {arguments.latency_saturated:,.0f} "
                     "events/s" if arguments.latency_saturated else
                     f"saturated rates with the generator writing "
                     f"{arguments.latency_saturation_events:,} events unpaced beside each engine")
        timed = ("each result timed from when a read_committed consumer could see it"
                 if arguments.guarantee == "exactly-once" else "each result timed by its append")
        sections.append(
            f"{query}'s end-to-end latency on Kafka, {arguments.guarantee}, commits every "
            f"{arguments.commit_interval_ms} ms, {timed} (kafka_latency.py): " + saturated
            + f"; then {arguments.latency_seconds:g} s of paced load per run, the "
            f"first {arguments.latency_warm_up:g} s left out, {arguments.runs} interleaved runs "
            f"per engine and load (medians); {machine()}; load average {min(load_average):.1f} to "
            f"{max(load_average):.1f}.\n\n" + kafka_latency.table(results, rates, loads, engines))
    return "\n\n".join(sections)


if __name__ == "__main__":
    main()
