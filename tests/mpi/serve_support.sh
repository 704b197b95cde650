# Sourced by the serve tests under mpirun: starting `stormo serve` on a free port, alone or as
# several ranks, waiting until it is ready, and finding a rank's process among the launcher's.
# Needs $stormo, $model and $work set, and curl.

mpirun_np3="${MPIRUN:-mpirun} --allow-run-as-root --oversubscribe -np 3"

# start_server NAME LAUNCHER... -- SERVE OPTIONS...: runs `LAUNCHER stormo serve MODEL --port 0
# OPTIONS` in the background (LAUNCHER may be empty), stderr in $work/NAME.err; sets $server_pid
# and $server_port once /health answers 200, or fails.
start_server() {
  name=$1
  shift
  launcher=""
  while [ "$1" != "--" ]; do
    launcher="$launcher $1"
    shift
  done
  shift
  $launcher "$stormo" serve "$model" --port 0 "$@" >"$work/$name.out" 2>"$work/$name.err" &
  server_pid=$!
  server_port=""
  for _ in $(seq 1 600); do
    kill -0 "$server_pid" 2>/dev/null || { echo "$name: the server ended at start"; cat "$work/$name.err"; return 1; }
    if [ -z "$server_port" ]; then
      server_port=$(sed -n 's|.*listening on http://127\.0\.0\.1:\([0-9]*\).*|\1|p' "$work/$name.err" | head -1)
    fi
    if [ -n "$server_port" ] && [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$server_port/health")" = 200 ]; then
      return 0
    fi
    sleep 0.1
  done
  echo "$name: not ready within 60 s"
  cat "$work/$name.err"
  return 1
}

# rank_pid LAUNCHER_PID RANK: the process of RANK among the launcher's children.
rank_pid() {
  for pid in $(pgrep -P "$1"); do
    if tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$2"; then
      echo "$pid"
      return 0
    fi
  done
  return 1
}

# wait_gone PID SECONDS: true once PID has ended, false if it still runs after SECONDS.
wait_gone() {
  for _ in $(seq 1 $(($2 * 10))); do
    kill -0 "$1" 2>/dev/null || return 0
    sleep 0.1
  done
  return 1
}

# completion PORT BODY OUT: POST /v1/completions; OUT gets the body, OUT.status the HTTP status.
completion() {
  curl -s -o "$3" -w '%{http_code}' -H 'Content-Type: application/json' -d "$2" \
    "http://127.0.0.1:$1/v1/completions" >"$3.status" || true
}
