"""Runs Nexmark queries on Runnel, Flink (PyFlink) and Spark (PySpark) over the same events,
interleaved, and writes a table with medians and ratios.

Every engine reads the same JSON-lines file of events (written once by `nexmark-events`
from the reference generator): Runnel through its `reader` source streamlet into the
embedded log, Flink through its filesystem source, Spark through its file stream source.
A file, rather than each engine generating events itself, because PyFlink and PySpark from
PyPI cannot run the reference generator without jars from Maven, and reading the same bytes
gives every engine the same parsing work.

Each run is one process tree started in a session of its own, sampled every 50 ms through
/proc: wall time, CPU seconds of every process in the session (user + system), and peak
resident memory of the session summed over its processes. A run that exceeds the timeout
is killed; at the end of every run the whole session is killed, and nothing else.

Start-up is the first query over 1,000 events, once per run and engine; the columns "after
start-up" take its median wall time and CPU time off each query's, and show no figure
(n/a) when less than half a second of either is left.

    python harness.py --events 1000000 --runs 3 --queries q0,q1,q2 --output results.md
"""

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")
ENGINES = ("runnel", "flink", "spark")


def session_processes(session):
    """(pid, cpu seconds, rss bytes) of every process whose session is `session`."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            # fields[0] is the state (field 3); session is field 6, utime 14, stime 15,
            # rss 24 (1-based, counting pid and comm). A zombie keeps its own times.
            if int(fields[3]) != session:
                continue
            cpu = (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
            rss = int(fields[21]) * PAGE
            found.append((int(entry), cpu, rss))
        except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
            continue
    return found


def measure(command, timeout, cwd=None, env=None):
    """Runs `command` in a new session; returns wall s, cpu s, peak rss bytes, exit code."""
    log = tempfile.TemporaryFile()
    started = time.monotonic()
    process = subprocess.Popen(command, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT,
                               start_new_session=True)
    session = process.pid
    cpu_by_pid, peak_rss, timed_out = {}, 0, False
    while True:
        # Wait without reaping, so the leader's own times can still be read once it exited.
        exited = os.waitid(os.P_PID, session, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        sample = session_processes(session)
        for pid, cpu, _ in sample:
            cpu_by_pid[pid] = cpu
        peak_rss = max(peak_rss, sum(rss for _, _, rss in sample))
        if exited is not None:
            break
        if time.monotonic() - started > timeout:
            timed_out = True
            break
        time.sleep(0.05)
    wall = time.monotonic() - started
    # The leader is done (or timed out): stop whatever it left in its session.
    try:
        os.killpg(session, signal.SIGKILL)
    except ProcessLookupError:
        pass
    code = process.wait()
    log.seek(0)
    output = log.read().decode(errors="replace")
    return {
        "wall": wall,
        "cpu": sum(cpu_by_pid.values()),
        "rss": peak_rss,
        "code": None if timed_out else code,
        "output": output,
    }


class Engines:
    """How to run a query on each engine."""

    def __init__(self, arguments, work):
        self.arguments = arguments
        self.work = work
        self.nexmark = Path(arguments.target) / "release" / "nexmark"
        self.java_env = dict(os.environ, PYSPARK_PYTHON=str(arguments.spark_python))

    def blueprint(self, query):
        """The query's blueprint with the reader in place of the generator."""
        original = (ROOT / "crates/nexmark/blueprints" / f"{query}.toml").read_text()
        if 'generator = "generator"' not in original:
            raise SystemExit(f"{query}.toml has no generator instance to replace")
        path = self.work / f"{query}.toml"
        path.write_text(original.replace('generator = "generator"', 'generator = "reader"'))
        return path

    def command(self, engine, query, events):
        if engine in ("runnel", "runnel-fsync-never", "runnel-baseline"):
            data = self.work / "runnel-data"
            shutil.rmtree(data, ignore_errors=True)
            fsync = "never" if engine == "runnel-fsync-never" else "always"
            nexmark = self.nexmark
            if engine == "runnel-baseline":
                if not self.arguments.baseline:
                    raise SystemExit("engine runnel-baseline needs --baseline")
                nexmark = Path(self.arguments.baseline) / "release" / "nexmark"
            return [str(nexmark), "run", str(self.blueprint(query)), "--data-dir", str(data),
                    "--view", "off", "--admin", "off", "--fsync", fsync,
                    "--set", f"generator.input={events / 'events.jsonl'}"]
        # A query in SQL on Runnel (`q5-sql`) is the query Flink and Spark run anyway.
        query = query.removesuffix("-sql")
        if engine == "flink":
            return [str(self.arguments.flink_python), str(ROOT / "scripts/nexmark/flink_query.py"),
                    query, str(events / "events.jsonl"), str(self.arguments.parallelism)]
        if engine == "spark":
            return [str(self.arguments.spark_python), str(ROOT / "scripts/nexmark/spark_query.py"),
                    query, str(events), str(self.arguments.parallelism)]
        raise SystemExit(f"unknown engine {engine}")

    def run(self, engine, query, events):
        result = measure(self.command(engine, query, events), self.arguments.timeout,
                         cwd=self.work, env=self.java_env)
        if result["code"] != 0:
            tail = "\n".join(result["output"].strip().splitlines()[-3:])
            unsupported = "AnalysisException" in result["output"] or "NotImplementedError" in result["output"]
            result["failure"] = "unsupported" if unsupported else (
                "timeout" if result["code"] is None else f"exit {result['code']}")
            print(f"    {engine} {query}: {result['failure']}: {tail[:300]}", file=sys.stderr)
        return result


def write_events(arguments, directory, count):
    directory.mkdir(parents=True, exist_ok=True)
    subprocess.run([str(Path(arguments.target) / "release" / "nexmark-events"), "--count", str(count),
                    "--output", str(directory / "events.jsonl")], check=True)


def median(values):
    return statistics.median(values) if values else None


def table(arguments, results, startups, engines):
    lines = []
    header = ("| query | engine | events/s | wall s | CPU s | events per CPU-s | peak RSS MiB "
              "| events/s after start-up | events per CPU-s after start-up "
              "| Runnel's events/s over this (after start-up) | this CPU over Runnel's (after start-up) |")
    lines.append(header)
    lines.append("|---" * (header.count("|") - 1) + "|")
    for query in arguments.queries:
        base = summary(results, "runnel", query, arguments.events, startups.get("runnel", []))
        for engine in engines:
            row = summary(results, engine, query, arguments.events, startups.get(engine, []))
            if row is None:
                failures = {r.get("failure") for r in results.get((engine, query), [])}
                lines.append(f"| {query} | {engine} | {', '.join(sorted(f for f in failures if f))} |"
                             + " |" * 8)
                continue
            ratio = cpu_ratio = ""
            if engine != "runnel" and base is not None:
                ratio = (f"{base['rate'] / row['rate']:.1f}x "
                         f"({after(base, row, lambda b, r: b['net_rate'] / r['net_rate'])})")
                cpu_ratio = (f"{row['cpu'] / base['cpu']:.1f}x "
                             f"({after(base, row, lambda b, r: r['net_cpu'] / b['net_cpu'])})")
            net_rate = after(row, row, lambda r, _: r["net_rate"], "{:,.0f}")
            net_efficiency = after(row, row, lambda r, _: arguments.events / r["net_cpu"], "{:,.0f}")
            lines.append(
                f"| {query} | {engine} | {row['rate']:,.0f} | {row['wall']:.2f} | {row['cpu']:.2f} | "
                f"{arguments.events / row['cpu']:,.0f} | {row['rss'] / 2**20:,.0f} | "
                f"{net_rate} | {net_efficiency} | {ratio} | {cpu_ratio} |")
    lines.append("")
    lines.append(f"{NO_FIGURE}: the query took less than {MIN_AFTER_STARTUP} s of wall or CPU "
                 "time beyond the engine's median start-up, too little to measure after it.")
    lines.append("")
    lines.append("| engine | start-up wall s | start-up CPU s | start-up peak RSS MiB |")
    lines.append("|---|---|---|---|")
    for engine in engines:
        runs = startups.get(engine, [])
        if runs:
            lines.append(f"| {engine} | {median([r['wall'] for r in runs]):.2f} | "
                         f"{median([r['cpu'] for r in runs]):.2f} | "
                         f"{median([r['rss'] for r in runs]) / 2**20:,.0f} |")
    return "\n".join(lines)


MIN_AFTER_STARTUP = 0.5
NO_FIGURE = "n/a"


def after(first, second, figure, style="{:.1f}x"):
    """An "after start-up" figure of two summaries, or n/a when either has none."""
    if first["net_rate"] is None or second["net_rate"] is None:
        return NO_FIGURE
    return style.format(figure(first, second))


def summary(results, engine, query, events, startups):
    """Medians of the successful runs, and the same with the start-up's median taken off."""
    runs = [r for r in results.get((engine, query), []) if r["code"] == 0]
    if not runs or not startups:
        return None
    wall = median([r["wall"] for r in runs])
    cpu = median([r["cpu"] for r in runs])
    startup_wall = median([r["wall"] for r in startups])
    startup_cpu = median([r["cpu"] for r in startups])
    # A query that took hardly longer than the engine's start-up leaves nothing to measure
    # after taking it off (a clamped difference would print absurd rates): no figure then.
    net_wall, net_cpu = wall - startup_wall, cpu - startup_cpu
    enough = net_wall >= MIN_AFTER_STARTUP and net_cpu >= MIN_AFTER_STARTUP
    return {"wall": wall, "rate": events / wall, "cpu": cpu,
            "rss": median([r["rss"] for r in runs]),
            "net_rate": events / net_wall if enough else None,
            "net_cpu": net_cpu if enough else None}


def machine():
    """The commit, date, CPU model and core count, for the report."""
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, text=True,
                            capture_output=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                           text=True, capture_output=True).stdout.strip()
    model = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                  if line.startswith("model name")), "unknown CPU")
    memory = next((int(line.split()[1]) // 2**20 for line in open("/proc/meminfo")
                   if line.startswith("MemTotal")), 0)
    return (f"commit {commit}{' with local changes' if dirty else ''}, "
            f"{time.strftime('%Y-%m-%d', time.gmtime())}, {model}, {os.cpu_count()} cores, "
            f"{memory} GiB")


def update_docs(path, report):
    """Replaces what is between the nexmark-results markers of `path` with `report`."""
    begin, end = "<!-- nexmark-results:begin -->", "<!-- nexmark-results:end -->"
    text = path.read_text()
    if begin not in text or end not in text:
        raise SystemExit(f"{path} has no {begin} ... {end} section to update")
    before, rest = text.split(begin, 1)
    after = rest.split(end, 1)[1]
    path.write_text(f"{before}{begin}\nMeasured at {machine()}.\n\n{report}\n{end}{after}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--queries", default="q0,q1,q2,q3,q5,q7,q8,q9,q11")
    parser.add_argument("--engines", default="runnel,runnel-fsync-never,flink,spark")
    parser.add_argument("--parallelism", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--target", default=os.environ.get("CARGO_TARGET_DIR", str(ROOT / "target")))
    parser.add_argument("--baseline", default=None,
                        help="another build's target directory (an older commit's, say): engine "
                             "runnel-baseline runs its release/nexmark, interleaved with runnel")
    parser.add_argument("--flink-python", type=Path, required=True)
    parser.add_argument("--spark-python", type=Path, required=True)
    parser.add_argument("--work", type=Path, default=None, help="scratch directory (default: a temporary one)")
    parser.add_argument("--output", type=Path, required=True, help="the markdown table goes here")
    parser.add_argument("--update-docs", type=Path, default=None,
                        help="also put the table between the nexmark-results markers of this file")
    arguments = parser.parse_args()
    arguments.queries = arguments.queries.split(",")
    engines = arguments.engines.split(",")
    scratch = Path(tempfile.mkdtemp(prefix="nexmark-", dir=arguments.work))
    try:
        small, large = scratch / "small", scratch / "large"
        write_events(arguments, small, 1_000)
        write_events(arguments, large, arguments.events)
        runner = Engines(arguments, scratch)
        results, startups = {}, {}
        load = [os.getloadavg()[0]]
        for run in range(arguments.runs):
            for query in arguments.queries:
                # Rotate the order so no engine always runs first (or after the same one).
                order = engines[run % len(engines):] + engines[:run % len(engines)]
                for engine in order:
                    if run == 0 or results.get((engine, query)) and any(r["code"] == 0 for r in results[(engine, query)]):
                        if query == arguments.queries[0]:
                            startup = runner.run(engine, query, small)
                            if startup["code"] == 0:
                                startups.setdefault(engine, []).append(startup)
                        result = runner.run(engine, query, large)
                        results.setdefault((engine, query), []).append(result)
                        print(f"run {run + 1} {query} {engine}: {result['wall']:.2f} s wall, "
                              f"{result['cpu']:.2f} s CPU, {result['rss'] / 2**20:.0f} MiB"
                              f"{'' if result['code'] == 0 else ' FAILED'}", file=sys.stderr, flush=True)
                load.append(os.getloadavg()[0])
        report = table(arguments, results, startups, engines)
        header = (f"{arguments.events:,} events, {arguments.runs} interleaved runs per query and "
                  f"engine (medians), parallelism {arguments.parallelism} for Flink and Spark, "
                  f"load average during the run {min(load):.1f} to {max(load):.1f}.")
        arguments.output.write_text(header + "\n\n" + report + "\n")
        print(header + "\n\n" + report)
        if arguments.update_docs:
            update_docs(arguments.update_docs, header + "\n\n" + report)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
