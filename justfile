# ordlab — every task a teacher or developer needs. `just --list` shows them.

set shell := ["bash", "-euo", "pipefail", "-c"]

# List the labs.
default:
    @cargo run --release -q -- list

# Install redis-server, PostgreSQL and the DejaVu fonts where missing (apt-get on Debian/Ubuntu; otherwise says what to install); `just setup --browser` adds Chromium for the lab book's test.
setup *flags:
    @scripts/setup.sh {{flags}}

# Run a lab (or `all`, independent variants `--jobs N` at a time) at full scale: results/<id>.txt, .json, SVG and PNG pictures, SUMMARY.md and the lab book results/index.html.
lab id *args: setup
    cargo build --release -q
    ./target/release/ordlab run {{id}} --out results {{args}}

# Run a lab as its snapshot test does and show the difference from snapshots/.
diff id: setup
    cargo build --release -q
    ./target/release/ordlab diff {{id}}

# Run every test against real servers; the Redis 8 path too when a Redis ≥ 8.4 server is at hand, the lab book in Chromium when it can be installed.
test:
    #!/usr/bin/env bash
    set -euo pipefail
    scripts/setup.sh --browser
    python3 scripts/check-structure.py src
    cargo test --locked
    if ! { command -v chromium >/dev/null || [ -x /usr/bin/chromium ]; } || ! command -v chromedriver >/dev/null; then
      echo "NOT TESTED: lab book in a browser (no chromium/chromedriver: apt-get install chromium chromium-driver)"
    fi
    r8="${ORDLAB_REDIS8:-$HOME/.cache/ordlab/redis8/src/redis-server}"
    if [ -x "$r8" ]; then
      ORDLAB_REDIS8="$r8" cargo test --locked --test labs redis8 -- --ignored
    else
      echo "NOT TESTED: the Redis ≥ 8.4 path (DELEX IFEQ): no Redis 8 server; set ORDLAB_REDIS8 or run ../shared/tools/build-redis8.sh"
    fi

# Measure the harness: wall time / injected delay, server start time, XADD→receive latency beside a PING round trip; `just bench --lab-all` also times every lab as `just lab all` runs them, --jobs 1 against --jobs N.
bench *labs: setup
    cargo build --release -q
    ./target/release/ordlab bench {{labs}}

# Which backends work here, server versions and capabilities.
doctor:
    cargo run --release -q -- doctor
