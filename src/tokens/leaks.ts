import { createHash, verify as verifySignature } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { type Actor, auditEvent } from '../audit/events.js'
import { auditRepo } from '../db/audit.js'
import type { Db } from '../db/database.js'
import { type AccountRecord, type LeakEvidence, tokensRepo } from '../db/repositories.js'
import { ApiError } from '../errors.js'
import { isoTime } from '../time.js'
import type { Principal } from './principal.js'
import type { TokenService } from './service.js'

/** What a leak report said of a token: where it was seen, by whom. */
export type { LeakEvidence }

/**
 * What happens to a live token reported leaked: `auto` revokes an sk, and a pk unless it is
 * restricted (allowed URLs or IPs: then it is flagged); `revoke` always revokes; `flag` never.
 * Whatever the policy, an anonymous report never revokes a pk (see LeakService.handle).
 */
export type LeakPolicy = 'auto' | 'revoke' | 'flag'

/**
 * Who reported: GitHub's secret scanning (signed), the operator's scanners (admin API), or
 * anyone (`public`: no one vouches for it).
 */
export type LeakVia = 'github' | 'admin' | 'public'

export interface LeakReport {
  token: unknown
  url?: unknown
  source?: unknown
}

export interface LeakOutcome {
  /** SHA-256 (hex) of the reported string: the answer never echoes a token. */
  tokenHash: string
  /** A live Tessera token (GitHub's `true_positive`). */
  live: boolean
  action: 'revoked' | 'flagged' | 'none'
}

export const maxLeakReports = 1000
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex')
const clip = (value: unknown, max: number) =>
  typeof value === 'string' && value !== '' ? value.slice(0, max) : undefined

/** The accounts as leak reports need them (AccountService): the holder revokes a live token. */
interface LeakAccounts {
  find(username: string): AccountRecord | undefined | Promise<AccountRecord | undefined>
  holder(account: AccountRecord): Principal
}

/**
 * Leaked tokens: reports from GitHub's secret scanning (signed), an operator's scanners (admin
 * API) or anyone (unauthenticated); a live token is revoked or flagged at once, audited with
 * where it was found (`token.leaked`, also an event of the stream and webhooks).
 */
export class LeakService {
  private readonly keys: Map<string, string>

  constructor(
    private readonly db: Db,
    private readonly tokens: TokenService,
    private readonly accounts: LeakAccounts,
    private readonly policy: LeakPolicy,
    keys: Map<string, string> | undefined,
  ) {
    this.keys = keys ?? new Map()
  }

  /** Whether reports in GitHub's shape can be checked (LEAK_REPORT_KEYS is set). */
  get acceptsGithub(): boolean {
    return this.keys.size > 0
  }

  /** GitHub's signature over the raw body (ECDSA P-256, SHA-256, DER, base64). */
  signedByGithub(body: string, keyId: string | undefined, signature: string | undefined): boolean {
    const key = keyId === undefined ? undefined : this.keys.get(keyId)
    if (key === undefined || signature === undefined) return false
    try {
      return verifySignature(
        'sha256',
        Buffer.from(body),
        { key, dsaEncoding: 'der' },
        Buffer.from(signature, 'base64'),
      )
    } catch {
      return false
    }
  }

  /**
   * The account's tokens reported leaked and kept (flagged), for its holder: id → when (the
   * flag), and by whom and where (the latest `token.leaked` event; the time alone once the
   * audit log has dropped it).
   */
  async kept(account: AccountRecord): Promise<Map<string, LeakEvidence>> {
    const kept = new Map<string, LeakEvidence>()
    for (const [id, at] of await tokensRepo.leakedOf(this.db, account.username)) {
      const evidence = await tokensRepo.leakEvidence(this.db, account.username, id)
      kept.set(id, { at, ...evidence })
    }
    return kept
  }

  /** The answer given to a body seen before (a replay), if it was. */
  async seen(body: string): Promise<string | undefined> {
    const row = await this.db
      .selectFrom('leak_reports')
      .select('answer')
      .where('body_hash', '=', sha256(body))
      .executeTakeFirst()
    return row?.answer
  }

  async remember(body: string, answer: string): Promise<void> {
    await this.db
      .insertInto('leak_reports')
      .values({ body_hash: sha256(body), at: isoTime(this.tokens.now()), answer })
      .onConflict((oc) => oc.column('body_hash').doNothing())
      .execute()
  }

  /**
   * Handles reports, one at a time in order: an entry that is not a string, not a token or not
   * live is answered as such and the rest go on. A token reported twice is handled once.
   */
  async report(reports: LeakReport[], via: LeakVia, actor: Actor): Promise<LeakOutcome[]> {
    const handled = new Map<string, LeakOutcome>()
    const outcomes: LeakOutcome[] = []
    for (const report of reports.slice(0, maxLeakReports)) {
      const token = typeof report?.token === 'string' ? report.token : undefined
      const tokenHash = sha256(token ?? JSON.stringify(report?.token ?? null))
      const earlier = handled.get(tokenHash)
      if (earlier !== undefined) {
        outcomes.push(earlier)
        continue
      }
      const outcome =
        token === undefined || token.length > 4096
          ? { tokenHash, live: false, action: 'none' as const }
          : await this.handle(token, tokenHash, report, via, actor)
      handled.set(tokenHash, outcome)
      outcomes.push(outcome)
    }
    return outcomes
  }

  private async handle(
    token: string,
    tokenHash: string,
    report: LeakReport,
    via: LeakVia,
    actor: Actor,
  ): Promise<LeakOutcome> {
    const validation = await this.tokens.validate(token)
    if (validation.code !== 'TokenValid') return { tokenHash, live: false, action: 'none' }
    const { principal } = validation
    const account = await this.accounts.find(principal.username)
    // A temporary token is not stored: it cannot be revoked, only run out (an hour at most).
    if (principal.tokenId === undefined || account === undefined) {
      return { tokenHash, live: true, action: 'none' }
    }
    const record = await tokensRepo.find(this.db, principal.tokenId)
    if (record === undefined) return { tokenHash, live: false, action: 'none' }
    const restricted = record.allowedUrls !== null || (record.allowedIps ?? null) !== null
    // A pk is public by design (web pages embed it, the default token first): finding one is no
    // proof of a leak, and revoking it on anyone's word would let anyone break every site that
    // uses it, again after each replacement. An anonymous report flags it and tells the holder;
    // GitHub's signed reports and the operator's keep the policy. An sk in public is compromised
    // whoever finds it: revoked by the policy, anonymous or not.
    const revoke =
      !(via === 'public' && record.usage === 'pk') &&
      (this.policy === 'revoke' ||
        (this.policy === 'auto' && (record.usage === 'sk' || !restricted)))
    const details: Record<string, unknown> = { action: revoke ? 'revoked' : 'flagged', via }
    const url = clip(report.url, 2048)
    const source = clip(report.source, 64)
    if (url !== undefined) details.url = url
    if (source !== undefined) details.source = source
    const at = this.tokens.now()
    const target = { type: 'token' as const, id: record.id }
    const event = auditEvent(at, 'token.leaked', actor, target, account.username, details)
    if (revoke && record.isDefault) {
      // The default token cannot go: it is rolled, its leaked string ending now. Rolled by a
      // report at the same moment (404, 409): that one revoked it and was recorded.
      try {
        await this.tokens.roll(
          account,
          this.accounts.holder(account),
          record.id,
          { children: 'end' },
          actor,
        )
      } catch (err) {
        if (err instanceof ApiError && (err.kind === 'notFound' || err.kind === 'tokenRetiring')) {
          return { tokenHash, live: true, action: 'revoked' }
        }
        throw err
      }
      await auditRepo.insert(this.db, event)
      return { tokenHash, live: true, action: 'revoked' }
    }
    // Revoked: deleted as well, which verifiers following the event stream act on, and its
    // children end with it, whatever strings they have (docs/machines.md). The events last.
    const family = await this.db.transaction().execute(async (trx) => {
      let deleted = false
      if (revoke) deleted = await tokensRepo.delete(trx, account.username, record.id)
      else await tokensRepo.flagLeaked(trx, record.id, isoTime(at))
      await this.tokens.notifyChanged(trx, [record.id])
      if (!deleted) {
        await auditRepo.insert(trx, event)
        return { ids: [], events: [] }
      }
      const gone = { usage: record.usage, reason: 'leaked' }
      const deletion = auditEvent(at, 'token.deleted', actor, target, account.username, gone)
      const family = await this.tokens.endDescendants(trx, record, 'leaked', actor)
      await auditRepo.insert(trx, [event, deletion, ...family.events])
      return family
    })
    this.tokens.forget([record.id, ...family.ids])
    return { tokenHash, live: true, action: revoke ? 'revoked' : 'flagged' }
  }
}

/**
 * GitHub's public keys document (`{"public_keys": [{"key_identifier", "key", "is_current"}]}`),
 * read from a file at start: nothing is fetched at run time.
 */
export function readLeakKeys(file: string): Map<string, string> {
  const doc = JSON.parse(readFileSync(file, 'utf8')) as {
    public_keys?: { key_identifier?: unknown; key?: unknown }[]
  }
  const keys = new Map<string, string>()
  for (const k of doc.public_keys ?? []) {
    if (typeof k.key_identifier === 'string' && typeof k.key === 'string') {
      keys.set(k.key_identifier, k.key)
    }
  }
  if (keys.size === 0) throw new Error(`${file}: no public_keys with key_identifier and key`)
  return keys
}
