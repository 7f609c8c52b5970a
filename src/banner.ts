import { isIP } from 'node:net'
import path from 'node:path'
import { passkeyOrigin } from './config/http.js'
import { type Config, defaultScopesFile, packageRoot } from './config.js'
import { ScopeCatalog } from './scopes/catalog.js'

/** Where a started service answers, as its banner says it. */
export interface Listening {
  url: string
  /** The Link origin (PUBLIC_URL, or the default of src/config/http.ts with the listening port). */
  publicUrl: string
  certFile?: string
  metricsUrl?: string
}

/** A word as a POSIX shell reads it back: bare where it can be, else in single quotes. */
const shellWord = (word: string) =>
  /^[A-Za-z0-9_/.:,@%+=-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`

/**
 * The `tessera` command as a person types it in another terminal, in any folder: this
 * package's own bin by its absolute path (`npx tessera` outside a checkout runs the registry's
 * unrelated package of that name) with the settings that reach this server's data and print
 * its links. Secrets (DATABASE_URL, SIGNING_KEYS) are named, never printed: `secrets`.
 */
export function cliCommand(config: Config, at: Listening) {
  const env: [string, string][] = [['DATA_DIR', config.dataDir]]
  const { http, db } = config
  if (http.publicUrl !== undefined) {
    env.push(['PUBLIC_URL', http.publicUrl])
  } else {
    // The links the CLI prints (setup, invitations) are made of HOST and the listening port.
    const listening = new URL(at.url)
    const port = listening.port || (listening.protocol === 'https:' ? '443' : '80')
    if (http.host !== '127.0.0.1') env.push(['HOST', http.host])
    if (port !== '8443') env.push(['PORT', port])
  }
  if (config.scopesFile !== defaultScopesFile) {
    env.push(['SCOPES_FILE', path.resolve(config.scopesFile)])
  }
  if (db.kind === 'postgres' && db.schema !== undefined) env.push(['DATABASE_SCHEMA', db.schema])
  const bin = path.join(packageRoot, 'bin', 'tessera.js')
  const words = [
    ...env.map(([name, value]) => `${name}=${shellWord(value)}`),
    'node',
    shellWord(bin),
  ]
  const secrets = [
    ...(db.kind === 'postgres' ? ['DATABASE_URL'] : []),
    ...(config.signingKeys === undefined ? [] : ['SIGNING_KEYS']),
  ]
  return { command: words.join(' '), secrets }
}

/** Where the dashboard is opened, and whether passkeys can work there (not at an IP address). */
function dashboardLine(publicUrl: string) {
  const host = new URL(publicUrl).hostname.replace(/^\[|\]$/g, '')
  const passkeys =
    isIP(host) === 0
      ? 'passkeys work at this address'
      : 'no passkeys at an IP address: a PUBLIC_URL with a domain name allows them'
  return `Dashboard: ${publicUrl}/account (${passkeys})`
}

/**
 * The scopes of the first secret token the banner proposes: the token API's, and every public
 * scope of the default plan, so that it can create public tokens too (a token creates only
 * tokens whose scopes it holds itself).
 */
export function firstTokenScopes(catalog: ScopeCatalog): string[] {
  const available = catalog.availableTo(catalog.defaultPlan, [])
  const api = ['tokens:read', 'tokens:write', 'scopes:list']
  return [
    ...api.filter((id) => available.some((s) => s.id === id)),
    ...available.filter((s) => s.public && !api.includes(s.id)).map((s) => s.id),
  ]
}

/** How a client reaches the server: its certificate, or the proxy in front. */
function transport(config: Config, at: Listening, say: (line?: string) => void) {
  if (at.certFile) {
    say(`TLS certificate: ${at.certFile}`)
    if (!config.http.tls) {
      say(`  self-signed; let clients trust it with NODE_EXTRA_CA_CERTS=${at.certFile}`)
    }
    return
  }
  const { proxy } = config.http
  const client =
    proxy === 1
      ? 'the last X-Forwarded-For entry (one proxy)'
      : typeof proxy === 'number'
        ? `the X-Forwarded-For entry ${proxy} from the end (${proxy} proxies)`
        : `the last X-Forwarded-For entry not from ${proxy?.join(', ')}`
  say('TRUST_PROXY: plain HTTP behind a TLS-terminating proxy (X-Forwarded-Proto: https)')
  say(`  client address: ${client}`)
}

/** What `tessera serve` prints once it listens: where, with what, and how to get a first token. */
export function banner(config: Config, at: Listening, workers = 1): string {
  const lines: string[] = []
  const say = (line = '') => lines.push(line)
  say()
  say(`Tessera is listening on ${at.url} (Link origin ${at.publicUrl})`)
  transport(config, at, say)
  say(`Data: ${config.db.kind === 'sqlite' ? config.db.file : 'PostgreSQL (DATABASE_URL)'}`)
  if (workers > 1) say(`Workers: ${workers} processes sharing the port (WORKERS)`)
  if (at.metricsUrl) say(`Prometheus metrics: ${at.metricsUrl}`)
  say(dashboardLine(passkeyOrigin(config.http, at.publicUrl)))
  say()
  const { command, secrets } = cliCommand(config, at)
  const scopes = firstTokenScopes(ScopeCatalog.fromFile(config.scopesFile))
  say(
    secrets.length === 0
      ? 'Get a first token, in a second terminal (any folder):'
      : `Get a first token, in a second terminal (any folder), with ${secrets.join(' and ')} as this server has them:`,
  )
  say(`  ${command} account create alice`)
  say(`  ${command} token create alice --note "First secret token" --scopes ${scopes.join(',')}`)
  // Retrieve: the token checked, as every API behind Tessera has it checked.
  say(`  curl --cacert ${at.certFile ?? '<cert>'} "${at.url}/tokens/v2?access_token=<token>"`)
  say()
  // One write: a reader of this output (a test, a supervisor's log) sees it whole or not at all.
  return `${lines.join('\n')}\n`
}
