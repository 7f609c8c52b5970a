import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process'
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { browserAvailable, launchBrowser } from '../browser/browser.js'
import {
  bodyText,
  button,
  click,
  field,
  navigation,
  virtualAuthenticator,
} from '../browser/dashboard.js'
import { childEnv } from '../environment.js'
import { snippets } from '../snippets.js'

/**
 * A newcomer's first hour, as the README tells it: `npm start` in a clean copy of the checkout,
 * then, in a second terminal that opens in the home folder, the commands the banner prints, the
 * README's Node program in a folder of the reader's own, and the dashboard at the printed
 * address with a passkey. Two liberties, said here: `npm install` is the checkout's own
 * node_modules linked in (the same lock file, installed once for the whole suite), and the port
 * is a free one (PORT) rather than 8443, which another run may hold.
 */

const root = path.resolve(import.meta.dirname, '../..')
const exec = promisify(execFile)
const available = browserAvailable()

/** What a clone does not hold: .gitignore's folders (the build, data, installed packages). */
const notInAClone = new Set(['.git', 'node_modules', 'dist', 'data', 'coverage', 'test-output'])

/**
 * The files of a clone: git's (tracked, and new ones not ignored) in a checkout; in a copy
 * without .git (CI's run on other Node majors), every file but the ignored folders.
 */
function cloneFiles(): string[] {
  if (existsSync(path.join(root, '.git'))) {
    const listed = execFileSync(
      'git',
      ['ls-files', '-z', '--cached', '--others', '--exclude-standard'],
      {
        cwd: root,
        encoding: 'utf8',
      },
    )
    return listed.split('\0').filter((f) => f !== '' && existsSync(path.join(root, f)))
  }
  const files: string[] = []
  const walk = (dir: string) => {
    for (const entry of readdirSync(path.join(root, dir), { withFileTypes: true })) {
      const file = path.join(dir, entry.name)
      if (entry.isDirectory()) {
        if (!notInAClone.has(entry.name) && file !== 'deploy/.fleet') walk(file)
      } else if (entry.isFile()) files.push(file)
    }
  }
  walk('')
  return files
}

/** A copy of what a clone holds: no build, no data, node_modules linked (see above). */
function cleanCopy(): string {
  const clone = path.join(mkdtempSync(path.join(tmpdir(), 'tessera-newcomer-')), 'tessera')
  for (const file of cloneFiles()) {
    mkdirSync(path.dirname(path.join(clone, file)), { recursive: true })
    cpSync(path.join(root, file), path.join(clone, file))
  }
  symlinkSync(path.join(root, 'node_modules'), path.join(clone, 'node_modules'))
  return clone
}

/** A port nothing listens on now. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })
}

interface Started {
  child: ChildProcess
  banner: string
}

/** `npm start` in `dir`, until the banner is out whole (it ends with an empty line). */
function npmStart(dir: string, env: NodeJS.ProcessEnv): Promise<Started> {
  // A group of its own: npm, the build and the server are stopped together, as Ctrl-C does.
  const child = spawn('npm', ['start'], {
    cwd: dir,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  })
  let out = ''
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`npm start printed no banner:\n${out}`)),
      120_000,
    )
    const read = (d: Buffer) => {
      out += d
      const at = out.indexOf('Tessera is listening on')
      if (at !== -1 && /\n {2}curl [^\n]+\n\n/.test(out.slice(at))) {
        clearTimeout(timer)
        resolve({ child, banner: out.slice(at) })
      }
    }
    child.stdout.on('data', read)
    child.stderr.on('data', read)
    child.once('exit', (code) => reject(new Error(`npm start exited ${code}:\n${out}`)))
  })
}

/** A line as the second terminal runs it: bash, in `cwd`, with a person's environment. */
async function terminal(line: string, cwd: string, env: NodeJS.ProcessEnv) {
  const { stdout } = await exec('bash', ['-c', line], { cwd, env })
  return stdout
}

describe.skipIf(!available)("a newcomer's first hour, by the README", () => {
  let clone: string
  let home: string
  let port: number
  let started: Started | undefined
  // A person's shell: none of Tessera's variables, a home folder of their own.
  let shell: NodeJS.ProcessEnv

  beforeAll(async () => {
    clone = cleanCopy()
    home = mkdtempSync(path.join(tmpdir(), 'tessera-home-'))
    port = await freePort()
    shell = childEnv({ HOME: home })
    started = await npmStart(clone, { ...shell, PORT: String(port) })
  }, 180_000)

  afterAll(async () => {
    const child = started?.child
    if (child && child.exitCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve))
      process.kill(-(child.pid as number), 'SIGTERM')
      await exited
    }
  })

  it('reaches a token retrieved with the Mapbox SDK and a passkey at the printed address', async () => {
    const readme = readFileSync(path.join(root, 'README.md'), 'utf8')
    expect(readme).toContain('npm install && npm start')
    const banner = started?.banner ?? ''
    const lines = banner.split('\n')
    const origin =
      /^Dashboard: (https:\/\/localhost:\d+)\/account \(passkeys work at this address\)$/m.exec(
        banner,
      )?.[1]
    expect(origin).toBe(`https://localhost:${port}`)
    const certFile = /^TLS certificate: (\S+)$/m.exec(banner)?.[1] ?? ''
    expect(certFile).toBe(path.join(clone, 'data/tls/cert.pem'))

    // The banner's three commands, as printed, from the home folder.
    const first = lines.findIndex((l) => l.startsWith('Get a first token, in a second terminal'))
    const [accountLine, tokenLine, curlLine] = lines
      .slice(first + 1, first + 4)
      .map((l) => l.trim())
    const account = JSON.parse(await terminal(accountLine ?? '', home, shell))
    expect(account.username).toBe('alice')
    const secret = JSON.parse(await terminal(tokenLine ?? '', home, shell))
    expect(secret.token).toMatch(/^sk\./)
    const curl = (curlLine ?? '').replace('<token>', secret.token)
    const retrieved = JSON.parse(await terminal(curl, home, shell))
    expect(retrieved.code).toBe('TokenValid')

    // The README's Node program, in a folder of the reader's own with the SDK installed.
    const program = snippets('README.md').find((s) => s.mark === 'run')
    const client = mkdtempSync(path.join(home, 'client-'))
    mkdirSync(path.join(client, 'node_modules'))
    symlinkSync(path.join(root, 'node_modules/@mapbox'), path.join(client, 'node_modules/@mapbox'))
    writeFileSync(
      path.join(client, 'first-token.mjs'),
      (program?.code ?? '').replaceAll('https://localhost:8443', origin ?? ''),
    )
    const printed = await terminal('node first-token.mjs', client, {
      ...shell,
      NODE_EXTRA_CA_CERTS: certFile,
      TESSERA_TOKEN: secret.token,
    })
    const [validity, created] = printed.trim().split('\n')
    expect(validity).toBe('TokenValid sk alice')
    expect(created).toMatch(/^pk\.[\w-]+\.[\w-]+$/)

    // The setup link the account was given (PUBLIC_URL's default, https://HOST:PORT), then the
    // dashboard at the address the banner prints for it, and a passkey there.
    expect(new URL(account.setupUrl).origin).toBe(`https://127.0.0.1:${port}`)
    const browser = await launchBrowser()
    try {
      const context = await browser.newContext({ ignoreHTTPSErrors: true })
      const page = await context.newPage()
      await page.goto(account.setupUrl)
      await field(page, 'New password').fill('correct horse battery')
      await field(page, 'Confirm password').fill('correct horse battery')
      await click(page, 'Set password')
      await page.goto(`${origin}/account/sign-in`)
      await field(page, 'Username').fill('alice')
      await field(page, 'Password').fill('correct horse battery')
      expect((await click(page, 'Sign in')).statuses).toEqual([303, 200])
      await virtualAuthenticator(page)
      await page.goto(`${origin}/account/settings`)
      await field(page, 'Passkey name').fill('Laptop')
      const added = await navigation(page, () => button(page, 'Add a passkey').click())
      expect(added.statuses).toEqual([303, 200])
      expect(await bodyText(page)).toContain('Passkey added')
    } finally {
      await browser.close()
    }
  }, 120_000)
})
