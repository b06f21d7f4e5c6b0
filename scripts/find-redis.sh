#!/usr/bin/env bash
# Prints the path of a redis-server of one generation, for `just test`, which runs the lock
# lab on each one found:
#   scripts/find-redis.sh 8   a Redis ≥ 8.4 (DELEX IFEQ): $ORDLAB_REDIS8, else the build of
#                             scripts/build-redis8.sh
#   scripts/find-redis.sh 7   a Redis older than 8.4 (Lua release): $ORDLAB_REDIS7, else the
#                             system's redis-server
# When there is none, prints why instead and exits 1.
set -euo pipefail
cd "$(dirname "$0")/.."

# True when $1 is a redis-server of version ≥ 8.4.
is_redis8() {
  local v
  v=$("$1" --version 2>/dev/null | sed -n 's/.* v=\([0-9]*\)\.\([0-9]*\).*/\1 \2/p')
  [ -n "$v" ] || return 2
  set -- $v
  [ "$1" -gt 8 ] || { [ "$1" -eq 8 ] && [ "$2" -ge 4 ]; }
}

case "${1:-}" in
  8)
    bin=${ORDLAB_REDIS8:-$(scripts/build-redis8.sh --check 2>/dev/null || true)}
    if [ -n "$bin" ] && [ -x "$bin" ] && is_redis8 "$bin"; then echo "$bin"; exit 0; fi
    echo "no Redis ≥ 8.4 server: run scripts/build-redis8.sh (just setup does) or set ORDLAB_REDIS8"
    ;;
  7)
    bin=${ORDLAB_REDIS7:-$(PATH="$PATH:/usr/bin:/usr/local/bin" command -v redis-server || true)}
    if [ -n "$bin" ] && [ -x "$bin" ]; then
      rc=0; is_redis8 "$bin" || rc=$?
      if [ "$rc" = 1 ]; then echo "$bin"; exit 0; fi
      echo "no Redis older than 8.4: $bin is $("$bin" --version | sed -n 's/.* v=\([0-9.]*\).*/\1/p'); set ORDLAB_REDIS7 to a Redis 7 server"
    else
      echo "no Redis older than 8.4: no system redis-server; set ORDLAB_REDIS7"
    fi
    ;;
  *) echo "usage: scripts/find-redis.sh 8|7" >&2; exit 2 ;;
esac
exit 1
