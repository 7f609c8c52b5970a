import type { Kysely, Selectable } from 'kysely'
import { compiledOnce, powerOfTwoRuns } from './compiled.js'
import { deleteToken } from './gone-tokens.js'
import type { Database, TokensTable } from './schema.js'
import { type TokenRecord, type TokenView, tokenDocument } from './token-document.js'

export { type AccountRecord, accountsRepo, toAccount } from './accounts.js'
export type { TokenRecord }

type Executor = Kysely<Database>

/** Where and how a token kept after a leak report was found: its latest `token.leaked` event. */
export interface LeakEvidence {
  at: string
  /** `github`, `admin` or `public`. */
  via?: string
  url?: string
  source?: string
}

export const toToken = (row: Selectable<TokensTable>): TokenRecord => {
  const view = JSON.parse(row.document) as TokenView
  return {
    id: row.id,
    username: row.username,
    usage: row.usage,
    isDefault: row.is_default === 1,
    note: view.note,
    scopes: view.scopes,
    allowedUrls: view.allowedUrls ?? null,
    ...(view.allowedIps === undefined ? {} : { allowedIps: view.allowedIps }),
    // Parsed once per read record: validation compares a number (TokenValidator).
    ...(view.expiresAt === undefined ? {} : { expiresAt: Date.parse(view.expiresAt) }),
    ...(view.ratelimits === undefined ? {} : { ratelimits: view.ratelimits }),
    scopeless: row.scopeless === 1,
    keyId: row.key_id,
    created: row.created,
    modified: row.modified,
    ...(row.retires == null ? {} : { retiresAt: Date.parse(row.retires) }),
    ...(row.leaked == null ? {} : { leaked: row.leaked }),
    ...(row.lineage == null ? {} : { lineage: row.lineage }),
    ...(row.parent == null ? {} : { parent: row.parent }),
  }
}

/**
 * A record as a row; `retires` is written by `retire` alone (creates never set it), `lineage` and
 * `parent` by `insert` alone (a roll's new token, a child token), `parent` also by a roll's move
 * of the children (tokens/family.ts).
 */
export const fromToken = (
  t: TokenRecord,
): Omit<TokensTable, 'retires' | 'leaked' | 'lineage' | 'parent'> => tokenRow(t, tokenDocument(t))

/** The row with its document as given: JSON text, or the view itself (see creates.ts). */
export const tokenRow = <D>(t: TokenRecord, document: D) => ({
  id: t.id,
  username: t.username,
  usage: t.usage,
  is_default: t.isDefault ? 1 : 0,
  scopeless: t.scopeless ? 1 : 0,
  key_id: t.keyId,
  created: t.created,
  modified: t.modified,
  document,
})

export const tokensRepo = {
  async insert(db: Executor, t: TokenRecord): Promise<void> {
    const row = {
      ...fromToken(t),
      ...(t.lineage === undefined ? {} : { lineage: t.lineage }),
      ...(t.parent === undefined ? {} : { parent: t.parent }),
    }
    await db.insertInto('tokens').values(row).execute()
  },

  /** `documents`, when given, are the records' documents already written (tokenDocument). */
  async insertMany(db: Executor, ts: TokenRecord[], documents?: string[]): Promise<void> {
    if (ts.length === 0) return
    const all = documents
      ? ts.map((t, i) => tokenRow(t, documents[i] as string))
      : ts.map(fromToken)
    for (const rows of powerOfTwoRuns(all)) {
      // In the column order of fromToken, which Kysely follows (compiledOnce checks it).
      const parameters: unknown[] = []
      for (const r of rows) {
        parameters.push(r.id, r.username, r.usage, r.is_default, r.scopeless)
        parameters.push(r.key_id, r.created, r.modified, r.document)
      }
      await db.executeQuery(
        compiledOnce(db, `insert tokens ${rows.length}`, parameters, () =>
          db.insertInto('tokens').values(rows),
        ),
      )
    }
  },

  /** Every token of an account (a change of plan walks them). */
  async ofAccount(db: Executor, username: string): Promise<TokenRecord[]> {
    const rows = await db
      .selectFrom('tokens')
      .selectAll()
      .where('username', '=', username)
      .execute()
    return rows.map(toToken)
  },

  async find(db: Executor, id: string): Promise<TokenRecord | undefined> {
    const { rows } = await db.executeQuery(
      compiledOnce(db, 'find token', [id], () =>
        db.selectFrom('tokens').selectAll().where('id', '=', id),
      ),
    )
    const row = rows[0] as Selectable<TokensTable> | undefined
    return row && toToken(row)
  },

  async update(db: Executor, t: TokenRecord): Promise<void> {
    const { id, username, ...changes } = fromToken(t)
    await db.updateTable('tokens').set(changes).where('id', '=', id).execute()
  },

  /**
   * The old token of a roll: no longer the default, valid until `at` (ISO). Only a token not
   * retiring already: false when it is (or is gone), so that of two rolls at once one wins (a
   * PostgreSQL update waits for the other's row lock, then sees its `retires`).
   */
  async retire(db: Executor, id: string, at: string): Promise<boolean> {
    const result = await db
      .updateTable('tokens')
      .set({ retires: at, is_default: 0 })
      .where('id', '=', id)
      .where('retires', 'is', null)
      .executeTakeFirst()
    return result.numUpdatedRows > 0n
  },

  /** The old token of a roll ending now: deleted unless it is retiring already (see retire). */
  async deleteUnretired(db: Executor, username: string, id: string): Promise<boolean> {
    return deleteToken(db, username, id, true)
  },

  /** The account's tokens reported leaked and kept, with when. */
  async leakedOf(db: Executor, username: string): Promise<Map<string, string>> {
    const rows = await db
      .selectFrom('tokens')
      .select(['id', 'leaked'])
      .where('username', '=', username)
      .where('leaked', 'is not', null)
      .execute()
    return new Map(rows.map((r) => [r.id, r.leaked as string]))
  },

  /**
   * Where a token kept after a leak report was found: the details of its latest `token.leaked`
   * event (undefined when the audit log no longer has one).
   */
  async leakEvidence(
    db: Executor,
    username: string,
    id: string,
  ): Promise<Omit<LeakEvidence, 'at'> | undefined> {
    const row = await db
      .selectFrom('audit_events')
      .select('details')
      .where('username', '=', username)
      .where('action', '=', 'token.leaked')
      .where('target_id', '=', id)
      .orderBy('id', 'desc')
      .limit(1)
      .executeTakeFirst()
    if (row?.details == null) return undefined
    const details = JSON.parse(row.details) as Record<string, unknown>
    const evidence: Omit<LeakEvidence, 'at'> = {}
    for (const key of ['via', 'url', 'source'] as const) {
      const value = details[key]
      if (typeof value === 'string') evidence[key] = value
    }
    return evidence
  },

  /** Marks a token reported leaked and kept. */
  async flagLeaked(db: Executor, id: string, at: string): Promise<void> {
    await db.updateTable('tokens').set({ leaked: at }).where('id', '=', id).execute()
  },

  /** Rolled tokens whose end has come (at most `limit`): their ids and accounts. */
  async retired(db: Executor, at: string, limit: number) {
    return db
      .selectFrom('tokens')
      .select(['id', 'username'])
      .where('retires', '<=', at)
      .limit(limit)
      .execute()
  },

  /** Deletes a token of an account that stays, keeping whose it was (gone_tokens). */
  async delete(db: Executor, username: string, id: string): Promise<boolean> {
    return deleteToken(db, username, id, false)
  },
}
