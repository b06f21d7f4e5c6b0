# ordlab — every task a teacher or developer needs. `just --list` shows them.

set shell := ["bash", "-euo", "pipefail", "-c"]

# List the labs.
default:
    @cargo run --release -q -- list

# Install redis-server, PostgreSQL and the DejaVu fonts where missing, the job-queue libraries the `library-*` labs pin (`ordlab libraries`: a venv or npm prefix per library and version under ~/.cache/ordlab/libraries/) (apt-get on Debian/Ubuntu; otherwise says what to install), build Redis 8 once when the system's is older than 8.4, and the example workers' runtimes and client libraries (Python redis-py + psycopg, PHP phpredis + pgsql, Node ioredis); `just setup --browser` adds Chromium for the lab book's test.
setup *flags:
    @scripts/setup.sh {{flags}}
    @cargo build --release -q && ./target/release/ordlab libraries >/dev/null || [ -z "${CI:-}" ]

# Run a lab (or `all`, independent variants `--jobs N` at a time) at full scale: results/<id>.txt, <id>.json.gz, records/<id>.json.gz, SVG and PNG pictures; SUMMARY.md and the lab book results/index.html over every lab's record.
lab id *args: setup
    cargo build --release -q
    ./target/release/ordlab run {{id}} --out results {{args}}

# The library matrix: every library-* lab and each library under faults at its fetch and in its handler (examples/libraries/matrix/), one real run per variant into results/libraries/, whose MATRIX.md (and the lab book's matrix section) ordlab draws from their records.
libraries *args: setup
    cargo build --release -q
    ./target/release/ordlab run library-rq library-celery library-sidekiq library-bullmq library-pg-boss library-graphile-worker examples/libraries/matrix/*.toml --quiet --out results/libraries {{args}}

# Rebuild the lab book results/index.html, SUMMARY.md and every lab's SVGs and PNGs from the records in results/records (no servers, seconds).
book *args:
    cargo build --release -q
    ./target/release/ordlab book --out results {{args}}

# Serve the lab book on 127.0.0.1 (a free port, printed; `--port N`, `--lang vi`, `--time-scale 2`) with a "run again" button per variant that runs it on this machine's servers and streams its events into the page live. Ctrl-C stops it and everything it started.
serve *args: setup
    cargo build --release -q
    ./target/release/ordlab serve --out results {{args}}

# Run a lab as its snapshot test does and show the difference from snapshots/.
diff id: setup
    cargo build --release -q
    ./target/release/ordlab diff {{id}}

# Run every test against real servers; also the lock lab on Redis 8 and on Redis 7 where both exist, the lab book in Chromium when it can be installed, and the Docker backend when an engine answers. Says NOT TESTED for what could not run.
test:
    #!/usr/bin/env bash
    set -euo pipefail
    scripts/setup.sh --browser
    python3 scripts/check-structure.py --self-test 2>/dev/null || python3 scripts/check-structure.py --self-test
    python3 scripts/check-structure.py src
    # The job-queue libraries the library-* labs pin; each one that cannot be installed is one line, NOT TESTED.
    cargo run --locked -q -- libraries >/dev/null || [ -z "${CI:-}" ]
    cargo test --locked
    if ! { command -v chromium >/dev/null || [ -x /usr/bin/chromium ]; } || ! command -v chromedriver >/dev/null; then
      echo "NOT TESTED: lab book in a browser (no chromium/chromedriver: apt-get install chromium chromium-driver)"
    fi
    if r8=$(scripts/find-redis.sh 8); then
      ORDLAB_REDIS8="$r8" cargo test --locked --test labs lock_release::delex -- --ignored
      ORDLAB_REDIS8="$r8" cargo test --locked --test labs idmp::on_redis8 -- --ignored
    else
      echo "NOT TESTED: the lock lab on Redis ≥ 8.4 (DELEX IFEQ) and XADD IDMP (≥ 8.6): $r8"
    fi
    if r7=$(scripts/find-redis.sh 7); then
      ORDLAB_REDIS7="$r7" cargo test --locked --test labs lock_release::lua -- --ignored
      ORDLAB_REDIS7="$r7" cargo test --locked --test labs idmp::skipped_on_redis7 -- --ignored
    else
      echo "NOT TESTED: the lock lab on Redis 7 (Lua compare-and-delete) and the IDMP skip: $r7"
    fi
    if why=$(scripts/docker-ready.sh); then
      cargo test --locked --lib service::engine -- --ignored
      cargo test --locked --test labs docker_backend -- --ignored --test-threads 1
    else
      echo "NOT TESTED: docker backend ($why)"
    fi

# Measure the harness: server start time of each backend, wall time / injected delay, XADD→receive latency beside a PING round trip; `just bench --lab-all` also times every lab as `just lab all` runs them, --jobs 1 against --jobs N. Then the interposer's cost (redis-benchmark PING/XADD and SELECT 1, direct against through an endpoint, with a verdict against 2×); `just bench --interposer` measures only that.
bench *labs: setup
    cargo build --release -q
    ./target/release/ordlab bench {{labs}}

# Format every source file: cargo fmt, and rustfmt on the family folders (their modules are declared by `lab_families!`, which cargo fmt does not follow).
fmt:
    cargo fmt
    rustfmt --edition 2021 src/labs/*.rs

# Which backends work here, server versions and capabilities.
doctor:
    cargo run --release -q -- doctor

# Explore every lab variant the explorer can step (each Redis command and SQL statement held at the wire until its turn; every order of conflicting steps run once) into results/explore/: explore-<lab>-<variant>.txt/.json and the shortest wrong run's SVG. `just explore baseline` explores one lab's variants.
explore *labs: setup
    cargo build --release -q
    scripts/explore-all.sh ./target/release/ordlab {{labs}}
