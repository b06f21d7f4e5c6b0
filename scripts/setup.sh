#!/usr/bin/env bash
# Make sure what ordlab needs is installed: redis-server, PostgreSQL (postgres + initdb) and a
# font with Vietnamese glyphs for the PNG pictures (DejaVu Sans), libfaketime (Debian's faketime: a
# fault that skews a worker's clock); with --browser also Chromium
# and its WebDriver (the lab book's browser test). Installs with apt-get where possible,
# otherwise says exactly what to install. Then, when the system's Redis is older than 8.4 (no
# DELEX IFEQ), build Redis 8 once into the user's cache (scripts/build-redis8.sh, about 90 s on
# 2 cores); the local backend uses that build. If it cannot be built, one line says so and labs
# run on the system's Redis. Then the example workers' runtimes and client libraries
# (scripts/setup-workers.sh: python3 + redis-py + psycopg, PHP + phpredis + pgsql, Node +
# ioredis). Quiet when all is there.
#
# A browser that cannot be installed is a warning (the test then says NOT TESTED), except
# where one must be there (CI set): then it is an error.
set -euo pipefail
cd "$(dirname "$0")/.."

sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"

browser=0
[ "${1:-}" = "--browser" ] && browser=1

have_pg() {
  command -v postgres >/dev/null 2>&1 && command -v initdb >/dev/null 2>&1 && return 0
  ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1
}
have_font() {
  ls /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf >/dev/null 2>&1 && return 0
  command -v fc-list >/dev/null 2>&1 && fc-list 2>/dev/null | grep -q "DejaVu Sans"
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

# libfaketime: a fault that skews a worker's clock preloads it (src/fault/process.rs). Without
# it only that fault is unavailable (its test says NOT TESTED; in CI it must be there).
have_faketime() {
  local f
  for f in /usr/lib/*/faketime/libfaketime.so.1 /usr/lib/faketime/libfaketime.so.1; do [ -f "$f" ] && return 0; done
  return 1
}
if ! have_faketime; then
  if command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing faketime (libfaketime) with apt-get" >&2
    { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends faketime >/dev/null; } || true
  fi
  if ! have_faketime; then
    [ -n "${CI:-}" ] && { echo "setup: libfaketime could not be installed, and CI tests the clock-skew fault" >&2; exit 2; }
    echo "setup: no libfaketime (install Debian's faketime package): a fault that skews a clock is unavailable" >&2
  fi
fi

# Sidekiq, the job-queue library the library-sidekiq lab pins, is Debian's ruby-sidekiq (with
# ruby-redis): a system package like the servers, installed the same way. Without it only that
# lab is unavailable (`ordlab libraries` says so in one line; its test says NOT TESTED; in CI
# it must be there).
if ! dpkg-query -W -f='${db:Status-Status}' ruby-sidekiq 2>/dev/null | grep -q '^installed$'; then
  if command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing ruby-sidekiq (Sidekiq 6.4, for library-sidekiq) with apt-get" >&2
    { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends ruby-sidekiq >/dev/null; } || true
  fi
  if ! dpkg-query -W -f='${db:Status-Status}' ruby-sidekiq 2>/dev/null | grep -q '^installed$'; then
    [ -n "${CI:-}" ] && { echo "setup: ruby-sidekiq could not be installed, and CI tests library-sidekiq" >&2; exit 2; }
    echo "setup: no ruby-sidekiq (Debian's Sidekiq): the library-sidekiq lab is unavailable" >&2
  fi
fi

missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
have_pg || missing+=(postgresql)
have_font || missing+=(fonts-dejavu-core)
browser_missing=()
if [ $browser -eq 1 ]; then
  { command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ]; } || browser_missing+=(chromium)
  command -v chromedriver >/dev/null 2>&1 || browser_missing+=(chromium-driver)
fi
if [ ${#missing[@]} -eq 0 ] && [ ${#browser_missing[@]} -eq 0 ]; then
  ensure_redis8
  scripts/setup-workers.sh
  exit 0
fi

if command -v apt-get >/dev/null 2>&1; then
  echo "setup: installing ${missing[*]} ${browser_missing[*]} with apt-get" >&2
  $sudo apt-get update -qq
  if [ ${#missing[@]} -gt 0 ]; then
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    # The packages start system services we do not use: ordlab starts its own servers.
    for svc in redis-server postgresql; do
      if command -v systemctl >/dev/null 2>&1; then $sudo systemctl disable --now "$svc" >/dev/null 2>&1 || true; fi
      $sudo service "$svc" stop >/dev/null 2>&1 || true
    done
  fi
  if [ ${#browser_missing[@]} -gt 0 ]; then
    if ! DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends chromium chromium-driver >/dev/null; then
      if [ -n "${CI:-}" ]; then
        echo "setup: chromium and chromium-driver could not be installed, and CI needs them for the lab book's browser test" >&2
        exit 2
      fi
      echo "setup: chromium and chromium-driver could not be installed: the lab book's browser test will say NOT TESTED" >&2
    fi
  fi
  ensure_redis8
  scripts/setup-workers.sh
  exit 0
fi

if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: missing ${missing[*]}: install Redis ≥ 7 (redis-server), PostgreSQL ≥ 13 (postgres, initdb) and the DejaVu fonts with your package manager (macOS: brew install redis postgresql font-dejavu), or run labs with --backend docker or --backend external" >&2
  exit 2
fi
echo "setup: no chromium/chromedriver here and no apt-get to install them: the lab book's browser test will say NOT TESTED" >&2
ensure_redis8
scripts/setup-workers.sh
