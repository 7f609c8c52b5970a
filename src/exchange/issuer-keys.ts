import { createPublicKey, type JsonWebKey, type KeyObject } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { request as httpsRequest, type RequestOptions } from 'node:https'
import type { LookupFunction } from 'node:net'
import { rootCertificates } from 'node:tls'
import { type ResolvedAddress, resolveTarget } from '../webhooks/target.js'
import { keyFits } from './jwt.js'

/** Connects to the addresses that were checked, whatever the host name resolves to by now. */
const pinned =
  (addresses: ResolvedAddress[]): LookupFunction =>
  (_host, options, callback) => {
    const [first] = addresses
    if (options.all) callback(null, addresses)
    else callback(null, first?.address ?? '', first?.family)
  }

export interface IssuerKeysOptions {
  now: () => number
  /** PEM file of extra certificate authorities (private issuers), like OIDC_CA_FILE. */
  caFile?: string
  /** Least time between two fetches of one issuer's keys (default 60_000 ms). */
  refreshFloorMs?: number
  /** How long fetched keys are trusted before a refetch on next use (default 3_600_000 ms). */
  maxAgeMs?: number
  timeoutMs?: number
  /**
   * Whether an issuer may be at a loopback, private or link-local address (EXCHANGE_ALLOW_PRIVATE;
   * tests, private networks). Off by default: an account's owner names issuers, and Tessera must
   * not become their way into the network it runs in (server-side request forgery).
   */
  allowPrivate?: boolean
}

/**
 * The issuer's keys cannot be had now: it is unreachable, answers nonsense, or is no https:
 * issuer at all. Not a verdict on the token. The message names the issuer and the reason,
 * never a key or a token.
 */
export class IssuerUnavailable extends Error {
  override readonly name = 'IssuerUnavailable'
}

interface Published {
  kid: string | undefined
  alg: string | undefined
  key: KeyObject
}

/** What is known of one issuer. */
interface Held {
  keys: Published[] | undefined
  /** When the keys now held were fetched (the start of that attempt). */
  fetchedAt: number
  /** When the last attempt started, whatever came of it: the floor counts from here. */
  triedAt: number
  /** The last attempt's failure, told again to lookups within the floor. */
  failure: IssuerUnavailable | undefined
  inflight: Promise<void> | undefined
}

const maxBytes = 1024 * 1024
const discoveryPath = '/.well-known/openid-configuration'

/**
 * The verification keys of OpenID Connect issuers, discovered and cached. The caller passes
 * only issuers it trusts (the configured ones): every issuer passed is fetched and kept.
 */
export class IssuerKeys {
  private readonly held = new Map<string, Held>()
  private readonly ca: string[] | undefined
  private readonly floorMs: number
  private readonly maxAgeMs: number
  private readonly timeoutMs: number
  private count = 0

  constructor(private readonly options: IssuerKeysOptions) {
    this.floorMs = options.refreshFloorMs ?? 60_000
    this.maxAgeMs = options.maxAgeMs ?? 3_600_000
    this.timeoutMs = options.timeoutMs ?? 5_000
    // Read once, at start-up: a missing file is a configuration error, not an outage.
    if (options.caFile !== undefined) {
      try {
        this.ca = [...rootCertificates, readFileSync(options.caFile, 'utf8')]
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code ?? 'unreadable'
        throw new Error(`the issuers' CA file ${options.caFile} cannot be read (${code})`)
      }
    }
  }

  /** Fetches made so far (discovery + jwks counted as one), for tests and metrics. */
  get fetches(): number {
    return this.count
  }

  /**
   * The verification key of `issuer` for (kid, alg). Loads `${issuer}/.well-known/openid-configuration`
   * (issuer must be https:; the document's `issuer` must equal it exactly; its `jwks_uri` https:),
   * then the JWKS, and caches them. An unknown kid (or no kid and no single matching key) makes
   * one refetch, unless the issuer's keys were fetched less than refreshFloorMs ago: so a flood
   * of tokens with made-up kids costs at most one fetch per floor per issuer. Concurrent lookups
   * share one fetch in flight. Returns undefined when no key fits; throws IssuerUnavailable
   * when the issuer cannot be reached or answers nonsense (non-200, not JSON, > 1 MiB,
   * timeout), and again without fetching until the floor has passed. Keys in the JWKS that
   * cannot be imported, or with `use` other than "sig", are skipped; alg on a JWK, when
   * present, must match.
   */
  async key(issuer: string, kid: string | undefined, alg: string): Promise<KeyObject | undefined> {
    if (!isIssuerUrl(issuer)) {
      // Not echoed: a URL with credentials would carry them into the logs.
      throw new IssuerUnavailable(
        'the issuer is not an https: URL without credentials, query or fragment',
      )
    }
    const held = this.entry(issuer)
    // A lookup that arrives during a fetch waits for it and judges by its outcome.
    if (held.inflight !== undefined) await held.inflight.catch(() => {})
    const now = this.options.now()
    const mayFetch = now - held.triedAt >= this.floorMs
    if (held.keys === undefined || now - held.fetchedAt >= this.maxAgeMs) {
      if (held.failure !== undefined && !mayFetch) throw held.failure
      await this.refresh(issuer, held)
      return pick(held.keys, kid, alg)
    }
    const found = pick(held.keys, kid, alg)
    if (found !== undefined || !mayFetch) return found
    await this.refresh(issuer, held)
    return pick(held.keys, kid, alg)
  }

  private entry(issuer: string): Held {
    let held = this.held.get(issuer)
    if (held === undefined) {
      held = {
        keys: undefined,
        fetchedAt: Number.NEGATIVE_INFINITY,
        triedAt: Number.NEGATIVE_INFINITY,
        failure: undefined,
        inflight: undefined,
      }
      this.held.set(issuer, held)
    }
    return held
  }

  private refresh(issuer: string, held: Held): Promise<void> {
    held.inflight ??= this.load(issuer, held).finally(() => {
      held.inflight = undefined
    })
    return held.inflight
  }

  private async load(issuer: string, held: Held): Promise<void> {
    const startedAt = this.options.now()
    held.triedAt = startedAt
    this.count++
    try {
      held.keys = await fetchKeys(
        issuer,
        this.ca,
        this.timeoutMs,
        this.options.allowPrivate === true,
      )
      held.fetchedAt = startedAt
      held.failure = undefined
    } catch (err) {
      held.failure =
        err instanceof IssuerUnavailable
          ? err
          : new IssuerUnavailable(`the issuer ${issuer} could not be asked for its keys`)
      throw held.failure
    }
  }
}

function isIssuerUrl(issuer: string): boolean {
  if (!URL.canParse(issuer)) return false
  const url = new URL(issuer)
  return (
    url.protocol === 'https:' &&
    url.username === '' &&
    url.password === '' &&
    url.search === '' &&
    url.hash === '' &&
    !issuer.includes('?') &&
    !issuer.includes('#')
  )
}

/** The one key that fits (kid when given, alg, the key's kind), or undefined. */
function pick(
  keys: Published[] | undefined,
  kid: string | undefined,
  alg: string,
): KeyObject | undefined {
  const fitting = (keys ?? []).filter(
    (k) =>
      (kid === undefined || k.kid === kid) &&
      (k.alg === undefined || k.alg === alg) &&
      keyFits(k.key, alg),
  )
  return fitting.length === 1 ? fitting[0]?.key : undefined
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

async function fetchKeys(
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
