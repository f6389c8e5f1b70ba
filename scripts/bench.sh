#!/usr/bin/env bash
# End-to-end load benchmark: petstore (release build) on a seeded catalogue against a minimal
# actix-web ceiling (crates/petstore-http/examples/ceiling.rs), server and load generator (wrk)
# pinned to different cores. Every run of a route is paired with a run of the ceiling just
# before it, and each figure is the median over several such pairs, reported as a ratio to its
# ceiling. The GET routes are also paired with their backend's floor, the least this stack can
# do for them: on SQLite examples/sqlite_floor (the service's Diesel queries on a connection
# per worker, its bytes and headers, nothing else; the list, the deep page and get by id), on
# PostgreSQL examples/pg_floor.rs (the list query from tokio-postgres on a connection per
# worker), and there pgbench running the same query too (prepared, 8 clients); on MariaDB
# (`--backends mysql`, at PETSTORE_BENCH_MYSQL or root@127.0.0.1:3306) examples/mysql_floor.rs,
# the same with mysql_async.
# Writes a markdown table (see docs/performance.md).
#
#   scripts/bench.sh [--pets 1000,1000000] [--backends sqlite,postgres,mysql] [--redis]
#   scripts/bench.sh --redis-cost [--runs N] [--duration S] [--keys N]   (the Redis limiter
#     against counters in memory, alternating runs on the same database:
#     target/bench/redis-cost.md; with --keys N > 1, the requests take N keys in turn, so that
#     the requests of a batch are each another subject's)
#                    [--duration 10] [--runs 3] [--connections 32] [--out FILE]
#   scripts/bench.sh --instructions [--out FILE]
#   scripts/bench.sh --scale [--pets 1000,100000,1000000] [--backends sqlite,postgres]
#                    [--duration 5] [--runs 3]   (target/bench/scale.md)
#   scripts/bench.sh --counters-cost [--runs 5] [--duration 10]   (target/bench/counters-cost.md)
#   scripts/bench.sh --metrics-cost [--duration 10] [--runs 5]
#   scripts/bench.sh --conditional-cost [--duration 10] [--runs 5]   (target/bench/conditional-cost.md)
#   scripts/bench.sh --creates [--against OLD_BIN] [--runs 5] [--duration 10]   (target/bench/creates.md)
#   scripts/bench.sh --postgres-topologies [--runs 5] [--duration 10]
#     (target/bench/postgres-topologies.md)
#   scripts/bench.sh --patroni [--runs 5] [--duration 10]   (target/bench/patroni.md)
#   scripts/bench.sh --webhooks-cost [--route orders|pets] [--backends sqlite,postgres] [--runs 5]
#     [--duration 10]   (target/bench/webhooks-cost.md, or webhooks-cost-pets.md)
#   scripts/bench.sh --traces-cost [--against OLD_BIN] [--runs 5] [--duration 10]
#     (target/bench/traces-cost.md; timed, then the instructions per list and per create counted)
#   scripts/bench.sh --webhooks-throughput [--against OLD_BIN] [--backends sqlite,postgres]
#     [--runs 3] [--deliveries 4000]   (target/bench/webhooks-throughput.md)
#
# --instructions counts instead of timing: the user-space instructions per request of the
# ceiling, and of petstore's GET routes and the SQLite floor's on SQLite (1,000 pets), under
# valgrind's callgrind, for a fixed number of keep-alive requests. Repeatable to a fraction of a percent whatever the machine
# is doing, where the timed runs move by a third; blind to the kernel, and to CPU features that
# valgrind hides (SHA extensions, say).
#
# --scale: every GET route of the public API on catalogues of each size (default 1,000, 100,000
# and 1,000,000 pets), skewed as a real one is (99.8% available, 0.1% pending, 0.1% sold, each
# of those with its order; at least 42 of each, so that every page is full at every size),
# seeded straight into the database (the database's triggers keep the
# inventory's counters exact). One server per size, all up at once on the same core; each run
# of a route visits the sizes in turn, and a size's figure is the median of its runs' ratios to
# the smallest size's in the same round. Reports the peak memory of each server and the disk
# each catalogue takes. Target: every route at the largest size at 0.67 of the smallest or more.
#
# --counters-cost: what the inventory's counters cost creates on PostgreSQL: the same build on
# three databases, the counters as shipped, in one row per status, and none (the section below).
#
# --creates: POST /v1/pets on PostgreSQL (1,000 pets to start) against pgbench running the
# create's INSERT ... RETURNING on the same database with as many clients as wrk has
# connections, round by round; with --against OLD_BIN also another build (an earlier commit's
# petstore, built by the caller), on the same database and core. Then the instructions per
# create of each build, counted under callgrind (target/bench/creates.md).
#
# --webhooks-cost: POST /v1/store/orders on three servers of the same build, each on a database
# of its own seeded with available pets: one with no webhook endpoint; one with an endpoint
# subscribed to `order.placed` and its sender off (each order writes its delivery in its
# transaction: the outbox alone); one the same with its sender on (posting each to a receiver
# on loopback, a Python server, from the same process and database); runs alternating, the
# median of the ratios to the first per backend. Target: the outbox at 0.85 of none or better.
# With --route pets the same for POST /v1/pets and `pet.created` (no pets seeded); target: the
# server sending at 0.85 of the one not sending or better.
#
# --webhooks-throughput: how fast one instance sends to healthy receivers. A database per run
# holds DELIVERIES pending deliveries (written straight into the outbox, due at once) over the
# endpoints of one of three shapes: one key with one endpoint, one key with 20, 20 keys with one
# each (registered through the API); then a server (sender on, 16 slots, nothing else to do) is
# started on one core, with a receiver (Python, answering 204 at once) on the other, and timed
# from listening until its metrics count every delivery delivered. With --against OLD_BIN,
# another build (an earlier commit's) runs each shape too, alternating; the median of the
# deliveries per second, and of the paired ratios.
#
# --conditional-cost: the list route answered 304 (If-None-Match naming its tag) against the
# same route answered 200, on one server (SQLite, 1,000 pets), runs alternating; reports the
# median of the paired ratios. --instructions counts both too.
#
# --postgres-topologies: the list route on PostgreSQL four ways, paired: straight to the
# primary; through PgBouncer pooling transactions (as many server connections as the service
# opens straight: its pool of 8 and its worker's reads) keeping no prepared
# statements (`pooler=transaction`) and keeping them (`max_prepared_statements`,
# `pooler=transaction-prepared`); and with its reads on a synchronous standby
# (`--database-read-url`). A primary and a standby (pg_basebackup -R, `synchronous_standby_names
# = '*'`) and two PgBouncers of its own (scripts/pgbouncer.sh builds it), on free ports, run as
# the `postgres` user; four servers, one worker each, on the same core; each round runs each
# way in turn; reports the medians and the median of each round's ratio to its direct run.
# POST /v1/pets the same way: what the poolers and `remote_apply` cost a create.
#
# --patroni: the list route and creates on the Patroni cluster of deploy/patroni/ (etcd with
# three members, three nodes with the shipped patroni.yml, HAProxy with the shipped
# haproxy.cfg, on free ports; Patroni as the `postgres` user), paired: straight to the leader,
# through HAProxy's read-write port, and through it with reads on the synchronous standbys
# (HAProxy's read-only port). Three servers, one worker each, on the same core; runs alternate;
# reports the medians and the median of each pair's ratio to the direct run.
#
# --metrics-cost: the list route's throughput with metrics recorded against the same without
# (--metrics=false), SQLite with 1,000 pets, two servers on the same core, runs alternating;
# reports the median of the paired ratios.
#
# PostgreSQL (and Redis with --redis) are used when reachable on 127.0.0.1 (PETSTORE_BENCH_PG,
# PETSTORE_BENCH_REDIS override the URLs); a database of its own is created and dropped, and
# reached with PETSTORE_BENCH_PG_PARAMS (default sslmode=disable: TLS on loopback would measure
# the encryption, not the service). On PostgreSQL the CPU time its own backends spend per list request
# is reported too: on a machine this small it shares the cores with the server and wrk.
set -euo pipefail
cd "$(dirname "$0")/.."

PETS=""
BACKENDS=""
REDIS=0
DURATION=10
RUNS=3
CONNS=32
OUT=""
INSTRUCTIONS=0
SCALE=0
COUNTERS_COST=0
METRICS_COST=0
CONDITIONAL_COST=0
REDIS_COST=0
CREATES=0
TOPOLOGIES=0
PATRONI=0
WEBHOOKS_COST=0
WEBHOOKS_THROUGHPUT=0
TRACES_COST=0
AGAINST=""
DELIVERIES=4000
KEYS=1
ROUTE=orders
while [ $# -gt 0 ]; do
  case "$1" in
    --pets) PETS=$2; shift 2 ;;
    --backends) BACKENDS=$2; shift 2 ;;
    --redis) REDIS=1; shift ;;
    --duration) DURATION=$2; shift 2 ;;
    --runs) RUNS=$2; shift 2 ;;
    --connections) CONNS=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --instructions) INSTRUCTIONS=1; shift ;;
    --scale) SCALE=1; shift ;;
    --counters-cost) COUNTERS_COST=1; shift ;;
    --metrics-cost) METRICS_COST=1; shift ;;
    --conditional-cost) CONDITIONAL_COST=1; shift ;;
    --redis-cost) REDIS_COST=1; shift ;;
    --creates) CREATES=1; shift ;;
    --postgres-topologies) TOPOLOGIES=1; shift ;;
    --patroni) PATRONI=1; shift ;;
    --webhooks-cost) WEBHOOKS_COST=1; shift ;;
    --webhooks-throughput) WEBHOOKS_THROUGHPUT=1; shift ;;
    --traces-cost) TRACES_COST=1; shift ;;
    --against) AGAINST=$2; shift 2 ;;
    --deliveries) DELIVERIES=$2; shift 2 ;;
    --keys) KEYS=$2; shift 2 ;;
    --route) ROUTE=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
if [ -z "$OUT" ]; then
  OUT=target/bench/results.md
  [ "$INSTRUCTIONS" = 1 ] && OUT=target/bench/instructions.md
  [ "$SCALE" = 1 ] && OUT=target/bench/scale.md
fi
PG_ADMIN=${PETSTORE_BENCH_PG:-postgres://postgres@127.0.0.1:5432/test}
MYSQL_ADMIN=${PETSTORE_BENCH_MYSQL:-mysql://root@127.0.0.1:3306/test}
MYSQL_DB=""
# mysql_cli URL [mysql args...]: the mysql client on the database a mysql://user[:pass]@host:port/db
# URL names (the recursive seed needs MariaDB 10.2+; MySQL 8 stops it at
# `cte_max_recursion_depth`, 1,000 by default).
mysql_cli() {
  local rest=${1#mysql://} user host port db pass=""
  rest=${rest%%\?*}
  user=${rest%%@*}; rest=${rest#*@}
  case "$user" in *:*) pass=${user#*:}; user=${user%%:*} ;; esac
  host=${rest%%/*}; db=${rest#*/}
  port=${host##*:}; host=${host%:*}
  shift
  MYSQL_PWD=$pass mysql -u"$user" -h"$host" -P"$port" "$db" "$@"
}
PG_PARAMS=${PETSTORE_BENCH_PG_PARAMS-sslmode=disable}
REDIS_URL=${PETSTORE_BENCH_REDIS:-redis://127.0.0.1:6379}

reachable() { timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null; }
if [ -z "$BACKENDS" ]; then
  BACKENDS=sqlite
  if reachable 5432; then BACKENDS=sqlite,postgres; fi
fi

install_missing() { # command package
  if ! command -v "$1" >/dev/null; then
    echo "bench: installing $2" >&2
    apt-get update -qq >/dev/null && apt-get install -y -qq "$2" >/dev/null
  fi
}
install_missing wrk wrk
install_missing sqlite3 sqlite3
install_missing psql postgresql-client
install_missing taskset util-linux
case ",$BACKENDS," in *,postgres,*) install_missing pgbench postgresql ;; esac

# The program and, from petstore-http, the ceiling and the floors: one build.
cargo build --release --quiet -p petstore -p petstore-http --bin petstore --example ceiling \
  --example pg_floor --example sqlite_floor --example mysql_floor
# PETSTORE_BENCH_BIN measures another build of petstore (an earlier commit's, say) on the same
# harness, floors and ceiling.
BIN=${PETSTORE_BENCH_BIN:-$PWD/target/release/petstore}
CEILING=$PWD/target/release/examples/ceiling
PG_FLOOR=$PWD/target/release/examples/pg_floor
SQLITE_FLOOR=$PWD/target/release/examples/sqlite_floor
MYSQL_FLOOR=$PWD/target/release/examples/mysql_floor
if [ "$(nproc)" -ge 2 ]; then SERVER_CPU=0; LOAD_CPU=1; else SERVER_CPU=0; LOAD_CPU=0; fi

WORK=$(mktemp -d)
SERVER_PID=""
CEILING_PID=""
FLOOR_PID=""
PG_DB=""
# What --scale and --counters-cost keep up side by side: their servers and databases.
SERVERS=()
BENCH_DBS=()
cleanup() {
  local pid db
  for pid in "${SERVERS[@]}"; do kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true; done
  for db in "${BENCH_DBS[@]}"; do
    psql -q "$PG_ADMIN" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true
  done
  [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
  [ -n "$CEILING_PID" ] && kill "$CEILING_PID" 2>/dev/null && wait "$CEILING_PID" 2>/dev/null
  [ -n "$FLOOR_PID" ] && kill "$FLOOR_PID" 2>/dev/null && wait "$FLOOR_PID" 2>/dev/null
  [ -n "$PG_DB" ] && psql -q "$PG_ADMIN" -c "DROP DATABASE IF EXISTS $PG_DB WITH (FORCE)" >/dev/null 2>&1
  [ -n "$MYSQL_DB" ] && mysql_cli "$MYSQL_ADMIN" -e "DROP DATABASE IF EXISTS $MYSQL_DB" >/dev/null 2>&1
  # The Redis runs' counters (under this run's prefix), rather than leaving them to expire.
  if command -v redis-cli >/dev/null; then
    redis-cli -u "$REDIS_URL" --scan --pattern "petstore-bench-$$*" 2>/dev/null |
      xargs -r redis-cli -u "$REDIS_URL" DEL >/dev/null 2>&1
  fi
  # --postgres-topologies' own servers.
  if [ -n "$TOPO" ]; then
    # SIGQUIT: PgBouncer's immediate shutdown (since 1.23, SIGTERM waits for every client).
    [ -f "$TOPO/pgbouncer.pid" ] && { kill -QUIT "$(cat "$TOPO/pgbouncer.pid")" 2>/dev/null || true; }
    [ -f "$TOPO/pgbouncer-keeping.pid" ] && { kill -QUIT "$(cat "$TOPO/pgbouncer-keeping.pid")" 2>/dev/null || true; }
    for data in "$TOPO/standby" "$TOPO/primary"; do
      [ -f "$data/postmaster.pid" ] && { as_postgres "$PG_BIN/pg_ctl" -D "$data" stop -m fast >/dev/null 2>&1 || true; }
    done
    rm -rf "$TOPO"
  fi
  # --patroni's cluster: HAProxy, Patroni, each node's PostgreSQL at once, etcd.
  if [ -n "$CLUSTER" ]; then
    for pid in "${CLUSTER_PIDS[@]}"; do { kill -9 "$pid" && wait "$pid"; } 2>/dev/null || true; done
    for pidfile in "$CLUSTER"/node*/data/postmaster.pid; do
      [ -f "$pidfile" ] && kill -QUIT "$(head -n1 "$pidfile")" 2>/dev/null || true
    done
    sleep 0.5
    rm -rf "$CLUSTER"
  fi
  rm -rf "$WORK"
}
TOPO=""
CLUSTER=""
CLUSTER_PIDS=()
# Runs a command as the `postgres` user when root (PostgreSQL and PgBouncer refuse root).
as_postgres() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
trap cleanup EXIT
mkdir -p "$(dirname "$OUT")"

# create_pg_db NAME: a new PostgreSQL database, dropped at exit; sets `url` to reach it.
create_pg_db() {
  psql -q "$PG_ADMIN" -c "CREATE DATABASE $1" >/dev/null
  BENCH_DBS+=("$1")
  url=${PG_ADMIN%%\?*}
  url=${url%/*}/$1${PG_PARAMS:+?$PG_PARAMS}
}

# --- servers ---------------------------------------------------------------------------------
start_server() { # logname command...
  local log=$WORK/$1.out; shift
  taskset -c "$SERVER_CPU" "$@" >"$log" 2>"$log.err" &
  SERVER_PID=$!
  for _ in $(seq 1 1200); do # up to a minute: valgrind starts slowly
    grep -q '^listening on ' "$log" 2>/dev/null && break
    kill -0 "$SERVER_PID" 2>/dev/null || { cat "$log.err" >&2; exit 1; }
    sleep 0.05
  done
  BASE=$(grep -m1 '^listening on ' "$log" | sed 's/^listening on //')
}
stop_server() { kill -TERM "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true; SERVER_PID=""; }
peak_rss_mib() { awk '/VmHWM/ { printf "%.1f", $2 / 1024 }' "/proc/$SERVER_PID/status"; }
cpu_ticks() { # pid... -> user + system clock ticks used so far, summed
  local total=0 pid
  for pid in "$@"; do
    total=$((total + $(awk '{ print $14 + $15 }' "/proc/$pid/stat" 2>/dev/null || echo 0)))
  done
  echo "$total"
}

# --- load ------------------------------------------------------------------------------------
to_ms() { # "1.23ms" | "850.00us" | "1.20s" -> milliseconds
  awk -v v="$1" 'BEGIN {
    n = v + 0
    if (v ~ /us$/) n = n / 1000; else if (v ~ /ms$/) n = n; else if (v ~ /s$/) n = n * 1000
    printf "%.2f", n }'
}
median() { sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

# One wrk run, the same for the ceiling and the service: pinned, 1 thread, $CONNS connections.
wrk_once() { # [wrk args...] URL -> wrk's report
  taskset -c "$LOAD_CPU" wrk -t1 -c"$CONNS" -d"${DURATION}s" --latency "$@"
}
rps_of() { awk '/^Requests\/sec/ { print $2 }'; }

# pgbench running the list query, prepared, 8 clients, pinned like wrk -> its transactions/s.
pgbench_once() { # url
  taskset -c "$LOAD_CPU" pgbench -n -M prepared -c 8 -j 1 -T "$DURATION" \
    -f "$WORK/list.sql" "$1" 2>/dev/null | awk '/^tps/ { print $3 }'
}

# run_wrk URL [wrk args...] -> sets RPS P50 P99 NON2XX (medians over $RUNS runs) and RATIO.
# With PAIR=get or PAIR=post, each run is preceded by a run of the ceiling's matching route
# (the ceiling server stays up, idle, on the same core), and RATIO is the median of the runs'
# own ratios: both halves of a pair saw the machine in the same state, where a ceiling measured
# minutes earlier may not have (its speed moves by a third between quarter-hours here).
# With FLOOR=1, each run is also preceded by a run of the same path on the floor (running at
# $FLOOR_BASE): FLOOR_RPS and FLOOR_RATIO, medians likewise; with PGBENCH=1 (PostgreSQL's list)
# by one of pgbench too: PGBENCH_TPS and PGBENCH_RATIO.
run_wrk() {
  local url=$1; shift
  local rps=() p50=() p99=() ratios=() bad=0 floors=() floor_ratios=() tps=() tps_ratios=()
  for _ in $(seq 1 "$RUNS"); do
    local out ceiling="" floor="" bench=""
    case "${PAIR:-}" in
      get) ceiling=$(wrk_once "$CEILING_BASE/v1/pets" | rps_of) ;;
      post) ceiling=$(wrk_once -s scripts/bench/post.lua "$CEILING_BASE/v1/pets" | rps_of) ;;
    esac
    if [ "${FLOOR:-0}" = 1 ]; then
      floor=$(wrk_once "$FLOOR_BASE${url#"$BASE"}" | rps_of)
      floors+=("$floor")
    fi
    if [ "${PGBENCH:-0}" = 1 ]; then
      bench=$(pgbench_once "$PG_URL")
      tps+=("$bench")
    fi
    out=$(wrk_once "$@" "$url")
    rps+=("$(rps_of <<<"$out")")
    p50+=("$(to_ms "$(awk '$1 == "50%" { print $2 }' <<<"$out")")")
    p99+=("$(to_ms "$(awk '$1 == "99%" { print $2 }' <<<"$out")")")
    bad=$((bad + $(awk '/Non-2xx/ { print $NF }' <<<"$out" | tail -n1 | grep -E '^[0-9]+$' || echo 0)))
    if [ -n "$ceiling" ]; then
      ratios+=("$(awk -v a="${rps[-1]}" -v b="$ceiling" 'BEGIN { printf "%.4f", a / b }')")
    fi
    if [ -n "$floor" ]; then
      floor_ratios+=("$(awk -v a="${rps[-1]}" -v b="$floor" 'BEGIN { printf "%.4f", a / b }')")
      echo "bench: pair: floor $floor req/s${bench:+, pgbench $bench tps}, service ${rps[-1]} req/s" >&2
    fi
    if [ -n "$bench" ]; then
      tps_ratios+=("$(awk -v a="${rps[-1]}" -v b="$bench" 'BEGIN { printf "%.4f", a / b }')")
    fi
  done
  FLOOR_RPS="" FLOOR_RATIO="" PGBENCH_TPS="" PGBENCH_RATIO=""
  if [ ${#floors[@]} -gt 0 ]; then
    FLOOR_RPS=$(printf '%s\n' "${floors[@]}" | median)
    FLOOR_RATIO=$(printf '%s\n' "${floor_ratios[@]}" | median)
  fi
  if [ ${#tps[@]} -gt 0 ]; then
    PGBENCH_TPS=$(printf '%s\n' "${tps[@]}" | median)
    PGBENCH_RATIO=$(printf '%s\n' "${tps_ratios[@]}" | median)
  fi
  RPS=$(printf '%s\n' "${rps[@]}" | median)
  P50=$(printf '%s\n' "${p50[@]}" | median)
  P99=$(printf '%s\n' "${p99[@]}" | median)
  NON2XX=$bad
  RATIO=""
  if [ ${#ratios[@]} -gt 0 ]; then RATIO=$(printf '%s\n' "${ratios[@]}" | median); fi
}

ROWS=()
FLOOR_ROWS=()
percent() { awk -v r="$1" 'BEGIN { printf "%.0f%%", 100 * r }'; }
row() { # backend pets route
  local ratio=- of_floor=-
  [ -n "$RATIO" ] && ratio=$(percent "$RATIO")
  [ -n "$FLOOR_RATIO" ] && of_floor=$(percent "$FLOOR_RATIO")
  ROWS+=("| $1 | $2 | $3 | $(printf '%.0f' "$RPS") | $ratio | $of_floor | $P50 | $P99 | $NON2XX | $(peak_rss_mib) |")
  echo "bench: $1 N=$2 $3: $(printf '%.0f' "$RPS") req/s ($ratio of ceiling, $of_floor of floor), p50 $P50 ms, p99 $P99 ms, non-2xx $NON2XX, RSS $(peak_rss_mib) MiB" >&2
  if [ -n "$PGBENCH_TPS" ]; then
    FLOOR_ROWS+=("| $2 | $(printf '%.0f' "$RPS") | $(printf '%.0f' "$FLOOR_RPS") | $of_floor | $(printf '%.0f' "$PGBENCH_TPS") | $(percent "$PGBENCH_RATIO") |")
    echo "bench: $1 N=$2 $3: $(percent "$PGBENCH_RATIO") of pgbench ($(printf '%.0f' "$PGBENCH_TPS") tps)" >&2
  fi
}

# --- catalogue -------------------------------------------------------------------------------
seed() { # backend url n
  "$BIN" --database-url "$2" migrate 2>/dev/null
  local status="CASE x % 3 WHEN 0 THEN 'sold' WHEN 1 THEN 'available' ELSE 'pending' END"
  case "$1" in
    sqlite) sqlite3 "$2" "WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM s WHERE x < $3)
        INSERT INTO pets (name, category_id, status, created_at)
        SELECT 'pet ' || x, 1 + x % 10, $status, 1700000000 FROM s;" ;;
    mysql) mysql_cli "$2" -e "INSERT INTO pets (name, category_id, status, created_at)
        WITH RECURSIVE s (x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM s WHERE x < $3)
        SELECT CONCAT('pet ', x), 1 + x % 10, $status, 1700000000 FROM s;
        ANALYZE TABLE pets;" >/dev/null ;;
    postgres) psql -q "$2" -c "INSERT INTO pets (name, category_id, status, created_at)
        SELECT 'pet ' || x, 1 + x % 10, $status, 1700000000 FROM generate_series(1, $3) AS x;"
      # A catalogue in steady state, as a long-running one is: statistics, the visibility map and
      # hint bits set now, so that neither autovacuum (a bulk insert triggers it) nor the first
      # readers of each page do that work during the runs.
      psql -q "$2" -c "VACUUM (ANALYZE) pets;" ;;
  esac
}

# An enterprise key whose limits the benchmark never reaches.
bench_key() { # url -> the key's secret
  "$BIN" --database-url "$1" keys create --plan enterprise --per-minute 4000000000 \
    --per-day 4000000000 --label bench 2>/dev/null
}

# conditional_tag URL [curl args...] -> the ETag of URL's answer, after checking that asking with
# it is answered 304.
conditional_tag() {
  local url=$1; shift
  local tag
  tag=$(curl -s -o /dev/null -D - "$@" "$url" | awk 'tolower($1) == "etag:" { print $2 }' | tr -d '\r')
  local status
  status=$(curl -s -o /dev/null -w '%{http_code}' "$@" -H "If-None-Match: $tag" "$url")
  if [ -z "$tag" ] || [ "$status" != 304 ]; then
    echo "bench: $url: tag '$tag' answered $status, not 304" >&2
    exit 1
  fi
  echo "$tag"
}

# count LABEL PATH [ab args...] -- server command...: user-space instructions per request of
# PATH (answered 2xx, or 304 with EXPECT_304=1) into IR, under callgrind (--instructions, and
# the instruction rows of --traces-cost).
REQUESTS=5000
count() {
  local label=$1 path=$2; shift 2
  local ab_args=()
  while [ "$1" != -- ]; do ab_args+=("$1"); shift; done
  shift
  local out=$WORK/callgrind.$label
  rm -f "$out" "$out".* # never read a previous route's counts
  start_server "callgrind-$label" env RUST_LOG=warn \
    valgrind --tool=callgrind --callgrind-out-file="$out" "$@"
  # Warm up (statement cache, key cache, allocator), then count a fixed number of requests.
  ab -q -k -n 500 -c 4 "${ab_args[@]}" "$BASE$path" >/dev/null
  callgrind_control -z "$SERVER_PID" >/dev/null
  local report
  report=$(ab -q -k -n "$REQUESTS" -c 4 "${ab_args[@]}" "$BASE$path")
  callgrind_control -d "$SERVER_PID" >/dev/null
  stop_server
  if [ "${EXPECT_304:-0}" = 0 ] && grep -q 'Non-2xx' <<<"$report"; then
    echo "bench: $path answered non-2xx responses" >&2
    exit 1
  fi
  local total
  total=$(awk '/^totals:/ { print $2 }' "$out.1" 2>/dev/null)
  if [ -z "$total" ]; then
    echo "bench: callgrind wrote no counts for $label" >&2
    exit 1
  fi
  IR=$((total / REQUESTS))
}

# --- instructions (--instructions) -----------------------------------------------------------
if [ "$INSTRUCTIONS" = 1 ]; then
  install_missing valgrind valgrind
  install_missing ab apache2-utils
  db=$WORK/instructions.db
  seed sqlite "$db" 1000
  auth=(-H "Authorization: Bearer $(bench_key "$db")")
  serve=("$BIN" --database-url "$db" serve --bind 127.0.0.1:0 --workers 1 --bootstrap-key=false)
  count ceiling /v1/pets -- "$CEILING" 127.0.0.1:0 1
  ceiling=$IR
  {
    echo "User-space instructions per request (callgrind), $REQUESTS keep-alive requests at 4 connections after 500 to warm up; SQLite, 1,000 pets; $(git rev-parse --short HEAD 2>/dev/null || echo unknown)."
    echo
    echo "| Route | Instructions per request | Ceiling's share | SQLite floor | Over the floor |"
    echo "|---|---|---|---|---|"
    echo "| ceiling: GET /v1/pets (static 20 pets) | $ceiling | 100% | - | - |"
    for path in "/v1/pets?limit=20" "/v1/pets/500" "/v1/pets?limit=100&status=sold&after=600"; do
      count floor "$path" -- "$SQLITE_FLOOR" 127.0.0.1:0 1 "$db"
      local_floor=$IR
      count route "$path" "${auth[@]}" -- "${serve[@]}"
      echo "| GET $path | $IR | $(awk -v c="$ceiling" -v r="$IR" 'BEGIN { printf "%.0f%%", 100 * c / r }') | $local_floor | $(awk -v f="$local_floor" -v r="$IR" 'BEGIN { printf "%+.0f%%", 100 * (r - f) / f }') |"
      [ "$path" = "/v1/pets?limit=20" ] && list=$IR
    done
    # The list again, answered 304: If-None-Match naming its tag (read from a plain server).
    start_server tag "${serve[@]}"
    tag=$(conditional_tag "$BASE/v1/pets?limit=20" "${auth[@]}")
    stop_server
    EXPECT_304=1 count not-modified "/v1/pets?limit=20" "${auth[@]}" -H "If-None-Match: $tag" -- "${serve[@]}"
    echo "| GET /v1/pets?limit=20, 304 (If-None-Match) | $IR | $(awk -v c="$ceiling" -v r="$IR" 'BEGIN { printf "%.0f%%", 100 * c / r }') | - | $(awk -v l="$list" -v r="$IR" 'BEGIN { printf "%+.0f%% of the 200", 100 * (r - l) / l }') |"
  } >"$OUT"
  cat "$OUT"
  exit 0
fi

# --- scale (--scale) ----------------------------------------------------------------------------
if [ "$SCALE" = 1 ]; then
  # seed_skewed backend url n key_id: n pets, one in 1,000 pending (a placed order of the key's)
  # and one in 1,000 sold (a delivered one), spread evenly; on a catalogue too small to hold 42
  # of each that way, at least 42 of each: every page measured is full at every size (with one pending
  # pet at 1,000, the smallest size would answer a smaller page and flatter itself).
  seed_skewed() {
    local step=$(( $3 / 1000 >= 42 ? 1000 : $3 / 42 ))
    local status="CASE x % $step WHEN 0 THEN 'pending' WHEN $(( step / 2 )) THEN 'sold'
      ELSE 'available' END"
    local pets="INSERT INTO pets (name, category_id, status, created_at)
        SELECT 'pet ' || x, 1 + x % 10, $status, 1700000000 FROM series;
      INSERT INTO orders (pet_id, quantity, status, created_at, owner_key_id)
        SELECT id, 1, CASE status WHEN 'pending' THEN 'placed' ELSE 'delivered' END, 1700000000, $4
        FROM pets WHERE status <> 'available' ORDER BY id;"
    case "$1" in
      sqlite) sqlite3 "$2" "CREATE TEMP VIEW series AS WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL
          SELECT x + 1 FROM s WHERE x < $3) SELECT x FROM s; $pets" ;;
      postgres)
        # One transaction would change each counter row once per pet, and PostgreSQL walks a
        # row's versions from its first to update it again: a load this size takes the
        # triggers off and counts once, as docs/operations.md says to.
        psql -q "$2" -c "CREATE TEMP VIEW series AS SELECT x FROM generate_series(1, $3) AS x;
          SET session_replication_role = replica; $pets SET session_replication_role = origin;
          UPDATE pet_status_counts AS c SET pets = (SELECT COUNT(*) FROM pets AS p
            WHERE p.status = c.status AND abs(p.id % 16) = c.slot);"
        psql -q "$2" -c "VACUUM (ANALYZE);" ;;
    esac
  }
  disk_mib() { # backend url
    case "$1" in
      sqlite) du -cm "$2"* | awk 'END { print $1 }' ;;
      postgres) psql -Atq "$2" -c "SELECT round(pg_database_size(current_database()) / 1048576.0)" ;;
    esac
  }
  [ -n "$PETS" ] || PETS=1000,100000,1000000
  IFS=, read -r -a SIZES <<<"$PETS"
  for n in "${SIZES[@]}"; do
    if [ "$n" -lt 1000 ]; then echo "bench: --scale measures catalogues of 1,000 pets or more" >&2; exit 2; fi
  done
  IFS=, read -r -a BACKEND_LIST <<<"$BACKENDS"
  ROUTES=("/v1/pets?limit=20" "/v1/pets?limit=20&after={half}" "/v1/pets?limit=20&status=available"
    "/v1/pets?limit=20&status=pending" "/v1/pets?limit=20&status=sold"
    "/v1/pets?limit=20&status=sold&after={half}" "/v1/pets/{half}" "/v1/store/inventory"
    "/v1/store/orders?limit=20" "/v1/store/orders/1")
  header="| Backend | Route |"; rule="|---|---|"
  for n in "${SIZES[@]}"; do header+=" $n pets |"; rule+="---|"; done
  TABLE=("$header" "$rule")
  SIZE_ROWS=()
  for backend in "${BACKEND_LIST[@]}"; do
    SERVERS=() bases=() keys=()
    for n in "${SIZES[@]}"; do
      case "$backend" in
        sqlite) url=$WORK/scale-$n.db ;;
        postgres) create_pg_db "petstore_scale_$$_$n" ;;
      esac
      "$BIN" --database-url "$url" migrate 2>/dev/null
      keys+=("$(bench_key "$url")")
      key_id=$(case "$backend" in
        sqlite) sqlite3 "$url" "SELECT max(id) FROM api_keys" ;;
        postgres) psql -Atq "$url" -c "SELECT max(id) FROM api_keys" ;;
      esac)
      echo "bench: seeding $n pets on $backend" >&2
      started=$(date +%s)
      seed_skewed "$backend" "$url" "$n" "$key_id"
      seeded=$(( $(date +%s) - started ))
      start_server "scale-$backend-$n" env RUST_LOG=warn "$BIN" --database-url "$url" serve \
        --bind 127.0.0.1:0 --workers 1 --bootstrap-key=false
      SERVERS+=("$SERVER_PID") bases+=("$BASE")
      SIZE_ROWS+=("| $backend | $n | $(disk_mib "$backend" "$url") | ${seeded}s |")
    done
    for route in "${ROUTES[@]}"; do
      declare -A ratios=() rates=()
      for _ in $(seq 1 "$RUNS"); do
        first=""
        for i in "${!SIZES[@]}"; do
          n=${SIZES[$i]}
          path=${route//\{half\}/$(( n / 2 ))}
          out=$(wrk_once -H "Authorization: Bearer ${keys[$i]}" "${bases[$i]}$path")
          if grep -q 'Non-2xx' <<<"$out"; then
            echo "bench: $path answered non-2xx responses on $backend with $n pets" >&2
            exit 1
          fi
          rps=$(rps_of <<<"$out")
          [ -z "$first" ] && first=$rps
          rates[$i]+="$rps "
          ratios[$i]+="$(awk -v a="$rps" -v b="$first" 'BEGIN { printf "%.4f", a / b }') "
        done
      done
      line="| $backend | GET $route |"
      for i in "${!SIZES[@]}"; do
        rate=$(tr ' ' '\n' <<<"${rates[$i]}" | grep . | median)
        ratio=$(tr ' ' '\n' <<<"${ratios[$i]}" | grep . | median)
        if [ "$i" = 0 ]; then
          line+=" $(printf '%.0f' "$rate") |"
        else
          line+=" $(printf '%.0f' "$rate") ($(awk -v r="$ratio" 'BEGIN { printf "%.2f", r }')) |"
        fi
      done
      TABLE+=("$line")
      echo "bench: $line" >&2
      unset ratios rates
    done
    for i in "${!SIZES[@]}"; do
      SERVER_PID=${SERVERS[$i]}
      SIZE_ROWS[${#SIZE_ROWS[@]} - ${#SIZES[@]} + i]+=" $(peak_rss_mib) |"
      stop_server
    done
    SERVERS=()
  done
  {
    echo "GET routes by catalogue size, $(git rev-parse --short HEAD 2>/dev/null || echo unknown), measured $(date -u +%Y-%m-%dT%H:%MZ) on $(nproc) cores; one server per size (1 worker each, all on CPU $SERVER_CPU), wrk on CPU $LOAD_CPU with 1 thread and $CONNS connections; medians of $RUNS rounds of ${DURATION}s runs, each round visiting every size in turn; in brackets the median of the rounds' ratios to the smallest size."
    echo
    printf '%s\n' "${TABLE[@]}"
    echo
    echo "| Backend | Pets | Disk MiB | Seeding | Server peak RSS MiB |"
    echo "|---|---|---|---|---|"
    printf '%s\n' "${SIZE_ROWS[@]}"
  } >"$OUT"
  cat "$OUT"
  exit 0
fi

# --- the inventory's counters on PostgreSQL (--counters-cost) --------------------------------
# POST /v1/pets on PostgreSQL against three databases (1,000 pets each), one server each, all on
# the same core, runs alternating: the counters as shipped (16 slots per status), one slot per
# status (the trigger's function redefined to count every pet in slot 0), and none (the triggers dropped: the
# inventory would be wrong, the creates are what is measured). Reports the medians and the
# median ratios of the pairs to the run without counters (target/bench/counters-cost.md).
if [ "$COUNTERS_COST" = 1 ]; then
  VARIANTS=(spread one none)
  bases=() keys=()
  for variant in "${VARIANTS[@]}"; do
    create_pg_db "petstore_counters_$$_$variant"
    seed postgres "$url" 1000
    case "$variant" in
      one) psql -q "$url" -c "CREATE OR REPLACE FUNCTION pets_count_statuses() RETURNS trigger LANGUAGE plpgsql AS
          \$\$ BEGIN
            IF TG_OP IN ('UPDATE', 'DELETE') THEN
              UPDATE pet_status_counts SET pets = pets - 1 WHERE status = OLD.status AND slot = 0;
            END IF;
            IF TG_OP IN ('INSERT', 'UPDATE') THEN
              UPDATE pet_status_counts SET pets = pets + 1 WHERE status = NEW.status AND slot = 0;
            END IF;
            RETURN NULL;
          END \$\$" ;;
      none) psql -q "$url" -c "DROP TRIGGER pets_count_insert ON pets" ;;
    esac
    keys+=("$(bench_key "$url")")
    start_server "counters-$variant" env RUST_LOG=warn "$BIN" --database-url "$url" serve \
      --bind 127.0.0.1:0 --workers 1 --bootstrap-key=false
    SERVERS+=("$SERVER_PID") bases+=("$BASE")
  done
  declare -A rates=() ratios=()
  for _ in $(seq 1 "$RUNS"); do
    base=""
    for i in 2 0 1; do
      rps=$(wrk_once -H "Authorization: Bearer ${keys[$i]}" -s scripts/bench/post.lua \
        "${bases[$i]}/v1/pets" | rps_of)
      [ -z "$base" ] && base=$rps
      rates[$i]+="$rps "
      ratios[$i]+="$(awk -v a="$rps" -v b="$base" 'BEGIN { printf "%.4f", a / b }') "
    done
    last() { tr ' ' '\n' <<<"$1" | grep . | tail -n1; }
    echo "bench: req/s without counters $(last "${rates[2]}"), with 16 slots $(last "${rates[0]}"), with one $(last "${rates[1]}")" >&2
  done
  for i in "${!SERVERS[@]}"; do SERVER_PID=${SERVERS[$i]}; stop_server; done
  SERVERS=()
  OUT=${OUT%/*}/counters-cost.md
  {
    echo "POST /v1/pets on PostgreSQL ($PG_PARAMS), 1,000 pets to start, one server per variant (1 worker each, on CPU $SERVER_CPU), wrk on CPU $LOAD_CPU with $CONNS connections; $RUNS rounds of ${DURATION}s runs, each round running every variant in turn; $(git rev-parse --short HEAD 2>/dev/null || echo unknown)."
    echo
    echo "| Counters | Req/s (median) | Of no counters (median of the rounds' ratios) |"
    echo "|---|---|---|"
    for i in 2 0 1; do
      label=$(case "${VARIANTS[$i]}" in spread) echo "16 slots per status (shipped)" ;; one) echo "one row per status" ;; none) echo "none (triggers dropped)" ;; esac)
      echo "| $label | $(tr ' ' '\n' <<<"${rates[$i]}" | grep . | median | xargs printf '%.0f') | $(tr ' ' '\n' <<<"${ratios[$i]}" | grep . | median | xargs printf '%.2f') |"
    done
  } >"$OUT"
  cat "$OUT"
  exit 0
fi

# --- paired runs (--metrics-cost, --redis-cost) ---------------------------------------------
# paired NAME DESCRIPTION BASE_HEADING OTHER_HEADING RATIO_HEADING -- BASE_ARGS... -- OTHER_ARGS...
# Two servers over one database (SQLite, 1,000 pets) on the same core, `serve` with BASE_ARGS and
# with OTHER_ARGS; GET /v1/pets?limit=20 on each in turn, $RUNS times; writes the medians and the
# median of the pairs' ratios (other / base) to target/bench/NAME.md.
paired() {
  local name=$1 describe=$2 base_heading=$3 other_heading=$4 ratio_heading=$5
  shift 6
  local base_args=()
  while [ "$1" != -- ]; do base_args+=("$1"); shift; done
  shift
  local db=$WORK/$name.db
  seed sqlite "$db" 1000
  # How wrk presents a key: one in a header, or N in turn from a script.
  local keys
  if [ "$KEYS" -le 1 ]; then
    keys=(-H "Authorization: Bearer $(bench_key "$db")")
  else
    {
      echo "keys = {"
      for _ in $(seq 1 "$KEYS"); do echo "  \"$(bench_key "$db")\","; done
      echo "}"
      cat scripts/bench/keys.lua
    } >"$WORK/keys.lua"
    keys=(-s "$WORK/keys.lua")
  fi
  local serve=("$BIN" --database-url "$db" serve --bind 127.0.0.1:0 --workers 1 --bootstrap-key=false)
  start_server "$name-base" env RUST_LOG=warn "${serve[@]}" "${base_args[@]}"
  local base_pid=$SERVER_PID base_url=$BASE
  start_server "$name-other" env RUST_LOG=warn "${serve[@]}" "$@"
  local other_pid=$SERVER_PID other_url=$BASE
  local ratios=() base=() other=()
  for _ in $(seq 1 "$RUNS"); do
    base+=("$(wrk_once "${keys[@]}" "$base_url/v1/pets?limit=20" | rps_of)")
    other+=("$(wrk_once "${keys[@]}" "$other_url/v1/pets?limit=20" | rps_of)")
    ratios+=("$(awk -v a="${other[-1]}" -v b="${base[-1]}" 'BEGIN { printf "%.4f", a / b }')")
    echo "bench: ${base_heading% (*} ${base[-1]} req/s, ${other_heading% (*} ${other[-1]} req/s" >&2
  done
  kill -TERM "$base_pid" "$other_pid"; wait "$base_pid" "$other_pid" 2>/dev/null || true
  SERVER_PID=""
  OUT=${OUT%/*}/$name.md
  {
    echo "$describe; $RUNS alternating runs of ${DURATION}s; $(git rev-parse --short HEAD 2>/dev/null || echo unknown)."
    echo
    echo "| $base_heading | $other_heading | $ratio_heading |"
    echo "|---|---|---|"
    echo "| $(printf '%s\n' "${base[@]}" | median) | $(printf '%s\n' "${other[@]}" | median) | $(printf '%s\n' "${ratios[@]}" | median) |"
  } >"$OUT"
  cat "$OUT"
}

# Creates on PostgreSQL (--creates): this build against pgbench writing the same row, and
# against another build with --against; then each build's instructions per create.
if [ "$CREATES" = 1 ]; then
  reachable 5432 || { echo "bench: PostgreSQL is unreachable" >&2; exit 1; }
  PG_DB=petstore_bench_$$_creates
  psql -q "$PG_ADMIN" -c "CREATE DATABASE $PG_DB" >/dev/null
  url=${PG_ADMIN%%\?*}
  url=${url%/*}/$PG_DB${PG_PARAMS:+?$PG_PARAMS}
  seed postgres "$url" 1000
  auth=(-H "Authorization: Bearer $(bench_key "$url")")
  serve=(--database-url "$url" serve --bind 127.0.0.1:0 --workers 1 --bootstrap-key=false)
  # What a create writes, as one statement in autocommit: the database's own speed for it.
  echo "INSERT INTO pets (name, category_id, status, created_at) VALUES ('bench pet', 3, 'available', 1700000000) RETURNING id;" >"$WORK/create.sql"
  start_server creates-this env RUST_LOG=warn "$BIN" "${serve[@]}"
  this_pid=$SERVER_PID this_url=$BASE
  pids=("$this_pid")
  if [ -n "$AGAINST" ]; then
    start_server creates-other env RUST_LOG=warn "$AGAINST" "${serve[@]}"
    other_pid=$SERVER_PID other_url=$BASE
    pids+=("$other_pid")
  fi
  post_once() { wrk_once "${auth[@]}" -s scripts/bench/post.lua "$1/v1/pets" | rps_of; }
  tps=() this=() other=() of_pgbench=() of_other=()
  for _ in $(seq 1 "$RUNS"); do
    tps+=("$(taskset -c "$LOAD_CPU" pgbench -n -M prepared -c "$CONNS" -j 1 -T "$DURATION" \
      -f "$WORK/create.sql" "$url" 2>/dev/null | awk '/^tps/ { print $3 }')")
    [ -n "$AGAINST" ] && other+=("$(post_once "$other_url")")
    this+=("$(post_once "$this_url")")
    of_pgbench+=("$(awk -v a="${this[-1]}" -v b="${tps[-1]}" 'BEGIN { printf "%.4f", a / b }')")
    [ -n "$AGAINST" ] && of_other+=("$(awk -v a="${this[-1]}" -v b="${other[-1]}" 'BEGIN { printf "%.4f", a / b }')")
    echo "bench: pgbench ${tps[-1]} tps${AGAINST:+, other build ${other[-1]:-} req/s}, this build ${this[-1]} req/s" >&2
  done
  kill -TERM "${pids[@]}"; wait "${pids[@]}" 2>/dev/null || true
  SERVER_PID=""
  # Then counted: the server's user-space instructions per create.
  install_missing valgrind valgrind
  install_missing ab apache2-utils
  echo '{"name":"bench pet","categoryId":3,"status":"available"}' >"$WORK/pet.json"
  post=(-p "$WORK/pet.json" -T application/json "${auth[@]}")
  count create-this /v1/pets "${post[@]}" -- "$BIN" "${serve[@]}"
  ir_this=$IR ir_other=""
  if [ -n "$AGAINST" ]; then
    count create-other /v1/pets "${post[@]}" -- "$AGAINST" "${serve[@]}"
    ir_other=$IR
  fi
  med() { printf '%s\n' "$@" | median; }
  spread() { printf '%s\n' "$@" | sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%.2f-%.2f", lo, hi }'; }
  OUT=${OUT%/*}/creates.md
  {
    echo "POST /v1/pets on PostgreSQL ($PG_PARAMS), 1,000 pets to start, 1 worker on CPU $SERVER_CPU; wrk, and pgbench running the create's INSERT ... RETURNING (prepared, autocommit), on CPU $LOAD_CPU with $CONNS connections each; $RUNS rounds of ${DURATION}s; this build $(git rev-parse --short HEAD 2>/dev/null || echo unknown)${AGAINST:+ against $AGAINST}. Ratios: medians of each round's own (and their spread); instructions: the server's, user space, per create, under callgrind."
    echo
    if [ -n "$AGAINST" ]; then
      echo "| pgbench tps | Other build req/s | This build req/s | This / pgbench | This / other | Instructions: other | Instructions: this |"
      echo "|---|---|---|---|---|---|---|"
      echo "| $(med "${tps[@]}") | $(med "${other[@]}") | $(med "${this[@]}") | $(med "${of_pgbench[@]}") ($(spread "${of_pgbench[@]}")) | $(med "${of_other[@]}") ($(spread "${of_other[@]}")) | $ir_other | $ir_this |"
    else
      echo "| pgbench tps | This build req/s | This / pgbench | Instructions per create |"
      echo "|---|---|---|---|"
      echo "| $(med "${tps[@]}") | $(med "${this[@]}") | $(med "${of_pgbench[@]}") ($(spread "${of_pgbench[@]}")) | $ir_this |"
    fi
  } >"$OUT"
  cat "$OUT"
  exit 0
fi

# start_receiver [wrapper...] -> sets receiver_port: a webhook receiver on loopback (Python),
# answering 204 at once to every POST, stopped at exit; run through `wrapper` (taskset) if given.
start_receiver() {
  receiver_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  "$@" python3 - "$receiver_port" >"$WORK/receiver.log" 2>&1 <<'PY' &
import http.server, sys
class Hook(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.send_response(204)
        self.send_header("content-length", "0")
        self.end_headers()
    def log_message(self, *args):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Hook).serve_forever()
PY
  RECEIVER_PID=$!
  trap 'kill "$RECEIVER_PID" 2>/dev/null; cleanup' EXIT
  for _ in $(seq 1 100); do reachable "$receiver_port" && break; sleep 0.05; done
}

# What traces cost on PostgreSQL: this build with traces off, exporting with a ratio of 0 (a trace
# dropped whatever its id: no span is made), and exporting every span to a collector on loopback; with --against OLD_BIN,
# that build too (traces off: what the instrumentation costs when off). All on one database, one
# worker each on the same core, runs alternating (each run starts with the next server); the
# list and creates.
if [ "$TRACES_COST" = 1 ]; then
  reachable 5432 || { echo "bench: PostgreSQL is unreachable" >&2; exit 1; }
  start_receiver taskset -c "$LOAD_CPU"
  collector=http://127.0.0.1:$receiver_port
  PG_DB=petstore_bench_$$_traces
  psql -q "$PG_ADMIN" -c "CREATE DATABASE $PG_DB" >/dev/null
  url=${PG_ADMIN%%\?*}
  url=${url%/*}/$PG_DB${PG_PARAMS:+?$PG_PARAMS}
  seed postgres "$url" 1000
  auth=(-H "Authorization: Bearer $(bench_key "$url")")
  serve=(--database-url "$url" serve --bind 127.0.0.1:0 --workers 1 --bootstrap-key=false)
  declare -A url_of pid_of
  configs=(off ratio0 all)
  start_server traces-off env RUST_LOG=warn "$BIN" "${serve[@]}"
  pid_of[off]=$SERVER_PID url_of[off]=$BASE
  start_server traces-ratio0 env RUST_LOG=warn "$BIN" "${serve[@]}" --otlp-endpoint "$collector" \
    --otel-traces-sampler traceidratio --otel-traces-sampler-arg 0
  pid_of[ratio0]=$SERVER_PID url_of[ratio0]=$BASE
  start_server traces-all env RUST_LOG=warn "$BIN" "${serve[@]}" --otlp-endpoint "$collector" \
    --otel-traces-sampler always_on
  pid_of[all]=$SERVER_PID url_of[all]=$BASE
  if [ -n "$AGAINST" ]; then
    start_server traces-old env RUST_LOG=warn "$AGAINST" "${serve[@]}"
    pid_of[old]=$SERVER_PID url_of[old]=$BASE
    configs+=(old)
  fi
  declare -A results
  for route in list create; do
    declare -A rps=() ratios=()
    for run in $(seq 1 "$RUNS"); do
      declare -A this=()
      # Each run starts with the next server, so that none always runs first (creates grow
      # the table, and whoever follows a run finds the database busier with its writes).
      first=$(((run - 1) % ${#configs[@]}))
      for config in "${configs[@]:first}" "${configs[@]:0:first}"; do
        if [ "$route" = list ]; then
          this[$config]=$(wrk_once "${auth[@]}" "${url_of[$config]}/v1/pets?limit=20" | rps_of)
        else
          this[$config]=$(wrk_once "${auth[@]}" -s scripts/bench/post.lua "${url_of[$config]}/v1/pets" | rps_of)
        fi
        rps[$config]+="${this[$config]} "
      done
      for config in "${configs[@]}"; do
        ratios[$config]+="$(awk -v a="${this[$config]}" -v b="${this[off]}" 'BEGIN { printf "%.4f", a / b }') "
      done
      echo "bench: $route $(for c in "${configs[@]}"; do printf '%s %s req/s, ' "$c" "${this[$c]}"; done)" >&2
    done
    med() { printf '%s\n' $1 | median; }
    spread() { printf '%s\n' $1 | sort -n | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%s-%s", lo, hi }'; }
    row="| $route | $(med "${rps[off]}")"
    for config in ratio0 all old; do
      [ -n "${rps[$config]:-}" ] || continue
      row+=" | $(med "${rps[$config]}") | $(med "${ratios[$config]}") ($(spread "${ratios[$config]}"))"
    done
    results[$route]="$row |"
    unset rps ratios
  done
  kill -TERM "${pid_of[@]}"; wait "${pid_of[@]}" 2>/dev/null || true
  SERVER_PID=""
  # Then counted: the server's user-space instructions per list and per create (what it adds
  # to the database's share), repeatable where the timed runs are not.
  install_missing valgrind valgrind
  install_missing ab apache2-utils
  body=$WORK/pet.json
  echo '{"name":"bench pet","categoryId":3,"status":"available"}' >"$body"
  post=(-p "$body" -T application/json "${auth[@]}")
  declare -A ir
  for route in list create; do
    if [ "$route" = list ]; then
      request=("${auth[@]}" -- ) path="/v1/pets?limit=20"
    else
      request=("${post[@]}" --) path=/v1/pets
    fi
    count "$route-off" "$path" "${request[@]}" "$BIN" "${serve[@]}"
    ir[$route-off]=$IR
    count "$route-ratio0" "$path" "${request[@]}" "$BIN" "${serve[@]}" --otlp-endpoint "$collector" \
      --otel-traces-sampler traceidratio --otel-traces-sampler-arg 0
    ir[$route-ratio0]=$IR
    count "$route-all" "$path" "${request[@]}" "$BIN" "${serve[@]}" --otlp-endpoint "$collector" \
      --otel-traces-sampler always_on
    ir[$route-all]=$IR
  done
  share() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%+.1f%%", 100 * (a - b) / b }'; }
  OUT=${OUT%/*}/traces-cost.md
  {
    echo "PostgreSQL ($PG_PARAMS), 1,000 pets to start; 1 worker per server on CPU $SERVER_CPU, wrk on CPU $LOAD_CPU with $CONNS connections, a collector answering 204 on CPU $LOAD_CPU; $RUNS alternating runs of ${DURATION}s, each starting with the next server; $(git rev-parse --short HEAD 2>/dev/null || echo unknown)${AGAINST:+ against $AGAINST}. Ratios are to traces off in the same run (median, and the spread over the runs)."
    echo
    header="| Route | Traces off (median req/s) | Ratio 0 (median req/s) | Ratio 0 / off | Every span exported (median req/s) | All / off |"
    separator="|---|---|---|---|---|---|"
    if [ -n "$AGAINST" ]; then
      header+=" Other build, off (median req/s) | Other / this, off |"
      separator+="---|---|"
    fi
    echo "$header"
    echo "$separator"
    echo "${results[list]}"
    echo "${results[create]}"
    echo
    echo "The server's user-space instructions per request (callgrind, $REQUESTS keep-alive requests at 4 connections after 500 to warm up):"
    echo
    echo "| Route | Off | Ratio 0 | Every span |"
    echo "|---|---|---|---|"
    for route in list create; do
      echo "| $route | ${ir[$route-off]} | ${ir[$route-ratio0]} ($(share "${ir[$route-ratio0]}" "${ir[$route-off]}")) | ${ir[$route-all]} ($(share "${ir[$route-all]}" "${ir[$route-off]}")) |"
    done
  } >"$OUT"
  cat "$OUT"
  exit 0
fi

# Orders with a webhook endpoint subscribed and without, alternating, per backend.
if [ "$WEBHOOKS_COST" = 1 ]; then
  case "$ROUTE" in
    # Enough available pets for every order of every run (each order takes one).
    orders) ORDER_PETS=400000 event=order.placed
      request="POST /v1/store/orders, each for another available pet ($ORDER_PETS seeded)"
      OUT=${OUT%/*}/webhooks-cost.md ;;
    pets) ORDER_PETS=0 event=pet.created request="POST /v1/pets"
      OUT=${OUT%/*}/webhooks-cost-pets.md ;;
    *) echo "bench: --route is orders or pets" >&2; exit 2 ;;
  esac
  start_receiver
  {
    echo "$request, 1 worker on CPU $SERVER_CPU, wrk on CPU $LOAD_CPU with $CONNS connections; three servers of the same build, each on a database of its own: no endpoint; an endpoint subscribed to $event with the server not sending (--webhook-sender=false: the outbox write alone); the same with the server sending to a receiver on loopback; $RUNS alternating runs of ${DURATION}s; $(git rev-parse --short HEAD 2>/dev/null || echo unknown)."
    echo
    echo "| Backend | No endpoint (req/s) | Outbox (req/s) | Outbox / none | Outbox and sending (req/s) | Sending / none | Sending / outbox | Delivered |"
    echo "|---|---|---|---|---|---|---|---|"
  } >"$OUT"
  sides=(none outbox sending)
  for backend in ${BACKENDS//,/ }; do
    urls=()
    for side in "${sides[@]}"; do
      case "$backend" in
        sqlite)
          url=$WORK/orders-$side.db
          "$BIN" --database-url "$url" migrate 2>/dev/null
          if [ "$ORDER_PETS" -gt 0 ]; then
            sqlite3 "$url" "WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM s WHERE x < $ORDER_PETS)
              INSERT INTO pets (name, category_id, status, created_at)
              SELECT 'pet ' || x, 1, 'available', 1700000000 FROM s;"
          fi ;;
        postgres)
          reachable 5432 || { echo "bench: PostgreSQL is unreachable" >&2; exit 1; }
          db=petstore_bench_$$_orders_$side
          psql -q "$PG_ADMIN" -c "CREATE DATABASE $db" >/dev/null
          BENCH_DBS+=("$db")
          url=${PG_ADMIN%%\?*}
          url=${url%/*}/$db${PG_PARAMS:+?$PG_PARAMS}
          "$BIN" --database-url "$url" migrate 2>/dev/null
          # Without the counters' triggers (a row's update per pet, minutes for this many),
          # then the counters set from the pets.
          [ "$ORDER_PETS" -eq 0 ] || psql -q "$url" -c "ALTER TABLE pets DISABLE TRIGGER USER" \
            -c "INSERT INTO pets (name, category_id, status, created_at)
              SELECT 'pet ' || x, 1, 'available', 1700000000 FROM generate_series(1, $ORDER_PETS) AS x;" \
            -c "ALTER TABLE pets ENABLE TRIGGER USER" \
            -c "UPDATE pet_status_counts c SET pets = counted.pets FROM (SELECT status, abs(id % 16)::integer AS slot, count(*) AS pets FROM pets GROUP BY 1, 2) AS counted WHERE c.status = counted.status AND c.slot = counted.slot" \
            -c "VACUUM (ANALYZE) pets;" ;;
        *) echo "bench: --webhooks-cost runs on sqlite and postgres" >&2; exit 2 ;;
      esac
      urls+=("$url")
    done
    keys=() bases=() pids=()
    serve=(serve --bind 127.0.0.1:0 --workers 1 --bootstrap-key=false --webhook-allow-http --webhook-allow-private)
    for n in 0 1 2; do
      keys+=("$(bench_key "${urls[$n]}")")
      sender=true
      [ "${sides[$n]}" = outbox ] && sender=false
      start_server "orders-${sides[$n]}-$backend" env RUST_LOG=warn "$BIN" --database-url "${urls[$n]}" \
        "${serve[@]}" --webhook-sender="$sender"
      pids+=("$SERVER_PID") bases+=("$BASE")
      SERVERS+=("$SERVER_PID")
    done
    for n in 1 2; do
      status=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer ${keys[$n]}" \
        -H 'Content-Type: application/json' "${bases[$n]}/v1/webhook_endpoints" \
        -d "{\"url\":\"http://127.0.0.1:$receiver_port/hooks\",\"events\":[\"$event\"]}")
      [ "$status" = 201 ] || { echo "bench: registering the endpoint answered $status" >&2; exit 1; }
    done
    next_pet=(1 1 1) placed=(0 0 0) none=() outbox=() sending=() outbox_ratios=() sending_ratios=()
    against_outbox=()
    # order_run N -> sets RPS: one run of orders (or creates) on server N, each order for the next
    # available pet; fails when over 1% of the answers are not 201 (a handful are refused under
    # 32 writers on SQLite; many refusals would mean the pets ran out).
    order_run() {
      local report requests refused
      if [ "$ROUTE" = pets ]; then
        report=$(wrk_once -H "Authorization: Bearer ${keys[$1]}" -s scripts/bench/post.lua \
          "${bases[$1]}/v1/pets")
      else
        report=$(PETSTORE_BENCH_FIRST_PET=${next_pet[$1]} wrk_once -H "Authorization: Bearer ${keys[$1]}" \
          -s scripts/bench/orders.lua "${bases[$1]}/v1/store/orders")
      fi
      requests=$(awk '/requests in/ { print $1 }' <<<"$report")
      refused=$(awk '/Non-2xx/ { print $NF }' <<<"$report")
      if [ "${refused:-0}" -gt $((requests / 100)) ]; then
        echo "bench: $refused of $requests orders answered other than 201 (out of pets?): $report" >&2
        exit 1
      fi
      [ "${refused:-0}" -gt 0 ] && echo "bench: $refused of $requests orders answered other than 201" >&2
      next_pet[$1]=$((next_pet[$1] + requests + CONNS))
      placed[$1]=$((placed[$1] + requests - ${refused:-0}))
      RPS=$(rps_of <<<"$report")
    }
    # Waits until the sending server has delivered every order's event (up to ten minutes), so
    # that its sender does not take the shared core during the other servers' runs.
    drained() {
      local delivered
      for _ in $(seq 1 6000); do
        delivered=$(curl -s "${bases[2]}/metrics" |
          awk '/^petstore_webhook_attempts_total\{result="delivered"\}/ { print $2 }')
        [ "${delivered:-0}" -ge "${placed[2]}" ] && return 0
        sleep 0.1
      done
      echo "bench: the sender delivered ${delivered:-0} of ${placed[2]} events in ten minutes" >&2
      exit 1
    }
    for _ in $(seq 1 "$RUNS"); do
      order_run 0; none+=("$RPS")
      order_run 1; outbox+=("$RPS")
      order_run 2; sending+=("$RPS")
      drained
      outbox_ratios+=("$(awk -v a="${outbox[-1]}" -v b="${none[-1]}" 'BEGIN { printf "%.4f", a / b }')")
      sending_ratios+=("$(awk -v a="${sending[-1]}" -v b="${none[-1]}" 'BEGIN { printf "%.4f", a / b }')")
      against_outbox+=("$(awk -v a="${sending[-1]}" -v b="${outbox[-1]}" 'BEGIN { printf "%.4f", a / b }')")
      echo "bench: $backend $ROUTE: no endpoint ${none[-1]} req/s, outbox ${outbox[-1]}, outbox and sending ${sending[-1]}" >&2
    done
    delivered=$(curl -s "${bases[2]}/metrics" | awk '/^petstore_webhook_attempts_total\{result="delivered"\}/ { print $2 }')
    kill -TERM "${pids[@]}"; wait "${pids[@]}" 2>/dev/null || true
    echo "| $backend | $(printf '%s\n' "${none[@]}" | median) | $(printf '%s\n' "${outbox[@]}" | median) | $(printf '%s\n' "${outbox_ratios[@]}" | median) | $(printf '%s\n' "${sending[@]}" | median) | $(printf '%s\n' "${sending_ratios[@]}" | median) | $(printf '%s\n' "${against_outbox[@]}" | median) | ${delivered:-0} |" >>"$OUT"
  done
  cat "$OUT"
  exit 0
fi

# How fast one instance sends to healthy receivers, per shape of endpoints and owners.
if [ "$WEBHOOKS_THROUGHPUT" = 1 ]; then
  start_receiver taskset -c "$LOAD_CPU"
  builds=("$BIN")
  [ -n "$AGAINST" ] && builds+=("$AGAINST")
  OUT=${OUT%/*}/webhooks-throughput.md
  {
    echo "One instance sending $DELIVERIES pending deliveries (due at once) to a receiver on loopback answering 204 (Python, on CPU $LOAD_CPU); the server on CPU $SERVER_CPU, 16 slots, nothing else to do; timed from listening to the last delivered; $RUNS runs of each, alternating; this build $(git rev-parse --short HEAD 2>/dev/null || echo unknown)${AGAINST:+ against $AGAINST}."
    echo
    if [ -n "$AGAINST" ]; then
      echo "| Backend | Shape | Other build (deliveries/s) | This build (deliveries/s) | This / other (median of pairs) |"
      echo "|---|---|---|---|---|"
    else
      echo "| Backend | Shape | Deliveries/s |"
      echo "|---|---|---|"
    fi
  } >"$OUT"
  # seed BIN BACKEND KEYS ENDPOINTS_EACH -> sets `url`: a database with KEYS keys of
  # ENDPOINTS_EACH endpoints each (registered with BIN's API) and $DELIVERIES pending
  # deliveries spread over them.
  seed() {
    local bin=$1 backend=$2 keys=$3 each=$4 n=$((n_db += 1)) key base k e
    case "$backend" in
      sqlite) url=$WORK/throughput-$n.db ;;
      postgres) create_pg_db "petstore_bench_$$_throughput_$n" ;;
      *) echo "bench: --webhooks-throughput runs on sqlite and postgres" >&2; exit 2 ;;
    esac
    "$bin" --database-url "$url" migrate 2>/dev/null
    start_server "throughput-seed-$n" env RUST_LOG=warn "$bin" --database-url "$url" serve \
      --bind 127.0.0.1:0 --workers 1 --bootstrap-key=false --webhook-allow-http \
      --webhook-allow-private --webhook-sender=false
    for k in $(seq 1 "$keys"); do
      key=$("$bin" --database-url "$url" keys create --plan enterprise --per-minute 4000000000 \
        --per-day 4000000000 --label "bench $k" 2>/dev/null)
      for e in $(seq 1 "$each"); do
        curl -sf -o /dev/null -H "Authorization: Bearer $key" -H 'Content-Type: application/json' \
          "$BASE/v1/webhook_endpoints" \
          -d "{\"url\":\"http://127.0.0.1:$receiver_port/hooks/$k/$e\",\"events\":[\"pet.created\"]}" ||
          { echo "bench: registering an endpoint failed" >&2; exit 1; }
      done
    done
    stop_server
    local body='{"type":"pet.created","timestamp":"2026-11-27T10:15:30.123Z","data":{"id":1,"name":"Rex","categoryId":1,"status":"available"}}'
    local sql="INSERT INTO webhook_deliveries (endpoint_id, event_id, event_type, body, state,
        attempts, tries, next_attempt_at, lease_token, lease_until, created_at)
      SELECT e.id, 'msg_' || s.x, 'pet.created', '$body', 'pending', 0, 0, 0, 0, 0, 1700000000
      FROM s JOIN (SELECT id, row_number() OVER (ORDER BY id) - 1 AS n FROM webhook_endpoints) e
        ON e.n = s.x % $((keys * each));"
    case "$backend" in
      sqlite) sqlite3 "$url" "WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM s WHERE x < $DELIVERIES) $sql" ;;
      postgres) psql -q "$url" -c "WITH s(x) AS (SELECT generate_series(1, $DELIVERIES)) $sql" -c "VACUUM ANALYZE webhook_deliveries" ;;
    esac
  }
  # drain BIN -> sets DPS: deliveries per second of a sending server on `url` until all are sent.
  drain() {
    local bin=$1 started delivered elapsed
    started=$(date +%s.%N)
    start_server "throughput-send" env RUST_LOG=warn "$bin" --database-url "$url" serve \
      --bind 127.0.0.1:0 --workers 1 --bootstrap-key=false --webhook-allow-http \
      --webhook-allow-private
    for _ in $(seq 1 12000); do
      delivered=$(curl -s "$BASE/metrics" |
        awk '/^petstore_webhook_attempts_total\{result="delivered"\}/ { print $2 }')
      [ "${delivered:-0}" -ge "$DELIVERIES" ] && break
      sleep 0.05
    done
    elapsed=$(awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f", b - a }')
    stop_server
    [ "${delivered:-0}" -ge "$DELIVERIES" ] ||
      { echo "bench: only ${delivered:-0} of $DELIVERIES delivered in ten minutes" >&2; exit 1; }
    DPS=$(awk -v n="$DELIVERIES" -v t="$elapsed" 'BEGIN { printf "%.0f", n / t }')
  }
  n_db=0
  for backend in ${BACKENDS//,/ }; do
    for shape in "1 1" "1 20" "20 1"; do
      read -r keys each <<<"$shape"
      label="$keys key(s) x $each endpoint(s)"
      this=() other=() ratios=()
      for _ in $(seq 1 "$RUNS"); do
        for bin in "${builds[@]}"; do
          seed "$bin" "$backend" "$keys" "$each"
          drain "$bin"
          if [ "$bin" = "$BIN" ]; then this+=("$DPS"); else other+=("$DPS"); fi
        done
        if [ -n "$AGAINST" ]; then
          ratios+=("$(awk -v a="${this[-1]}" -v b="${other[-1]}" 'BEGIN { printf "%.4f", a / b }')")
          echo "bench: $backend $label: other ${other[-1]}/s, this ${this[-1]}/s" >&2
        else
          echo "bench: $backend $label: ${this[-1]}/s" >&2
        fi
      done
      if [ -n "$AGAINST" ]; then
        echo "| $backend | $label | $(printf '%s\n' "${other[@]}" | median) | $(printf '%s\n' "${this[@]}" | median) | $(printf '%s\n' "${ratios[@]}" | median) |" >>"$OUT"
      else
        echo "| $backend | $label | $(printf '%s\n' "${this[@]}" | median) |" >>"$OUT"
      fi
    done
  done
  cat "$OUT"
  exit 0
fi

# The list route on PostgreSQL: straight, through PgBouncer, reads on a standby.
if [ "$TOPOLOGIES" = 1 ]; then
  install_missing pgbench postgresql
  bash scripts/pgbouncer.sh
  PG_BIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n1)
  free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
  # A folder of its own, outside $WORK (private to root): PostgreSQL runs as `postgres`.
  TOPO=$(mktemp -d)
  [ "$(id -u)" = 0 ] && chown postgres "$TOPO"
  # A copy the `postgres` user can run wherever the checkout is.
  PGBOUNCER=$TOPO/pgbouncer
  install -m 755 target/tools/pgbouncer/bin/pgbouncer "$PGBOUNCER"
  primary_port=$(free_port) standby_port=$(free_port) bouncer_port=$(free_port) keeping_port=$(free_port)
  as_postgres "$PG_BIN/initdb" -U postgres --auth=trust --no-sync -D "$TOPO/primary" >/dev/null
  as_postgres "$PG_BIN/pg_ctl" -D "$TOPO/primary" -l "$TOPO/primary.log" -w start \
    -o "-p $primary_port -k $TOPO -c listen_addresses=127.0.0.1" >/dev/null
  as_postgres "$PG_BIN/pg_basebackup" -h 127.0.0.1 -p "$primary_port" -U postgres -R -X stream \
    --no-sync -D "$TOPO/standby"
  as_postgres "$PG_BIN/pg_ctl" -D "$TOPO/standby" -l "$TOPO/standby.log" -w start \
    -o "-p $standby_port -k $TOPO -c listen_addresses=127.0.0.1" >/dev/null
  primary=postgres://postgres@127.0.0.1:$primary_port/postgres?sslmode=disable
  standby=postgres://postgres@127.0.0.1:$standby_port/postgres?sslmode=disable
  psql -q "$primary" -c "ALTER SYSTEM SET synchronous_standby_names = '*'" -c "SELECT pg_reload_conf()" >/dev/null
  # What the service sends at start-up straight to PostgreSQL, and cannot through a pooler: the
  # role's, as docs/deploy.md asks of `pooler=transaction-prepared`. Start-up options take
  # precedence over it (direct, standby), and `pooler=transaction`'s own statement timeout; its
  # statements, each run once, take the role's plan_cache_mode.
  psql -q "$primary" -c "ALTER ROLE postgres SET plan_cache_mode = force_generic_plan" \
    -c "ALTER ROLE postgres SET statement_timeout = '5s'" >/dev/null
  printf '"postgres" ""\n' >"$TOPO/users.txt"
  # As many server connections as the service's worker opens straight to PostgreSQL (its pool of 8 for
  # writes, one shared by its worker's reads), so that the ways differ by the pooler's hop
  # alone: with fewer, the creates through it would also wait on fewer commits at once (each
  # waits for the synchronous standby). A first series ran 4; PETSTORE_BENCH_POOLER_CONNECTIONS
  # sets another number, to compare.
  pooler_connections=${PETSTORE_BENCH_POOLER_CONNECTIONS:-9}
  # Two PgBouncers alike but for prepared statements: one keeps none (as before 1.21; the
  # service is told `pooler=transaction`), one keeps them (`pooler=transaction-prepared`).
  bouncer() { # name port max_prepared_statements
    cat >"$TOPO/$1.ini" <<INI
[databases]
* = host=127.0.0.1 port=$primary_port
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $2
unix_socket_dir =
auth_type = trust
auth_file = $TOPO/users.txt
pool_mode = transaction
default_pool_size = $pooler_connections
max_client_conn = 1000
max_prepared_statements = $3
pidfile = $TOPO/$1.pid
logfile = $TOPO/$1.log
INI
    [ "$(id -u)" = 0 ] && chown postgres "$TOPO/users.txt" "$TOPO/$1.ini"
    as_postgres "$PGBOUNCER" -d "$TOPO/$1.ini"
  }
  bouncer pgbouncer "$bouncer_port" 0
  bouncer pgbouncer-keeping "$keeping_port" 100
  for _ in $(seq 1 100); do reachable "$keeping_port" && break; sleep 0.05; done
  for _ in $(seq 1 100); do reachable "$bouncer_port" && break; sleep 0.05; done
  seed postgres "$primary" 1000
  auth=(-H "Authorization: Bearer $(bench_key "$primary")")
  serve=(serve --bind 127.0.0.1:0 --workers 1 --bootstrap-key=false --no-migrate)
  start_server topology-direct env RUST_LOG=warn "$BIN" --database-url "$primary" "${serve[@]}"
  direct_pid=$SERVER_PID direct_url=$BASE
  SERVERS+=("$SERVER_PID")
  start_server topology-pooled env RUST_LOG=warn "$BIN" \
    --database-url "postgres://postgres@127.0.0.1:$bouncer_port/postgres?sslmode=disable&pooler=transaction" \
    "${serve[@]}"
  pooled_pid=$SERVER_PID pooled_url=$BASE
  SERVERS+=("$SERVER_PID")
  start_server topology-keeping env RUST_LOG=warn "$BIN" \
    --database-url "postgres://postgres@127.0.0.1:$keeping_port/postgres?sslmode=disable&pooler=transaction-prepared" \
    "${serve[@]}"
  keeping_pid=$SERVER_PID keeping_url=$BASE
  SERVERS+=("$SERVER_PID")
  start_server topology-standby env RUST_LOG=warn "$BIN" --database-url "$primary" "${serve[@]}" \
    --database-read-url "$standby"
  standby_pid=$SERVER_PID standby_url=$BASE
  SERVERS+=("$SERVER_PID")
  sleep 1 # the standby's first lag reading
  for url in "$direct_url" "$pooled_url" "$keeping_url" "$standby_url"; do
    status=$(curl -s -o /dev/null -w '%{http_code}' "${auth[@]}" "$url/v1/pets?limit=20")
    [ "$status" = 200 ] || { echo "bench: $url answered the list $status, not 200" >&2; exit 1; }
  done
  ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.4f", a / b }'; }
  # Each way's runs (req/s) and their ratios to the direct run of the same round, by kind
  # (`get`: the list; `post`: creates) and way.
  declare -A runs=() ratios=() last=()
  # The lists first, all rounds, on the 1,000 pets; then the creates.
  for kind in get post; do
    for round in $(seq 1 "$RUNS"); do
      for way in direct pooled keeping standby; do
        url_var=${way}_url
        if [ "$kind" = get ]; then
          rps=$(wrk_once "${auth[@]}" "${!url_var}/v1/pets?limit=20" | rps_of)
        else
          rps=$(wrk_once "${auth[@]}" -s scripts/bench/post.lua "${!url_var}/v1/pets" | rps_of)
        fi
        runs[$kind.$way]+="$rps "
        [ "$way" = direct ] && direct_rps=$rps
        last[$way]=$(ratio "$rps" "$direct_rps")
        ratios[$kind.$way]+="${last[$way]} "
      done
      echo "bench: round $round, $kind: direct $direct_rps req/s; of it, pooler=transaction ${last[pooled]}, pooler=transaction-prepared ${last[keeping]}, the standby ${last[standby]}" >&2
    done
  done
  replica_reads=$(curl -s "$standby_url/metrics" | awk '/^petstore_db_reads_total\{target="replica"\}/ { print $2 }')
  kill -TERM "$direct_pid" "$pooled_pid" "$keeping_pid" "$standby_pid"
  wait "$direct_pid" "$pooled_pid" "$keeping_pid" "$standby_pid" 2>/dev/null || true
  SERVER_PID="" SERVERS=()
  med() { printf '%s\n' $1 | median; }
  topology_row() { # kind
    echo "| $(med "${runs[$1.direct]}") | $(med "${runs[$1.pooled]}") | $(med "${ratios[$1.pooled]}") | $(med "${runs[$1.keeping]}") | $(med "${ratios[$1.keeping]}") | $(med "${runs[$1.standby]}") | $(med "${ratios[$1.standby]}") |"
  }
  OUT=${OUT%/*}/postgres-topologies.md
  {
    echo "GET /v1/pets?limit=20, PostgreSQL $("$PG_BIN/postgres" --version | awk '{ print $3 }') (a primary and a synchronous standby of the run's own), 1,000 pets, 1 worker per server on CPU $SERVER_CPU, wrk on CPU $LOAD_CPU with $CONNS connections; $RUNS rounds of ${DURATION}s runs, each way in turn; PgBouncer $("$PGBOUNCER" --version | awk 'NR == 1 { print $2 }') in transaction mode, $pooler_connections server connections, keeping no prepared statements (\`pooler=transaction\`) or keeping them (\`max_prepared_statements = 100\`, \`pooler=transaction-prepared\`); the standby server answered ${replica_reads:-?} reads; ratios are medians of each round's to its direct run; $(git rev-parse --short HEAD 2>/dev/null || echo unknown)."
    echo
    echo "| Direct (median req/s) | \`pooler=transaction\` (median req/s) | / direct | \`pooler=transaction-prepared\` (median req/s) | / direct | Reads on the standby (median req/s) | / direct |"
    echo "|---|---|---|---|---|---|---|"
    topology_row get
    echo
    echo "POST /v1/pets on the same servers (the standby synchronous: each commit waits for it to flush, and with read URLs to apply, \`remote_apply\`):"
    echo
    echo "| Direct (median req/s) | \`pooler=transaction\` (median req/s) | / direct | \`pooler=transaction-prepared\` (median req/s) | / direct | With read URLs, remote_apply (median req/s) | / direct |"
    echo "|---|---|---|---|---|---|---|"
    topology_row post
  } >"$OUT"
  cat "$OUT"
  exit 0
fi

# The list route and creates on deploy/patroni/'s cluster: straight to the leader, through
# HAProxy, and with reads on the synchronous standbys.
if [ "$PATRONI" = 1 ]; then
  { [ -x /usr/bin/patroni ] && [ -x /usr/bin/etcd ] && [ -x /usr/sbin/haproxy ]; } ||
    { apt-get update -qq >/dev/null && apt-get install -y -qq patroni etcd-server haproxy >/dev/null; }
  PG_BIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n1)
  free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
  # Patroni (and the PostgreSQL it starts) as `postgres`, run in the background: the job's
  # shell becomes Patroni (exec), so that `$!` is Patroni's pid.
  as_postgres_exec() {
    if [ "$(id -u)" = 0 ]; then exec setpriv --reuid postgres --regid postgres --init-groups "$@"; fi
    exec "$@"
  }
  CLUSTER=$(mktemp -d)
  peers=() clients=()
  for n in 0 1 2; do peers+=("$(free_port)"); clients+=("$(free_port)"); done
  initial="e0=http://127.0.0.1:${peers[0]},e1=http://127.0.0.1:${peers[1]},e2=http://127.0.0.1:${peers[2]}"
  for n in 0 1 2; do
    /usr/bin/etcd --name "e$n" --data-dir "$CLUSTER/etcd$n" \
      --listen-client-urls "http://127.0.0.1:${clients[$n]}" \
      --advertise-client-urls "http://127.0.0.1:${clients[$n]}" \
      --listen-peer-urls "http://127.0.0.1:${peers[$n]}" \
      --initial-advertise-peer-urls "http://127.0.0.1:${peers[$n]}" \
      --initial-cluster "$initial" --initial-cluster-state new >/dev/null 2>"$CLUSTER/etcd$n.log" &
    CLUSTER_PIDS+=($!)
  done
  etcd_hosts="127.0.0.1:${clients[0]},127.0.0.1:${clients[1]},127.0.0.1:${clients[2]}"
  node_ports=() api_ports=()
  for n in 1 2 3; do node_ports+=("$(free_port)"); api_ports+=("$(free_port)"); mkdir -p "$CLUSTER/node$n"; done
  [ "$(id -u)" = 0 ] && chown -R postgres:postgres "$CLUSTER"
  for n in 1 2 3; do
    port=${node_ports[$((n - 1))]} api=${api_ports[$((n - 1))]}
    as_postgres_exec env PATRONI_NAME="node$n" PATRONI_RESTAPI_LISTEN="127.0.0.1:$api" \
      PATRONI_RESTAPI_CONNECT_ADDRESS="127.0.0.1:$api" PATRONI_POSTGRESQL_LISTEN="127.0.0.1:$port" \
      PATRONI_POSTGRESQL_CONNECT_ADDRESS="127.0.0.1:$port" \
      PATRONI_POSTGRESQL_DATA_DIR="$CLUSTER/node$n/data" PATRONI_POSTGRESQL_PGPASS="$CLUSTER/node$n/pgpass" \
      PATRONI_POSTGRESQL_BIN_DIR="$PG_BIN" PATRONI_ETCD3_HOSTS="$etcd_hosts" HOME="$CLUSTER/node$n" \
      /usr/bin/patroni deploy/patroni/patroni.yml >"$CLUSTER/node$n.log" 2>&1 &
    CLUSTER_PIDS+=($!)
  done
  rw_port=$(free_port) ro_port=$(free_port)
  env PATRONI_NODE1="127.0.0.1:${node_ports[0]}" PATRONI_NODE2="127.0.0.1:${node_ports[1]}" \
    PATRONI_NODE3="127.0.0.1:${node_ports[2]}" PATRONI_NODE1_API="${api_ports[0]}" \
    PATRONI_NODE2_API="${api_ports[1]}" PATRONI_NODE3_API="${api_ports[2]}" \
    PETSTORE_HAPROXY_RW="127.0.0.1:$rw_port" PETSTORE_HAPROXY_RO="127.0.0.1:$ro_port" \
    /usr/sbin/haproxy -f deploy/patroni/haproxy.cfg >/dev/null 2>"$CLUSTER/haproxy.log" &
  CLUSTER_PIDS+=($!)
  # Whole: a leader and two synchronous standbys, HAProxy's read-write port on the leader.
  leader=""
  for _ in $(seq 1 300); do
    leader=$(curl -s "http://127.0.0.1:${api_ports[0]}/cluster" | python3 -c '
import json, sys
try:
    members = [m for m in json.load(sys.stdin)["members"] if m["state"] == "running"]
except Exception:
    sys.exit()
roles = sorted(m["role"] for m in members)
if roles == ["leader", "sync_standby", "sync_standby"]:
    print(next(m["port"] for m in members if m["role"] == "leader"))' 2>/dev/null || true)
    [ -n "$leader" ] && [ "$(psql -qAt "postgres://postgres@127.0.0.1:$rw_port/postgres?sslmode=disable" \
      -c 'SELECT pg_is_in_recovery()' 2>/dev/null || true)" = f ] && break
    leader=""
    sleep 0.2
  done
  [ -n "$leader" ] || { echo "bench: the Patroni cluster did not come up" >&2; tail -n 20 "$CLUSTER"/node*.log >&2; exit 1; }
  direct=postgres://postgres@127.0.0.1:$leader/postgres?sslmode=disable
  through=postgres://postgres@127.0.0.1:$rw_port/postgres?sslmode=disable
  standbys=postgres://postgres@127.0.0.1:$ro_port/postgres?sslmode=disable
  seed postgres "$direct" 1000
  auth=(-H "Authorization: Bearer $(bench_key "$direct")")
  serve=(serve --bind 127.0.0.1:0 --workers 1 --bootstrap-key=false --no-migrate)
  start_server patroni-direct env RUST_LOG=warn "$BIN" --database-url "$direct" "${serve[@]}"
  direct_pid=$SERVER_PID direct_url=$BASE
  SERVERS+=("$SERVER_PID")
  start_server patroni-haproxy env RUST_LOG=warn "$BIN" --database-url "$through" "${serve[@]}"
  haproxy_pid=$SERVER_PID haproxy_url=$BASE
  SERVERS+=("$SERVER_PID")
  start_server patroni-standbys env RUST_LOG=warn "$BIN" --database-url "$through" "${serve[@]}" \
    --database-read-url "$standbys"
  standbys_pid=$SERVER_PID standbys_url=$BASE
  SERVERS+=("$SERVER_PID")
  sleep 1 # the standbys' first lag reading
  for url in "$direct_url" "$haproxy_url" "$standbys_url"; do
    status=$(curl -s -o /dev/null -w '%{http_code}' "${auth[@]}" "$url/v1/pets?limit=20")
    [ "$status" = 200 ] || { echo "bench: $url answered the list $status, not 200" >&2; exit 1; }
  done
  # For the list, then creates: alternating runs of the three servers; a table row each.
  declare -A results
  for what in list create; do
    d=() h=() s=() hr=() sr=()
    for _ in $(seq 1 "$RUNS"); do
      if [ "$what" = list ]; then args=("${auth[@]}") path=/v1/pets?limit=20
      else args=("${auth[@]}" -s scripts/bench/post.lua) path=/v1/pets; fi
      d+=("$(wrk_once "${args[@]}" "$direct_url$path" | rps_of)")
      h+=("$(wrk_once "${args[@]}" "$haproxy_url$path" | rps_of)")
      s+=("$(wrk_once "${args[@]}" "$standbys_url$path" | rps_of)")
      hr+=("$(awk -v a="${h[-1]}" -v b="${d[-1]}" 'BEGIN { printf "%.4f", a / b }')")
      sr+=("$(awk -v a="${s[-1]}" -v b="${d[-1]}" 'BEGIN { printf "%.4f", a / b }')")
      echo "bench: $what direct ${d[-1]} req/s, through HAProxy ${h[-1]} req/s, with reads on the standbys ${s[-1]} req/s" >&2
    done
    results[$what]="| $what | $(printf '%s\n' "${d[@]}" | median) | $(printf '%s\n' "${h[@]}" | median) | $(printf '%s\n' "${hr[@]}" | median) | $(printf '%s\n' "${s[@]}" | median) | $(printf '%s\n' "${sr[@]}" | median) |"
  done
  kill -TERM "$direct_pid" "$haproxy_pid" "$standbys_pid"
  wait "$direct_pid" "$haproxy_pid" "$standbys_pid" 2>/dev/null || true
  SERVER_PID="" SERVERS=()
  OUT=${OUT%/*}/patroni.md
  {
    echo "deploy/patroni/ on one machine: etcd $(/usr/bin/etcd --version | awk 'NR == 1 { print $3 }'), Patroni $(/usr/bin/patroni --version | awk '{ print $2 }'), PostgreSQL $("$PG_BIN/postgres" --version | awk '{ print $3 }') (a leader and two synchronous standbys), HAProxy $(/usr/sbin/haproxy -v | awk 'NR == 1 { print $3 }'); 1,000 pets; 1 worker per server on CPU $SERVER_CPU, wrk on CPU $LOAD_CPU with $CONNS connections; $RUNS alternating runs of ${DURATION}s; $(git rev-parse --short HEAD 2>/dev/null || echo unknown). GET /v1/pets?limit=20 and POST /v1/pets (each commit waits for both standbys: flushed, and with read URLs applied)."
    echo
    echo "| Route | Straight to the leader (median req/s) | Through HAProxy (median req/s) | HAProxy / direct (median of pairs) | Through HAProxy, reads on the standbys (median req/s) | That / direct (median of pairs) |"
    echo "|---|---|---|---|---|---|"
    echo "${results[list]}"
    echo "${results[create]}"
  } >"$OUT"
  cat "$OUT"
  exit 0
fi

# The list route with metrics recorded against the same without.
if [ "$METRICS_COST" = 1 ]; then
  paired metrics-cost "GET /v1/pets?limit=20, SQLite, 1,000 pets, 1 worker, $CONNS connections" \
    "Metrics off (median req/s)" "Metrics on (median req/s)" "On / off (median of pairs)" \
    -- --metrics=false -- --metrics=true
  exit 0
fi

# The list answered 304 against the same answered 200, on one server, runs alternating.
if [ "$CONDITIONAL_COST" = 1 ]; then
  db=$WORK/conditional.db
  seed sqlite "$db" 1000
  auth=(-H "Authorization: Bearer $(bench_key "$db")")
  start_server conditional env RUST_LOG=warn "$BIN" --database-url "$db" serve \
    --bind 127.0.0.1:0 --workers 1 --bootstrap-key=false
  url=$BASE/v1/pets?limit=20
  tag=$(conditional_tag "$url" "${auth[@]}")
  ratios=() full=() unchanged=()
  for _ in $(seq 1 "$RUNS"); do
    full+=("$(wrk_once "${auth[@]}" "$url" | rps_of)")
    unchanged+=("$(wrk_once "${auth[@]}" -H "If-None-Match: $tag" "$url" | rps_of)")
    ratios+=("$(awk -v a="${unchanged[-1]}" -v b="${full[-1]}" 'BEGIN { printf "%.4f", a / b }')")
    echo "bench: 200 ${full[-1]} req/s, 304 ${unchanged[-1]} req/s" >&2
  done
  stop_server
  OUT=${OUT%/*}/conditional-cost.md
  {
    echo "GET /v1/pets?limit=20, SQLite, 1,000 pets, 1 worker, $CONNS connections: answered 200, and 304 to If-None-Match naming its tag; $RUNS alternating runs of ${DURATION}s; $(git rev-parse --short HEAD 2>/dev/null || echo unknown)."
    echo
    echo "| 200 (median req/s) | 304 (median req/s) | 304 / 200 (median of pairs) |"
    echo "|---|---|---|"
    echo "| $(printf '%s\n' "${full[@]}" | median) | $(printf '%s\n' "${unchanged[@]}" | median) | $(printf '%s\n' "${ratios[@]}" | median) |"
  } >"$OUT"
  cat "$OUT"
  exit 0
fi

# The same route with the limiter's counters in Redis and in memory.
if [ "$REDIS_COST" = 1 ]; then
  reachable "${REDIS_URL##*:}" || { echo "bench: Redis is unreachable at $REDIS_URL" >&2; exit 1; }
  paired redis-cost "GET /v1/pets?limit=20, SQLite, 1,000 pets, 1 worker on CPU $SERVER_CPU, wrk on CPU $LOAD_CPU with $CONNS connections and $KEYS key(s) in turn, Redis on the same machine ($REDIS_URL)" \
    "Counters in memory (median req/s)" "In Redis (median req/s)" \
    "Redis / memory (median of pairs)" \
    -- -- --rate-limit-store "$REDIS_URL" --rate-limit-prefix "petstore-bench-$$"
  exit 0
fi

# --- ceiling ---------------------------------------------------------------------------------
# Measured on its own first (for its latency and memory), then kept running for the pairs.
start_server ceiling "$CEILING" 127.0.0.1:0 1
CEILING_PID=$SERVER_PID
CEILING_BASE=$BASE
run_wrk "$BASE/v1/pets"
ROWS+=("| ceiling | - | GET /v1/pets (static 20 pets) | $(printf '%.0f' "$RPS") | 100% | - | $P50 | $P99 | $NON2XX | $(peak_rss_mib) |")
run_wrk "$BASE/v1/pets" -s scripts/bench/post.lua
ROWS+=("| ceiling | - | POST /v1/pets (parse and echo) | $(printf '%.0f' "$RPS") | 100% | - | $P50 | $P99 | $NON2XX | $(peak_rss_mib) |")
SERVER_PID=""

# --- petstore --------------------------------------------------------------------------------
bench_petstore() { # backend n url [extra serve args...]
  local backend=$1 n=$2 url=$3; shift 3
  local label=$backend
  [ $# -gt 0 ] && label="$backend + redis limiter"
  local key
  key=$(bench_key "$url")
  local auth=(-H "Authorization: Bearer $key")
  start_server "petstore-$backend-$n" env RUST_LOG=warn "$BIN" --database-url "$url" serve \
    --bind 127.0.0.1:0 --workers 1 --bootstrap-key=false "$@"
  PETSTORE_PID=$SERVER_PID PETSTORE_BASE=$BASE

  local backends=() before=0
  if [ "$backend" = postgres ]; then
    # The pool opens connections as the load needs them and keeps them: a second of load first,
    # so that every backend the runs use is counted.
    taskset -c "$LOAD_CPU" wrk -t1 -c"$CONNS" -d1s "${auth[@]}" "$BASE/v1/pets?limit=20" >/dev/null
    mapfile -t backends < <(psql -Atq "$PG_ADMIN" -c \
      "SELECT pid FROM pg_stat_activity WHERE datname = '$PG_DB' AND pid <> pg_backend_pid()")
    before=$(cpu_ticks "${backends[@]}")
  fi
  # The backend's floor, kept running (idle, on the server's core) for the pairs.
  local pgbench=0
  case "$backend" in
    sqlite) start_server "sqlite-floor-$n" "$SQLITE_FLOOR" 127.0.0.1:0 1 "$url" ;;
    mysql) start_server "mysql-floor-$n" "$MYSQL_FLOOR" 127.0.0.1:0 1 "$url" ;;
    postgres)
      pgbench=1
      start_server "pg-floor-$n" "$PG_FLOOR" 127.0.0.1:0 1 "$url"
      echo 'SELECT "pets"."id", "pets"."name", "pets"."category_id", "pets"."status" FROM "pets" ORDER BY "pets"."id" ASC LIMIT 21;' >"$WORK/list.sql"
      PG_URL=$url ;;
  esac
  FLOOR_PID=$SERVER_PID FLOOR_BASE=$BASE
  SERVER_PID=$PETSTORE_PID BASE=$PETSTORE_BASE
  PAIR=get FLOOR=1 PGBENCH=$pgbench run_wrk "$BASE/v1/pets?limit=20" "${auth[@]}"
  local full=$RPS
  row "$label" "$n" "GET /v1/pets?limit=20"

  if [ ${#backends[@]} -gt 0 ]; then
    local ticks
    ticks=$(( $(cpu_ticks "${backends[@]}") - before ))
    echo "bench: PostgreSQL's backends used $(awk -v t="$ticks" -v hz="$(getconf CLK_TCK)" \
      -v r="$full" -v d="$DURATION" -v n="$RUNS" 'BEGIN { printf "%.1f", 1e6 * t / hz / (r * d * n) }') µs of CPU per list request" >&2
  fi
  # The same route at half that load: latency when not saturated (no ratio: paced on purpose).
  local pause
  pause=$(awk -v c="$CONNS" -v r="$full" 'BEGIN { printf "%d", 2 * c * 1000 / r }')
  WRK_DELAY_MS=$pause run_wrk "$BASE/v1/pets?limit=20" "${auth[@]}" -s scripts/bench/paced.lua
  row "$label" "$n" "GET /v1/pets?limit=20 at half load"
  # PostgreSQL's and MariaDB's floors answer the list's first page only; SQLite's every GET
  # route.
  local floor=1
  [ "$backend" = sqlite ] || floor=0
  if [ $# -eq 0 ]; then
    local deep=$(( n > 400 ? n - 400 : 0 ))
    PAIR=get FLOOR=$floor run_wrk "$BASE/v1/pets?limit=100&status=sold&after=$deep" "${auth[@]}"
    row "$label" "$n" "GET /v1/pets?limit=100&status=sold (deep cursor)"
    PAIR=get FLOOR=$floor run_wrk "$BASE/v1/pets/$(( n / 2 ))" "${auth[@]}"
    row "$label" "$n" "GET /v1/pets/{id}"
  fi
  kill -TERM "$FLOOR_PID"; wait "$FLOOR_PID" 2>/dev/null || true; FLOOR_PID=""
  [ $# -gt 0 ] && { stop_server; return; }
  # No floor for creates: the floor does not write (the ceiling's parse and echo is the pair).
  PAIR=post run_wrk "$BASE/v1/pets" "${auth[@]}" -s scripts/bench/post.lua
  row "$label" "$n" "POST /v1/pets"
  stop_server
}

[ -n "$PETS" ] || PETS=1000,1000000
IFS=, read -r -a SIZES <<<"$PETS"
IFS=, read -r -a BACKEND_LIST <<<"$BACKENDS"
for backend in "${BACKEND_LIST[@]}"; do
  for n in "${SIZES[@]}"; do
    case "$backend" in
      sqlite) url=$WORK/bench-$n.db ;;
      postgres)
        [ -n "$PG_DB" ] && psql -q "$PG_ADMIN" -c "DROP DATABASE IF EXISTS $PG_DB WITH (FORCE)" >/dev/null
        PG_DB=petstore_bench_$$_$n
        psql -q "$PG_ADMIN" -c "CREATE DATABASE $PG_DB" >/dev/null
        url=${PG_ADMIN%%\?*}
        url=${url%/*}/$PG_DB${PG_PARAMS:+?$PG_PARAMS} ;;
      mysql)
        [ -n "$MYSQL_DB" ] && mysql_cli "$MYSQL_ADMIN" -e "DROP DATABASE IF EXISTS $MYSQL_DB"
        MYSQL_DB=petstore_bench_$$_$n
        mysql_cli "$MYSQL_ADMIN" -e "CREATE DATABASE $MYSQL_DB"
        url=${MYSQL_ADMIN%%\?*}
        url=${url%/*}/$MYSQL_DB ;;
      *) echo "unknown backend $backend" >&2; exit 2 ;;
    esac
    echo "bench: seeding $n pets on $backend" >&2
    seed "$backend" "$url" "$n"
    bench_petstore "$backend" "$n" "$url"
    if [ "$REDIS" = 1 ] && [ "$backend" = sqlite ] && [ "$n" = "${SIZES[0]}" ] && reachable 6379; then
      bench_petstore "$backend" "$n" "$url" --rate-limit-store "$REDIS_URL" \
        --rate-limit-prefix "petstore-bench-$$"
    fi
  done
done

{
  echo "Measured $(date -u +%Y-%m-%dT%H:%MZ) on $(nproc) cores ($(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)); server on CPU $SERVER_CPU with 1 worker, wrk on CPU $LOAD_CPU with 1 thread and $CONNS connections; medians of $RUNS runs of ${DURATION}s, each paired with a ceiling run just before it, and each GET route's with a run of its backend's floor too (each ratio is the median of the pairs' ratios)."
  echo
  echo "| Backend | Pets | Route | Req/s | Of ceiling | Of floor | p50 ms | p99 ms | Non-2xx | Peak RSS MiB |"
  echo "|---|---|---|---|---|---|---|---|---|---|"
  printf '%s\n' "${ROWS[@]}"
  if [ ${#FLOOR_ROWS[@]} -gt 0 ]; then
    echo
    echo "PostgreSQL, GET /v1/pets?limit=20: the service against the PostgreSQL floor and pgbench (the same query, prepared, 8 clients), each paired run by run (medians of the pairs' ratios)."
    echo
    echo "| Pets | Service req/s | Floor req/s | Of floor | pgbench tps | Of pgbench |"
    echo "|---|---|---|---|---|---|"
    printf '%s\n' "${FLOOR_ROWS[@]}"
  fi
} >"$OUT"
cat "$OUT"
