import { type AuditEvent, auditEvent, systemActor } from '../audit/events.js'
import { auditRepo } from '../db/audit.js'
import type { TokenRecord } from '../db/repositories.js'
import { warningsRepo } from '../db/warnings.js'
import { isoTime } from '../time.js'
import { type IdleSweep, idleDeletion, sweepIdle } from './idle.js'
import {
  batch,
  dayMs,
  type HygieneDeps,
  idleNoticeMs,
  type Notice,
  retiringNoticeMs,
  type TokenWarning,
} from './warning.js'

export type { HygieneDeps, Notice, TokenWarning }

/**
 * Warnings before things happen to tokens, and idle tokens deleted by policy. A sweep finds what
 * expires within 7 days (warned at 7 days and at 1 day), rolled tokens within an hour of their
 * end, and (hourly, `sweepIdle`) tokens unused for their policy's days less 7. Each warning is
 * recorded with its event (`token.expiring`, `token.retiring`, `token.idle`) in one transaction,
 * under a key of token, kind and the instant it is about: once per token and threshold however
 * many instances sweep (the key's conflict makes the second writer's insert do nothing).
 */
export class TokenHygiene {
  constructor(private readonly deps: HygieneDeps) {}

  private get now(): number {
    return this.deps.tokens.now()
  }

  /** Gives the warnings due for ends of life and rolled tokens; how many it gave. */
  async sweep(): Promise<number> {
    const now = this.now
    const after = isoTime(now)
    const { db } = this.deps
    let given = 0
    const soon = isoTime(now + dayMs)
    const week = isoTime(now + idleNoticeMs)
    const scans: [
      'expiring' | 'retiring',
      '1d' | '7d' | undefined,
      () => Promise<TokenRecord[]>,
    ][] = [
      ['expiring', '1d', () => warningsRepo.expiring(db, after, soon, scan('expiring_1d'))],
      ['expiring', '7d', () => warningsRepo.expiring(db, soon, week, scan('expiring_7d'))],
      [
        'retiring',
        undefined,
        () => warningsRepo.retiring(db, after, isoTime(now + retiringNoticeMs), scan('retiring')),
      ],
    ]
    for (const [kind, threshold, read] of scans) {
      for (const token of await read()) {
        const about = kind === 'retiring' ? token.retiresAt : token.expiresAt
        if (about === undefined || about === null) continue
        if (await this.give(token, kind, threshold, isoTime(about))) given++
      }
    }
    return given
  }

  /** Gives idle warnings and deletes idle tokens warned long enough ago (see sweepIdle). */
  sweepIdle(): Promise<IdleSweep> {
    return sweepIdle(this.deps, {
      record: (token, kind, basis, details) =>
        this.record(token, kind, basis, 'token.idle', details),
      tell: (warning) => this.tell(warning),
    })
  }

  /** One warning, recorded once; whether this call gave it. */
  private async give(
    token: TokenRecord,
    kind: 'expiring' | 'retiring',
    threshold: '1d' | '7d' | undefined,
    about: string,
  ): Promise<boolean> {
    const key = threshold === undefined ? kind : `${kind}_${threshold}`
    const details =
      kind === 'expiring'
        ? { usage: token.usage, expiresAt: about, threshold }
        : { usage: token.usage, retiresAt: about }
    const action = kind === 'expiring' ? 'token.expiring' : 'token.retiring'
    const given = await this.record(token, key, about, action, details)
    if (given)
      this.tell({
        kind,
        account: token.username,
        token: this.deps.tokens.listed(token),
        at: about,
        ...(threshold === undefined ? {} : { threshold }),
      })
    return given
  }

  /** The warning's row and its event, in one transaction, unless it was given already. */
  private async record(
    token: TokenRecord,
    kind: string,
    basis: string,
    action: AuditEvent['action'],
    details: Record<string, unknown>,
  ): Promise<boolean> {
    const now = this.now
    const row = { token_id: token.id, kind, basis, username: token.username, at: isoTime(now) }
    const target = { type: 'token' as const, id: token.id }
    const event = auditEvent(now, action, systemActor, target, token.username, details)
    return this.deps.db.transaction().execute(async (trx) => {
      if (!(await warningsRepo.give(trx, row))) return false
      await auditRepo.insert(trx, event)
      return true
    })
  }

  /** Hands a warning to whoever mails it; their failure is theirs, never the sweep's. */
  tell(warning: TokenWarning): void {
    try {
      this.deps.onWarning?.(warning)
    } catch (err) {
      this.deps.log.warn(
        { err: (err as Error).message, kind: warning.kind },
        'token warning not sent',
      )
    }
  }

  /**
   * What needs the account's attention, soonest first: tokens that end within 7 days, rolled
   * tokens still working, and tokens warned as idle that will be deleted (while still unused).
   */
  async upcoming(username: string): Promise<Notice[]> {
    const { db, tokens } = this.deps
    const now = this.now
    const after = isoTime(now)
    const week = isoTime(now + idleNoticeMs)
    const only = { username, limit: 100 }
    const notices: Notice[] = []
    for (const t of await warningsRepo.expiring(db, after, week, only)) {
      notices.push({
        kind: 'expiring',
        token: tokens.listed(t),
        at: isoTime(t.expiresAt as number),
      })
    }
    for (const t of await warningsRepo.retiring(db, after, week, only)) {
      notices.push({
        kind: 'retiring',
        token: tokens.listed(t),
        at: isoTime(t.retiresAt as number),
      })
    }
    for (const idle of await idleDeletion(this.deps, username, now)) notices.push(idle)
    return notices.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0))
  }
}

const scan = (kind: string) => ({ unwarned: kind, limit: batch })
