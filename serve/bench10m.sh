#!/usr/bin/env bash
# bench10m.sh BIN: GET /v1/keyword on a 10M-keyword index (make
# bench-serve-10m calls it), beside the minimal net/http handler of
# serve/bench.sh, measured in the same run.
#
# The lake: KW_BENCH_DATA (a data folder holding a 10M-keyword lake with
# its related and intents partitions, e.g. that of make
# bench-similarity-10m, default /tmp/kwdata-bench-10m/data), hard-linked
# into KW_BENCH_DIR (default /tmp/kwdata-bench-serve-10m), where BIN's
# build-index writes the index once (kept for re-runs). The keywords:
# KW_BENCH_DISTINCT (default 30,000) spread evenly over the planner export
# KW_BENCH_PLANNER (default <KW_BENCH_DATA>/../in/us/keyword-planner.csv),
# asked in rotation by `wrk -t1 -c32` with the paid key
# (serve/internal/loadtest/wrk.lua), servers and wrk unpinned.
#
# Each server configuration of KW_BENCH_CONFIGS (serve flags, separated by
# ';'; default: the default caches; no answer cache, so that every lookup
# reads the index through the default 256 MiB block cache; and no answer
# cache with a block cache larger than the index) runs KW_BENCH_ROUNDS
# rounds (default 3); a round restarts kwdata
# serve (empty block and answer caches; the page cache stays warm) and
# measures, for KW_BENCH_SECS each (default 10): the baseline, kwdata cold
# (its first seconds after the start), the baseline again and kwdata warm.
# It prints every run, then per configuration the median cold and warm
# ratios to the baseline and the p99s.
set -euo pipefail

BIN=${1:?usage: bash serve/bench10m.sh path/to/kwdata}
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
DATA=${KW_BENCH_DATA:-/tmp/kwdata-bench-10m/data}
PLANNER=${KW_BENCH_PLANNER:-$(dirname "$DATA")/in/us/keyword-planner.csv}
DIR=${KW_BENCH_DIR:-/tmp/kwdata-bench-serve-10m}
DISTINCT=${KW_BENCH_DISTINCT:-30000}
ROUNDS=${KW_BENCH_ROUNDS:-3}
SECS=${KW_BENCH_SECS:-10}
CONNS=${KW_BENCH_CONNS:-32}
CONFIGS=${KW_BENCH_CONFIGS:-"--answer-cache-mb 64;--answer-cache-mb 0;--answer-cache-mb 0 --cache-mb 2048"}
DATE=2026-11-21
ROOT=$(cd "$(dirname "$0")/.." && pwd)
KPORT=${KW_BENCH_PORT:-18090}
BPORT=$((KPORT + 1))

command -v wrk >/dev/null || { echo "bench10m.sh: wrk is not installed (apt-get install wrk)" >&2; exit 1; }
[[ -d "$DATA/lake/related" ]] || { echo "bench10m.sh: $DATA has no lake with related keywords; run make bench-similarity-10m or set KW_BENCH_DATA" >&2; exit 1; }
[[ -s "$PLANNER" ]] || { echo "bench10m.sh: no planner export at $PLANNER; set KW_BENCH_PLANNER" >&2; exit 1; }
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)

median() { sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

if [[ "$(cat "$DIR/.lake" 2>/dev/null)" != "$DATA" ]] || [[ ! -f "$DIR/data/index/CURRENT" ]]; then
	rm -rf "$DIR/data" "$DIR/.lake" "$DIR/keywords.txt" "$DIR/paid.key"
	mkdir -p "$DIR/data"
	cp -al "$DATA/lake" "$DIR/data/lake"
	echo "building the index of $DATA..."
	"$BIN" build-index --data "$DIR/data" --date "$DATE" >/dev/null 2>"$DIR/build.log"
	echo "$DATA" >"$DIR/.lake"
fi
(cd "$ROOT" && go build -o "$DIR/loadtest" ./serve/internal/loadtest)
if [[ ! -s "$DIR/keywords.txt" ]]; then
	# wrk.lua asks every 7th line: 7 lines a distinct keyword.
	"$DIR/loadtest" keywords "$PLANNER" >"$DIR/all.txt"
	awk -v n="$(wc -l <"$DIR/all.txt")" -v d="$((DISTINCT * 7))" 'NR % int(n / d) == 0 && c < d { print; c++ }' "$DIR/all.txt" >"$DIR/keywords.txt"
	rm -f "$DIR/all.txt"
fi
if [[ ! -s "$DIR/paid.key" ]]; then
	"$BIN" keys create --data "$DIR/data" --tier paid --email bench@example.com 2>/dev/null | head -n1 >"$DIR/paid.key"
fi
KEY=$(cat "$DIR/paid.key")
BYTES=$(du -sb "$DIR/data/index" | cut -f1)

pids=()
cleanup() {
	for p in "${pids[@]}"; do
		kill "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	pids=()
}
trap 'cleanup; kill "${BPID:-}" 2>/dev/null || true' EXIT
ready() { curl -fsS -o /dev/null "$1" 2>/dev/null; }
waitfor() {
	for i in $(seq 600); do
		ready "$1" && return 0
		sleep 0.1
	done
	echo "bench10m.sh: $1 did not answer; see $DIR/serve.log" >&2
	exit 1
}
wrkrun() { # port seconds: prints "rps p99_ms non2xx"
	KW_KEYWORDS="$DIR/keywords.txt" KW_KEY="$KEY" wrk -t1 -c"$CONNS" -d"$2"s --latency \
		-s "$ROOT/serve/internal/loadtest/wrk.lua" "http://127.0.0.1:$1" | awk '
		function ms(v) { if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0; if (v ~ /s$/) return v * 1000; return v }
		$1 == "99%" { p99 = ms($2) }
		$1 == "Requests/sec:" { rps = $2 }
		/^wrk_non2xx=/ { split($0, a, "="); bad = a[2] }
		END { printf "%.0f %.3f %d\n", rps, p99, bad }'
}

"$DIR/loadtest" baseline --addr "127.0.0.1:$BPORT" 2>"$DIR/baseline.log" &
BPID=$!
waitfor "http://127.0.0.1:$BPORT/"
wrkrun "$BPORT" 2 >/dev/null

echo "== GET /v1/keyword at $(awk -v b="$BYTES" 'BEGIN { printf "%.2f GB", b / 1e9 }') of index ($DIR/data), $DISTINCT distinct keywords rotated, wrk -t1 -c$CONNS, $ROUNDS rounds of ${SECS}s ($(nproc) cores)"
declare -A res
IFS=';' read -ra cfgs <<<"$CONFIGS"
for cfg in "${cfgs[@]}"; do
	for r in $(seq "$ROUNDS"); do
		# shellcheck disable=SC2086 # the configuration is a list of flags
		"$BIN" serve --data "$DIR/data" --addr "127.0.0.1:$KPORT" $cfg 2>>"$DIR/serve.log" &
		pids=($!)
		waitfor "http://127.0.0.1:$KPORT/readyz"
		for t in base1 cold base2 warm; do
			port=$KPORT
			[[ $t == base* ]] && port=$BPORT
			read -r rate p bad < <(wrkrun "$port" "$SECS")
			echo "[$cfg] round $r: $t rps=$rate p99_ms=$p non2xx=$bad"
			[[ $t != base* && $bad != 0 ]] && echo "bench10m.sh: kwdata answered $bad requests with other than 2xx" >&2
			res["$cfg|$t"]+="$rate " res["$cfg|$t|p99"]+="$p "
		done
		rss=$(awk '/VmHWM/ { printf "%.2f", $2 / 1048576 }' "/proc/${pids[0]}/status")
		res["$cfg|rss"]+="$rss "
		cleanup
	done
done
kill "$BPID" 2>/dev/null || true

m() { tr ' ' '\n' <<<"${res[$1]}" | grep . | median; }
echo
printf '%-44s %10s %10s %10s %10s %9s %9s\n' "kwdata serve flags (median of $ROUNDS)" "cold rps" "warm rps" "base rps" "cold p99" "warm p99" "peak GiB"
for cfg in "${cfgs[@]}"; do
	base=$(printf '%s\n' ${res["$cfg|base1"]} ${res["$cfg|base2"]} | median)
	printf '%-44s %10s %10s %10s %9sms %8sms %9s\n' "$cfg" "$(m "$cfg|cold")" "$(m "$cfg|warm")" "$base" "$(m "$cfg|cold|p99")" "$(m "$cfg|warm|p99")" "$(m "$cfg|rss")"
	awk -v c="$(m "$cfg|cold")" -v w="$(m "$cfg|warm")" -v b1="$(m "$cfg|base1")" -v b2="$(m "$cfg|base2")" -v cfg="$cfg" \
		'BEGIN { printf "  ratio to the baseline (%s): cold %.2f, warm %.2f (target >= 0.60)\n", cfg, c / b1, w / b2 }'
done
