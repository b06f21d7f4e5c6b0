#!/usr/bin/env bash
# Builds a Redis ≥ 8.4 server (the first with DELEX IFEQ) once, into a per-user cache, for
# machines whose redis-server is older, and prints the server's path on stdout.
#
# Source, in order: the official release tarball (download.redis.io, pinned version and
# SHA-256); where it cannot be downloaded, Debian's source package from `experimental`, found
# through this machine's own apt sources and verified by apt against the Debian archive keys.
# One line on stderr says when the fallback is used; if neither works, one line says why and
# the exit code is 1 (callers fall back to the system's redis-server).
#
# Idempotent and safe to run concurrently: a usable build is reused; a new build is made in a
# scratch dir under a lock and published by renaming the finished dir into place, so an
# interrupted build leaves nothing half-done.
#
# Usage:  scripts/build-redis8.sh [--check]
#   --check   print the cached server's path if a usable build exists, else exit 1; builds nothing
# Environment:
#   ORDLAB_REDIS8_DIR  where the build goes (default ${XDG_CACHE_HOME:-$HOME/.cache}/ordlab/redis8;
#                      the server is <dir>/src/redis-server, where ordlab and
#                      ../shared/tools/docker-images.sh look for it)
#   REDIS8_VERSION, REDIS8_SHA256   another official release (both must be given)
set -euo pipefail

version=${REDIS8_VERSION:-8.4.0}
# https://github.com/redis/redis-hashes (also Homebrew's redis formula for 8.4.0)
sha256=${REDIS8_SHA256:-ca909aa15252f2ecb3a048cd086469827d636bf8334f50bb94d03fba4bfc56e8}
if [ -n "${REDIS8_VERSION:-}" ] && [ -z "${REDIS8_SHA256:-}" ]; then
  echo "build-redis8: REDIS8_VERSION=$version needs REDIS8_SHA256 (from https://github.com/redis/redis-hashes)" >&2
  exit 2
fi
cache=${XDG_CACHE_HOME:-$HOME/.cache}/ordlab
dest=${ORDLAB_REDIS8_DIR:-$cache/redis8}
server=$dest/src/redis-server

say() { echo "build-redis8: $*" >&2; }

# True when $1 is a redis-server of version ≥ 8.4.
usable() {
  local v
  v=$("$1" --version 2>/dev/null | sed -n 's/.* v=\([0-9]*\)\.\([0-9]*\).*/\1 \2/p') || return 1
  [ -n "$v" ] || return 1
  set -- $v
  [ "$1" -gt 8 ] || { [ "$1" -eq 8 ] && [ "$2" -ge 4 ]; }
}

if [ "${1:-}" = --check ]; then
  if [ -x "$server" ] && usable "$server"; then echo "$server"; exit 0; fi
  exit 1
elif [ -n "${1:-}" ]; then
  echo "usage: scripts/build-redis8.sh [--check]" >&2
  exit 2
fi

if [ -x "$server" ] && usable "$server"; then echo "$server"; exit 0; fi

for tool in make cc tar; do
  command -v "$tool" >/dev/null 2>&1 || { say "cannot build Redis 8: '$tool' is missing (Debian: apt-get install -y gcc make libc6-dev)"; exit 1; }
done

parent=$(dirname "$dest")
mkdir -p "$parent"
# One build at a time; whoever waited finds the finished build and reuses it.
exec 9>"$parent/.redis8.lock"
if command -v flock >/dev/null 2>&1; then
  flock 9
  # Holding the lock, any scratch dir left is from a build that was killed.
  rm -rf "$parent"/.redis8-build.*
fi
if [ -x "$server" ] && usable "$server"; then echo "$server"; exit 0; fi

work=$(mktemp -d "$parent/.redis8-build.XXXXXX")
trap 'rm -rf "$work"' EXIT

# The official tarball, checked against its published SHA-256. Prints the source dir.
from_official() {
  local url="https://download.redis.io/releases/redis-$version.tar.gz" err
  if command -v curl >/dev/null 2>&1; then
    err=$(curl -fsSL --connect-timeout 10 --max-time 600 -o "$work/redis.tar.gz" "$url" 2>&1) || { echo "$err" | tail -1; return 1; }
  elif command -v wget >/dev/null 2>&1; then
    err=$(wget -q -T 10 -O "$work/redis.tar.gz" "$url" 2>&1) || { echo "wget failed: ${err:-no answer}" | tail -1; return 1; }
  else
    echo "neither curl nor wget is installed"; return 1
  fi
  if ! echo "$sha256  $work/redis.tar.gz" | sha256sum -c --status; then
    echo "checksum mismatch for $url"; return 1
  fi
  mkdir "$work/src" && tar xzf "$work/redis.tar.gz" -C "$work/src" --strip-components=1
  echo "official tarball $url (sha256 $sha256)" > "$work/SOURCE"
}

# A Debian mirror from this machine's apt sources (deb822 or one-line format).
debian_mirror() {
  { grep -hs -oE '^URIs: *[^ ]+/debian/?$' /etc/apt/sources.list.d/*.sources | awk '{print $2}'
    grep -hs -oE '^deb +(\[[^]]*\] +)?[^ ]+/debian/? ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
      | awk '{print $NF}'
  } | sed 's:/*$::' | head -1
}

# Debian's source package from experimental, verified by apt. Prints the source dir.
from_debian() {
  [ -f /etc/debian_version ] && command -v apt-get >/dev/null 2>&1 || { echo "not a Debian-family machine"; return 1; }
  local uri keyring=/usr/share/keyrings/debian-archive-keyring.gpg opts signed=""
  uri=$(debian_mirror)
  [ -n "$uri" ] || { echo "no Debian mirror in /etc/apt/sources*"; return 1; }
  [ -f "$keyring" ] && signed="[signed-by=$keyring] "
  mkdir -p "$work/apt/lists/partial" "$work/apt/cache/archives/partial"
  printf 'deb-src %s%s experimental main\n' "$signed" "$uri" > "$work/apt/sources.list"
  opts=(-o "Dir::Etc::SourceList=$work/apt/sources.list" -o Dir::Etc::SourceParts=/nonexistent
        -o "Dir::State::Lists=$work/apt/lists" -o "Dir::Cache=$work/apt/cache" -o Debug::NoLocking=1)
  [ "$(id -u)" -eq 0 ] && opts+=(-o APT::Sandbox::User=root)
  apt-get "${opts[@]}" -qq update >"$work/apt.log" 2>&1 || { echo "apt-get update of $uri experimental failed"; return 1; }
  (cd "$work" && apt-get "${opts[@]}" -qq source --download-only redis/experimental) >>"$work/apt.log" 2>&1 \
    || { echo "apt-get source redis/experimental failed: $(tail -1 "$work/apt.log")"; return 1; }
  local tarball dsc
  tarball=$(ls "$work"/redis_*.orig.tar.* 2>/dev/null | head -1)
  dsc=$(ls "$work"/redis_*.dsc 2>/dev/null | head -1)
  [ -n "$tarball" ] || { echo "no orig tarball in the redis source package"; return 1; }
  mkdir "$work/src" && tar xf "$tarball" -C "$work/src" --strip-components=1
  echo "Debian source package $(basename "$dsc") from $uri experimental" > "$work/SOURCE"
}

if ! why=$(from_official); then
  say "the official tarball cannot be downloaded (${why:-unknown error}); building from Debian's source package instead"
  rm -rf "$work/src"
  if ! why=$(from_debian); then
    say "cannot build Redis 8: official tarball unavailable, and Debian's source package: ${why:-unknown error}"
    exit 1
  fi
fi

if ! make -C "$work/src" -j"$(nproc 2>/dev/null || echo 2)" BUILD_TLS=no USE_SYSTEMD=no >"$work/build.log" 2>&1; then
  say "make failed: $(grep -m1 -iE 'error' "$work/build.log" || tail -1 "$work/build.log")"
  exit 1
fi
mkdir -p "$work/out/src"
cp "$work/src/src/redis-server" "$work/src/src/redis-cli" "$work/src/src/redis-benchmark" "$work/out/src/"
cp "$work/SOURCE" "$work/out/SOURCE"
if ! usable "$work/out/src/redis-server"; then
  say "the built server is not Redis ≥ 8.4: $("$work/out/src/redis-server" --version 2>&1 | head -1)"
  exit 1
fi
"$work/out/src/redis-server" --version > "$work/out/VERSION"
# Publish: the old dir (an unusable build) goes aside first, then the new one takes its name.
[ -e "$dest" ] && mv "$dest" "$work/old"
mv "$work/out" "$dest"
echo "$server"
