#!/usr/bin/env bash
# Builds Tessera's image from the Containerfile and tags it tessera:local (`npm run image`).
#
# By default the bases are the local ones deploy/base.sh makes from Debian's packages (made
# first when missing), for machines that reach no container registry. TESSERA_BASE=public
# builds against the Containerfile's defaults (docker.io's node and debian images) instead.
# IMAGE overrides the tag.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
. "$here/podman.sh"

IMAGE="${IMAGE:-tessera:local}"
args=()
if [ "${TESSERA_BASE:-local}" != public ]; then
  "$here/base.sh" node
  args+=(--build-arg "BUILD_IMAGE=localhost/tessera-base/node-build:24")
  args+=(--build-arg "RUNTIME_IMAGE=localhost/tessera-base/debian:bookworm")
fi

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
