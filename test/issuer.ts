import {
  constants,
  createHmac,
  sign as cryptoSign,
  generateKeyPairSync,
  type KeyObject,
  randomBytes,
} from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { generateSelfSigned } from '../src/tls/self-signed.js'

export type KeyKind = 'rsa' | 'ec'

/** An answer given in place of the issuer's own: a status and body, or none at all. */
export type Interception = { status: number; body: string } | 'hang'

export interface TestIssuer {
  /** https://127.0.0.1:PORT (the issuer) */
  url: string
  /** PEM file of its certificate, for IssuerKeys({caFile}) */
  caFile: string
  /** Requests to the JWKS so far. */
  jwksFetches: number
  /** Requests to the discovery document so far. */
  discoveryFetches: number
  /** Set to answer a path (`/.well-known/openid-configuration`, `/jwks`) differently. */
  intercept: ((path: string) => Interception | undefined) | undefined
  /** The JWKS the issuer publishes now (a fresh copy: change it and serve it by `intercept`). */
  jwks(): { keys: Record<string, unknown>[] }
  /** The kid of the current key of a kind. */
  kid(kind?: KeyKind): string
  /** The current public key of a kind, as SPKI PEM (what a confusion attack uses as secret). */
  publicPem(kind?: KeyKind): string
  /**
   * Signs claims (iss defaults to url) with the current key of kind 'rsa' | 'ec' (RS256 /
   * ES256), header overrides allowed (kid, alg, typ) for attacks: an alg given is signed with
   * (ES384 over the P-256 key, PS256 over the RSA key). `retired`: a key not in the JWKS (never
   * published, or the one before the last rotate).
   */
  sign(
    claims: Record<string, unknown>,
    options?: { kind?: KeyKind; header?: Record<string, unknown>; key?: 'current' | 'retired' },
  ): string
  /** A new key pair for each kind with new kids; the old ones leave the JWKS. */
  rotate(): void
  close(): Promise<void>
}

interface Pair {
  kid: string
  privateKey: KeyObject
  publicKey: KeyObject
}

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url')

function pair(kind: KeyKind): Pair {
  const kid = `${kind}-${randomBytes(6).toString('hex')}`
  const keys =
    kind === 'rsa'
      ? generateKeyPairSync('rsa', { modulusLength: 2048 })
      : generateKeyPairSync('ec', { namedCurve: 'prime256v1' })
  return { kid, ...keys }
}

/**
 * A compact JWS signed with `privateKey` by the header's alg (RS*, PS*, ES*, EdDSA), whatever
 * the key: so a test can sign ES384 over a P-256 key, as an attacker would.
 */
export function signJws(
  header: Record<string, unknown>,
  claims: Record<string, unknown>,
  privateKey: KeyObject,
): string {
  const input = `${b64(header)}.${b64(claims)}`
  const alg = String(header.alg)
  const hash = `sha${alg.slice(2)}`
  const data = Buffer.from(input)
  let signature: Buffer
  if (alg.startsWith('RS')) signature = cryptoSign(hash, data, privateKey)
  else if (alg.startsWith('PS')) {
    const saltLength = Number(alg.slice(2)) / 8
    const padding = constants.RSA_PKCS1_PSS_PADDING
    signature = cryptoSign(hash, data, { key: privateKey, padding, saltLength })
  } else if (alg.startsWith('ES')) {
    signature = cryptoSign(hash, data, { key: privateKey, dsaEncoding: 'ieee-p1363' })
  } else if (alg === 'EdDSA') signature = cryptoSign(null, data, privateKey)
  else throw new Error(`signJws cannot sign ${alg}`)
  return `${input}.${signature.toString('base64url')}`
}

/** A token with `alg: none` and an empty signature. */
export function unsignedToken(claims: Record<string, unknown>): string {
  return `${b64({ alg: 'none', typ: 'JWT' })}.${b64(claims)}.`
}

/**
 * The classic key confusion: HS256 with the issuer's public key (PEM bytes) as the HMAC
 * secret, under the RSA key's kid. A verifier that lets the token pick the algorithm and hands
 * the "key" to HMAC accepts it.
 */
export function confusedToken(issuer: TestIssuer, claims: Record<string, unknown>): string {
  const input = `${b64({ alg: 'HS256', typ: 'JWT', kid: issuer.kid('rsa') })}.${b64({ iss: issuer.url, ...claims })}`
  const mac = createHmac('sha256', issuer.publicPem('rsa')).update(input).digest('base64url')
  return `${input}.${mac}`
}

/**
 * A local OIDC-like issuer over HTTPS on 127.0.0.1 (random port) with a self-signed
 * certificate: discovery at /.well-known/openid-configuration, the JWKS at /jwks.
 */
export async function startIssuer(): Promise<TestIssuer> {
  const { cert, key } = generateSelfSigned()
  const dir = mkdtempSync(path.join(tmpdir(), 'tessera-issuer-'))
  const caFile = path.join(dir, 'ca.pem')
  writeFileSync(caFile, cert)
  const current = { rsa: pair('rsa'), ec: pair('ec') }
  // Made on first use: RSA key generation is most of a start's time.
  let retired: Record<KeyKind, Pair> | undefined
  const jwk = (p: Pair, alg: string) => ({
    ...p.publicKey.export({ format: 'jwk' }),
    kid: p.kid,
    alg,
    use: 'sig',
  })
  let issuer: TestIssuer | undefined
  const server = createServer({ cert, key }, (req, res) => {
    const url = req.url ?? ''
    if (issuer === undefined) return res.writeHead(503).end()
    if (url === '/jwks') issuer.jwksFetches++
    if (url === '/.well-known/openid-configuration') issuer.discoveryFetches++
    const intercepted = issuer.intercept?.(url)
    if (intercepted === 'hang') return
    if (intercepted !== undefined) return res.writeHead(intercepted.status).end(intercepted.body)
    const json = (body: unknown) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body))
    if (url === '/jwks') return json(issuer.jwks())
    if (url === '/.well-known/openid-configuration') {
      return json({ issuer: issuer.url, jwks_uri: `${issuer.url}/jwks` })
    }
    res.writeHead(404).end()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`
  issuer = {
    url,
    caFile,
    jwksFetches: 0,
    discoveryFetches: 0,
    intercept: undefined,
    jwks: () => ({ keys: [jwk(current.rsa, 'RS256'), jwk(current.ec, 'ES256')] }),
    kid: (kind = 'rsa') => current[kind].kid,
    publicPem: (kind = 'rsa') =>
      current[kind].publicKey.export({ type: 'spki', format: 'pem' }).toString(),
    sign(claims, options = {}) {
      const kind = options.kind ?? 'rsa'
      if (options.key === 'retired') retired ??= { rsa: pair('rsa'), ec: pair('ec') }
      const signer = (options.key === 'retired' && retired !== undefined ? retired : current)[kind]
      const header = {
        alg: kind === 'rsa' ? 'RS256' : 'ES256',
        typ: 'JWT',
        kid: signer.kid,
        ...options.header,
      }
      return signJws(header, { iss: url, ...claims }, signer.privateKey)
    },
    rotate() {
      retired = { rsa: current.rsa, ec: current.ec }
      current.rsa = pair('rsa')
      current.ec = pair('ec')
    },
    async close() {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
      rmSync(dir, { recursive: true, force: true })
    },
  }
  return issuer
}
