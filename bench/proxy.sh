#!/bin/sh
# The allowlist proxy against a direct connection to the same loopback
# server, measured side by side:
#  - bench/proxy-bench.c, in one process: bulk throughput (server to client,
#    CONNECT tunnel), CPU per GB (the whole process, and the proxy's thread
#    alone), and the latency a proxied connection adds (target < 1 ms at
#    p50): for a new connection (connect, CONNECT and its 200, a 1-byte
#    round trip) and for a round trip inside an open one;
#  - through a real Trial: curl in a `shell` Trial downloads from a loopback
#    server, --network host (direct) and allow (through the proxy) Trials
#    alternating (target >= 0.8x direct), and trialbox's CPU per GB relayed.
#
#   bench/proxy.sh     (PROXY_BULK_MIB=512, PROXY_ROUNDS=5, PROXY_CONNS=2000,
#                       PROXY_TRIAL_MIB=256, PROXY_TRIAL_ROUNDS=9)
#
# Needs the build (BUILD, ./scripts/setup): the driver is built there with
# -DTRIALBOX_BENCH=ON (bench/CMakeLists.txt), configured so when it is not.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
bench_driver proxy-bench
scratch
mib=${PROXY_BULK_MIB:-512}
rounds=${PROXY_ROUNDS:-5}
conns=${PROXY_CONNS:-2000}
say "proxy: $rounds x $mib MiB each way, $conns connections and round trips each way"
"$BUILD/bench/proxy-bench" "$mib" "$rounds" "$conns" >"$W/figures" || die "proxy-bench failed"
cat "$W/figures" >&2
f() { awk -v k="$1" '$1 == k { print $2 }' "$W/figures"; }
verdict() { awk -v v="$1" -v t="$2" -v op="$3" 'BEGIN { ok = op == ">=" ? v >= t : v < t; print ok ? "met" : "not met" }'; }
ratio=$(f bulk_ratio)
added=$(f setup_added_p50_us)
echo "| proxy | bulk throughput, direct | $(f bulk_direct_mbs) MB/s | | |"
echo "| proxy | bulk throughput, through the proxy (CONNECT) | $(f bulk_proxied_mbs) MB/s | | |"
echo "| proxy | proxied / direct throughput | ${ratio}x | >= 0.8x | $(verdict "$ratio" 0.8 '>=') |"
echo "| proxy | CPU per GB in bulk runs, whole process (server + client [+ proxy]), direct / proxied | $(f bulk_cpu_ms_per_gb_direct) / $(f bulk_cpu_ms_per_gb_proxied) ms | | |"
echo "| proxy | CPU per GB relayed, the proxy's thread alone (bulk runs) | $(f bulk_proxy_cpu_ms_per_gb) ms | | |"
echo "| proxy | new connection + first round trip, p50 direct / proxied | $(f setup_direct_p50_us) / $(f setup_proxied_p50_us) us | | |"
echo "| proxy | latency a proxied connection adds, p50 | $added us | < 1000 us | $(verdict "$added" 1000 '<') |"
echo "| proxy | new connection + first round trip, p99 direct / proxied | $(f setup_direct_p99_us) / $(f setup_proxied_p99_us) us | | |"
echo "| proxy | round trip in an open connection, p50 direct / proxied | $(f rtt_direct_p50_us) / $(f rtt_proxied_p50_us) us | | |"
echo "| proxy | round trip in an open connection, p99 direct / proxied | $(f rtt_direct_p99_us) / $(f rtt_proxied_p99_us) us | | |"
echo "method: proxy: bench/proxy-bench.c: one process holds a loopback server, the proxy (its own thread, epoll, splice)" \
        "and the client; direct and proxied runs alternate; bulk is the median of $rounds transfers of $mib MiB from" \
        "server to client; CPU from getrusage (the process) and the proxy thread's CPU clock around each proxied" \
        "transfer; latencies are over $conns connections (or round trips) each; the machine is shared, so figures vary"

# The same through a real Trial: curl in a `shell` Trial downloads one file
# from a loopback server of this script's, directly under --network host and
# through the proxy under --network allow (the name bulk.test reaches the
# server through TRIALBOX_TEST_HOSTS: needs a test build, TRIALBOX_TESTING=ON).
# The two kinds of Trial alternate, so load from elsewhere falls on both.
# trialbox's CPU time is its main thread's (the proxy runs on it), read from
# /proc/PID/task/PID/schedstat while the Trial's session sleeps after curl.
if ! command -v curl >/dev/null || ! command -v python3 >/dev/null; then
        echo "note: proxy: the figures through a real Trial need curl and python3; skipped"
        exit 0
fi
trial_mib=${PROXY_TRIAL_MIB:-256}
trial_rounds=${PROXY_TRIAL_ROUNDS:-9}
head -c $((trial_mib * 1048576)) /dev/zero >"$W/bulk"
cat >"$W/serve.py" <<'PY'
import http.server, os, socket, sys
path = sys.argv[1]
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", str(os.path.getsize(path)))
        self.end_headers()
        with open(path, "rb") as f:
            self.connection.sendfile(f)
    def log_message(self, *a):
        pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
PY
python3 "$W/serve.py" "$W/bulk" >"$W/port" &
server=$!
trap 'kill $server 2>/dev/null; [ "${KEEP:-0}" = 1 ] || rm -rf "$W"' EXIT
while [ ! -s "$W/port" ]; do sleep 0.05; done
port=$(cat "$W/port")
mkdir -p "$W/repo"
cpu_ns() { awk '{ print $1 }' "/proc/$1/task/$1/schedstat" 2>/dev/null; }
trial() { # MODE URL [ALLOW-HOST [NOPROXY]] -> "bytes/s trialbox-cpu-ns" on stdout
        rm -rf "$W/out"
        TRIALBOX_PLUGIN_PATH="$PLUGINS" TRIALBOX_TEST_HOSTS="bulk.test=127.0.0.1:$port" \
                "$TB" run $ROOT_SESSION -q --harness shell --repo "$W/repo" --output-dir "$W/out" --network "$1" \
                ${3:+--allow-host "$3"} -- \
                -c "curl -s --noproxy '${4:-}' -o /dev/null -w '%{speed_download}' $2 && sleep 0.3" >"$W/speed" &
        tb=$!
        ns=0
        while kill -0 "$tb" 2>/dev/null; do
                v=$(cpu_ns "$tb") && [ -n "$v" ] && ns=$v
                sleep 0.05
        done
        wait "$tb" || die "a $1 Trial failed"
        echo "$(cat "$W/speed") $ns"
}
: >"$W/host"
: >"$W/allow"
i=0
while [ "$i" -lt "$trial_rounds" ]; do
        i=$((i + 1))
        trial host "http://127.0.0.1:$port/" "" '*' >>"$W/host"
        trial allow "http://bulk.test/" bulk.test >>"$W/allow"
done
median() { sort -n | awk 'NF { v[++n] = $1 } END { print v[int((n + 1) / 2)] }'; }
direct=$(awk '{ print $1 }' "$W/host" | median)
proxied=$(awk '{ print $1 }' "$W/allow" | median)
# The proxy's share of trialbox's CPU: an allow Trial's less a host Trial's (the rest of a Trial's work).
cpu_host=$(awk '{ print $2 }' "$W/host" | median)
cpu_allow=$(awk '{ print $2 }' "$W/allow" | median)
cpu_gb=$(awk -v a="$cpu_allow" -v h="$cpu_host" -v b=$((trial_mib * 1048576)) 'BEGIN { printf "%.0f", (a - h) / 1e6 / (b / 1e9) }')
tratio=$(awk -v a="$proxied" -v b="$direct" 'BEGIN { printf "%.2f", a / b }')
mbs() { awk -v v="$1" 'BEGIN { printf "%.0f", v / 1e6 }'; }
echo "| proxy | in a Trial: curl download, --network host direct / allow through the proxy | $(mbs "$direct") / $(mbs "$proxied") MB/s | | |"
echo "| proxy | in a Trial: proxied / direct throughput | ${tratio}x | >= 0.8x | $(verdict "$tratio" 0.8 '>=') |"
echo "| proxy | in a Trial: trialbox's CPU per GB relayed (an allow Trial's less a host Trial's: $(awk -v v="$cpu_host" 'BEGIN { printf "%.1f", v / 1e6 }') ms) | $cpu_gb ms | | |"
echo "method: proxy in a Trial: curl in a shell Trial downloads $trial_mib MiB from a loopback HTTP server (python3, sendfile), directly under --network host and through trialbox's proxy (plain HTTP, absolute-form) under --network allow, the two alternating; medians of $trial_rounds Trials each; trialbox's CPU is its main thread's (where the proxy runs), from /proc/PID/task/PID/schedstat"
