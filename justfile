# ordlab — every task a teacher or developer needs. `just --list` shows them.

set shell := ["bash", "-euo", "pipefail", "-c"]

# List the labs.
default:
    @cargo run --release -q -- list

# Install redis-server and PostgreSQL where missing (apt-get on Debian/Ubuntu; otherwise says what to install).
setup:
    @scripts/setup.sh

# Run a lab (or `all`) at full scale and write results/<id>.txt and results/<id>.json.
lab id *args: setup
    cargo build --release -q
    ./target/release/ordlab run {{id}} --out results {{args}}

# Run a lab as its snapshot test does and show the difference from snapshots/.
diff id: setup
    cargo build --release -q
    ./target/release/ordlab diff {{id}}

# Run every test (unit, CLI, labs against real servers, snapshots).
test: setup
    cargo test --locked

# Measure the harness: wall time / injected delay, server start time, XADD→receive latency.
bench *labs: setup
    cargo build --release -q
    ./target/release/ordlab bench {{labs}}

# Which backends work here, server versions and capabilities.
doctor:
    cargo run --release -q -- doctor
