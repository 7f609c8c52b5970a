import { execFile } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import https from 'node:https'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { childEnv } from '../environment.js'
import { cli, dataDir, json } from './cli-run.js'
import { type ServerProcess, startServer } from './server.js'

/**
 * Issue 45, items 1, 2, 4, 5 and 15: a newcomer's first commands. The banner's commands work
 * from another folder (no `npx tessera`, which there is the registry's unrelated package), its
 * first sk makes a pk with the Mapbox SDK, the dashboard is printed at https://localhost, `token create`
 * needs a note and a scope, and a command loads only what it runs.
 */

const require = createRequire(import.meta.url)
const mbxTokens = require('@mapbox/mapbox-sdk/services/tokens')
const exec = promisify(execFile)
const root = path.resolve(import.meta.dirname, '../..')
const scratch = mkdtempSync(path.join(tmpdir(), 'tessera-first-hour-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

const publicScopes = ['styles:tiles', 'styles:read', 'fonts:read', 'datasets:read', 'vision:read']

describe('the commands the banner prints', () => {
  let server: ServerProcess
  /** A second terminal: a folder of its own, with none of the server's settings. */
  const elsewhere = mkdtempSync(path.join(scratch, 'home-'))
  const shell = async (line: string) =>
    (await exec('sh', ['-c', line], { cwd: elsewhere, env: childEnv({ HOME: elsewhere }) })).stdout

  beforeAll(async () => {
    server = await startServer()
  })
  afterAll(async () => {
    await server?.stop()
  })

  it('run from another folder on the server’s data; the first sk makes a pk with the SDK', async () => {
    const out = server.output()
    const port = new URL(server.url).port
    const origin = `https://localhost:${port}`
    const dataDir = server.env.DATA_DIR as string
    const tessera = `DATA_DIR=${dataDir} PORT=${port} node ${root}/bin/tessera.js`
    const printed = out.slice(out.indexOf('\nTessera is listening')).split('\n').slice(1)
    expect(printed.slice(0, 11)).toEqual([
      `Tessera is listening on ${server.url} (Link origin ${server.url})`,
      `TLS certificate: ${dataDir}/tls/cert.pem`,
      `  self-signed; let clients trust it with NODE_EXTRA_CA_CERTS=${dataDir}/tls/cert.pem`,
      `Data: ${dataDir}/tessera.db`,
      `Dashboard: ${origin}/account (passkeys work at this address)`,
      '',
      'Get a first token, in a second terminal (any folder):',
      `  ${tessera} account create alice`,
      `  ${tessera} token create alice --note "First secret token" --scopes tokens:read,tokens:write,scopes:list,${publicScopes.join(',')}`,
      `  curl --cacert ${dataDir}/tls/cert.pem "${server.url}/tokens/v2?access_token=<token>"`,
      '',
    ])
    const [account, token, curl] = printed.slice(7, 10).map((line) => line.trim())

    const made = JSON.parse(await shell(account as string))
    expect(made.username).toBe('alice')
    expect(made.setupUrl).toMatch(new RegExp(`^${server.url}/account/setup/[A-Za-z0-9_-]{43}$`))
    const sk = JSON.parse(await shell(token as string))
    expect(sk).toMatchObject({
      usage: 'sk',
      note: 'First secret token',
      scopes: ['tokens:read', 'tokens:write', 'scopes:list', ...publicScopes],
    })
    const retrieved = JSON.parse(await shell((curl as string).replace('<token>', sk.token)))
    expect(retrieved).toEqual({
      code: 'TokenValid',
      token: { usage: 'sk', user: 'alice', authorization: sk.id },
    })

    // The SDK at the printed address (got, through Node's global agent).
    https.globalAgent.options.ca = readFileSync(`${dataDir}/tls/cert.pem`)
    const tokens = mbxTokens({ accessToken: sk.token, origin })
    const pk = await tokens.createToken({ note: 'map', scopes: made.defaultToken.scopes }).send()
    expect(pk.statusCode).toBe(200)
    expect(pk.body).toMatchObject({ usage: 'pk', note: 'map', scopes: publicScopes })
    const styles = await tokens.createToken({ note: 'styles', scopes: ['styles:read'] }).send()
    expect(styles.body).toMatchObject({ usage: 'pk', scopes: ['styles:read'] })
    const all = await tokens.listTokens().send()
    expect(all.body.map((t: { note: string }) => t.note)).toEqual([
      'Default public token',
      'First secret token',
      'map',
      'styles',
    ])
  })
})

describe('tessera token create', () => {
  const dir = dataDir('first-hour-token')
  afterAll(() => rmSync(dir, { recursive: true, force: true }))
  beforeAll(async () => {
    await json(dir, 'account', 'create', 'alice')
  })

  const note = 'note N (what the token is for)'
  const scopes = 'scopes a,b (at least one scope)'
  it.each([
    [['alice'], `--${note} and --${scopes}`],
    [['alice', '--scopes', 'styles:read'], `--${note}`],
    [['alice', '--note', '   ', '--scopes', 'styles:read'], `--${note}`],
    [['alice', '--note', 'maps'], `--${scopes}`],
    [['alice', '--note', 'maps', '--scopes', ' , '], `--${scopes}`],
    [['nobody'], `--${note} and --${scopes}`],
  ])('%j: one line, exit 2', async (args, needs) => {
    expect(await cli(dir, 'token', 'create', ...args)).toEqual({
      code: 2,
      stdout: '',
      stderr: `tessera: token create needs ${needs}\n`,
    })
  })

  it('makes a token with its note and scopes, which token list shows', async () => {
    const made = await json(
      dir,
      'token',
      'create',
      'alice',
      '--note',
      'maps',
      '--scopes',
      'styles:read',
    )
    expect(made).toMatchObject({ usage: 'pk', note: 'maps', scopes: ['styles:read'] })
    const listed = await json(dir, 'token', 'list', 'alice')
    expect(listed.map((t: { note: string }) => t.note)).toEqual(['Default public token', 'maps'])
    expect(listed[1]).toEqual({ ...made, client: 'api', default: false })
    expect(await cli(dir, 'token', 'list', 'nobody')).toEqual({
      code: 1,
      stdout: '',
      stderr: 'tessera: no such account: nobody\n',
    })
  })

  it('prints setup links and invitations at PUBLIC_URL, by default https://HOST:PORT', async () => {
    const invited = await json(dir, 'account', 'invite', 'alice')
    expect(invited.setupUrl).toMatch(/^https:\/\/127\.0\.0\.1:8443\/account\/setup\/[\w-]{43}$/)
    const member = await json(dir, 'member', 'add', 'alice', 'dana@example.com')
    expect(member.invitationUrl).toMatch(/^https:\/\/127\.0\.0\.1:8443\/account\/invitations\/\S+$/)
  })
})

describe('what a command loads', () => {
  const dir = dataDir('first-hour-loads')
  const log = path.join(scratch, 'loaded.txt')
  const hooks = path.join(scratch, 'hooks.mjs')
  const register = path.join(scratch, 'register.mjs')
  writeFileSync(
    hooks,
    `import { appendFileSync } from 'node:fs'
export async function resolve(specifier, context, next) {
  const answer = await next(specifier, context)
  appendFileSync(${JSON.stringify(log)}, answer.url + '\\n')
  return answer
}
`,
  )
  writeFileSync(
    register,
    `import { register } from 'node:module'\nregister(${JSON.stringify(pathToFileURL(hooks).href)})\n`,
  )
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  /** The modules of the build and the packages one `tessera` command loaded. */
  const loads = async (env: Record<string, string>, ...args: string[]) => {
    writeFileSync(log, '')
    const argv = ['--import', register, path.join(root, 'bin/tessera.js'), ...args]
    const options = { env: childEnv({ DATA_DIR: dir, ...env }), cwd: dir }
    // A command refused (exit status 2) answers on stderr: the error carries it.
    const { code = 0, stderr } = await exec(process.execPath, argv, options).catch((err) => err)
    const urls = readFileSync(log, 'utf8')
      .split('\n')
      .filter((u) => u.startsWith('file:'))
    const dist = pathToFileURL(path.join(root, 'dist/src')).href
    const modules = urls.filter((u) => u.startsWith(dist)).map((u) => u.slice(dist.length + 1))
    const packages = urls.map((u) => /\/node_modules\/((@[^/]+\/)?[^/]+)\//.exec(u)?.[1])
    const used = new Set(packages.filter((p) => p !== undefined))
    return { code, stderr: stderr as string, modules: new Set(modules), packages: used }
  }

  it('--help, and a command line missing its arguments: the command line alone', async () => {
    const cliOnly = ['cli/args.js', 'cli/main.js', 'cli/words.js']
    const help = await loads({}, '--help')
    expect([help.code, [...help.modules].sort(), [...help.packages]]).toEqual([0, cliOnly, []])
    const missing = await loads({}, 'token', 'list')
    expect([missing.code, missing.stderr]).toEqual([
      2,
      'tessera: usage: tessera token list <username>\n',
    ])
    expect([[...missing.modules].sort(), [...missing.packages]]).toEqual([cliOnly, []])
  })

  it('no database for keys rotate with SIGNING_KEYS, nor admin-key create with ADMIN_KEYS', async () => {
    const secret = Buffer.alloc(32, 7).toString('base64')
    const keys = await loads({ SIGNING_KEYS: `k1:${secret}` }, 'keys', 'rotate')
    const admin = await loads(
      { ADMIN_KEYS: `ops:${'a'.repeat(32)}` },
      'admin-key',
      'create',
      '--scope',
      'admin',
    )
    for (const { code, modules, packages } of [keys, admin]) {
      expect([code, [...packages]]).toEqual([0, []])
      expect([...modules].filter((m) => /^(context|db\/|server|app)/.test(m))).toEqual([])
    }
  })

  it('token list: the services and the database, not the HTTP server', async () => {
    await json(dir, 'account', 'create', 'bob')
    const { code, modules, packages } = await loads({}, 'token', 'list', 'bob')
    expect(code).toBe(0)
    expect(modules).toContain('context.js')
    expect(packages).toContain('better-sqlite3')
    expect(packages).not.toContain('fastify')
    expect([...modules].filter((m) => /^(server|app|instance|http\/|dashboard\/)/.test(m))).toEqual(
      [],
    )
  })
})
