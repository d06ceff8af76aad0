#!/usr/bin/env bash
# A throwaway PostgreSQL cluster on 127.0.0.1:54329 for the engine tests (see ../shared/ENGINES.md).
#   .ci/postgres.sh [start]   install the server if missing (apt, as root), init and start; idempotent
#   .ci/postgres.sh stop      stop it
# The server refuses to run as root, so the cluster belongs to the postgres user. Trust auth, loopback
# only, fsync off: for tests, never for data. Connect: host=127.0.0.1 port=54329 user=postgres.
set -euo pipefail
PORT=${RANKWISE_PG_PORT:-54329}
D=${RANKWISE_PG_DIR:-/tmp/rankwise-pg}
start_time=$(date +%s.%N)
elapsed() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}s')" "$start_time" "$(date +%s.%N)"; }

pgbin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1; }

case "${1:-start}" in
stop)
    PGBIN=$(pgbin)
    if [ -n "$PGBIN" ] && [ -f "$D/postmaster.pid" ]; then
        runuser -u postgres -- "$PGBIN/pg_ctl" -D "$D" -m fast -w stop
    fi
    echo "postgres: stopped ($(elapsed))"
    exit 0 ;;
start) ;;
*) echo "usage: $0 [start|stop]" >&2; exit 2 ;;
esac

if [ -z "$(pgbin)" ] || ! [ -x "$(pgbin)/initdb" ]; then
    if [ "$(id -u)" != 0 ]; then
        echo "postgres: the server is not installed and this is not root; install postgresql first" >&2
        exit 1
    fi
    echo "postgres: installing the server with apt-get"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq postgresql >/dev/null
    echo "postgres: installed ($(elapsed))"
fi
PGBIN=$(pgbin)
if runuser -u postgres -- "$PGBIN/pg_isready" -q -h 127.0.0.1 -p "$PORT"; then
    echo "postgres: already running on 127.0.0.1:$PORT ($(elapsed))"
    exit 0
fi
mkdir -p "$D"
chown postgres:postgres "$D"
chmod 700 "$D"
if ! [ -f "$D/PG_VERSION" ]; then
    runuser -u postgres -- "$PGBIN/initdb" -D "$D" -A trust -U postgres -E UTF8 --locale=C.UTF-8 >/dev/null
fi
runuser -u postgres -- "$PGBIN/pg_ctl" -D "$D" -l "$D/log" -w \
    -o "-c listen_addresses=127.0.0.1 -p $PORT -k $D -c fsync=off -c synchronous_commit=off -c full_page_writes=off" start >/dev/null
echo "postgres: running on 127.0.0.1:$PORT, data in $D ($(elapsed))"
