#!/usr/bin/env bash
# bench.sh BIN: the similarity stage's benchmark (make bench calls it).
#
# Generates KW_BENCH_KEYWORDS (default 1,000,000) sample keywords for us,
# ingests them, runs `kwdata similarity` KW_BENCH_RUNS (default 3) times
# under /usr/bin/time -v and prints the median wall time, peak RSS and
# keywords/s; then `kwdata build-index` on the lake it wrote, KW_BENCH_RUNS
# times, with its median wall time, peak RSS and index bytes a keyword.
# Beside them, measured in the same run, the baseline: the
# brute-force oracle (similarity.Brute, every pair compared) and the fast
# Compute on KW_BENCH_BRUTE_KEYWORDS (default 20,000) generated keywords,
# via `go test -bench` (needs the Go toolchain and this source tree).
#
# The 10M case: make bench-similarity-10m, or
#   KW_BENCH_KEYWORDS=10000000 KW_BENCH_RUNS=1 KW_BENCH_DIR=/big/disk/kwb10m \
#     bash similarity/bench.sh bin/kwdata
# It needs about 30 GB of disk under KW_BENCH_DIR (21.5 GB of sample files,
# the lake, the spilled SERP runs while ingesting) and 12 GB of memory
# (ingest's peak); generating and ingesting take about 11 minutes before
# the first similarity run.
# KW_BENCH_DIR keeps the data (default: a temporary folder, removed after).
set -euo pipefail

BIN=${1:?usage: bash similarity/bench.sh path/to/kwdata}
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
N=${KW_BENCH_KEYWORDS:-1000000}
RUNS=${KW_BENCH_RUNS:-3}
NB=${KW_BENCH_BRUTE_KEYWORDS:-20000}
DATE=2026-11-21
ROOT=$(cd "$(dirname "$0")/.." && pwd)

if [[ -n "${KW_BENCH_DIR:-}" ]]; then
	DIR=$KW_BENCH_DIR
	mkdir -p "$DIR"
else
	DIR=$(mktemp -d "${TMPDIR:-/tmp}/kwdata-bench.XXXXXX")
	trap 'rm -rf "$DIR"' EXIT
fi
[[ -x /usr/bin/time ]] || { echo "bench.sh: /usr/bin/time is missing (apt-get install time)" >&2; exit 1; }

# seconds converts /usr/bin/time's "h:mm:ss" or "m:ss.ss" to seconds.
seconds() { awk -F: '{ s = 0; for (i = 1; i <= NF; i++) s = s * 60 + $i; printf "%.2f", s }' <<<"$1"; }
median() { sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

echo "== similarity benchmark: $N keywords, $RUNS runs ($(nproc) cores)"
if [[ ! -f "$DIR/in/us/serps.jsonl" ]] || [[ "$(cat "$DIR/in/.n" 2>/dev/null)" != "$N" ]]; then
	rm -rf "$DIR/in" "$DIR/data"
	"$BIN" sample --out "$DIR/in" --keywords "$N" --countries us --seed 1 >"$DIR/sample.log" 2>&1 || {
		echo "bench.sh: kwdata sample failed:" >&2
		tail -n 5 "$DIR/sample.log" >&2
		exit 1
	}
	echo "$N" >"$DIR/in/.n"
fi
if [[ ! -d "$DIR/data/lake/keywords/country=us/date=$DATE" ]]; then
	"$BIN" ingest --data "$DIR/data" --date "$DATE" --country us \
		--planner-csv "$DIR/in/us/keyword-planner.csv" --serp-jsonl "$DIR/in/us/serps.jsonl" >"$DIR/ingest.log" 2>&1 || {
		echo "bench.sh: kwdata ingest failed:" >&2
		tail -n 5 "$DIR/ingest.log" >&2
		exit 1
	}
fi

walls=() rss=()
for i in $(seq "$RUNS"); do
	"/usr/bin/time" -v -o "$DIR/time.$i" "$BIN" similarity --data "$DIR/data" --date "$DATE" --country us \
		>"$DIR/out.$i" 2>"$DIR/log.$i" </dev/null
	w=$(seconds "$(awk -F': ' '/Elapsed \(wall clock\)/ { print $2 }' "$DIR/time.$i")")
	r=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$DIR/time.$i")
	walls+=("$w") rss+=("$r")
	echo "run $i: ${w}s wall, $((r / 1024)) MiB peak RSS: $(tail -n1 "$DIR/out.$i")"
done
W=$(printf '%s\n' "${walls[@]}" | median)
R=$(printf '%s\n' "${rss[@]}" | median)
KPS=$(awk -v n="$N" -v w="$W" 'BEGIN { printf "%.0f", n / w }')
echo
printf '%-44s %10s %12s %14s\n' "measure" "wall" "peak RSS" "keywords/s"
printf '%-44s %9ss %8d MiB %14s\n' "kwdata similarity, $N keywords (median)" "$W" "$((R / 1024))" "$KPS"

# build-index on the lake just computed (issue target: 1M keywords in 20 s,
# memory bounded): median wall, peak RSS, and the index size a keyword.
bwalls=() brss=() bpk=""
for i in $(seq "$RUNS"); do
	"/usr/bin/time" -v -o "$DIR/btime.$i" "$BIN" build-index --data "$DIR/data" --date "$DATE" \
		>"$DIR/bout.$i" 2>"$DIR/blog.$i" </dev/null
	w=$(seconds "$(awk -F': ' '/Elapsed \(wall clock\)/ { print $2 }' "$DIR/btime.$i")")
	r=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$DIR/btime.$i")
	bwalls+=("$w") brss+=("$r")
	# "published index ID: data date D, K keywords in C countries, B bytes"
	bpk=$(awk '{ for (i = 1; i <= NF; i++) { if ($(i+1) == "keywords") k = $i; if ($(i+1) == "bytes") b = $i } } END { if (k > 0) printf "%.0f", b / k }' "$DIR/bout.$i")
done
BW=$(printf '%s\n' "${bwalls[@]}" | median)
BR=$(printf '%s\n' "${brss[@]}" | median)
printf '%-44s %9ss %8d MiB %14s\n' "kwdata build-index, $N keywords (median)" "$BW" "$((BR / 1024))" \
	"$(awk -v n="$N" -v w="$BW" 'BEGIN { printf "%.0f", n / w }')"
printf '%-44s %10s\n' "  index bytes a keyword" "$bpk"
# Retention is not run here: drop all but the published build.
cur=$(cat "$DIR/data/index/CURRENT" 2>/dev/null || true)
for b in "$DIR"/data/index/*/; do
	[[ "$(basename "$b")" == "$cur" ]] || rm -rf "$b"
done

# Baseline in the same run: brute force and the fast path on NB keywords.
cd "$ROOT"
BOUT=$(go test -run '^$' -bench "^Benchmark(Brute|Compute)/n=${NB}\$" -benchtime 1x -count 1 ./similarity 2>&1) || {
	echo "$BOUT" >&2
	exit 1
}
awk -v nb="$NB" '/^Benchmark(Brute|Compute)\// {
	name = ($1 ~ /Brute/) ? "brute force (every pair), " nb " keywords" : "Compute, same " nb " keywords"
	for (i = 1; i <= NF; i++) { if ($(i+1) == "ns/op") ns = $i; if ($(i+1) == "keywords/s") kps = $i }
	printf "%-44s %9.2fs %12s %14.0f\n", name, ns / 1e9, "-", kps
}' <<<"$BOUT"
