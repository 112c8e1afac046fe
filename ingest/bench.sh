#!/usr/bin/env bash
# bench.sh BIN: the ingest stage's benchmark (make bench-ingest calls it).
#
# On the same sample SERP JSONL file of KW_BENCH_KEYWORDS (default
# 1,000,000) keywords, in alternating rounds (KW_BENCH_RUNS, default 3):
#   kwdata ingest --serp-jsonl   (parse, url_key, sort by keyword and rank,
#                                 zstd Parquet)
#   DuckDB                       (read_json, unnest, ORDER BY keyword, rank,
#                                 COPY TO zstd Parquet, without url_key:
#                                 ingest/bench-duckdb.mjs)
# and prints the median wall time and peak RSS of each and their ratio;
# then kwdata ingest of the planner export and the SERPs together, the
# nightly run's ingest, once.
#
# DuckDB runs through its Node package, a baseline only: KWDATA_DUCKDB
# names a folder holding node_modules/@duckdb/node-api (.ci/run installs
# it; npm install --prefix DIR @duckdb/node-api@1.5.6-r.1). Without it,
# or with KW_BENCH_DUCKDB=0, the baseline rows are skipped.
#
# The 10M case: make bench-ingest-10m (KW_BENCH_KEYWORDS=10000000,
# KW_BENCH_RUNS=0: only the planner + SERPs ingest): about 21.5 GB of sample files, the
# lake (4 GB) and the spilled runs (about 6 GB) under KW_BENCH_DIR.
# KW_BENCH_IN may name a folder that already holds us/keyword-planner.csv
# and us/serps.jsonl of that many keywords, which is then used instead of
# generating them (the 10M sample of another run: KW_BENCH_IN=DIR/in).
# KW_BENCH_DIR keeps the data (default: a temporary folder, removed
# after).
#
# The planner + SERPs row runs KW_BENCH_ALL_RUNS times (default 1); with
# KW_BENCH_BASE_BIN (a baseline kwdata, say main's) it alternates that
# binary and this one (B K B K) and prints the medians of both, wall and
# CPU time (user + sys) and peak RSS, and their ratios.
set -euo pipefail

BIN=${1:?usage: bash ingest/bench.sh path/to/kwdata}
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
N=${KW_BENCH_KEYWORDS:-1000000}
RUNS=${KW_BENCH_RUNS:-3}
DATE=2026-11-21
ROOT=$(cd "$(dirname "$0")/.." && pwd)

if [[ -n "${KW_BENCH_DIR:-}" ]]; then
	DIR=$KW_BENCH_DIR
	mkdir -p "$DIR"
else
	DIR=$(mktemp -d "${TMPDIR:-/tmp}/kwdata-bench-ingest.XXXXXX")
	trap 'rm -rf "$DIR"' EXIT
fi
[[ -x /usr/bin/time ]] || { echo "bench.sh: /usr/bin/time is missing (apt-get install time)" >&2; exit 1; }

# seconds converts /usr/bin/time's "h:mm:ss" or "m:ss.ss" to seconds.
seconds() { awk -F: '{ s = 0; for (i = 1; i <= NF; i++) s = s * 60 + $i; printf "%.2f", s }' <<<"$1"; }
median() { sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
wall() { seconds "$(awk -F': ' '/Elapsed \(wall clock\)/ { print $2 }' "$1")"; }
rss() { awk -F': ' '/Maximum resident set size/ { print $2 }' "$1"; }

IN=${KW_BENCH_IN:-$DIR/in}
if [[ ! -f "$IN/us/serps.jsonl" ]] || { [[ -z "${KW_BENCH_IN:-}" ]] && [[ "$(cat "$IN/.n" 2>/dev/null)" != "$N" ]]; }; then
	rm -rf "$DIR/in"
	"$BIN" sample --out "$DIR/in" --keywords "$N" --countries us --seed 1 >"$DIR/sample.log" 2>&1 || {
		echo "bench.sh: kwdata sample failed:" >&2
		tail -n 5 "$DIR/sample.log" >&2
		exit 1
	}
	echo "$N" >"$DIR/in/.n"
fi
SERPS=$IN/us/serps.jsonl
PLANNER=$IN/us/keyword-planner.csv

DUCK=""
if [[ "${KW_BENCH_DUCKDB:-1}" != 0 && -n "${KWDATA_DUCKDB:-}" && -d "${KWDATA_DUCKDB:-}/node_modules/@duckdb/node-api" ]] && command -v node >/dev/null; then
	# Node resolves packages from the script's folder.
	DUCK=$KWDATA_DUCKDB/kwdata-bench-ingest.mjs
	cp "$ROOT/ingest/bench-duckdb.mjs" "$DUCK"
	trap 'rm -f "$DUCK"; [[ -n "${KW_BENCH_DIR:-}" ]] || rm -rf "$DIR"' EXIT
fi

echo "== ingest benchmark: $N keywords, $(du -h "$SERPS" | cut -f1) of SERP JSONL, $RUNS alternating rounds ($(nproc) cores)"
header() { echo; printf '%-52s %10s %12s %10s\n' "measure" "wall" "peak RSS" "vs DuckDB"; }
if ((RUNS > 0)); then
kw=() kwr=() dk=() dkr=()
for i in $(seq "$RUNS"); do
	rm -rf "$DIR/data"
	/usr/bin/time -v -o "$DIR/time.kw.$i" "$BIN" ingest --data "$DIR/data" --date "$DATE" --country us \
		--serp-jsonl "$SERPS" >"$DIR/log.kw.$i" 2>&1 </dev/null || {
		echo "bench.sh: kwdata ingest failed:" >&2
		tail -n 5 "$DIR/log.kw.$i" >&2
		exit 1
	}
	kw+=("$(wall "$DIR/time.kw.$i")") kwr+=("$(rss "$DIR/time.kw.$i")")
	line="round $i: kwdata ${kw[-1]}s, $((kwr[-1] / 1024)) MiB"
	if [[ -n "$DUCK" ]]; then
		rm -f "$DIR/duckdb.parquet"
		/usr/bin/time -v -o "$DIR/time.dk.$i" node "$DUCK" "$SERPS" "$DIR/duckdb.parquet" >"$DIR/log.dk.$i" 2>&1 </dev/null || {
			echo "bench.sh: DuckDB failed:" >&2
			tail -n 5 "$DIR/log.dk.$i" >&2
			exit 1
		}
		dk+=("$(wall "$DIR/time.dk.$i")") dkr+=("$(rss "$DIR/time.dk.$i")")
		line+="; DuckDB ${dk[-1]}s, $((dkr[-1] / 1024)) MiB"
	fi
	echo "$line"
done
rm -f "$DIR/duckdb.parquet"

KW=$(printf '%s\n' "${kw[@]}" | median)
KWR=$(printf '%s\n' "${kwr[@]}" | median)
header
if [[ -n "$DUCK" ]]; then
	DK=$(printf '%s\n' "${dk[@]}" | median)
	DKR=$(printf '%s\n' "${dkr[@]}" | median)
	printf '%-52s %9ss %8d MiB %10s\n' "kwdata ingest, SERPs only, with url_key (median)" "$KW" "$((KWR / 1024))" \
		"$(awk -v a="$KW" -v b="$DK" 'BEGIN { printf "%.2fx", a / b }')"
	printf '%-52s %9ss %8d MiB %10s\n' "DuckDB, same file, without url_key (median)" "$DK" "$((DKR / 1024))" "1.00x"
	echo "(ratio of medians: below 1 means kwdata is faster; each round runs both, one after the other)"
else
	printf '%-52s %9ss %8d MiB %10s\n' "kwdata ingest, SERPs only, with url_key (median)" "$KW" "$((KWR / 1024))" "-"
	echo "(DuckDB baseline skipped: set KWDATA_DUCKDB to a folder with node_modules/@duckdb/node-api)"
fi
fi

# The nightly run's ingest: planner export and SERPs together.
cpu() { awk -F': ' '/User time/ { u = $2 } /System time/ { s = $2 } END { printf "%.2f", u + s }' "$1"; }
ALL=${KW_BENCH_ALL_RUNS:-1}
BASE=${KW_BENCH_BASE_BIN:-}
[[ -z "$BASE" ]] || BASE=$(cd "$(dirname "$BASE")" && pwd)/$(basename "$BASE")
allrun() { # allrun NAME BINARY ROUND: one planner + SERPs ingest; prints wall cpu rss
	rm -rf "$DIR/data"
	/usr/bin/time -v -o "$DIR/time.$1.$3" "$2" ingest --data "$DIR/data" --date "$DATE" --country us \
		--planner-csv "$PLANNER" --serp-jsonl "$SERPS" >"$DIR/log.$1.$3" 2>&1 </dev/null || {
		echo "bench.sh: $1 ingest failed:" >&2
		tail -n 5 "$DIR/log.$1.$3" >&2
		exit 1
	}
	rm -rf "$DIR/data"
	echo "$(wall "$DIR/time.$1.$3") $(cpu "$DIR/time.$1.$3") $(rss "$DIR/time.$1.$3")"
}
((RUNS > 0)) || header
aw=() ac=() ar=() bw=() bc=() br=()
for i in $(seq "$ALL"); do
	line="planner + SERPs round $i:"
	if [[ -n "$BASE" ]]; then
		read -r w c r < <(allrun base "$BASE" "$i")
		bw+=("$w") bc+=("$c") br+=("$r")
		line+=" baseline ${w}s (${c}s CPU, $((r / 1024)) MiB);"
	fi
	read -r w c r < <(allrun all "$BIN" "$i")
	aw+=("$w") ac+=("$c") ar+=("$r")
	echo "$line kwdata ${w}s (${c}s CPU, $((r / 1024)) MiB)"
done
AW=$(printf '%s\n' "${aw[@]}" | median) AC=$(printf '%s\n' "${ac[@]}" | median) AR=$(printf '%s\n' "${ar[@]}" | median)
printf '%-52s %9ss %8d MiB   CPU %ss\n' "kwdata ingest, planner + SERPs (median of $ALL)" "$AW" "$((AR / 1024))" "$AC"
if [[ -n "$BASE" ]]; then
	BW=$(printf '%s\n' "${bw[@]}" | median) BC=$(printf '%s\n' "${bc[@]}" | median) BR=$(printf '%s\n' "${br[@]}" | median)
	printf '%-52s %9ss %8d MiB   CPU %ss\n' "baseline, planner + SERPs (median of $ALL)" "$BW" "$((BR / 1024))" "$BC"
	awk -v aw="$AW" -v bw="$BW" -v ac="$AC" -v bc="$BC" -v ar="$AR" -v br="$BR" \
		'BEGIN { printf "kwdata / baseline: wall %.2fx, CPU %.2fx, peak RSS %.2fx\n", aw / bw, ac / bc, ar / br }'
fi
