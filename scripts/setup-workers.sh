#!/usr/bin/env bash
# The runtimes and client libraries of the workers in examples/: python3 with redis-py and
# psycopg 3 (examples/python/requirements.txt), Debian's PHP with phpredis and ext-pgsql (the
# seed's own stack), Node with ioredis (examples/node/package.json). Installs what is missing
# with pip, apt-get and npm; quiet when all is there. What cannot be installed is one line
# each; with CI set, that is an error (the foreign-worker tests must run in CI).
set -euo pipefail
cd "$(dirname "$0")/.."

sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
failed=()

python_ok() { python3 - <<'PY' 2>/dev/null
import importlib.metadata as m, sys
want = {l.split("==")[0].split("[")[0]: l.split("==")[1].strip() for l in open("examples/python/requirements.txt") if "==" in l and not l.startswith("#")}
sys.exit(0 if all(m.version(p) == v for p, v in want.items()) else 1)
PY
}
if ! command -v python3 >/dev/null 2>&1; then
  failed+=("python3 (apt-get install python3 python3-pip)")
elif ! python_ok; then
  echo "setup: installing the Python examples' client libraries (examples/python/requirements.txt) with pip" >&2
  python3 -m pip install --quiet --disable-pip-version-check -r examples/python/requirements.txt 2>/dev/null \
    || python3 -m pip install --quiet --disable-pip-version-check --break-system-packages -r examples/python/requirements.txt \
    || failed+=("redis-py and psycopg (pip install -r examples/python/requirements.txt)")
fi

php_ok() { php -r "exit(class_exists('Redis') && function_exists('pg_connect') ? 0 : 1);" 2>/dev/null; }
if ! php_ok; then
  if command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing php-cli php-redis php-pgsql with apt-get" >&2
    { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
        php-cli php-redis php-pgsql >/dev/null; } || true
  fi
  php_ok || failed+=("PHP with phpredis and pgsql (apt-get install php-cli php-redis php-pgsql)")
fi

node_ok() { [ -f examples/node/node_modules/ioredis/package.json ] \
  && node -e "process.exit(require('./examples/node/node_modules/ioredis/package.json').version === require('./examples/node/package.json').dependencies.ioredis ? 0 : 1)" 2>/dev/null; }
if ! command -v node >/dev/null 2>&1; then
  failed+=("node (apt-get install nodejs npm)")
elif ! node_ok; then
  echo "setup: installing ioredis for the Node examples (npm, examples/node)" >&2
  (cd examples/node && npm install --silent --no-audit --no-fund >/dev/null 2>&1) || true
  node_ok || failed+=("ioredis (cd examples/node && npm install)")
fi

if [ ${#failed[@]} -gt 0 ]; then
  for f in "${failed[@]}"; do echo "setup: could not install $f: the example workers that need it are NOT TESTED" >&2; done
  [ -n "${CI:-}" ] && exit 1
fi
exit 0
