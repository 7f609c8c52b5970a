#!/usr/bin/env bash
# Builds Tessera's image from the Containerfile and tags it tessera:local (`npm run image`).
# Needs podman (docker users: `docker build -f Containerfile -t tessera:local .` is the same
# build on the public images).
#
# The bases: TESSERA_BASE=local builds on the ones deploy/base.sh makes from Debian's packages
# (made first when missing; needs mmdebstrap), for machines that reach no container registry.
# TESSERA_BASE=public builds on the Containerfile's defaults (docker.io's node and debian
# images). Unset, the local bases are used when they exist or mmdebstrap can make them, the
# public ones otherwise (said on the first line). IMAGE overrides the tag.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"

if ! command -v podman >/dev/null; then
  echo "image.sh: podman is missing (apt-get install -y podman runc); with docker instead:" >&2
  echo "  docker build -f Containerfile -t tessera:local ." >&2
  exit 1
fi
. "$here/podman.sh"

IMAGE="${IMAGE:-tessera:local}"
BUILD_BASE=localhost/tessera-base/node-build:24
RUNTIME_BASE=localhost/tessera-base/debian:bookworm
base="${TESSERA_BASE:-}"
if [ -z "$base" ]; then
  if command -v mmdebstrap >/dev/null || { pm image exists "$BUILD_BASE" && pm image exists "$RUNTIME_BASE"; }; then
    base=local
  else
    base=public
    echo "mmdebstrap is missing: building on the public images (docker.io's node:24-bookworm-slim and debian:bookworm-slim)."
    echo "  Where no registry is reachable, apt-get install -y mmdebstrap and run again for bases made from Debian's packages."
  fi
fi
args=()
case "$base" in
local)
  "$here/base.sh" node
  args+=(--build-arg "BUILD_IMAGE=$BUILD_BASE" --build-arg "RUNTIME_IMAGE=$RUNTIME_BASE")
  ;;
public) ;;
*)
  echo "image.sh: TESSERA_BASE is local or public, not '$base'" >&2
  exit 2
  ;;
esac

# A CA the build must trust to reach the npm registry (a TLS-inspecting proxy, as in CI), handed
# to the build as a secret: it is in no layer of the image.
# EXTRA_CA, else NODE_EXTRA_CA_CERTS, else npm's own cafile setting.
extra_ca="${EXTRA_CA:-${NODE_EXTRA_CA_CERTS:-}}"
if [ -z "$extra_ca" ] && command -v npm >/dev/null; then
  extra_ca="$(npm config get cafile 2>/dev/null || true)"
fi
if [ -n "$extra_ca" ] && [ -s "$extra_ca" ]; then
  echo "the build trusts $extra_ca as well (a build secret)"
  args+=(--secret "id=extra_ca,src=$extra_ca")
fi

started=$SECONDS
# --format docker keeps the HEALTHCHECK (the OCI format has no place for it).
pm build --format docker --layers "${args[@]}" -f "$root/Containerfile" -t "$IMAGE" "$root"
size="$(pm image inspect --format '{{.Size}}' "$IMAGE")"
echo "built $IMAGE in $((SECONDS - started)) s: $(awk -v s="$size" 'BEGIN{printf "%.0f MB", s/1e6}') uncompressed"
