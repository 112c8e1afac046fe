#!/usr/bin/env bash
# bench.sh BIN: `kwdata build-index` beside main's, measured in the same
# run (make bench-build-index and bench-build-index-10m call it).
#
# The lake: a KW_BENCH_KEYWORDS-keyword (default 1,000,000) us sample made
# with BIN (sample, ingest, similarity), kept in KW_BENCH_DIR between runs;
# or, with KW_BENCH_DATA, the lake of that data folder, hard-linked into
# KW_BENCH_DIR (the builds write only there; the stages never edit a lake
# file in place, so the links are safe).
# The baseline: KW_BENCH_BASE_BIN, else main's binary built from
# `git archive ${KW_BENCH_BASE_REF:-main}` of this repository.
# Each of KW_BENCH_RUNS rounds (default 3) builds the index with the
# baseline, then with BIN, from an empty index folder; it prints wall time,
# CPU time and peak memory of every run, then the medians and the ratio of
# the medians. The first round also reads back every key and value of both
# builds and says whether they are byte for byte the same. Then, as many
# rounds again, this tree's build with and without the explorer's tables
# (through the index package's test binary), alternating, for what the
# tables add to the build's time, memory and size.
set -euo pipefail

BIN=${1:?usage: bash index/bench.sh path/to/kwdata}
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
N=${KW_BENCH_KEYWORDS:-1000000}
RUNS=${KW_BENCH_RUNS:-3}
DATE=2026-11-21
ROOT=$(cd "$(dirname "$0")/.." && pwd)

if [[ -n "${KW_BENCH_DIR:-}" ]]; then
	DIR=$KW_BENCH_DIR
	mkdir -p "$DIR"
else
	DIR=$(mktemp -d "${TMPDIR:-/tmp}/kwdata-bench-build.XXXXXX")
	trap 'rm -rf "$DIR"' EXIT
fi
DIR=$(cd "$DIR" && pwd)

if [[ -n "${KW_BENCH_BASE_BIN:-}" ]]; then
	BASE=$KW_BENCH_BASE_BIN
else
	REF=${KW_BENCH_BASE_REF:-main}
	echo "building the baseline from $REF ($(git -C "$ROOT" rev-parse --short "$REF"))..."
	rm -rf "$DIR/base-src"
	mkdir -p "$DIR/base-src"
	git -C "$ROOT" archive "$REF" | tar -x -C "$DIR/base-src"
	(cd "$DIR/base-src" && go build -o "$DIR/kwdata-base" ./cmd/kwdata)
	rm -rf "$DIR/base-src"
	BASE=$DIR/kwdata-base
fi

if [[ -n "${KW_BENCH_DATA:-}" ]]; then
	if [[ "$(cat "$DIR/.lake" 2>/dev/null)" != "$KW_BENCH_DATA" ]]; then
		rm -rf "$DIR/data" "$DIR/.lake" "$DIR/.n"
		mkdir -p "$DIR/data"
		cp -al "$KW_BENCH_DATA/lake" "$DIR/data/lake"
		echo "$KW_BENCH_DATA" >"$DIR/.lake"
	fi
	WHAT="the lake of $KW_BENCH_DATA"
elif [[ "$(cat "$DIR/.n" 2>/dev/null)" != "$N" ]] || [[ ! -d "$DIR/data/lake/related" ]]; then
	rm -rf "$DIR/in" "$DIR/data" "$DIR/.n" "$DIR/.lake"
	echo "making the lake (sample, ingest, similarity: $N keywords)..."
	"$BIN" sample --out "$DIR/in" --keywords "$N" --countries us --seed 1 >/dev/null 2>"$DIR/lake.log"
	"$BIN" ingest --data "$DIR/data" --date "$DATE" --country us \
		--planner-csv "$DIR/in/us/keyword-planner.csv" --serp-jsonl "$DIR/in/us/serps.jsonl" >/dev/null 2>>"$DIR/lake.log"
	"$BIN" similarity --data "$DIR/data" --date "$DATE" --country us >/dev/null 2>>"$DIR/lake.log"
	rm -rf "$DIR/in"
	echo "$N" >"$DIR/.n"
	WHAT="$N sample keywords"
else
	WHAT="$N sample keywords"
fi

(cd "$ROOT" && go test -c -o "$DIR/index.test" ./index)
digest() { "$DIR/index.test" -test.run '^TestDigestOfData$' -digest-data "$DIR/data" | grep -v '^PASS$'; }

median() { sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

echo "== build-index: $WHAT, $RUNS alternating rounds ($(nproc) cores)"
declare -A wall cpu rss
same=""
for r in $(seq "$RUNS"); do
	for t in main kwdata; do
		bin=$BIN
		[[ $t == main ]] && bin=$BASE
		rm -rf "$DIR/data/index"
		/usr/bin/time -f '%e %U %S %M' -o "$DIR/time.txt" "$bin" build-index --data "$DIR/data" --date "$DATE" >/dev/null 2>>"$DIR/build.log"
		read -r w u s m <"$DIR/time.txt"
		c=$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.2f", u + s }')
		g=$(awk -v m="$m" 'BEGIN { printf "%.2f", m / 1048576 }')
		echo "round $r: $t wall_s=$w cpu_s=$c peak_gib=$g"
		wall[$t]+="$w " cpu[$t]+="$c " rss[$t]+="$g "
		if [[ $r == 1 ]]; then
			digest >"$DIR/digest.$t"
		fi
	done
	if [[ $r == 1 ]]; then
		if cmp -s "$DIR/digest.main" "$DIR/digest.kwdata" && [[ -s "$DIR/digest.main" ]]; then
			same="yes: every key and value of the two builds is the same"
		else
			same="NO: the builds differ (diff $DIR/digest.main $DIR/digest.kwdata)"
			diff "$DIR/digest.main" "$DIR/digest.kwdata" >&2 || true
		fi
	fi
done
rm -rf "$DIR/data/index"

echo
printf '%-36s %10s %10s %10s\n' "build-index (median of $RUNS)" "wall s" "CPU s" "peak GiB"
for t in main kwdata; do
	printf '%-36s %10s %10s %10s\n' "$t" \
		"$(tr ' ' '\n' <<<"${wall[$t]}" | grep . | median)" \
		"$(tr ' ' '\n' <<<"${cpu[$t]}" | grep . | median)" \
		"$(tr ' ' '\n' <<<"${rss[$t]}" | grep . | median)"
done
awk -v k="$(tr ' ' '\n' <<<"${wall[kwdata]}" | grep . | median)" -v b="$(tr ' ' '\n' <<<"${wall[main]}" | grep . | median)" \
	-v kc="$(tr ' ' '\n' <<<"${cpu[kwdata]}" | grep . | median)" -v bc="$(tr ' ' '\n' <<<"${cpu[main]}" | grep . | median)" \
	'BEGIN { printf "ratio kwdata / main: wall %.2f, CPU %.2f\n", k / b, kc / bc }'
echo "same index: $same"

# What the explorer's tables cost: this tree's build with and without them.
declare -A ewall ecpu erss esize
for r in $(seq "$RUNS"); do
	for t in without with; do
		flag=true
		[[ $t == without ]] && flag=false
		rm -rf "$DIR/data/index"
		/usr/bin/time -f '%e %U %S %M' -o "$DIR/time.txt" "$DIR/index.test" -test.run '^TestBuildOfData$' \
			-build-data "$DIR/data" -build-date "$DATE" -build-explore="$flag" >/dev/null 2>>"$DIR/build.log"
		read -r w u s m <"$DIR/time.txt"
		c=$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.2f", u + s }')
		g=$(awk -v m="$m" 'BEGIN { printf "%.2f", m / 1048576 }')
		z=$(du -sm "$DIR/data/index" | cut -f1)
		echo "round $r: explorer tables $t wall_s=$w cpu_s=$c peak_gib=$g size_mib=$z"
		ewall[$t]+="$w " ecpu[$t]+="$c " erss[$t]+="$g " esize[$t]+="$z "
	done
done
rm -rf "$DIR/data/index"
echo
printf '%-36s %10s %10s %10s %10s\n' "explorer tables (median of $RUNS)" "wall s" "CPU s" "peak GiB" "size MiB"
for t in without with; do
	printf '%-36s %10s %10s %10s %10s\n' "$t" \
		"$(tr ' ' '\n' <<<"${ewall[$t]}" | grep . | median)" \
		"$(tr ' ' '\n' <<<"${ecpu[$t]}" | grep . | median)" \
		"$(tr ' ' '\n' <<<"${erss[$t]}" | grep . | median)" \
		"$(tr ' ' '\n' <<<"${esize[$t]}" | grep . | median)"
done
awk -v k="$(tr ' ' '\n' <<<"${ewall[with]}" | grep . | median)" -v b="$(tr ' ' '\n' <<<"${ewall[without]}" | grep . | median)" \
	-v kc="$(tr ' ' '\n' <<<"${ecpu[with]}" | grep . | median)" -v bc="$(tr ' ' '\n' <<<"${ecpu[without]}" | grep . | median)" \
	-v ks="$(tr ' ' '\n' <<<"${esize[with]}" | grep . | median)" -v bs="$(tr ' ' '\n' <<<"${esize[without]}" | grep . | median)" \
	'BEGIN { printf "with / without the explorer tables: wall %.2f, CPU %.2f, size %.2f (goal: at most 1.33 each)\n", k / b, kc / bc, ks / bs }'
