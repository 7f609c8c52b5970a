import type { IncomingHttpHeaders } from 'node:http'
import { performance } from 'node:perf_hooks'
import type { Validation } from '../tokens/validator.js'
import { keyOf, splitKey } from '../usage/attribution.js'
import { type Outcome, outcomes } from '../usage/outcomes.js'

/** Where a verification happened. */
export const sources = ['retrieve', 'api', 'introspection', 'verifier'] as const
export type Source = (typeof sources)[number]

/** `VERIFICATION_LOG`: every verification, refusals only, or none. */
export const logModes = ['all', 'refused', 'off'] as const
export type LogMode = (typeof logModes)[number]

/** One verification as the log keeps it (docs/verifications.md). Never the token string. */
export interface VerificationRow {
  /** When it was decided, epoch ms (the injected clock). */
  at: number
  /** Whom it is counted against, as the usage counts it ('' for nobody: usage/attribution.ts). */
  account: string
  tokenId: string
  source: Source
  outcome: Outcome
  /** rate_limited: the name of the limit that refused it. */
  limit: string | null
  /** The client's address, as the request's route takes it (TRUST_PROXY). */
  ip: string | null
  /** The host of the request's Origin, else of its Referer (a browser's page). */
  origin: string | null
  requestId: string | null
  /** From the request's arrival to the decision, in microseconds. */
  durationUs: number | null
}

/** What the HTTP layer knows of a request that a row takes: given to the checkpoint. */
export interface RequestFacts {
  source: Source
  ip: string | undefined
  headers: IncomingHttpHeaders
  /** The request's id, or how to make it (the fast path makes it only when asked). */
  requestId: string | (() => string)
  /** performance.now() at the request's arrival. */
  started: number
  /** The request has a span: its verification's row is made for it, kept or not. */
  traced?: boolean
  /** The row of its verification, once decided (when kept, or traced). */
  row?: VerificationRow
}

/**
 * The host of a URL-ish header value (`https://app.example.com:8443/page` →
 * `app.example.com:8443`), bounded; none for `null` or what is not one. Without `new URL`: on
 * the hot path, and the client's to write.
 */
export function hostOf(value: string | undefined): string | null {
  if (value === undefined) return null
  const scheme = value.indexOf('://')
  if (scheme <= 0 || scheme > 10) return null
  let end = value.length
  for (let i = scheme + 3; i < value.length; i++) {
    const c = value.charCodeAt(i)
    // '/', '?', '#'
    if (c === 47 || c === 63 || c === 35) {
      end = i
      break
    }
  }
  let host = value.slice(scheme + 3, end)
  const at = host.lastIndexOf('@')
  if (at !== -1) host = host.slice(at + 1)
  if (host === '' || host.length > 255 || !/^[A-Za-z0-9.:[\]_-]+$/.test(host)) return null
  return host.toLowerCase()
}

/** The row of one verification: whom it names (as the meter counts it), what it came to. */
export function rowOf(
  validation: Validation | undefined,
  outcome: number,
  limit: string | null,
  facts: RequestFacts,
  at: number,
): VerificationRow {
  let account = ''
  let tokenId = ''
  if (validation?.code === 'TokenValid') {
    account = validation.principal.username
    tokenId = validation.principal.tokenId ?? ''
  } else if (validation !== undefined) {
    ;({ account, tokenId } = splitKey(keyOf(validation)))
  }
  const { headers } = facts
  const requestId = facts.requestId
  return {
    at,
    account,
    tokenId,
    source: facts.source,
    outcome: outcomes[outcome] as Outcome,
    limit,
    ip: facts.ip ?? null,
    origin: hostOf(headers.origin) ?? hostOf(headers.referer),
    requestId: typeof requestId === 'string' ? requestId : requestId(),
    durationUs: Math.round((performance.now() - facts.started) * 1000),
  }
}
