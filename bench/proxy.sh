#!/bin/sh
# The allowlist proxy (issue 12) against a direct connection to the same
# loopback server, measured side by side in one run by bench/proxy-bench.c:
# bulk throughput (server to client, CONNECT tunnel; target >= 0.8x direct)
# and the latency a proxied connection adds (target < 1 ms at p50): for a new
# connection (connect, CONNECT and its 200, a 1-byte round trip) and for a
# round trip inside an open one.
#
#   bench/proxy.sh     (PROXY_BULK_MIB=512, PROXY_ROUNDS=5, PROXY_CONNS=2000)
#
# Needs a C compiler (cc) and the build's libtbcore.a (BUILD).
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
need cc build-essential
need pkg-config pkg-config
lib="$BUILD/core/libtbcore.a"
[ -f "$lib" ] || die "no $lib: build first (./scripts/setup, or set BUILD=folder)"
scratch
mib=${PROXY_BULK_MIB:-512}
rounds=${PROXY_ROUNDS:-5}
conns=${PROXY_CONNS:-2000}
# shellcheck disable=SC2046
cc -O2 -std=c11 -Wall -Wextra -Icore/src bench/proxy-bench.c "$lib" $(pkg-config --libs json-c libffi) -ldl -lpthread \
        -o "$W/proxy-bench" || die "cannot build bench/proxy-bench.c"
say "proxy: $rounds x $mib MiB each way, $conns connections and round trips each way"
"$W/proxy-bench" "$mib" "$rounds" "$conns" >"$W/figures" || die "proxy-bench failed"
cat "$W/figures" >&2
f() { awk -v k="$1" '$1 == k { print $2 }' "$W/figures"; }
verdict() { awk -v v="$1" -v t="$2" -v op="$3" 'BEGIN { ok = op == ">=" ? v >= t : v < t; print ok ? "ok" : "MISSED" }'; }
ratio=$(f bulk_ratio)
added=$(f setup_added_p50_us)
echo "| proxy | bulk throughput, direct | $(f bulk_direct_mbs) MB/s | | |"
echo "| proxy | bulk throughput, through the proxy (CONNECT) | $(f bulk_proxied_mbs) MB/s | | |"
echo "| proxy | proxied / direct throughput | ${ratio}x | >= 0.8x | $(verdict "$ratio" 0.8 '>=') |"
echo "| proxy | new connection + first round trip, p50 direct / proxied | $(f setup_direct_p50_us) / $(f setup_proxied_p50_us) us | | |"
echo "| proxy | latency a proxied connection adds, p50 | $added us | < 1000 us | $(verdict "$added" 1000 '<') |"
echo "| proxy | new connection p99, direct / proxied | $(f setup_direct_p99_us) / $(f setup_proxied_p99_us) us | | |"
echo "| proxy | round trip in an open connection, p50 direct / proxied | $(f rtt_direct_p50_us) / $(f rtt_proxied_p50_us) us | | |"
echo "| proxy | CPU per GB in bulk runs (server + client [+ proxy]), direct / proxied | $(f bulk_cpu_ms_per_gb_direct) / $(f bulk_cpu_ms_per_gb_proxied) ms | | |"
echo "| proxy | CPU time of the proxy's thread per GB relayed (bulk; includes the latency runs) | $(f proxy_cpu_ms_per_gb) ms | | |"
echo "method: one process holds a loopback server, the proxy (its own thread, epoll, splice) and the client;" \
        "direct and proxied runs alternate; bulk is the median of $rounds transfers of $mib MiB from server to" \
        "client; latencies are over $conns connections (or round trips) each; the machine is shared, so figures vary"
