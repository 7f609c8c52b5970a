import { type Actor, auditEvent } from '../audit/events.js'
import { auditRepo } from '../db/audit.js'
import type { Db } from '../db/database.js'
import { type OverrideRecord, overridesRepo } from '../db/ratelimit-overrides.js'
import { fail } from '../errors.js'
import { durationBounds } from '../ratelimit/limiter.js'
import { limitNamePattern, maxLimit, type NamedLimit } from '../ratelimit/named.js'
import { isoTime } from '../time.js'
import type { Checkpoint, Verdict } from './checkpoint.js'

/** What the namespace API answers of one request: Unkey's `ratelimit.limit` body. */
export interface LimitAnswer {
  success: boolean
  limit: number
  remaining: number
  /** Epoch milliseconds at which the window ends. */
  reset: number
}

/** At most this many overrides in one namespace (each instance holds a namespace's in memory). */
export const maxOverrides = 1000
/** An override change is in force everywhere within this long: a namespace's cache lives no longer. */
export const overridesFreshMs = 1000
/** A warm namespace is read again in the background once its overrides are this old. */
const refreshMs = overridesFreshMs / 2
/** Past this many namespaces cached, the cache starts over (memory stays bounded). */
const sweepAbove = 10_000

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v)
const whole = (v: unknown, min: number, max: number): v is number =>
  typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max
const invalid = (details: string): never => fail('invalidResources', details)
/** C0 and C1 control characters, and DEL. */
const control = /\p{Cc}/u

/** A namespace: a limit name (it names the limit in /metrics), or 422. */
export function readNamespace(v: string): string {
  if (!limitNamePattern.test(v)) invalid(`namespace must match ${limitNamePattern}`)
  return v
}

/** Why `v` is not an identifier (1-256 characters, no control one, one `*` at most), if it is not. */
export function identifierProblem(v: unknown): string | undefined {
  if (typeof v !== 'string' || v.length < 1 || v.length > 256) {
    return 'identifier must be a string of 1 to 256 characters'
  }
  if (control.test(v)) return 'identifier may not hold control characters'
  return v.indexOf('*') === v.lastIndexOf('*') ? undefined : 'identifier may hold one * at most'
}

const readIdentifier = (v: unknown) => {
  const problem = identifierProblem(v)
  return problem === undefined ? (v as string) : invalid(problem)
}

const requestFields = ['identifier', 'limit', 'duration', 'cost']
const overrideFields = ['limit', 'duration']

/** A request's or an override's body, refusing any other field; `identifier` '' when none. */
function readBody(body: unknown, fields: readonly string[], what: string) {
  if (!isRecord(body)) return invalid(`the body must be an object of ${what}`)
  const extra = Object.keys(body).find((k) => !fields.includes(k))
  if (extra !== undefined) invalid(`${extra} is not a field of ${what}`)
  const { identifier, limit, duration, cost } = body
  const id = fields.includes('identifier') ? readIdentifier(identifier) : ''
  if (!whole(limit, 1, maxLimit)) invalid(`limit must be a whole number from 1 to ${maxLimit}`)
  const { min, max } = durationBounds
  if (!whole(duration, min, max)) {
    invalid(`duration must be a whole number of milliseconds from ${min} to ${max}`)
  }
  if (cost !== undefined && !whole(cost, 0, maxLimit)) {
    invalid(`cost must be a whole number from 0 to ${maxLimit}`)
  }
  return {
    identifier: id,
    limit: limit as number,
    duration: duration as number,
    cost: (cost as number) ?? 1,
  }
}

/** An override with a `*`: what a matching identifier starts and ends with. */
interface Pattern {
  readonly prefix: string
  readonly suffix: string
  readonly override: OverrideRecord
}

/** A namespace's overrides as matched: exact ones, and patterns, the longest first. */
interface Table {
  readonly exact: ReadonlyMap<string, OverrideRecord>
  readonly patterns: readonly Pattern[]
}

const literal = (p: Pattern) => p.prefix.length + p.suffix.length

function tableOf(rows: readonly OverrideRecord[]): Table {
  const exact = new Map<string, OverrideRecord>()
  const patterns: Pattern[] = []
  for (const override of rows) {
    const [prefix, suffix] = override.identifier.split('*')
    if (suffix === undefined) exact.set(override.identifier, override)
    else patterns.push({ prefix: prefix as string, suffix, override })
  }
  // The most characters besides `*` first; of as many, the first identifier in code-unit order.
  const order = (a: Pattern, b: Pattern) => literal(b) - literal(a)
  patterns.sort((a, b) => order(a, b) || (a.override.identifier < b.override.identifier ? -1 : 1))
  return { exact, patterns }
}

/** The override of `identifier`: its own, else the longest pattern it matches. */
function match(table: Table, identifier: string): OverrideRecord | undefined {
  const own = table.exact.get(identifier)
  if (own !== undefined) return own
  for (const p of table.patterns) {
    if (identifier.length < literal(p)) continue
    if (identifier.startsWith(p.prefix) && identifier.endsWith(p.suffix)) return p.override
  }
  return undefined
}

/** A namespace's cached overrides: `readAt` is when the read that gave them started. */
interface Entry {
  table?: Table
  readAt: number
  reading?: Promise<Table>
}

const answer = (v: Verdict): LimitAnswer => ({
  success: v.allowed,
  limit: v.result.limit,
  remaining: v.result.remaining,
  reset: v.result.reset,
})

export interface NamespaceDeps {
  db: Db
  checkpoint: Checkpoint
  /** The injected clock (epoch ms). */
  now: () => number
}

/**
 * The namespace API (docs/ratelimits.md, Unkey's ratelimit API): limits on a platform's own
 * identifiers, counted as `ns:<namespace>:<identifier>` by the checkpoint, exact across a fleet
 * as every limit is. The request names its limit; an override of the identifier replaces it.
 *
 * Overrides are cached per namespace, so a warm request reads no database: a cache is used for
 * at most `overridesFreshMs` after its read began (read again in the background from half that
 * age; when older, one read for all the requests waiting), and a change made here drops it at
 * once. So a change is in force on every instance and worker within a second of its commit.
 */
export class NamespaceLimits {
  private readonly entries = new Map<string, Entry>()

  constructor(private readonly deps: NamespaceDeps) {}

  /** One request of `namespace`: `{identifier, limit, duration, cost?}`, counted at `cost`. */
  limit(namespace: string, body: unknown): LimitAnswer | Promise<LimitAnswer> {
    const ns = readNamespace(namespace)
    const asked = readBody(body, requestFields, 'a rate limit request')
    const table = this.tableOf(ns)
    return table instanceof Promise
      ? table.then((t) => this.decide(ns, asked, t))
      : this.decide(ns, asked, table)
  }

  private decide(
    ns: string,
    asked: ReturnType<typeof readBody>,
    table: Table,
  ): LimitAnswer | Promise<LimitAnswer> {
    const { identifier, cost } = asked
    // An override's limit and duration, else the request's.
    const { limit, duration } = match(table, identifier) ?? asked
    const rule: NamedLimit = { name: ns, limit, duration, cost }
    const { checkpoint } = this.deps
    const verdict = checkpoint.identifier(checkpoint.book.identifier(ns, identifier, rule))
    return verdict instanceof Promise ? verdict.then(answer) : answer(verdict)
  }

  /** The overrides of a namespace: cached, or read (once for every request waiting on it). */
  private tableOf(ns: string): Table | Promise<Table> {
    const entry = this.entries.get(ns)
    if (entry?.table !== undefined) {
      const age = this.deps.now() - entry.readAt
      if (age < overridesFreshMs) {
        if (age >= refreshMs && entry.reading === undefined) this.read(ns, entry).catch(() => {})
        return entry.table
      }
    }
    if (entry?.reading !== undefined) return entry.reading
    if (entry !== undefined) return this.read(ns, entry)
    // Many namespaces: each is read again at its next request (a change is never missed).
    if (this.entries.size >= sweepAbove) this.entries.clear()
    const fresh: Entry = { readAt: 0 }
    this.entries.set(ns, fresh)
    return this.read(ns, fresh)
  }

  private read(ns: string, entry: Entry): Promise<Table> {
    const startedAt = this.deps.now()
    const reading = overridesRepo.all(this.deps.db, ns).then(
      (rows) => {
        const table = tableOf(rows)
        // Dropped by a change meanwhile: what this read found may be from before the change.
        if (this.entries.get(ns) === entry) {
          entry.table = table
          entry.readAt = startedAt
        }
        if (entry.reading === reading) entry.reading = undefined
        return table
      },
      (err) => {
        if (entry.reading === reading) entry.reading = undefined
        throw err
      },
    )
    entry.reading = reading
    return reading
  }

  /** Forgets the cached overrides of a namespace: the next request reads them. */
  invalidate(ns: string): void {
    this.entries.delete(ns)
  }

  /** An override, or 404. */
  async override(namespace: string, identifier: string): Promise<OverrideRecord> {
    const ns = readNamespace(namespace)
    const found = await overridesRepo.get(this.deps.db, ns, readIdentifier(identifier))
    return found ?? fail('notFound')
  }

  /** A page of a namespace's overrides in identifier order (byte order), after `after`. */
  async overrides(namespace: string, after: string | undefined, limit: number) {
    const ns = readNamespace(namespace)
    if (after !== undefined && identifierProblem(after) !== undefined) fail('badStart')
    return overridesRepo.list(this.deps.db, ns, after, limit)
  }

  /**
   * Sets an override (`{limit, duration}`), audited and sent as `ratelimit_override.set`. 422
   * when the namespace holds `maxOverrides` already and this one is new.
   */
  setOverride(namespace: string, identifier: string, body: unknown, actor: Actor) {
    const [ns, id] = [readNamespace(namespace), readIdentifier(identifier)]
    const { limit, duration } = readBody(body, overrideFields, 'an override')
    return this.change(ns, id, 'ratelimit_override.set', actor, async (trx, at, before) => {
      if (before === undefined && (await overridesRepo.count(trx, ns)) >= maxOverrides) {
        invalid(`namespace ${ns} holds ${maxOverrides} overrides already: delete one first`)
      }
      const row = { namespace: ns, identifier: id, limit, duration, created: at, modified: at }
      const saved = await overridesRepo.put(trx, row)
      const was = before && { before: pick(before) }
      return [saved, { namespace: ns, identifier: id, limit, duration, ...was }]
    })
  }

  /** Deletes an override, audited and sent as `ratelimit_override.deleted`; 404 when absent. */
  async deleteOverride(namespace: string, identifier: string, actor: Actor): Promise<void> {
    const [ns, id] = [readNamespace(namespace), readIdentifier(identifier)]
    await this.change(ns, id, 'ratelimit_override.deleted', actor, async (trx, _, before) => {
      if (before === undefined) return fail('notFound')
      await overridesRepo.remove(trx, ns, id)
      return [undefined, { namespace: ns, identifier: id, ...pick(before) }]
    })
  }

  /**
   * A change of one override and its audit event (the transaction's last write), in one
   * transaction; then the namespace's cache is dropped, so this instance applies it at once.
   */
  private async change<T>(
    ns: string,
    id: string,
    action: 'ratelimit_override.set' | 'ratelimit_override.deleted',
    actor: Actor,
    write: (trx: Db, at: string, before?: OverrideRecord) => Promise<[T, Record<string, unknown>]>,
  ): Promise<T> {
    const now = this.deps.now()
    const result = await this.deps.db.transaction().execute(async (trx) => {
      const before = await overridesRepo.get(trx, ns, id)
      const [result, details] = await write(trx, isoTime(now), before)
      const target = { type: 'ratelimit' as const, id: `${ns}/${id}` }
      await auditRepo.insert(trx, auditEvent(now, action, actor, target, undefined, details))
      return result
    })
    this.invalidate(ns)
    return result
  }
}

const pick = ({ limit, duration }: OverrideRecord) => ({ limit, duration })
