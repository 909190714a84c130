#!/usr/bin/env bash
# The Ray part of CI (.ci/run calls it: bash scripts/ci_ray.sh).
#
# Starts a real Ray head on loopback only (free ports, no dashboard, a small object store,
# no usage stats), runs a smoke sweep through it (executor=ray ray_address=127.0.0.1:<port>)
# and the Ray tests (tests/test_ray.py: a sweep, a failed run, a shared results path, a Ray
# worker killed with SIGKILL), and stops that head at the end, also on failure or Ctrl-C.
# Only this head is stopped (it runs with --block; `ray stop` would stop every Ray here).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh >&2   # .venv with the project (a no-op when it is up to date)
PY=.venv/bin/python
RAY=.venv/bin/ray

# Ray is an optional extra of the project: install it when missing (PyPI).
if ! "$PY" -c "import ray" 2>/dev/null || [ ! -x "$RAY" ]; then
    echo "ci_ray: installing the ray extra" >&2
    "$PY" -m pip install -q -e ".[ray]"
fi

export OMP_NUM_THREADS=1
export RAY_USAGE_STATS_ENABLED=0
# Keep Ray on 127.0.0.1: by default it replaces a loopback address with the address of the
# machine's default route, for its own processes and for the address a driver connects to.
export RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0

free_port() { "$PY" -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])"; }
PORT=$(free_port)
CLIENT_PORT=$(free_port)
WORK=$(mktemp -d /tmp/pg-arena-ci-ray.XXXXXX)
HEAD_PID=""
# Token authentication with a token of this run only (Ray would otherwise use, or skip,
# whatever ~/.ray/auth_token holds); the drivers of the tests inherit these.
export RAY_AUTH_MODE=token
export RAY_AUTH_TOKEN_PATH="$WORK/auth_token"
"$PY" -c "import secrets; print(secrets.token_hex(32), end='')" > "$RAY_AUTH_TOKEN_PATH"

cleanup() {
    local rc=$?
    if [ -n "$HEAD_PID" ] && kill -0 "$HEAD_PID" 2>/dev/null; then
        echo "ci_ray: stopping the Ray head (pid $HEAD_PID)" >&2
        kill -TERM "$HEAD_PID" 2>/dev/null || true
        for _ in $(seq 1 30); do kill -0 "$HEAD_PID" 2>/dev/null || break; sleep 1; done
        kill -KILL "$HEAD_PID" 2>/dev/null || true
        wait "$HEAD_PID" 2>/dev/null || true
    fi
    rm -rf "$WORK"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "ci_ray: starting a Ray head on 127.0.0.1:$PORT" >&2
"$RAY" start --head --block --node-ip-address=127.0.0.1 --port="$PORT" --ray-client-server-port="$CLIENT_PORT" \
    --num-cpus=2 --disable-usage-stats --include-dashboard=false --object-store-memory=200000000 \
    --temp-dir="$WORK/ray" > "$WORK/head.log" 2>&1 &
HEAD_PID=$!
for i in $(seq 1 180); do
    if grep -q "block forever" "$WORK/head.log"; then break; fi
    if ! kill -0 "$HEAD_PID" 2>/dev/null || [ "$i" = 180 ]; then
        echo "ci_ray: the Ray head did not start:" >&2
        tail -50 "$WORK/head.log" >&2
        exit 1
    fi
    sleep 1
done
ADDRESS="127.0.0.1:$PORT"

echo "ci_ray: smoke sweep through Ray ($ADDRESS)" >&2
"$PY" -m harness.cli suite=mujoco scale=smoke algo=ppo_clip executor=ray ray_address="$ADDRESS" \
    results_dir="$WORK/results"

echo "ci_ray: the Ray tests" >&2
PG_ARENA_RAY_ADDRESS="$ADDRESS" "$PY" -m pytest tests/test_ray.py -p no:cacheprovider
