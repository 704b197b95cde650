# Sourced by the race scripts (race-llamacpp.sh, race-serve.sh, race-prompt-cache.sh): the capped
# cgroup, the page cache and the servers they share (OUT: the run's directory for logs). Set RACE_NAME (the prefix of messages) before sourcing.

# Every run starts with an empty page cache when the script may drop it (root): otherwise the
# previous run's file (llama.cpp reads its GGUF through the page cache) fills memory, and the
# kernel's reclaim and compaction run beside the next engine, in its time: a stormo decode step
# took 600 ms instead of 90 right after a 13 GB file had been read, and llama.cpp had slow rounds
# right after stormo. Without root the race warns once and runs as it is.
DROP_WARNED=""
drop_page_cache() {
    if [ -w /proc/sys/vm/drop_caches ]; then
        sync
        echo 3 > /proc/sys/vm/drop_caches
        sleep 2
    elif [ -z "$DROP_WARNED" ]; then
        echo "$RACE_NAME: cannot drop the page cache (not root): a run may pay for the previous run's cached file" >&2
        DROP_WARNED=1
    fi
}

# With CAP set: a fresh cgroup v1 memory group $GROUP whose memory.limit_in_bytes is CAP.
make_cap_group() {
    if [ -n "$CAP" ]; then
        mkdir "$GROUP"
        echo "$CAP" > "$GROUP/memory.limit_in_bytes"
        echo "$RACE_NAME: under a cgroup v1 memory cap of $CAP ($GROUP)" >&2
    fi
}

# The group's peak and failure count start again from zero for the next run.
reset_cap_group() {
    echo 0 > "$GROUP/memory.max_usage_in_bytes"
    echo 0 > "$GROUP/memory.failcnt"
}

SERVER_PID=""
stop_server() {
    if [ -n "$SERVER_PID" ]; then
        kill "$SERVER_PID" 2> /dev/null || true
        wait "$SERVER_PID" 2> /dev/null || true
        SERVER_PID=""
    fi
}

# Every run starts with an empty page cache (drop_page_cache says why).
# Starts "$@" in the background (inside the capped group when CAP is set), its output in $1's log.
start_server() {
    local name=$1
    shift
    drop_page_cache
    if [ -n "$CAP" ]; then
        reset_cap_group
        sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$GROUP" "$@" > "$OUT/$name.log" 2>&1 &
    else
        "$@" > "$OUT/$name.log" 2>&1 &
    fi
    SERVER_PID=$!
}

wait_healthy() {
    local name=$1 port=$2 waited=0
    until [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/health")" = 200 ]; do
        if ! kill -0 "$SERVER_PID" 2> /dev/null; then
            echo "$RACE_NAME: $name exited before it was ready; its log:" >&2
            tail -n 20 "$OUT/$name.log" >&2
            exit 1
        fi
        if [ "$waited" -ge "$HEALTH_TIMEOUT" ]; then
            echo "$RACE_NAME: $name not ready after $HEALTH_TIMEOUT s; its log:" >&2
            tail -n 20 "$OUT/$name.log" >&2
            exit 1
        fi
        sleep 1
        waited=$((waited + 1))
    done
}

# The servers' scripts end alike: the server stopped, the run's directory kept in KEEP when asked
# and removed, the cap's group removed; an interrupt ends the run through the same path.
end_race_on_exit() {
    trap race_cleanup EXIT
    trap 'exit 130' INT TERM
}
race_cleanup() {
    stop_server
    if [ -n "$KEEP" ]; then mkdir -p "$KEEP" && cp -a "$OUT"/. "$KEEP"/; fi
    rm -rf "$OUT"
    if [ -n "$CAP" ] && [ -d "$GROUP" ]; then rmdir "$GROUP" || true; fi
}
