#!/usr/bin/env bash
# Says whether the Docker backend can be tested here: an engine answers at $DOCKER_HOST (default
# /var/run/docker.sock) and has both images ($ORDLAB_REDIS_IMAGE, default redis:8, and
# $ORDLAB_PG_IMAGE, default postgres:18). Exit 0 when it can; otherwise prints why and exits 1.
# Asks the engine's HTTP API with curl (the docker CLI is not needed), else uses the CLI.
set -uo pipefail
redis=${ORDLAB_REDIS_IMAGE:-redis:8}
pg=${ORDLAB_PG_IMAGE:-postgres:18}
host=${DOCKER_HOST:-unix:///var/run/docker.sock}
build_hint="../shared/tools/docker-images.sh --default-tags builds local stand-ins"

# HTTP status of GET $1 on the engine ("000" when it does not answer).
status() {
  case $host in
    unix://*) curl -s -o /dev/null -w '%{http_code}' --max-time 5 --unix-socket "${host#unix://}" "http://docker$1" ;;
    tcp://*) curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://${host#tcp://}$1" ;;
    *) echo 000 ;;
  esac
}

if command -v curl >/dev/null 2>&1; then
  [ "$(status /_ping)" = 200 ] || { echo "no Docker engine answers at $host"; exit 1; }
  for image in "$redis" "$pg"; do
    [ "$(status "/images/$image/json")" = 200 ] || { echo "image $image is not on the engine; $build_hint"; exit 1; }
  done
elif command -v docker >/dev/null 2>&1; then
  docker version --format '{{.Server.Version}}' >/dev/null 2>&1 || { echo "no Docker engine answers at $host"; exit 1; }
  for image in "$redis" "$pg"; do
    docker image inspect "$image" >/dev/null 2>&1 || { echo "image $image is not on the engine; $build_hint"; exit 1; }
  done
else
  echo "neither curl nor the docker CLI is installed to ask the engine"
  exit 1
fi
