#!/usr/bin/env bash
# Make sure what ordlab needs is installed: redis-server, PostgreSQL (postgres + initdb) and a
# font with Vietnamese glyphs for the PNG pictures (DejaVu Sans); with --browser also Chromium
# and its WebDriver (the lab book's browser test). Installs with apt-get where possible,
# otherwise says exactly what to install. Quiet when all is there.
#
# A browser that cannot be installed is a warning (the test then says NOT TESTED), except
# where one must be there (CI set): then it is an error.
set -euo pipefail

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

missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
have_pg || missing+=(postgresql)
have_font || missing+=(fonts-dejavu-core)
browser_missing=()
if [ $browser -eq 1 ]; then
  { command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ]; } || browser_missing+=(chromium)
  command -v chromedriver >/dev/null 2>&1 || browser_missing+=(chromium-driver)
fi
[ ${#missing[@]} -eq 0 ] && [ ${#browser_missing[@]} -eq 0 ] && exit 0

if command -v apt-get >/dev/null 2>&1; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
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
  exit 0
fi

if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: missing ${missing[*]}: install Redis ≥ 7 (redis-server), PostgreSQL ≥ 13 (postgres, initdb) and the DejaVu fonts with your package manager (macOS: brew install redis postgresql font-dejavu), or run labs with --backend docker or --backend external" >&2
  exit 2
fi
echo "setup: no chromium/chromedriver here and no apt-get to install them: the lab book's browser test will say NOT TESTED" >&2
