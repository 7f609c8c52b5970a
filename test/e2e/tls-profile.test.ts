import { execFile } from 'node:child_process'
import { mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { type ConnectionOptions, connect, getCiphers } from 'node:tls'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { childEnv } from '../environment.js'
import { type ServerProcess, startServer } from './server.js'

/**
 * The TLS the server offers, over a real socket: Mozilla's intermediate profile by default
 * (TLS 1.2 with ECDHE and AEAD suites only, and TLS 1.3), TLS_MIN_VERSION and TLS_CIPHERS to
 * change it, and one line on stderr for a value that cannot be used.
 */

const root = path.resolve(import.meta.dirname, '../..')
const exec = promisify(execFile)

type Handshake = { protocol: string | null; cipher: string } | { refused: string }

/** A TLS handshake with the server at `url`, the client offering only what `options` allow. */
function handshake(url: string, ca: Buffer, options: ConnectionOptions): Promise<Handshake> {
  const { hostname, port } = new URL(url)
  return new Promise((resolve) => {
    let socket: ReturnType<typeof connect>
    try {
      socket = connect({
        host: hostname,
        port: Number(port),
        ca,
        ...options,
      })
    } catch (err) {
      resolve({ refused: `client: ${(err as Error).message}` })
      return
    }
    socket.once('secureConnect', () => {
      resolve({ protocol: socket.getProtocol(), cipher: socket.getCipher().name })
      socket.end()
    })
    // OpenSSL 3.0 (Node 20) names a handshake_failure alert SSLV3, later ones (Node 22, 24)
    // SSL/TLS: the same alert, written as Node 20 writes it.
    socket.once('error', (err: Error & { code?: string }) =>
      resolve({
        refused: (err.code ?? err.message).replace(
          'ERR_SSL_SSL/TLS_ALERT_',
          'ERR_SSL_SSLV3_ALERT_',
        ),
      }),
    )
  })
}

/** The TLS 1.2 suites (OpenSSL names) of this Node's OpenSSL that the server accepts. */
async function acceptedTls12Suites(url: string, ca: Buffer): Promise<string[]> {
  const suites = getCiphers()
    .filter((name) => !name.startsWith('tls_') && !/psk|srp/.test(name))
    .map((name) => name.toUpperCase())
  const accepted: string[] = []
  for (const suite of suites) {
    const answer = await handshake(url, ca, {
      minVersion: 'TLSv1.2',
      maxVersion: 'TLSv1.2',
      ciphers: `${suite}:@SECLEVEL=0`,
    })
    if ('cipher' in answer) accepted.push(answer.cipher)
  }
  return accepted.sort()
}

const tls12 = (suite: string): ConnectionOptions => ({
  minVersion: 'TLSv1.2',
  maxVersion: 'TLSv1.2',
  ciphers: suite,
})

describe('the default TLS profile (Mozilla intermediate)', () => {
  let server: ServerProcess
  let ca: Buffer
  beforeAll(async () => {
    server = await startServer()
    ca = readFileSync(server.certFile)
  })
  afterAll(() => server?.stop())

  it('accepts on TLS 1.2 only the ECDHE AEAD suites of its ECDSA certificate', async () => {
    expect(await acceptedTls12Suites(server.url, ca)).toEqual([
      'ECDHE-ECDSA-AES128-GCM-SHA256',
      'ECDHE-ECDSA-AES256-GCM-SHA384',
      'ECDHE-ECDSA-CHACHA20-POLY1305',
    ])
  })

  it('refuses a TLS 1.2 client offering only CBC suites', async () => {
    for (const suite of ['ECDHE-ECDSA-AES128-SHA', 'ECDHE-ECDSA-AES128-SHA256']) {
      expect(await handshake(server.url, ca, tls12(suite))).toEqual({
        refused: 'ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE',
      })
    }
  })

  it('gives a TLS 1.2 client offering ECDHE-ECDSA-AES128-GCM-SHA256 that suite', async () => {
    expect(await handshake(server.url, ca, tls12('ECDHE-ECDSA-AES128-GCM-SHA256'))).toEqual({
      protocol: 'TLSv1.2',
      cipher: 'ECDHE-ECDSA-AES128-GCM-SHA256',
    })
  })

  it('speaks TLS 1.3 to a client that offers it', async () => {
    expect(await handshake(server.url, ca, {})).toEqual({
      protocol: 'TLSv1.3',
      cipher: 'TLS_AES_256_GCM_SHA384',
    })
    // Node's client takes TLS 1.3 suites in `ciphers` too.
    expect(
      await handshake(server.url, ca, {
        minVersion: 'TLSv1.3',
        ciphers: 'TLS_CHACHA20_POLY1305_SHA256',
      }),
    ).toEqual({ protocol: 'TLSv1.3', cipher: 'TLS_CHACHA20_POLY1305_SHA256' })
  })

  it('refuses TLS 1.1 and 1.0', async () => {
    for (const version of ['TLSv1', 'TLSv1.1'] as const) {
      expect(
        await handshake(server.url, ca, {
          minVersion: version,
          maxVersion: version,
          ciphers: 'DEFAULT:@SECLEVEL=0',
        }),
      ).toEqual({ refused: 'ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION' })
    }
  })
})

describe('TLS_MIN_VERSION=TLSv1.3', () => {
  let server: ServerProcess
  let ca: Buffer
  beforeAll(async () => {
    server = await startServer({ TLS_MIN_VERSION: 'TLSv1.3' })
    ca = readFileSync(server.certFile)
  })
  afterAll(() => server?.stop())

  it('refuses TLS 1.2, even with an AEAD suite, and speaks TLS 1.3', async () => {
    expect(await handshake(server.url, ca, tls12('ECDHE-ECDSA-AES128-GCM-SHA256'))).toEqual({
      refused: 'ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION',
    })
    expect(await handshake(server.url, ca, {})).toMatchObject({ protocol: 'TLSv1.3' })
  })
})

describe('TLS_CIPHERS', () => {
  let server: ServerProcess
  let ca: Buffer
  beforeAll(async () => {
    // An operator who needs one CBC suite back for an old client, and CHACHA20 beside it.
    server = await startServer({
      TLS_CIPHERS: 'ECDHE-ECDSA-AES128-SHA:ECDHE-ECDSA-CHACHA20-POLY1305',
    })
    ca = readFileSync(server.certFile)
  })
  afterAll(() => server?.stop())

  it('replaces the TLS 1.2 suites, and leaves TLS 1.3 as it is', async () => {
    expect(await acceptedTls12Suites(server.url, ca)).toEqual([
      'ECDHE-ECDSA-AES128-SHA',
      'ECDHE-ECDSA-CHACHA20-POLY1305',
    ])
    expect(await handshake(server.url, ca, {})).toEqual({
      protocol: 'TLSv1.3',
      cipher: 'TLS_AES_256_GCM_SHA384',
    })
  })
})

describe('an RSA certificate (TLS_CERT, TLS_KEY)', () => {
  let server: ServerProcess
  let ca: Buffer
  beforeAll(async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'tessera-tls-rsa-'))
    const [cert, key] = [path.join(dir, 'cert.pem'), path.join(dir, 'key.pem')]
    await exec('openssl', [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-days',
      '2',
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=IP:127.0.0.1,DNS:localhost',
      '-keyout',
      key,
      '-out',
      cert,
    ])
    server = await startServer({ TLS_CERT: cert, TLS_KEY: key })
    ca = readFileSync(cert)
  })
  afterAll(() => server?.stop())

  it('accepts on TLS 1.2 only the ECDHE-RSA AEAD suites', async () => {
    expect(await acceptedTls12Suites(server.url, ca)).toEqual([
      'ECDHE-RSA-AES128-GCM-SHA256',
      'ECDHE-RSA-AES256-GCM-SHA384',
      'ECDHE-RSA-CHACHA20-POLY1305',
    ])
    expect(await handshake(server.url, ca, tls12('ECDHE-RSA-AES128-SHA'))).toEqual({
      refused: 'ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE',
    })
    expect(await handshake(server.url, ca, tls12('ECDHE-RSA-AES128-GCM-SHA256'))).toEqual({
      protocol: 'TLSv1.2',
      cipher: 'ECDHE-RSA-AES128-GCM-SHA256',
    })
  })
})

/** Starts the server's entry point with `env`; it must stop with one line on stderr. */
async function refusedStart(env: Record<string, string>) {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'tessera-tls-config-'))
  return exec(process.execPath, [path.join(root, 'dist/src/server.js')], {
    env: childEnv({ DATA_DIR: dataDir, PORT: '0', ...env }),
    cwd: dataDir,
    timeout: 30_000,
  }).then(
    () => ({ code: 0, stderr: '' }),
    (err: { code: number; stderr: string }) => ({ code: err.code, stderr: err.stderr }),
  )
}

describe('a TLS setting that cannot be used stops start-up with one line', () => {
  const cases: [string, Record<string, string>, string][] = [
    [
      'TLS_MIN_VERSION not a version it offers',
      { TLS_MIN_VERSION: 'TLSv1.1' },
      'TLS_MIN_VERSION must be TLSv1.2 or TLSv1.3, got "TLSv1.1"',
    ],
    [
      'TLS_CIPHERS naming no suite',
      { TLS_CIPHERS: 'ECDHE-ECDSA-AES128-GCM-SHA256:AES-GCM-FAST' },
      'TLS_CIPHERS: not a TLS 1.2 cipher suite (OpenSSL name, e.g. ECDHE-ECDSA-AES128-GCM-SHA256): "AES-GCM-FAST"',
    ],
    [
      'TLS_CIPHERS naming a TLS 1.3 suite',
      { TLS_CIPHERS: 'TLS_AES_128_GCM_SHA256' },
      'TLS_CIPHERS: not a TLS 1.2 cipher suite (OpenSSL name, e.g. ECDHE-ECDSA-AES128-GCM-SHA256): "TLS_AES_128_GCM_SHA256"',
    ],
    [
      'TLS_CIPHERS with TLS_MIN_VERSION=TLSv1.3',
      { TLS_CIPHERS: 'ECDHE-ECDSA-AES128-GCM-SHA256', TLS_MIN_VERSION: 'TLSv1.3' },
      'TLS_CIPHERS names TLS 1.2 suites, and TLS_MIN_VERSION=TLSv1.3 turns 1.2 off',
    ],
    [
      'TLS_CIPHERS with no suite for the certificate',
      { TLS_CIPHERS: 'ECDHE-RSA-AES128-GCM-SHA256' },
      "TLS_CIPHERS has no suite for the certificate's EC key: TLS 1.2 clients could not connect",
    ],
  ]
  it.each(cases)('%s', async (_what, env, line) => {
    expect(await refusedStart(env)).toEqual({ code: 1, stderr: `tessera: ${line}\n` })
  })
})
