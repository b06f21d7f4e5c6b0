#!/usr/bin/env bash
# Make sure redis-server and PostgreSQL (postgres + initdb) are installed; install them with
# apt-get where possible, otherwise say exactly what to install. Quiet when all is there.
set -euo pipefail

have_pg() {
  command -v postgres >/dev/null 2>&1 && command -v initdb >/dev/null 2>&1 && return 0
  ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1
}

missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
have_pg || missing+=(postgresql)
[ ${#missing[@]} -eq 0 ] && exit 0

if command -v apt-get >/dev/null 2>&1; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
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
  exit 0
fi

echo "setup: missing ${missing[*]}: install Redis ≥ 7 (redis-server) and PostgreSQL ≥ 13 (postgres, initdb) with your package manager (macOS: brew install redis postgresql), or run labs with --backend docker or --backend external" >&2
exit 2
