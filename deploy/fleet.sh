#!/usr/bin/env bash
# The compose.yaml fleet on this machine, with podman-compose:
#
#   deploy/fleet.sh up            build what is missing, start, wait until both instances are ready
#   deploy/fleet.sh down [-v]     stop cleanly (SIGTERM, each instance's exit status printed),
#                                 remove the containers; -v removes the volumes too
#   deploy/fleet.sh ps | logs [service] | exec <service> <command...>
#
# Unless TESSERA_BASE=public, the images are the local ones (deploy/image.sh, deploy/standins.sh).
# The secrets (SIGNING_KEYS, ADMIN_KEYS, POSTGRES_PASSWORD) are generated once into
# deploy/.fleet/secrets.env (not in git) unless already set in the environment.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
. "$here/podman.sh"

project="${COMPOSE_PROJECT_NAME:-tessera}"
state="$here/.fleet"
# The secrets, and logs of the commands that carry them, are for their owner alone (podman itself
# keeps the caller's umask: volumes are not made private to root).
mkdir -p "$state" && chmod 0700 "$state"
compose() {
  podman-compose --no-ansi -p "$project" -f "$root/compose.yaml" "$@"
}
container() { echo "${project}_$1_1"; }
# podman without systemd cannot run health checks on a timer (compose's depends_on conditions
# are not waited on by podman-compose 1.0 either): its complaints about that are dropped.
quiet() { grep -v 'systemd connection' || true; }

load_secrets() {
  mkdir -p "$state"
  local file="$state/secrets.env"
  if [ ! -s "$file" ]; then
    # A database made with other secrets cannot be opened with new ones; never delete it here.
    if pm volume exists "${project}_postgres-data"; then
      echo "fleet.sh: $file is missing but the volume ${project}_postgres-data exists (made with" \
        "other secrets): restore the file, set the secrets in the environment, or start over" \
        "with 'deploy/fleet.sh down -v'" >&2
      exit 1
    fi
    (
      umask 077
      {
        echo "SIGNING_KEYS=k1:$(node -p "require('crypto').randomBytes(32).toString('base64')")"
        echo "ADMIN_KEYS=fleet:$(node -p "require('crypto').randomBytes(24).toString('hex')")"
        echo "POSTGRES_PASSWORD=$(node -p "require('crypto').randomBytes(16).toString('hex')")"
      } >"$file.tmp"
    )
    mv "$file.tmp" "$file"
  fi
  local name value
  while IFS='=' read -r name value; do
    if [ -n "$name" ] && [ -z "${!name:-}" ]; then export "$name=$value"; fi
  done <"$file"
}

# podman-compose prints every `podman run`, with its `-e NAME=value`: never the values.
redact() { sed -E 's/(-e [A-Za-z_][A-Za-z0-9_]*=)[^ ]*/\1…/g'; }

# Both instances ready through the proxy's per-instance routes.
wait_ready() {
  local deadline=$((SECONDS + ${FLEET_READY_TIMEOUT:-180}))
  local ports=("${TESSERA_1_PORT:-8444}" "${TESSERA_2_PORT:-8445}" "${TESSERA_PORT:-8443}")
  for port in "${ports[@]}"; do
    # Caddy answers an empty 200 for a name it does not serve: ask by name, check the answer.
    until node -e "
      const name = process.env.TESSERA_HOST || 'localhost'
      const req = require('https').get({ host: '127.0.0.1', port: $port, path: '/readyz',
        servername: name, headers: { host: name + ':$port' }, rejectUnauthorized: false,
        timeout: 2000 }, (res) => {
          let body = ''
          res.on('data', (d) => { body += d }).on('end', () => process.exit(body === '{\"status\":\"ready\"}' ? 0 : 1))
        })
      req.on('error', () => process.exit(1)); req.on('timeout', () => req.destroy())" 2>/dev/null; do
      if [ $SECONDS -ge $deadline ]; then
        echo "fleet.sh: port $port is not ready after ${FLEET_READY_TIMEOUT:-180} s" >&2
        compose ps >&2 || true
        for s in migrate tessera-1 tessera-2 proxy; do
          echo "--- $s" >&2
          pm logs --tail 20 "$(container "$s")" >&2 || true
        done
        return 1
      fi
      sleep 1
    done
  done
}

cmd="${1:-}"
[ $# -gt 0 ] && shift
case "$cmd" in
up)
  started=$SECONDS
  build=()
  if [ "${TESSERA_BASE:-local}" != public ]; then
    build=(--no-build) # built just before, with the local bases
    mkdir -p "$state"
    "$here/image.sh" >"$state/image.log" 2>&1 || {
      cat "$state/image.log" >&2
      exit 1
    }
    grep -E '^(made|built) ' "$state/image.log" || true
    "$here/standins.sh" >"$state/standins.env" 2> >(grep -E '^made ' >&2 || true)
    while IFS='=' read -r name value; do export "$name=$value"; done <"$state/standins.env"
    export TESSERA_IMAGE="${TESSERA_IMAGE:-localhost/tessera:local}"
  fi
  load_secrets
  compose up -d "${build[@]}" 2>&1 | redact >"$state/up.log" || {
    cat "$state/up.log" >&2
    exit 1
  }
  wait_ready
  echo "fleet up in $((SECONDS - started)) s: https://127.0.0.1:${TESSERA_PORT:-8443} (both)," \
    "https://127.0.0.1:${TESSERA_1_PORT:-8444} (tessera-1), https://127.0.0.1:${TESSERA_2_PORT:-8445} (tessera-2)"
  ;;
down)
  # The instances first, so that they drain while the database is still there. SIGTERM, and
  # SIGKILL only after 15 s (the instances exit within 10 s).
  for s in proxy tessera-1 tessera-2 migrate redis postgres; do
    c="$(container "$s")"
    if pm container exists "$c"; then
      pm stop -t 15 "$c" >/dev/null 2> >(quiet >&2)
      echo "$s: exited $(pm inspect --format '{{.State.ExitCode}}' "$c")"
      pm rm -v "$c" >/dev/null 2> >(quiet >&2) # -v: with its anonymous volumes
    fi
  done
  if [ "${1:-}" = -v ]; then
    pm volume rm -f "${project}_postgres-data" "${project}_caddy-data" >/dev/null 2>&1 || true
  fi
  if pm network exists "${project}_default"; then pm network rm "${project}_default" >/dev/null; fi
  ;;
ps) pm ps -a --filter "label=io.podman.compose.project=$project" ;;
logs) pm logs "$(container "${1:?service}")" ;;
exec)
  s="${1:?service}"
  shift
  pm exec "$(container "$s")" "$@"
  ;;
*)
  echo "usage: deploy/fleet.sh up | down [-v] | ps | logs <service> | exec <service> <command...>" >&2
  exit 2
  ;;
esac
