import { createPublicKey, type JsonWebKey, type KeyObject } from 'node:crypto'
import { request as httpsRequest, type RequestOptions } from 'node:https'
import type { LookupFunction } from 'node:net'
import { type ResolvedAddress, resolveTarget } from '../webhooks/target.js'

/** An issuer's keys fetched over HTTPS: its discovery document, then its JWKS (IssuerKeys). */

/**
 * The issuer's keys cannot be had now: it is unreachable, answers nonsense, or is no https:
 * issuer at all. Not a verdict on the token. The message names the issuer and the reason,
 * never a key or a token.
 */
export class IssuerUnavailable extends Error {
  override readonly name = 'IssuerUnavailable'
}

export interface Published {
  kid: string | undefined
  alg: string | undefined
  key: KeyObject
}

const maxBytes = 1024 * 1024
const discoveryPath = '/.well-known/openid-configuration'

/** Connects to the addresses that were checked, whatever the host name resolves to by now. */
const pinned =
  (addresses: ResolvedAddress[]): LookupFunction =>
  (_host, options, callback) => {
    const [first] = addresses
    if (options.all) callback(null, addresses)
    else callback(null, first?.address ?? '', first?.family)
  }

/** A JWK as a verification key, or nothing: keys for encryption or of unknown kinds are skipped. */
function importKey(jwk: unknown): Published[] {
  if (typeof jwk !== 'object' || jwk === null || Array.isArray(jwk)) return []
  const { kid, alg, use, key_ops: ops } = jwk as Record<string, unknown>
  if (use !== undefined && use !== 'sig') return []
  if (ops !== undefined && !(Array.isArray(ops) && ops.includes('verify'))) return []
  if (kid !== undefined && typeof kid !== 'string') return []
  if (alg !== undefined && typeof alg !== 'string') return []
  try {
    const key = createPublicKey({ key: jwk as JsonWebKey, format: 'jwk' })
    return [{ kid, alg, key }]
  } catch {
    return []
  }
}

export async function fetchKeys(
  issuer: string,
  ca: string[] | undefined,
  timeoutMs: number,
  allowPrivate: boolean,
): Promise<Published[]> {
  // One deadline for both requests: a slow issuer holds a lookup at most timeoutMs.
  const signal = AbortSignal.timeout(timeoutMs)
  const fail = (reason: string) => new IssuerUnavailable(`the issuer ${issuer} ${reason}`)
  const get = (url: string, what: string) =>
    getJson(new URL(url), {
      ca,
      signal,
      timeoutMs,
      allowPrivate,
      fail: (r, detail) => fail(`${r} for ${what}${detail === undefined ? '' : ` (${detail})`}`),
    })
  const discovery = await get(
    `${issuer.replace(/\/$/, '')}${discoveryPath}`,
    'its discovery document',
  )
  if (discovery.issuer !== issuer) {
    throw fail('names another issuer in its discovery document')
  }
  const jwksUri = discovery.jwks_uri
  if (
    typeof jwksUri !== 'string' ||
    !URL.canParse(jwksUri) ||
    new URL(jwksUri).protocol !== 'https:'
  ) {
    throw fail('gives no https: jwks_uri in its discovery document')
  }
  const jwks = await get(jwksUri, 'its keys (JWKS)')
  if (!Array.isArray(jwks.keys)) throw fail('sent no keys array in its JWKS')
  return jwks.keys.flatMap(importKey)
}

interface GetOptions {
  ca: string[] | undefined
  allowPrivate: boolean
  signal: AbortSignal
  timeoutMs: number
  fail: (reason: string, detail?: string) => IssuerUnavailable
}

/**
 * A JSON object from a GET: 200 only, redirects not followed, at most 1 MiB; from a public
 * address unless private ones are allowed, connected to the address that was checked.
 */
async function getJson(url: URL, options: GetOptions): Promise<Record<string, unknown>> {
  const { signal, fail } = options
  let addresses: ResolvedAddress[]
  try {
    addresses = await resolveTarget(url, options.allowPrivate)
  } catch (err) {
    const why = (err as { details?: string }).details ?? (err as Error).message
    throw fail('may not be fetched', why.replace(/^url's host/, 'its host'))
  }
  return new Promise((resolve, reject) => {
    const request: RequestOptions = {
      headers: { accept: 'application/json' },
      signal,
      lookup: pinned(addresses),
    }
    if (options.ca !== undefined) request.ca = options.ca
    const req = httpsRequest(url, request, (res) => {
      const tooLarge = () => {
        res.destroy()
        reject(fail('sent more than 1 MiB'))
      }
      if (res.statusCode !== 200) {
        res.resume()
        return reject(fail(`answered HTTP ${res.statusCode}`))
      }
      if (Number(res.headers['content-length']) > maxBytes) return tooLarge()
      const chunks: Buffer[] = []
      let size = 0
      res.on('data', (chunk: Buffer) => {
        size += chunk.length
        if (size > maxBytes) tooLarge()
        else chunks.push(chunk)
      })
      res.on('error', (err) => reject(failure(err)))
      res.on('end', () => {
        const value = parse(Buffer.concat(chunks))
        if (value === undefined) reject(fail('answered no JSON object'))
        else resolve(value)
      })
    })
    const failure = (err: Error) =>
      signal.aborted
        ? fail(`did not answer within ${options.timeoutMs / 1000} s`)
        : fail('could not be reached', String(err.message).split('\n')[0])
    req.on('error', (err) => reject(failure(err)))
    req.end()
  })
}

function parse(body: Buffer): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(body.toString('utf8'))
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined
    return value as Record<string, unknown>
  } catch {
    return undefined
  }
}
