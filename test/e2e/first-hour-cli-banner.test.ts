import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { banner } from '../../src/banner.js'
import { passkeyOrigin } from '../../src/config/http.js'
import { configuredOrigin, type Env, toConfig } from '../../src/config.js'

/**
 * Issue 45, items 1, 2 and 4: what the banner of `tessera serve` prints with other settings,
 * and the default origin of links. The real server's banner, run as printed: first-hour-cli.
 */

const root = path.resolve(import.meta.dirname, '../..')
const scratch = mkdtempSync(path.join(tmpdir(), 'tessera banner '))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

const bin = `${root}/bin/tessera.js`
const secret = Buffer.alloc(32, 7).toString('base64')

/** The banner's lines from the dashboard to the first token's command. */
const firstLines = (env: Env, url = 'https://127.0.0.1:8443', publicUrl = url) => {
  const config = toConfig(env)
  const text = banner(config, { url, publicUrl, certFile: `${config.dataDir}/tls/cert.pem` })
  const lines = text.split('\n')
  const from = lines.findIndex((line) => line.startsWith('Dashboard: '))
  return lines.slice(from, from + 5)
}

describe('the banner of tessera serve', () => {
  it('quotes a data directory with a space, and names the secrets it does not print', () => {
    const dataDir = path.join(scratch, 'data')
    const env = {
      DATA_DIR: dataDir,
      DATABASE_URL: 'postgres://tessera:hunter2@db.example/tessera',
      DATABASE_SCHEMA: 'tenant_a',
      SIGNING_KEYS: `k1:${secret}`,
    }
    const lines = firstLines(env, 'https://127.0.0.1:8443', 'https://127.0.0.1:8443')
    const command = `DATA_DIR='${dataDir}' DATABASE_SCHEMA=tenant_a node ${bin}`
    expect(lines).toEqual([
      'Dashboard: https://localhost:8443/account (passkeys work at this address)',
      '',
      'Get a first token, in a second terminal (any folder), with DATABASE_URL and SIGNING_KEYS as this server has them:',
      `  ${command} account create alice`,
      `  ${command} token create alice --note "First secret token" --scopes tokens:read,tokens:write,scopes:list,styles:tiles,styles:read,fonts:read,datasets:read,vision:read`,
    ])
    expect(lines.join('\n')).not.toContain('hunter2')
    expect(lines.join('\n')).not.toContain(secret)
  })

  it('carries PUBLIC_URL instead of HOST and PORT, and says an IP address allows no passkeys', () => {
    const env = { DATA_DIR: '/srv/tessera', HOST: '0.0.0.0', PORT: '9443' }
    const url = 'https://0.0.0.0:9443'
    expect(firstLines(env, url, url).slice(0, 4)).toEqual([
      'Dashboard: https://localhost:9443/account (passkeys work at this address)',
      '',
      'Get a first token, in a second terminal (any folder):',
      `  DATA_DIR=/srv/tessera HOST=0.0.0.0 PORT=9443 node ${bin} account create alice`,
    ])
    const ip = { ...env, PUBLIC_URL: 'https://192.0.2.7:9443' }
    expect(firstLines(ip, url, 'https://192.0.2.7:9443').slice(0, 4)).toEqual([
      'Dashboard: https://192.0.2.7:9443/account (no passkeys at an IP address: a PUBLIC_URL with a domain name allows them)',
      '',
      'Get a first token, in a second terminal (any folder):',
      `  DATA_DIR=/srv/tessera PUBLIC_URL=https://192.0.2.7:9443 node ${bin} account create alice`,
    ])
  })

  it('proposes the token API’s scopes and the public ones of a catalog of one’s own', () => {
    const file = path.join(scratch, 'scopes.yaml')
    writeFileSync(
      file,
      `scopes:
  - { id: maps:read, public: true, description: "Read maps" }
  - { id: maps:write, description: "Write maps" }
  - { id: tokens:write, description: "Create tokens" }
  - { id: tiles:read, public: true, description: "Read tiles" }
plans:
  basic: { scopes: [maps:read, maps:write, tokens:write] }
  more: { scopes: [maps:read, tiles:read, tokens:write] }
`,
    )
    const lines = firstLines({ DATA_DIR: '/srv/tessera', SCOPES_FILE: file })
    expect(lines[4]).toBe(
      `  DATA_DIR=/srv/tessera SCOPES_FILE='${file}' node ${bin} token create alice --note "First secret token" --scopes tokens:write,maps:read`,
    )
  })
})

describe('the origin of links without PUBLIC_URL (CONTRACT.md §1: https://HOST:PORT)', () => {
  it.each([
    [undefined, 'https://127.0.0.1:8443'],
    ['127.0.0.1', 'https://127.0.0.1:8443'],
    ['localhost', 'https://localhost:8443'],
    ['::1', 'https://[::1]:8443'],
    ['0.0.0.0', 'https://0.0.0.0:8443'],
    ['192.0.2.7', 'https://192.0.2.7:8443'],
    ['2001:db8::7', 'https://[2001:db8::7]:8443'],
    ['tokens.internal', 'https://tokens.internal:8443'],
  ])('HOST %s: %s', (host, origin) => {
    expect(configuredOrigin(toConfig(host === undefined ? {} : { HOST: host }).http)).toBe(origin)
  })

  it('is PUBLIC_URL where it is set', () => {
    const { http } = toConfig({ HOST: '0.0.0.0', PUBLIC_URL: 'https://192.0.2.7:8443/' })
    expect(configuredOrigin(http)).toBe('https://192.0.2.7:8443')
  })
})

describe('where passkeys work without PUBLIC_URL', () => {
  it.each([
    [undefined, 'https://localhost:8443'],
    ['127.0.0.1', 'https://localhost:8443'],
    ['127.0.1.1', 'https://localhost:8443'],
    ['localhost', 'https://localhost:8443'],
    ['::1', 'https://localhost:8443'],
    ['0.0.0.0', 'https://localhost:8443'],
    ['::', 'https://localhost:8443'],
    ['192.0.2.7', 'https://192.0.2.7:8443'],
    ['tokens.internal', 'https://tokens.internal:8443'],
  ])('HOST %s: %s', (host, origin) => {
    const { http } = toConfig(host === undefined ? {} : { HOST: host })
    expect(passkeyOrigin(http, configuredOrigin(http))).toBe(origin)
  })

  it('is PUBLIC_URL where it is set, and the links’ origin with a certificate of one’s own', () => {
    const set = toConfig({ PUBLIC_URL: 'https://tokens.example' }).http
    expect(passkeyOrigin(set, configuredOrigin(set))).toBe('https://tokens.example')
    const own = toConfig({
      TLS_CERT: '/etc/tessera/cert.pem',
      TLS_KEY: '/etc/tessera/key.pem',
    }).http
    expect(passkeyOrigin(own, configuredOrigin(own))).toBe('https://127.0.0.1:8443')
  })
})
