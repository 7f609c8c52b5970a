#!/usr/bin/env bash
# Builds the local stand-ins for the public images compose.yaml names, on the Debian base
# deploy/base.sh makes (made first when missing). Each is built only when missing; FORCE=1
# builds them again. Prints the variables that select them in compose.yaml:
#
#   POSTGRES_IMAGE=localhost/tessera-standin/postgres:15   for docker.io/library/postgres:17
#   REDIS_IMAGE=localhost/tessera-standin/redis:7          for docker.io/library/redis:7
#   CADDY_IMAGE=localhost/tessera-standin/caddy:2          for docker.io/library/caddy:2
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/podman.sh"

"$here/base.sh" services >&2
for name in postgres:15 redis:7 caddy:2; do
  tag="localhost/tessera-standin/$name"
  if [ "${FORCE:-}" = 1 ] || ! pm image exists "$tag"; then
    pm build --format docker --quiet -f "$here/standins/${name%%:*}.Containerfile" -t "$tag" \
      "$here/standins" >/dev/null
    echo "made $tag" >&2
  fi
done
echo "POSTGRES_IMAGE=localhost/tessera-standin/postgres:15"
echo "REDIS_IMAGE=localhost/tessera-standin/redis:7"
echo "CADDY_IMAGE=localhost/tessera-standin/caddy:2"
