#!/usr/bin/env bash
# bench.sh BIN: the serving benchmark (make bench-serve calls it).
#
# Builds a KW_BENCH_KEYWORDS-keyword (default 200,000) us index from
# `kwdata sample` (sample, ingest, similarity, build-index), creates a paid
# key, and starts two servers pinned to core 1: `kwdata serve` and the
# baseline, a minimal net/http handler that encodes a fixed JSON record
# (serve/internal/loadtest). The load generator (same program, GOMAXPROCS=1,
# pinned to core 0) drives GET /v1/keyword with the paid key over every
# keyword of the sample in shuffled order from KW_BENCH_CONNS (default 32)
# keep-alive connections, alternating baseline and kwdata runs
# (B K B K ...) KW_BENCH_ROUNDS times (default 5) for KW_BENCH_SECS each
# (default 10, after a 1 s warm-up), after one unmeasured warm-up run of
# each (KW_BENCH_WARMUP_SECS, default 30: kwdata's caches start empty). It prints every run, then the medians
# of requests/s, p50 and p99 of each server and the ratio of the medians,
# and the median CPU time (user+sys) each server spent per request: other
# load on core 1 lowers requests/s but not the work a request takes, so on
# a busy machine the CPU ratio is the steadier figure.
# Then, when wrk is installed, the same two servers again unpinned, each
# driven by `wrk -t1 -c32 --latency` (serve/internal/loadtest/wrk.lua: every
# 7th keyword, the paid key) in KW_BENCH_WRK_ROUNDS alternating rounds
# (default 3): the figure an operator measuring with wrk sees, which
# differs from the pinned one (wrk, both servers and the rest of the
# machine share both cores). When redis-server is installed, a third
# server joins the wrk rounds: `kwdata serve --access redis://` on a
# redis-server of its own (AOF, appendfsync everysec), with a paid key
# created there.
# Last, in the same run, `go test -bench BenchmarkServeParallel ./serve`
# gives the cost of counting: the handler with the real access store, paid
# (uncounted) beside registered and anonymous (counted) callers, for the
# embedded store and (redis_*) the Redis one.
#
# KW_BENCH_PROFILE=DIR also writes CPU profiles of both pinned servers;
# KW_BENCH_ANSWER_MB=N runs kwdata serve with --answer-cache-mb N.
#
# KW_BENCH_DIR keeps the sample, lake and index between runs (default: a
# temporary folder, removed after), so a re-run skips straight to the load.
set -euo pipefail

BIN=${1:?usage: bash serve/bench.sh path/to/kwdata}
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
N=${KW_BENCH_KEYWORDS:-200000}
ROUNDS=${KW_BENCH_ROUNDS:-5}
SECS=${KW_BENCH_SECS:-10}
CONNS=${KW_BENCH_CONNS:-32}
DATE=2026-11-21
ROOT=$(cd "$(dirname "$0")/.." && pwd)
KPORT=${KW_BENCH_PORT:-18080}
BPORT=$((KPORT + 1))

if [[ -n "${KW_BENCH_DIR:-}" ]]; then
	DIR=$KW_BENCH_DIR
	mkdir -p "$DIR"
else
	DIR=$(mktemp -d "${TMPDIR:-/tmp}/kwdata-bench-serve.XXXXXX")
	trap 'rm -rf "$DIR"' EXIT
fi
DIR=$(cd "$DIR" && pwd)

# Pin the servers to core 1 and the load generator to core 0 when the
# machine has two cores and taskset (util-linux) is there.
SERVER_CPU=() LOAD_CPU=()
if command -v taskset >/dev/null && [[ $(nproc) -ge 2 ]]; then
	SERVER_CPU=(taskset -c 1) LOAD_CPU=(taskset -c 0)
else
	echo "bench.sh: taskset missing or one core; servers and load share the cores" >&2
fi

median() { sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
field() { tr ' ' '\n' <<<"$1" | awk -F= -v k="$2" '$1 == k { print $2 }'; }

echo "== serving benchmark: $N keywords, $CONNS connections, $ROUNDS rounds of ${SECS}s ($(nproc) cores)"

# The index, once per KW_BENCH_DIR and keyword count.
if [[ "$(cat "$DIR/.n" 2>/dev/null)" != "$N" ]] || [[ ! -f "$DIR/data/index/CURRENT" ]]; then
	rm -rf "$DIR/in" "$DIR/data" "$DIR/.n"
	echo "building the index (sample, ingest, similarity, build-index)..."
	"$BIN" sample --out "$DIR/in" --keywords "$N" --countries us --seed 1 >/dev/null 2>"$DIR/build.log"
	"$BIN" ingest --data "$DIR/data" --date "$DATE" --country us \
		--planner-csv "$DIR/in/us/keyword-planner.csv" --serp-jsonl "$DIR/in/us/serps.jsonl" >/dev/null 2>>"$DIR/build.log"
	"$BIN" similarity --data "$DIR/data" --date "$DATE" --country us >/dev/null 2>>"$DIR/build.log"
	"$BIN" build-index --data "$DIR/data" --date "$DATE" >/dev/null 2>>"$DIR/build.log"
	echo "$N" >"$DIR/.n"
fi

# The load tool and the keyword list (the planner export's keyword column;
# the server normalizes them).
(cd "$ROOT" && go build -o "$DIR/loadtest" ./serve/internal/loadtest)
if [[ ! -s "$DIR/keywords.txt" ]] || [[ "$DIR/keywords.txt" -ot "$DIR/.n" ]]; then
	"$DIR/loadtest" keywords "$DIR/in/us/keyword-planner.csv" >"$DIR/keywords.txt"
fi
if [[ ! -s "$DIR/paid.key" ]] || [[ "$DIR/paid.key" -ot "$DIR/.n" ]]; then
	"$BIN" keys create --data "$DIR/data" --tier paid --email bench@example.com 2>/dev/null | head -n1 >"$DIR/paid.key"
fi
KEY=$(cat "$DIR/paid.key")

pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
}
trap 'cleanup; [[ -z "${KW_BENCH_DIR:-}" ]] && rm -rf "$DIR"' EXIT

# KW_BENCH_PROFILE=DIR: after the pinned rounds, one more run of each
# server under a CPU profile (DIR/kwdata.pprof, DIR/baseline.pprof), to
# read with go tool pprof beside the figures of the same run.
PROF=${KW_BENCH_PROFILE:-}
KPPROF=() BPPROF=()
if [[ -n "$PROF" ]]; then
	mkdir -p "$PROF"
	PROF=$(cd "$PROF" && pwd)
	KPPROF=(--pprof "127.0.0.1:$((KPORT + 4))") BPPROF=(--pprof "127.0.0.1:$((KPORT + 5))")
fi

# KW_BENCH_ANSWER_MB sets kwdata serve --answer-cache-mb of both the
# pinned and the wrk runs (default: the server's own default); evenly
# spread lookups hit the cache in proportion to the share of answers it
# holds (about 2 KB each).
ANSWER=()
[[ -n "${KW_BENCH_ANSWER_MB:-}" ]] && ANSWER=(--answer-cache-mb "$KW_BENCH_ANSWER_MB")

"${SERVER_CPU[@]}" "$BIN" serve --data "$DIR/data" --addr "127.0.0.1:$KPORT" "${ANSWER[@]}" "${KPPROF[@]}" 2>"$DIR/serve.log" &
pids+=($!)
KPID=$!
"${SERVER_CPU[@]}" "$DIR/loadtest" baseline --addr "127.0.0.1:$BPORT" "${BPPROF[@]}" 2>"$DIR/baseline.log" &
pids+=($!)
BPID=$!

# Wait until both answer (bounded).
ready() { curl -fsS -o /dev/null "$1" 2>/dev/null; }
for i in $(seq 100); do
	if ready "http://127.0.0.1:$KPORT/readyz" && ready "http://127.0.0.1:$BPORT/"; then break; fi
	[[ $i == 100 ]] && { echo "bench.sh: servers did not start; see $DIR/serve.log" >&2; exit 1; }
	sleep 0.1
done
# Another process on the ports would answer for a server that failed to
# start (its log says why); the figures would then be someone else's.
for p in "${pids[@]}"; do
	kill -0 "$p" 2>/dev/null || { echo "bench.sh: a server exited at start; see $DIR/serve.log and $DIR/baseline.log" >&2; exit 1; }
done

load() { # label port seed [seconds]
	local pid=$BPID
	[[ $1 == kwdata ]] && pid=$KPID
	GOMAXPROCS=1 "${LOAD_CPU[@]}" "$DIR/loadtest" load --base "http://127.0.0.1:$2" --keywords "$DIR/keywords.txt" \
		--key "$KEY" --conns "$CONNS" --duration "${4:-$SECS}s" --warmup 1s --seed "$3" --label "$1" --pid "$pid"
}

# Warm both servers before measuring: kwdata's block cache starts empty
# and fills as lookups touch the index, so the first pass over the
# keywords reads from disk (in the page cache), and its answer cache
# takes about one pass over the sample's keywords to fill (compressing
# each answer it admits); the rounds measure the steady state. The
# warm-up (KW_BENCH_WARMUP_SECS, default 30) covers about two passes.
WARM=${KW_BENCH_WARMUP_SECS:-30}
echo "warming up (${WARM}s each)..."
load baseline "$BPORT" 0 "$WARM" >/dev/null
load kwdata "$KPORT" 0 "$WARM" >/dev/null

declare -A rps p50 p99 cpu
for r in $(seq "$ROUNDS"); do
	for t in baseline kwdata; do
		port=$BPORT
		[[ $t == kwdata ]] && port=$KPORT
		line=$(load "$t" "$port" "$r")
		echo "round $r: $line"
		if [[ $t == kwdata ]] && [[ "$(field "$line" requests)" != "$(field "$line" status_200)" ]]; then
			echo "bench.sh: kwdata answered something other than 200; see $DIR/serve.log" >&2
		fi
		rps[$t]+="$(field "$line" rps) " p50[$t]+="$(field "$line" p50_ms) " p99[$t]+="$(field "$line" p99_ms) "
		cpu[$t]+="$(field "$line" cpu_us_per_req) "
	done
done

echo
printf '%-44s %12s %10s %10s %12s\n' "GET /v1/keyword, paid key (median of $ROUNDS)" "requests/s" "p50 ms" "p99 ms" "CPU µs/req"
for t in baseline kwdata; do
	name="kwdata serve"
	[[ $t == baseline ]] && name="baseline (net/http + encoding/json)"
	printf '%-44s %12s %10s %10s %12s\n' "$name" \
		"$(tr ' ' '\n' <<<"${rps[$t]}" | grep . | median)" \
		"$(tr ' ' '\n' <<<"${p50[$t]}" | grep . | median)" \
		"$(tr ' ' '\n' <<<"${p99[$t]}" | grep . | median)" \
		"$(tr ' ' '\n' <<<"${cpu[$t]}" | grep . | median)"
done
KR=$(tr ' ' '\n' <<<"${rps[kwdata]}" | grep . | median)
BR=$(tr ' ' '\n' <<<"${rps[baseline]}" | grep . | median)
KP=$(tr ' ' '\n' <<<"${p99[kwdata]}" | grep . | median)
BP=$(tr ' ' '\n' <<<"${p99[baseline]}" | grep . | median)
KC=$(tr ' ' '\n' <<<"${cpu[kwdata]}" | grep . | median)
BC=$(tr ' ' '\n' <<<"${cpu[baseline]}" | grep . | median)
awk -v k="$KR" -v b="$BR" -v kp="$KP" -v bp="$BP" \
	'BEGIN { printf "ratio kwdata / baseline: %.2f (target >= 0.80); p99 %.2f x the baseline'"'"'s (target <= 1.5)\n", k / b, kp / bp }'
awk -v k="$KC" -v b="$BC" \
	'BEGIN { printf "CPU per request: kwdata %.2f µs, baseline %.2f µs; ratio baseline / kwdata %.2f (what requests/s would be on an idle core 1)\n", k, b, b / k }'

if [[ -n "$PROF" ]]; then
	psecs=$((SECS > 3 ? SECS - 2 : 1))
	for t in baseline kwdata; do
		port=$BPORT pport=$((KPORT + 5))
		[[ $t == kwdata ]] && port=$KPORT pport=$((KPORT + 4))
		curl -fsS -o "$PROF/$t.pprof" "http://127.0.0.1:$pport/debug/pprof/profile?seconds=$psecs" &
		cpid=$!
		echo "profiled: $(load "$t" "$port" 99)"
		wait "$cpid" || echo "bench.sh: no CPU profile of $t" >&2
	done
	echo "CPU profiles of the pinned servers: go tool pprof -top $PROF/kwdata.pprof (and baseline.pprof)"
fi

cleanup
pids=()

# The same comparison the way wrk sees it: both servers and wrk unpinned,
# -t1 -c32, every 7th keyword with the paid key, alternating rounds.
if command -v wrk >/dev/null; then
	"$BIN" serve --data "$DIR/data" --addr "127.0.0.1:$KPORT" "${ANSWER[@]}" 2>>"$DIR/serve.log" &
	pids+=($!)
	"$DIR/loadtest" baseline --addr "127.0.0.1:$BPORT" 2>>"$DIR/baseline.log" &
	pids+=($!)
	for i in $(seq 100); do
		if ready "http://127.0.0.1:$KPORT/readyz" && ready "http://127.0.0.1:$BPORT/"; then break; fi
		[[ $i == 100 ]] && { echo "bench.sh: servers did not start for wrk; see $DIR/serve.log" >&2; exit 1; }
		sleep 0.1
	done
	SERVERS=(baseline kwdata)
	declare -A PORTS=([baseline]=$BPORT [kwdata]=$KPORT) KEYS=([baseline]=$KEY [kwdata]=$KEY)
	# The shared store: its own redis-server and data folder copy (the
	# embedded server holds DATA/access), a paid key created in Redis.
	if command -v redis-server >/dev/null; then
		RPORT=$((KPORT + 2)) SPORT=$((KPORT + 3))
		mkdir -p "$DIR/redis"
		redis-server --bind 127.0.0.1 --port "$SPORT" --save "" --appendonly yes --appendfsync everysec \
			--dir "$DIR/redis" >"$DIR/redis.log" 2>&1 &
		pids+=($!)
		for i in $(seq 100); do
			[[ "$(redis-cli -p "$SPORT" ping 2>/dev/null)" == PONG ]] && break
			[[ $i == 100 ]] && { echo "bench.sh: redis-server did not start; see $DIR/redis.log" >&2; exit 1; }
			sleep 0.1
		done
		RURL="redis://127.0.0.1:$SPORT/0"
		# A copy of the index: Pebble lets one process open a database.
		rm -rf "$DIR/rdata"
		mkdir -p "$DIR/rdata"
		cp -a "$DIR/data/index" "$DIR/rdata/index"
		RKEY=$("$BIN" keys create --access "$RURL" --tier paid 2>/dev/null | head -n1)
		"$BIN" serve --data "$DIR/rdata" --access "$RURL" --addr "127.0.0.1:$RPORT" 2>>"$DIR/serve-redis.log" &
		pids+=($!)
		for i in $(seq 100); do
			ready "http://127.0.0.1:$RPORT/readyz" && break
			[[ $i == 100 ]] && { echo "bench.sh: kwdata serve --access redis:// did not start; see $DIR/serve-redis.log" >&2; exit 1; }
			sleep 0.1
		done
		SERVERS+=(kwdata_redis)
		PORTS[kwdata_redis]=$RPORT KEYS[kwdata_redis]=$RKEY
	else
		echo "bench.sh: redis-server is not installed (apt-get install redis-server); no Redis figures" >&2
	fi
	WRK_ROUNDS=${KW_BENCH_WRK_ROUNDS:-3}
	wrkrun() { # port seconds key: prints "rps p99_ms non2xx"
		KW_KEYWORDS="$DIR/keywords.txt" KW_KEY="$3" wrk -t1 -c"$CONNS" -d"$2"s --latency \
			-s "$ROOT/serve/internal/loadtest/wrk.lua" "http://127.0.0.1:$1" | awk '
			function ms(v) { if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0; if (v ~ /s$/) return v * 1000; return v }
			$1 == "99%" { p99 = ms($2) }
			$1 == "Requests/sec:" { rps = $2 }
			/^wrk_non2xx=/ { split($0, a, "="); bad = a[2] }
			END { printf "%.0f %.3f %d\n", rps, p99, bad }'
	}
	for t in "${SERVERS[@]}"; do
		wrkrun "${PORTS[$t]}" 2 "${KEYS[$t]}" >/dev/null
	done
	declare -A wrps wp99
	for r in $(seq "$WRK_ROUNDS"); do
		for t in "${SERVERS[@]}"; do
			read -r rate p bad < <(wrkrun "${PORTS[$t]}" "$SECS" "${KEYS[$t]}")
			echo "wrk round $r: $t rps=$rate p99_ms=$p non2xx=$bad"
			[[ $t != baseline && $bad != 0 ]] && echo "bench.sh: $t answered $bad requests with other than 2xx under wrk" >&2
			wrps[$t]+="$rate " wp99[$t]+="$p "
		done
	done
	echo
	printf '%-44s %12s %10s\n' "wrk -t1 -c$CONNS, unpinned (median of $WRK_ROUNDS)" "requests/s" "p99 ms"
	for t in "${SERVERS[@]}"; do
		printf '%-44s %12s %10s\n' "$t" \
			"$(tr ' ' '\n' <<<"${wrps[$t]}" | grep . | median)" \
			"$(tr ' ' '\n' <<<"${wp99[$t]}" | grep . | median)"
	done
	awk -v k="$(tr ' ' '\n' <<<"${wrps[kwdata]}" | grep . | median)" -v b="$(tr ' ' '\n' <<<"${wrps[baseline]}" | grep . | median)" \
		-v kp="$(tr ' ' '\n' <<<"${wp99[kwdata]}" | grep . | median)" -v bp="$(tr ' ' '\n' <<<"${wp99[baseline]}" | grep . | median)" \
		'BEGIN { printf "wrk ratio kwdata / baseline: %.2f (target >= 0.80); p99 %.2f x the baseline'"'"'s (target <= 1.5)\n", k / b, kp / bp }'
	if [[ -n "${wrps[kwdata_redis]:-}" ]]; then
		awk -v r="$(tr ' ' '\n' <<<"${wrps[kwdata_redis]}" | grep . | median)" -v k="$(tr ' ' '\n' <<<"${wrps[kwdata]}" | grep . | median)" \
			-v b="$(tr ' ' '\n' <<<"${wrps[baseline]}" | grep . | median)" \
			'BEGIN { printf "wrk ratio kwdata_redis (paid key) / kwdata: %.2f; / baseline: %.2f\n", r / k, r / b }'
	fi
	cleanup
	pids=()
else
	echo "bench.sh: wrk is not installed (apt-get install wrk); the wrk figures are skipped" >&2
fi

# The cost of counting, same run: the handler with the real access store.
echo
cd "$ROOT"
BOUT=$(go test -run '^$' -bench '^BenchmarkServeParallel$' -benchtime 2s -count 3 ./serve 2>&1) || {
	echo "$BOUT" >&2
	exit 1
}
echo "handler with the access store, in process, $(nproc) cores (median of 3):"
NS=$(awk '/^BenchmarkServeParallel\// {
	split($1, p, "/"); name = p[2]; sub(/-[0-9]+$/, "", name)
	for (i = 1; i <= NF; i++) if ($(i+1) == "ns/op") print name, $i
}' <<<"$BOUT")
for name in no_access paid registered anonymous redis_paid redis_registered redis_anonymous; do
	m=$(awk -v n="$name" '$1 == n { print $2 }' <<<"$NS" | median)
	[[ -n "$m" ]] || continue
	awk -v n="$name" -v m="$m" -v p="$(awk '$1 == "paid" { print $2 }' <<<"$NS" | median)" \
		'BEGIN { printf "  %-17s %8.0f ns/op %10.0f requests/s  %5.2f x paid (embedded)\n", n, m, 1e9 / m, p / m }'
done
