import { execFile } from 'node:child_process'
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

/**
 * A bad configuration stops start-up with one line on stderr, `tessera: <reason>`, and exit
 * status 1: for every variable, every unreadable file, a port in use, an address that cannot
 * be bound and a database that refuses; through the server's entry point (what `npm start`
 * runs), `tessera serve` and the CLI's commands alike.
 */

const root = path.resolve(import.meta.dirname, '../..')
const exec = promisify(execFile)
const scratch = mkdtempSync(path.join(tmpdir(), 'tessera-config-'))
const file = (name: string, text: string) => {
  const at = path.join(scratch, name)
  writeFileSync(at, text)
  return at
}
const postgres = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const otherDatabase = (name: string) => {
  const url = new URL(postgres)
  url.pathname = `/${name}`
  return url.toString()
}

const entries = {
  server: ['dist/src/server.js'],
  serve: ['bin/tessera.js', 'serve'],
  migrate: ['bin/tessera.js', 'migrate'],
} as const
type Entry = keyof typeof entries

async function run(entry: Entry, env: Record<string, string>) {
  const dataDir = mkdtempSync(path.join(scratch, 'data-'))
  try {
    await exec(
      process.execPath,
      entries[entry].map((p, i) => (i === 0 ? path.join(root, p) : p)),
      {
        env: { PATH: process.env.PATH, DATA_DIR: dataDir, PORT: '0', ...env },
        cwd: scratch,
        timeout: 30_000,
      },
    )
    return { code: 0, stderr: '' }
  } catch (err) {
    const e = err as { code: number; stderr: string; signal?: string }
    return { code: e.code, stderr: e.stderr, signal: e.signal }
  }
}

let busyPort = 0
const busy = createServer()
beforeAll(async () => {
  await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve))
  const address = busy.address()
  busyPort = typeof address === 'object' && address !== null ? address.port : 0
})
afterAll(() => new Promise((resolve) => busy.close(resolve)))

interface Case {
  what: string
  env: () => Record<string, string>
  line: RegExp
  /** Where it applies: listening and TLS are the server's alone. */
  entries?: Entry[]
}

const listening: Entry[] = ['server', 'serve']
const keysDir = () => {
  const dir = mkdtempSync(path.join(scratch, 'keys-'))
  writeFileSync(path.join(dir, 'signing-keys.json'), 'not json')
  chmodSync(path.join(dir, 'signing-keys.json'), 0o600)
  return dir
}
const adminKeysDir = () => {
  const dir = mkdtempSync(path.join(scratch, 'admin-keys-'))
  writeFileSync(path.join(dir, 'admin-keys.json'), '{"keys": [{"id": "x"}]}')
  chmodSync(path.join(dir, 'admin-keys.json'), 0o600)
  return dir
}
const sqliteDir = () => {
  const dir = mkdtempSync(path.join(scratch, 'db-'))
  mkdirSync(path.join(dir, 'tessera.db'))
  return dir
}

const cases: Case[] = [
  {
    what: 'PORT not a number',
    env: () => ({ PORT: 'x' }),
    line: /^PORT must be an integer between 0 and 65535, got "x"$/,
  },
  { what: 'PORT out of range', env: () => ({ PORT: '70000' }), line: /^PORT must be an integer/ },
  {
    what: 'PORT in use',
    env: () => ({ PORT: String(busyPort) }),
    line: /^PORT \d+ is already in use on 127\.0\.0\.1$/,
    entries: listening,
  },
  {
    what: 'HOST not on this machine',
    env: () => ({ HOST: '10.255.255.1' }),
    line: /^cannot listen on HOST 10\.255\.255\.1 PORT 0: listen EADDRNOTAVAIL/,
    entries: listening,
  },
  {
    what: 'HOST that does not resolve',
    env: () => ({ HOST: 'no-such-host.invalid' }),
    line: /^cannot listen on HOST no-such-host\.invalid PORT 0: getaddrinfo/,
    entries: listening,
  },
  {
    what: 'DATA_DIR a file',
    env: () => ({ DATA_DIR: file('plain-file', 'x') }),
    line: /^DATA_DIR cannot be used: .*plain-file: not a directory$/,
  },
  {
    what: 'TLS_CERT missing',
    env: () => ({ TLS_CERT: '/nonexistent/cert.pem', TLS_KEY: '/nonexistent/key.pem' }),
    line: /^TLS_CERT cannot be read: \/nonexistent\/cert\.pem: no such file or directory$/,
    entries: listening,
  },
  {
    what: 'TLS_KEY missing',
    env: () => ({ TLS_CERT: file('cert.pem', 'x'), TLS_KEY: '/nonexistent/key.pem' }),
    line: /^TLS_KEY cannot be read: \/nonexistent\/key\.pem: no such file or directory$/,
    entries: listening,
  },
  {
    what: 'TLS files not PEM',
    env: () => ({ TLS_CERT: file('bad.pem', 'garbage'), TLS_KEY: file('bad.key', 'garbage') }),
    line: /^TLS_CERT and TLS_KEY are not a PEM certificate and its key: /,
    entries: listening,
  },
  {
    what: 'TLS_CERT without TLS_KEY',
    env: () => ({ TLS_CERT: file('lonely.pem', 'x') }),
    line: /^TLS_CERT and TLS_KEY must be given together$/,
  },
  {
    what: 'TRUST_PROXY',
    env: () => ({ TRUST_PROXY: 'maybe' }),
    line: /^TRUST_PROXY must be a number of proxies \(0, 1, 2, \.\.\.\) or their addresses \(CIDR ranges, loopback, linklocal, uniquelocal\), got "maybe"$/,
  },
  {
    what: 'TRUST_PROXY with a bad range',
    env: () => ({ TRUST_PROXY: '10.0.0.0/8,proxy.internal' }),
    line: /^TRUST_PROXY: not an address, a CIDR range or a range name: "proxy\.internal"$/,
  },
  {
    what: 'PUBLIC_URL not a URL',
    env: () => ({ PUBLIC_URL: 'nope' }),
    line: /^PUBLIC_URL is not a URL: "nope"$/,
  },
  {
    what: 'PUBLIC_URL not https',
    env: () => ({ PUBLIC_URL: 'http://example.com' }),
    line: /^PUBLIC_URL must be an https:\/\/ URL$/,
  },
  {
    what: 'OIDC_ISSUER without its client',
    env: () => ({ OIDC_ISSUER: 'https://id.example' }),
    line: /^OIDC_ISSUER, OIDC_CLIENT_ID and OIDC_CLIENT_SECRET must be given together$/,
  },
  {
    what: 'OIDC_ISSUER not https',
    env: () => ({ OIDC_ISSUER: 'http://id.example', OIDC_CLIENT_ID: 'c', OIDC_CLIENT_SECRET: 's' }),
    line: /^OIDC_ISSUER must be an https:\/\/ URL$/,
  },
  {
    what: 'OIDC_ONLY without a provider',
    env: () => ({ OIDC_ONLY: '1' }),
    line: /^OIDC_ONLY=1 needs OIDC_ISSUER, OIDC_CLIENT_ID and OIDC_CLIENT_SECRET$/,
  },
  {
    what: 'PORTAL_RETURN_ORIGINS not https',
    env: () => ({ PORTAL_RETURN_ORIGINS: 'https://ok.example,http://app.example' }),
    line: /^PORTAL_RETURN_ORIGINS: not an https:\/\/ origin: "http:\/\/app\.example"$/,
  },
  {
    what: 'LEAKED_TOKENS',
    env: () => ({ LEAKED_TOKENS: 'ignore' }),
    line: /^LEAKED_TOKENS must be auto, revoke or flag, got "ignore"$/,
  },
  {
    what: 'LEAK_REPORT_KEYS missing',
    env: () => ({ LEAK_REPORT_KEYS: '/nonexistent/github-keys.json' }),
    line: /^LEAK_REPORT_KEYS cannot be used: /,
  },
  {
    what: 'SIGNING_KEYS',
    env: () => ({ SIGNING_KEYS: 'junk' }),
    line: /^SIGNING_KEYS must be a comma-separated list of id:base64secret$/,
  },
  {
    what: 'ADMIN_KEYS',
    env: () => ({ ADMIN_KEYS: 'junk' }),
    line: /^ADMIN_KEYS must be a comma-separated list of id:secret or id@scope:secret$/,
  },
  {
    what: 'ADMIN_KEYS with a short secret',
    env: () => ({ ADMIN_KEYS: 'ops:short' }),
    line: /^ADMIN_KEYS: key "ops" must have a secret of at least 32 characters$/,
  },
  {
    what: 'admin key file that is not one',
    env: () => ({ DATA_DIR: adminKeysDir() }),
    line: /^.*admin-keys\.json is not an admin key file$/,
  },
  {
    what: 'key file that does not parse',
    env: () => ({ DATA_DIR: keysDir() }),
    line: /^the signing key file in .* cannot be used: /,
  },
  {
    what: 'SCOPES_FILE missing',
    env: () => ({ SCOPES_FILE: '/nonexistent/scopes.yaml' }),
    line: /^SCOPES_FILE cannot be read: \/nonexistent\/scopes\.yaml: no such file or directory$/,
  },
  {
    what: 'SCOPES_FILE a directory',
    env: () => ({ SCOPES_FILE: scratch }),
    line: /^SCOPES_FILE cannot be read: .*: illegal operation on a directory, read$/,
  },
  {
    what: 'SCOPES_FILE not YAML',
    env: () => ({ SCOPES_FILE: file('bad.yaml', 'scopes: [\n  - id: x\n bad: : :\n') }),
    line: /^SCOPES_FILE .*bad\.yaml is not valid YAML or JSON: .*at line 2, column \d+:$/,
  },
  {
    what: 'SCOPES_FILE not JSON',
    env: () => ({ SCOPES_FILE: file('bad.json', '{') }),
    line: /^SCOPES_FILE .*bad\.json is not valid YAML or JSON: /,
  },
  {
    what: 'SCOPES_FILE without scopes',
    env: () => ({ SCOPES_FILE: file('empty.yaml', 'plans: {}\n') }),
    line: /empty\.yaml: scopes must be a list$/,
  },
  {
    what: 'DATABASE_URL not PostgreSQL',
    env: () => ({ DATABASE_URL: 'mysql://localhost/x' }),
    line: /^DATABASE_URL must start with postgres:\/\/ or postgresql:\/\/$/,
  },
  {
    what: 'DATABASE_URL naming no database',
    env: () => ({ DATABASE_URL: otherDatabase('tessera_no_such_database') }),
    line: /^DATABASE_URL: the database refused: database "tessera_no_such_database" does not exist$/,
  },
  {
    what: 'DATABASE_URL that cannot be reached (the CLI; the server waits for it)',
    env: () => ({ DATABASE_URL: 'postgres://postgres@127.0.0.1:1/test' }),
    line: /^DATABASE_URL: the database cannot be reached: /,
    entries: ['migrate'],
  },
  {
    what: 'DATABASE_POOL_SIZE',
    env: () => ({ DATABASE_URL: postgres, DATABASE_POOL_SIZE: '0' }),
    line: /^DATABASE_POOL_SIZE must be an integer between 1 and 1000, got "0"$/,
  },
  {
    what: 'DATABASE_SCHEMA',
    env: () => ({ DATABASE_URL: postgres, DATABASE_SCHEMA: 'Bad-Name' }),
    line: /^DATABASE_SCHEMA must be 1-63 characters of a-z, 0-9 and _$/,
  },
  {
    what: 'the SQLite database file a directory',
    env: () => ({ DATA_DIR: sqliteDir() }),
    line: /^the SQLite database cannot be used: /,
  },
  {
    what: 'REDIS_URL',
    env: () => ({ REDIS_URL: 'http://localhost' }),
    line: /^REDIS_URL must start with redis:\/\/ or rediss:\/\/$/,
  },
  {
    what: 'REDIS_KEY_PREFIX is free text; RATE_LIMIT_PER_MINUTE is not',
    env: () => ({ RATE_LIMIT_PER_MINUTE: '0' }),
    line: /^RATE_LIMIT_PER_MINUTE must be an integer between 1 and 1000000000, got "0"$/,
  },
  {
    what: 'LOG_LEVEL',
    env: () => ({ LOG_LEVEL: 'loud' }),
    line: /^LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent$/,
  },
  {
    what: 'DASHBOARD_SIGNUP',
    env: () => ({ DASHBOARD_SIGNUP: 'maybe' }),
    line: /^DASHBOARD_SIGNUP must be open or closed, got "maybe"$/,
  },
  {
    what: 'METRICS_PORT not a number',
    env: () => ({ METRICS_PORT: 'x' }),
    line: /^METRICS_PORT must be an integer between 0 and 65535, got "x"$/,
  },
  {
    what: 'METRICS_PORT in use',
    env: () => ({ METRICS_PORT: String(busyPort) }),
    line: /^METRICS_PORT \d+ is already in use on 127\.0\.0\.1$/,
    entries: listening,
  },
  {
    what: 'METRICS_HOST not on this machine',
    env: () => ({ METRICS_PORT: '0', METRICS_HOST: '10.255.255.1' }),
    line: /^cannot listen on METRICS_HOST 10\.255\.255\.1 METRICS_PORT 0: listen EADDRNOTAVAIL/,
    entries: listening,
  },
  {
    what: 'SHED_DELAY_MS',
    env: () => ({ SHED_DELAY_MS: '-1' }),
    line: /^SHED_DELAY_MS must be an integer between 0 and 60000, got "-1"$/,
  },
  {
    what: 'WORKERS',
    env: () => ({ WORKERS: '0' }),
    line: /^WORKERS must be auto or an integer between 1 and 256, got "0"$/,
    entries: listening,
  },
  {
    what: 'WORKER_TIMEOUT_SECONDS',
    env: () => ({ WORKERS: '2', WORKER_TIMEOUT_SECONDS: '9' }),
    line: /^WORKER_TIMEOUT_SECONDS must be an integer between 10 and 3600, got "9"$/,
    entries: ['server'],
  },
  {
    what: 'USAGE_FLUSH_SECONDS',
    env: () => ({ USAGE_FLUSH_SECONDS: '0' }),
    line: /^USAGE_FLUSH_SECONDS must be an integer between 1 and 60, got "0"$/,
    entries: ['server'],
  },
]

const runs = cases.flatMap((c) =>
  (c.entries ?? (Object.keys(entries) as Entry[])).map((entry) => ({ ...c, entry })),
)

describe('a bad configuration', () => {
  it.concurrent.each(runs)('$what: $entry says so in one line', async ({ env, entry, line }) => {
    const result = await run(entry, env())
    expect(result.signal ?? null, 'the process exits on its own').toBeNull()
    expect(result.code).toBe(1)
    const lines = result.stderr.split('\n').filter((l) => l !== '')
    expect(lines, result.stderr).toHaveLength(1)
    expect(lines[0]).toMatch(/^tessera: /)
    expect(lines[0]?.slice('tessera: '.length)).toMatch(line)
  })
})

describe('every CLI command', () => {
  const commands = [
    ['account', 'create', 'someone'],
    ['account', 'invite', 'someone'],
    ['token', 'create', 'someone', '--note', 'test', '--scopes', 'styles:read'],
    ['keys', 'rotate'],
    ['admin-key', 'create'],
    ['admin-key', 'list'],
    ['audit'],
    ['migrate'],
  ]
  it.concurrent.each(commands)('%s %s stops in one line on a bad value', async (...args) => {
    const dataDir = mkdtempSync(path.join(scratch, 'cli-'))
    const result = await exec(process.execPath, [path.join(root, 'bin/tessera.js'), ...args], {
      env: { PATH: process.env.PATH, DATA_DIR: dataDir, LOG_LEVEL: 'loud' },
    }).then(
      () => ({ code: 0, stderr: '' }),
      (err: { code: number; stderr: string }) => err,
    )
    expect(result.code).toBe(1)
    expect(result.stderr).toBe(
      'tessera: LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent\n',
    )
  })
})
