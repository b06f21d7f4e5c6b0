#!/usr/bin/env bash
# Make sure redis-server and PostgreSQL (postgres + initdb) are installed; install them with
# apt-get where possible, otherwise say exactly what to install. Then, when the system's Redis
# is older than 8.4 (no DELEX IFEQ), build Redis 8 once into the user's cache
# (scripts/build-redis8.sh, about 90 s on 2 cores); the local backend uses that build. If it
# cannot be built, one line says so and labs run on the system's Redis. Quiet when all is there.
set -euo pipefail
cd "$(dirname "$0")/.."

sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"

have_pg() {
  command -v postgres >/dev/null 2>&1 && command -v initdb >/dev/null 2>&1 && return 0
  ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1
}

# The system's redis-server version, e.g. "7.0.15" (empty when there is none).
system_redis_version() {
  local bin
  bin=$(PATH="$PATH:/usr/bin:/usr/local/bin" command -v redis-server) || return 0
  "$bin" --version 2>/dev/null | sed -n 's/.* v=\([0-9.]*\).*/\1/p'
}

# Redis 8 for the local backend, unless the user chose a server (ORDLAB_REDIS_SERVER), the
# build exists, or the system's Redis is ≥ 8.4 already. Never fails setup.
ensure_redis8() {
  [ -n "${ORDLAB_REDIS_SERVER:-}" ] && return 0
  scripts/build-redis8.sh --check >/dev/null 2>&1 && return 0
  local v major minor
  v=$(system_redis_version)
  if [ -n "$v" ]; then
    major=${v%%.*} minor=${v#*.} minor=${minor%%.*}
    if [ "$major" -gt 8 ] || { [ "$major" -eq 8 ] && [ "$minor" -ge 4 ]; }; then return 0; fi
  fi
  if ! { command -v make && command -v cc; } >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing gcc and make with apt-get (to build Redis 8)" >&2
    { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
        --no-install-recommends gcc make libc6-dev >/dev/null; } || true
  fi
  echo "setup: building Redis 8 once into ${XDG_CACHE_HOME:-$HOME/.cache}/ordlab/redis8 (about 90 s; the system's redis-server is ${v:-missing})" >&2
  if ! scripts/build-redis8.sh >/dev/null; then
    echo "setup: Redis 8 could not be built (see above); labs run on the system's Redis ${v:-?} and release locks with Lua instead of DELEX IFEQ" >&2
  fi
}

missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
have_pg || missing+=(postgresql)
if [ ${#missing[@]} -eq 0 ]; then
  ensure_redis8
  exit 0
fi

if command -v apt-get >/dev/null 2>&1; then
  echo "setup: installing ${missing[*]} with apt-get" >&2
  $sudo apt-get update -qq
  pkgs=()
  for m in "${missing[@]}"; do
    case $m in
      redis-server) pkgs+=(redis-server) ;;
      postgresql) pkgs+=(postgresql) ;;
    esac
  done
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
  # The packages start system services we do not use: ordlab starts its own servers.
  for svc in redis-server postgresql; do
    if command -v systemctl >/dev/null 2>&1; then $sudo systemctl disable --now "$svc" >/dev/null 2>&1 || true; fi
    $sudo service "$svc" stop >/dev/null 2>&1 || true
  done
  ensure_redis8
  exit 0
fi

echo "setup: missing ${missing[*]}: install Redis ≥ 7 (redis-server) and PostgreSQL ≥ 13 (postgres, initdb) with your package manager (macOS: brew install redis postgresql), or run labs with --backend docker or --backend external" >&2
exit 2
