#!/usr/bin/env bash
# The whole local-state-store comparison of docs/benchmarks.md ("Local state store:
# candidates compared"), and the markdown table it quotes.
#
#   tools/state-store-comparison/run.sh [runs] [keys]      (defaults: 3 runs, 1,000,000 keys)
#
# 1. Builds each candidate from clean, in a target directory of its own, with
#    `cargo build --release --locked --no-default-features [--features X]` under
#    `nice -n 19` and `/usr/bin/time -v`, and keeps the wall time and the peak resident set
#    (GNU time's "Maximum resident set size": the largest single process of the build, such
#    as one rustc or one C++ compiler, not the sum). The sources must be downloaded already
#    (`cargo fetch` in this folder), so the network is not timed. The in-memory maps are the
#    build with no feature. A build that exceeds BUILD_LIMIT_SECONDS (default 1500, 25 min)
#    is stopped and reported as such, and its candidate is not run.
# 2. Runs every candidate RUNS times, interleaved (btreemap, hashmap, redb, fjall, sled,
#    rocksdb, then again), each in a fresh process and a fresh scratch directory.
# 3. Prints the medians as a markdown table.
#
# Settings (environment):
#   TARGET_ROOT   where the per-candidate target directories go
#                 (default ~/.cache/target-state-store-comparison; about 1 GB each for rocksdb)
#   SCRATCH       where the stores' files and the raw results go (default /tmp/state-store-comparison)
#   SKIP_BUILD=1  reuse binaries and build times from an earlier invocation
#   BUILD_LIMIT_SECONDS  as above
#
# The machine the figures come from is shared: say its load with them (the raw results
# record the load average before every run).
set -euo pipefail

runs=${1:-3}
keys=${2:-1000000}
here=$(cd "$(dirname "$0")" && pwd)
target_root=${TARGET_ROOT:-$HOME/.cache/target-state-store-comparison}
scratch=${SCRATCH:-/tmp/state-store-comparison}
build_limit=${BUILD_LIMIT_SECONDS:-1500}
results=$scratch/results
mkdir -p "$results"

# The build (cargo feature) each candidate's binary comes from.
build_of() {
  case $1 in
    btreemap | hashmap) echo maps ;;
    *) echo "$1" ;;
  esac
}
builds=(maps redb fjall sled rocksdb)
candidates=(btreemap hashmap redb fjall sled rocksdb)

# 1. Timed clean builds.
for build in "${builds[@]}"; do
  target=$target_root/$build
  if [[ ${SKIP_BUILD:-0} == 1 && -f $results/build-$build.txt ]]; then
    echo "build $build: reusing $results/build-$build.txt" >&2
    continue
  fi
  rm -rf "$target"
  features=(--no-default-features)
  [[ $build != maps ]] && features+=(--features "$build")
  echo "build $build: started $(date -u +%H:%M:%S), load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
  status=0
  (cd "$here" && CARGO_TARGET_DIR=$target timeout "$build_limit" \
    /usr/bin/time -v nice -n 19 cargo build --release --locked "${features[@]}") \
    >"$results/build-$build.log" 2>&1 || status=$?
  {
    echo "status=$status"
    echo "wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$results/build-$build.log")"
    echo "peak_kilobytes=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$results/build-$build.log")"
    echo "load_average_after=$(cut -d' ' -f1-3 /proc/loadavg)"
  } >"$results/build-$build.txt"
  echo "build $build: $(tr '\n' ' ' <"$results/build-$build.txt")" >&2
done

# GNU time's wall clock ("1:02.34" or "1:02:03") in seconds.
seconds_of() {
  awk -F: '{ if (NF == 3) print $1 * 3600 + $2 * 60 + $3; else print $1 * 60 + $2 }' <<<"$1"
}

built() {
  local file=$results/build-$(build_of "$1").txt
  [[ -f $file ]] && grep -qx 'status=0' "$file"
}

# 2. Interleaved runs.
: >"$results/runs.txt"
for run in $(seq 1 "$runs"); do
  for candidate in "${candidates[@]}"; do
    if ! built "$candidate"; then
      continue
    fi
    binary=$target_root/$(build_of "$candidate")/release/state-store-comparison
    load=$(cut -d' ' -f1 /proc/loadavg)
    line=$("$binary" "$candidate" "$scratch/run-$run-$candidate" "$keys")
    echo "run=$run load_average=$load $line" | tee -a "$results/runs.txt" >&2
  done
done

# The median of a field over a candidate's runs.
median() {
  local candidate=$1 field=$2
  grep " candidate=$candidate " "$results/runs.txt" |
    tr ' ' '\n' | sed -n "s/^$field=//p" | sort -g |
    awk '{ value[NR] = $1 } END { if (NR == 0) print ""; else if (NR % 2) print value[(NR + 1) / 2]; else print (value[NR / 2] + value[NR / 2 + 1]) / 2 }'
}

# Thousands separators for an integer.
grouped() {
  printf '%.0f' "$1" | sed ':a;s/\B[0-9]\{3\}\>/,&/;ta'
}

mebibytes() {
  awk -v bytes="$1" 'BEGIN { printf "%.0f", bytes / 1048576 }'
}

# 3. The table.
echo
echo "Medians of $runs interleaved runs, $(grouped "$keys") keys (16-byte keys, 48-byte values)."
echo
echo "| candidate | build, wall | build, peak RSS | load, keys/s | read, keys/s | update, keys/s | scan, keys/s | peak RSS | RSS growth per key in the load | on disk after load | disk bytes per key |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for candidate in "${candidates[@]}"; do
  build_file=$results/build-$(build_of "$candidate").txt
  wall=$(sed -n 's/^wall=//p' "$build_file")
  build_peak=$(sed -n 's/^peak_kilobytes=//p' "$build_file")
  status=$(sed -n 's/^status=//p' "$build_file")
  if [[ $status == 124 ]]; then
    echo "| $candidate | stopped after $build_limit s | | not run | | | | | | | |"
    continue
  elif [[ $status != 0 ]]; then
    echo "| $candidate | failed (status $status, see $results/build-$(build_of "$candidate").log) | | not run | | | | | | | |"
    continue
  fi
  build_cell="$(grouped "$(seconds_of "$wall")") s"
  [[ $candidate == hashmap ]] && build_cell="$build_cell (the same build)"
  disk=$(median "$candidate" disk_after_load_bytes)
  if [[ $disk == 0 ]]; then
    disk_cell="none"
    disk_per_key="none"
  else
    disk_cell="$(mebibytes "$disk") MiB"
    disk_per_key=$(awk -v bytes="$disk" -v keys="$keys" 'BEGIN { printf "%.0f", bytes / keys }')
  fi
  echo "| $candidate | $build_cell | $(mebibytes $((build_peak * 1024))) MiB" \
    "| $(grouped "$(median "$candidate" load_per_second)")" \
    "| $(grouped "$(median "$candidate" read_per_second)")" \
    "| $(grouped "$(median "$candidate" update_per_second)")" \
    "| $(grouped "$(median "$candidate" scan_per_second)")" \
    "| $(mebibytes "$(median "$candidate" peak_resident_bytes)") MiB" \
    "| $(grouped "$(median "$candidate" resident_growth_per_key)") B" \
    "| $disk_cell | $disk_per_key |"
done
