import type { KeyObject } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { rootCertificates } from 'node:tls'
import { fetchKeys, IssuerUnavailable, type Published } from './fetch-keys.js'
import { keyFits } from './jwt.js'

export { IssuerUnavailable }

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
