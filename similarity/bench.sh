#!/usr/bin/env bash
# bench.sh BIN: the similarity stage's benchmark (make bench calls it).
#
# For each data shape of KW_BENCH_SHAPES (default "default tail web"), generates
# KW_BENCH_KEYWORDS (default 1,000,000) sample keywords for us, ingests
# them, and runs `kwdata similarity` KW_BENCH_RUNS (default 3) times under
# /usr/bin/time -v, alternating with the baseline binary (B K B K ...), and
# prints each binary's median wall time and peak RSS and the ratio of the
# medians. The shapes:
#   default  kwdata sample as it is: about 5 new URLs a SERP.
#   tail     kwdata sample --url-tail 9 --hub-skew 0.9: a long URL tail
#            (about 9 new URLs a SERP) and heavier hubs.
#   web      kwdata sample --shape web: the web's long tail, small intent
#            groups and mid-frequency URLs shared across topics, where
#            few keywords are cut early (the heavy shape).
# Beside each shape's times it prints the counters `kwdata similarity`
# logged in its last run (similarity prepared and computed), the figures
# the sizing table in docs/OPERATIONS.md predicts a night's time from.
# The baseline binary is KW_BENCH_BASE_BIN, or else kwdata built from the
# git ref KW_BENCH_BASE_REF (default main) of this repository (git archive
# into a temporary folder, go build); KW_BENCH_BASE_REF=none skips it.
# Then `kwdata build-index` on the default shape's lake, KW_BENCH_RUNS
# times, with its median wall time, peak RSS and index bytes a keyword.
# Beside them, measured in the same run, the oracle baseline: the
# brute-force oracle (similarity.Brute, every pair compared) and the fast
# Compute on KW_BENCH_BRUTE_KEYWORDS (default 20,000) generated keywords,
# via `go test -bench` (needs the Go toolchain and this source tree).
#
# The 10M case: make bench-similarity-10m, or
#   KW_BENCH_KEYWORDS=10000000 KW_BENCH_RUNS=1 KW_BENCH_SHAPES=default \
#     KW_BENCH_DIR=/big/disk/kwb10m bash similarity/bench.sh bin/kwdata
# It needs about 30 GB of disk under KW_BENCH_DIR for each shape (21.5 GB
# of sample files, the lake, the spilled SERP runs while ingesting) and
# 7 GiB of memory (similarity's peak, 6.4 GiB; ingest's is 3 GiB);
# generating and ingesting take about 4 minutes before the first
# similarity run. KW_BENCH_LAKE=DIR uses an
# ingested data folder instead of generating one (default shape only): it
# is copied as hard links into KW_BENCH_DIR, since similarity writes new
# related and intents partitions and never edits a file in place.
# KW_BENCH_DIR keeps the data (default: a temporary folder, removed after).
set -euo pipefail

BIN=${1:?usage: bash similarity/bench.sh path/to/kwdata}
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
N=${KW_BENCH_KEYWORDS:-1000000}
RUNS=${KW_BENCH_RUNS:-3}
NB=${KW_BENCH_BRUTE_KEYWORDS:-20000}
SHAPES=${KW_BENCH_SHAPES:-default tail web}
DATE=2026-11-21
ROOT=$(cd "$(dirname "$0")/.." && pwd)

if [[ -n "${KW_BENCH_DIR:-}" ]]; then
	DIR=$KW_BENCH_DIR
	mkdir -p "$DIR"
else
	DIR=$(mktemp -d "${TMPDIR:-/tmp}/kwdata-bench.XXXXXX")
	TOP=$DIR
	trap 'rm -rf "$TOP"' EXIT
fi
[[ -x /usr/bin/time ]] || { echo "bench.sh: /usr/bin/time is missing (apt-get install time)" >&2; exit 1; }

# seconds converts /usr/bin/time's "h:mm:ss" or "m:ss.ss" to seconds.
seconds() { awk -F: '{ s = 0; for (i = 1; i <= NF; i++) s = s * 60 + $i; printf "%.2f", s }' <<<"$1"; }
# median prints the middle value; of an even count, the lower middle.
median() { sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

# The baseline binary.
BASE=${KW_BENCH_BASE_BIN:-}
if [[ -z "$BASE" && "${KW_BENCH_BASE_REF:-main}" != none ]]; then
	REF=${KW_BENCH_BASE_REF:-main}
	if git -C "$ROOT" rev-parse --verify -q "$REF^{commit}" >/dev/null; then
		mkdir -p "$DIR/base-src"
		git -C "$ROOT" archive "$REF" | tar -x -C "$DIR/base-src"
		(cd "$DIR/base-src" && go build -o "$DIR/kwdata-base" ./cmd/kwdata)
		BASE=$DIR/kwdata-base
		echo "baseline: kwdata built from $REF ($(git -C "$ROOT" rev-parse --short "$REF"))"
	else
		echo "baseline: no git ref $REF here; pass KW_BENCH_BASE_BIN to compare (skipped)"
	fi
elif [[ -n "$BASE" ]]; then
	BASE=$(cd "$(dirname "$BASE")" && pwd)/$(basename "$BASE")
	echo "baseline: $BASE"
fi

# prepare SHAPE: sample and ingest into $DIR/SHAPE (kept between runs).
prepare() {
	local shape=$1 d=$DIR/$1 flags=()
	[[ $shape == tail ]] && flags=(--url-tail 9 --hub-skew 0.9)
	[[ $shape == web ]] && flags=(--shape web)
	if [[ $shape == default && -n "${KW_BENCH_LAKE:-}" ]]; then
		if [[ ! -d "$d/data/lake/keywords/country=us/date=$DATE" ]]; then
			rm -rf "$d/data"
			mkdir -p "$d"
			cp -al "$KW_BENCH_LAKE" "$d/data"
		fi
		return
	fi
	if [[ ! -f "$d/in/us/serps.jsonl" ]] || [[ "$(cat "$d/in/.n" 2>/dev/null)" != "$N ${flags[*]}" ]]; then
		rm -rf "$d/in" "$d/data"
		"$BIN" sample --out "$d/in" --keywords "$N" --countries us --seed 1 "${flags[@]}" >"$DIR/sample-$shape.log" 2>&1 || {
			echo "bench.sh: kwdata sample failed:" >&2
			tail -n 5 "$DIR/sample-$shape.log" >&2
			exit 1
		}
		echo "$N ${flags[*]}" >"$d/in/.n"
	fi
	if [[ ! -d "$d/data/lake/keywords/country=us/date=$DATE" ]]; then
		"$BIN" ingest --data "$d/data" --date "$DATE" --country us \
			--planner-csv "$d/in/us/keyword-planner.csv" --serp-jsonl "$d/in/us/serps.jsonl" >"$DIR/ingest-$shape.log" 2>&1 || {
			echo "bench.sh: kwdata ingest failed:" >&2
			tail -n 5 "$DIR/ingest-$shape.log" >&2
			exit 1
		}
	fi
}

# counters LOG: the similarity counters of one run's log, on one line.
counters() {
	awk '/similarity (prepared|computed)/ {
		for (i = 1; i <= NF; i++) {
			split($i, kv, "=")
			if (kv[1] ~ /^(keywords|urls|hubs|hub_min_df|hub_groups|light_postings|light_work|cut_keywords|cut_postings|leaders|same_intent_pairs)$/) c[kv[1]] = kv[2]
		}
	} END {
		printf "  counters: keywords %s, urls %s, hubs %s (df >= %s), hub groups %s, light postings %s, light work %s, cut keywords %s, cut postings %s, leaders %s, same-intent pairs %s\n",
			c["keywords"], c["urls"], c["hubs"], c["hub_min_df"], c["hub_groups"], c["light_postings"], c["light_work"], c["cut_keywords"], c["cut_postings"], c["leaders"], c["same_intent_pairs"]
	}' "$1"
}

# simrun SHAPE WHO BINARY I: one timed similarity run; prints "wall rss".
simrun() {
	local t=$DIR/time.$1.$2.$4
	"/usr/bin/time" -v -o "$t" "$3" similarity --data "$DIR/$1/data" --date "$DATE" --country us \
		>"$DIR/out.$1.$2.$4" 2>"$DIR/log.$1.$2.$4" </dev/null
	echo "$(seconds "$(awk -F': ' '/Elapsed \(wall clock\)/ { print $2 }' "$t")") $(awk -F': ' '/Maximum resident set size/ { print $2 }' "$t")"
}

echo "== similarity benchmark: $N keywords, shapes: $SHAPES, $RUNS runs each ($(nproc) cores)"
summary=()
for shape in $SHAPES; do
	prepare "$shape"
	kw=() kr=() bw=() br=()
	for i in $(seq "$RUNS"); do
		if [[ -n "$BASE" ]]; then
			read -r w r < <(simrun "$shape" base "$BASE" "$i")
			bw+=("$w") br+=("$r")
			echo "$shape run $i: baseline ${w}s wall, $((r / 1024)) MiB peak RSS"
		fi
		read -r w r < <(simrun "$shape" kwdata "$BIN" "$i")
		kw+=("$w") kr+=("$r")
		echo "$shape run $i: kwdata   ${w}s wall, $((r / 1024)) MiB peak RSS: $(tail -n1 "$DIR/out.$shape.kwdata.$i")"
	done
	W=$(printf '%s\n' "${kw[@]}" | median)
	R=$(printf '%s\n' "${kr[@]}" | median)
	line=$(printf '%-44s %9ss %8d MiB %14s' "kwdata similarity, $shape shape" "$W" "$((R / 1024))" \
		"$(awk -v n="$N" -v w="$W" 'BEGIN { printf "%.0f", n / w }')")
	summary+=("$line" "$(counters "$DIR/log.$shape.kwdata.$RUNS")")
	if [[ -n "$BASE" ]]; then
		BW=$(printf '%s\n' "${bw[@]}" | median)
		BR=$(printf '%s\n' "${br[@]}" | median)
		summary+=("$(printf '%-44s %9ss %8d MiB %14s' "  baseline, same runs alternated" "$BW" "$((BR / 1024))" \
			"$(awk -v n="$N" -v w="$BW" 'BEGIN { printf "%.0f", n / w }')")")
		summary+=("$(printf '%-44s %9s× %8s×' "  kwdata / baseline (medians)" \
			"$(awk -v a="$W" -v b="$BW" 'BEGIN { printf "%.2f", a / b }')" \
			"$(awk -v a="$R" -v b="$BR" 'BEGIN { printf "%.2f", a / b }')")")
	fi
done
echo
printf '%-44s %10s %12s %14s\n' "measure ($N keywords, medians)" "wall" "peak RSS" "keywords/s"
printf '%s\n' "${summary[@]}"

# The lake build-index reads: the default shape's, else the first shape's
# (its related partition is the last similarity run's).
case " $SHAPES " in
*" default "*) DIR=$DIR/default ;;
*) DIR=$DIR/${SHAPES%% *} ;;
esac

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
