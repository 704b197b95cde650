#!/bin/sh
# Checks stormo's RAM read probe (the memory bound `stormo bench` divides by) against sysbench,
# back to back in one run. Run it on an otherwise idle machine: on a shared one every figure moves
# with the neighbours' load, and only same-run ratios mean anything.
#
#   scripts/memory-bound-check.sh [STORMO_BINARY] [THREADS]
#
# STORMO_BINARY defaults to build/bin/stormo, THREADS to the number of CPUs (nproc). It prints:
#   1. stormo's probe (`stormo bench-kernels --ram-only`): a 1 GiB buffer of distinct words read by
#      every thread at once, several streams per thread, the kernels plugin's widest loads, best
#      of 5 passes;
#   2. sysbench as the issue ran it (`--memory-block-size=1M`, global scope): ONE 1 MiB buffer that
#      both threads read again and again with 4-byte loads. 1 MiB stays in the L2/L3 caches, so
#      this is cache bandwidth, not RAM's: it can exceed any DRAM figure;
#   3. sysbench over RAM: `--memory-block-size=1G --memory-scope=local`, a 1 GiB buffer per thread,
#      far above the last-level cache;
# and the ratios of the probe to each. A truthful probe reads at least what (3) reads; (2) is
# printed because it is the command the figure of 46 GiB/s came from.
# Needs sysbench (Debian: apt-get install sysbench); stormo's tests do not.
set -eu

STORMO=${1:-build/bin/stormo}
THREADS=${2:-$(nproc)}
TOTAL=64G

if ! command -v sysbench >/dev/null 2>&1; then
    echo "memory-bound-check: sysbench is not installed (Debian: apt-get install sysbench)" >&2
    exit 1
fi
if [ ! -x "$STORMO" ]; then
    echo "memory-bound-check: $STORMO is not an executable stormo (build it, or pass its path)" >&2
    exit 1
fi

# "... N thread(s): X GB/s best, ..." -> X (decimal GB/s)
probe=$("$STORMO" bench-kernels --ram-only --threads-list "$THREADS" --ram-probe 1GiB --ram-repeats 5)
probe_line=$(printf '%s\n' "$probe" | grep 'RAM read bandwidth' | tail -n 1)
probe_gb=$(printf '%s\n' "$probe_line" | sed -n 's/.*: \([0-9.]*\) GB\/s best.*/\1/p')

# sysbench prints "... MiB transferred (X MiB/sec)" -> X (MiB/s)
sysbench_mib() {
    sysbench memory "$@" --memory-total-size=$TOTAL --memory-oper=read --threads="$THREADS" run |
        sed -n 's/.*MiB transferred (\([0-9.]*\) MiB\/sec).*/\1/p'
}
cache_mib=$(sysbench_mib --memory-block-size=1M)
ram_mib=$(sysbench_mib --memory-block-size=1G --memory-scope=local)

if [ -z "$probe_gb" ] || [ -z "$cache_mib" ] || [ -z "$ram_mib" ]; then
    echo "memory-bound-check: could not read a figure (probe '$probe_gb', sysbench '$cache_mib' / '$ram_mib')" >&2
    exit 1
fi

awk -v p="$probe_gb" -v c="$cache_mib" -v r="$ram_mib" -v t="$THREADS" -v line="$probe_line" 'BEGIN {
    mib = 1048576 / 1e9;  # GB per MiB
    printf "threads %d, load average now: ", t
    getline load < "/proc/loadavg"; split(load, a, " "); printf "%s %s %s\n", a[1], a[2], a[3]
    printf "stormo probe                       %7.2f GB/s  (%s)\n", p, line
    printf "sysbench 1M block (issue command)  %7.2f GB/s  (%.0f MiB/s; one 1 MiB buffer: cache, not RAM)\n", c * mib, c
    printf "sysbench 1G block per thread       %7.2f GB/s  (%.0f MiB/s; RAM)\n", r * mib, r
    printf "probe / sysbench 1M                %7.3f\n", p / (c * mib)
    printf "probe / sysbench 1G                %7.3f\n", p / (r * mib)
}'
