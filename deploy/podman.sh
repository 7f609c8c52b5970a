#!/usr/bin/env bash
# podman as Tessera's scripts run it: `deploy/podman.sh <podman arguments>`.
#
# Sourced (`. deploy/podman.sh`), it defines the function `pm` and exports CONTAINERS_CONF instead.
# The containers.conf written here suits a root podman without systemd (as in CI): no default
# ulimits, cgroupfs, events in a file, and the runc runtime. A host whose podman already works
# may point PODMAN_CONF at its own file (or at /dev/null to keep podman's defaults).
set -euo pipefail

# In the user's own cache, not a shared /tmp directory another user could have made first.
tessera_podman_dir="${TESSERA_PODMAN_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tessera-podman}"
mkdir -p -m 0700 "$tessera_podman_dir"
if [ -z "${PODMAN_CONF:-}" ]; then
  PODMAN_CONF="$tessera_podman_dir/containers.conf"
  cat >"$PODMAN_CONF.tmp.$$" <<'CONF'
[containers]
default_ulimits = []

[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"
runtime = "runc"
CONF
  mv -f "$PODMAN_CONF.tmp.$$" "$PODMAN_CONF"
fi
export CONTAINERS_CONF="$PODMAN_CONF"

pm() {
  podman --runtime "${PODMAN_RUNTIME:-runc}" "$@"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  pm "$@"
fi
