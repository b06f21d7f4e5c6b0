# ordlab — every task a teacher or developer needs. `just --list` shows them.

set shell := ["bash", "-euo", "pipefail", "-c"]

# List the labs.
default:
    @cargo run --release -q -- list

# Install redis-server and PostgreSQL where missing (apt-get on Debian/Ubuntu; otherwise says what to install).
setup:
    @scripts/setup.sh

# Run a lab (or `all`) at full scale and write results/<id>.txt, results/<id>.json.gz and SVGs.
lab id *args: setup
    cargo build --release -q
    ./target/release/ordlab run {{id}} --out results {{args}}

# Run a lab as its snapshot test does and show the difference from snapshots/.
diff id: setup
    cargo build --release -q
    ./target/release/ordlab diff {{id}}

# Run every test against real servers; the Redis 8 path too when a Redis ≥ 8.4 server is at hand.
test: setup
    #!/usr/bin/env bash
    set -euo pipefail
    python3 scripts/check-structure.py src
    cargo test --locked
    r8="${ORDLAB_REDIS8:-$HOME/.cache/ordlab/redis8/src/redis-server}"
    if [ -x "$r8" ]; then
      ORDLAB_REDIS8="$r8" cargo test --locked --test labs redis8 -- --ignored
    else
      echo "NOT TESTED: the Redis 8 paths (DELEX IFEQ, XADD IDMP): no Redis 8 server; set ORDLAB_REDIS8 or run ../shared/tools/build-redis8.sh"
    fi

# Measure the harness: wall time / injected delay, server start time, XADD→receive latency.
bench *labs: setup
    cargo build --release -q
    ./target/release/ordlab bench {{labs}}

# Which backends work here, server versions and capabilities.
doctor:
    cargo run --release -q -- doctor
