# Sourced by the race scripts (race-llamacpp.sh, race-serve.sh): the capped cgroup and the page
# cache they share. Set RACE_NAME (the prefix of messages) before sourcing.

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
