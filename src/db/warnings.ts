import { type Kysely, PostgresAdapter, type RawBuilder, type Selectable, sql } from 'kysely'
import { type AccountRecord, type TokenRecord, toAccount, toToken } from './repositories.js'
import type { Database, TokensTable } from './schema.js'
import type { TokenWarningsTable } from './schema-hygiene.js'

type Executor = Kysely<Database>

/** A token with its last use (ISO; none if never used since last-use records began). */
export interface IdleCandidate {
  token: TokenRecord
  lastUsed?: string
}

/**
 * A token's `expiresAt` as the index `tokens_expiring` (migration 0014) holds it, and the
 * partial index's own test, which a query must repeat for the index to serve it.
 */
function expiresAt(db: Executor): { value: RawBuilder<string>; has: RawBuilder<boolean> } {
  return db.getExecutor().adapter instanceof PostgresAdapter
    ? {
        value: sql<string>`((tokens.document::json) ->> 'expiresAt')`,
        has: sql<boolean>`strpos(tokens.document, '"expiresAt":') > 0`,
      }
    : {
        value: sql<string>`json_extract(tokens.document, '$.expiresAt')`,
        has: sql<boolean>`instr(tokens.document, '"expiresAt":') > 0`,
      }
}

/** Which tokens a scan reads: of one account, without those warned already of a kind. */
interface Scan {
  username?: string
  /** Leaves out the tokens given this kind of warning about the instant the scan reads. */
  unwarned?: string
  limit: number
}

/** No warning of `kind` was given about this token and instant. */
const unwarned = (kind: string, basis: RawBuilder<unknown>) =>
  sql<boolean>`not exists (select 1 from token_warnings w where w.token_id = tokens.id
    and w.kind = ${kind} and w.basis = ${basis})`

/** The warnings given (token_warnings) and the tokens they are about. */
export const warningsRepo = {
  /** Tokens whose end of life is after `after` and at or before `until` (ISO), soonest first. */
  async expiring(
    db: Executor,
    after: string,
    until: string,
    options: Scan,
  ): Promise<TokenRecord[]> {
    const e = expiresAt(db)
    let q = db
      .selectFrom('tokens')
      .selectAll()
      .where(e.has)
      .where(e.value, '>', after)
      .where(e.value, '<=', until)
    if (options.username !== undefined) q = q.where('username', '=', options.username)
    if (options.unwarned !== undefined) q = q.where(unwarned(options.unwarned, e.value))
    const rows = await q.orderBy(e.value).limit(options.limit).execute()
    return rows.map(toToken)
  },

  /** Rolled tokens whose end is after `after` and at or before `until`, soonest first. */
  async retiring(
    db: Executor,
    after: string,
    until: string,
    options: Scan,
  ): Promise<TokenRecord[]> {
    let q = db
      .selectFrom('tokens')
      .selectAll()
      .where('retires', '>', after)
      .where('retires', '<=', until)
    if (options.username !== undefined) q = q.where('username', '=', options.username)
    if (options.unwarned !== undefined) q = q.where(unwarned(options.unwarned, sql.ref('retires')))
    const rows = await q.orderBy('retires').limit(options.limit).execute()
    return rows.map(toToken)
  },

  /**
   * The account's tokens that idle deletion may take (neither its default token, a rolled one
   * nor one with children), unused since `before` (ISO): their last use, or their creation if none was recorded.
   */
  async idle(
    db: Executor,
    username: string,
    before: string,
    limit: number,
  ): Promise<IdleCandidate[]> {
    const rows = await db
      .selectFrom('tokens')
      .leftJoin('token_last_used', 'token_last_used.token_id', 'tokens.id')
      .selectAll('tokens')
      .select('token_last_used.at as last_used')
      .where('tokens.username', '=', username)
      .where('tokens.is_default', '=', 0)
      .where('tokens.retires', 'is', null)
      // A token with children is in use through them (docs/machines.md): never idle itself.
      .where(({ not, exists, selectFrom }) =>
        not(
          exists(selectFrom('tokens as c').select('c.id').whereRef('c.parent', '=', 'tokens.id')),
        ),
      )
      .where(sql<string>`coalesce(token_last_used.at, tokens.created)`, '<=', before)
      .orderBy(sql`coalesce(token_last_used.at, tokens.created)`)
      .limit(limit)
      .execute()
    return rows.map((row) => {
      const { last_used, ...token } = row as Selectable<TokensTable> & { last_used: string | null }
      return last_used === null
        ? { token: toToken(token) }
        : { token: toToken(token), lastUsed: last_used }
    })
  },

  /** The accounts that may have an idle rule: with a policy of their own, or on these plans. */
  async withPolicy(db: Executor, plans: string[]): Promise<AccountRecord[]> {
    const rows = await db
      .selectFrom('accounts')
      .selectAll()
      .where((eb) =>
        plans.length === 0
          ? eb('token_policy', 'is not', null)
          : eb.or([eb('token_policy', 'is not', null), eb('plan', 'in', plans)]),
      )
      .orderBy('username')
      .execute()
    return rows.map(toAccount)
  },

  /** Records a warning unless it was given: whether this call gave it (once across a fleet). */
  async give(db: Executor, row: TokenWarningsTable): Promise<boolean> {
    const result = await db
      .insertInto('token_warnings')
      .values(row)
      .onConflict((oc) => oc.columns(['token_id', 'kind', 'basis']).doNothing())
      .executeTakeFirst()
    return Number(result.numInsertedOrUpdatedRows ?? 0) > 0
  },

  /**
   * Gives a warning again (a new `at`) if it is still as it was read (`at` unchanged): whether
   * this call did, once across a fleet as `give`.
   */
  async renew(db: Executor, row: TokenWarningsTable, was: string): Promise<boolean> {
    const result = await db
      .updateTable('token_warnings')
      .set({ at: row.at })
      .where('token_id', '=', row.token_id)
      .where('kind', '=', row.kind)
      .where('basis', '=', row.basis)
      .where('at', '=', was)
      .executeTakeFirst()
    return Number(result.numUpdatedRows) > 0
  },

  /** The warnings of a kind given about these tokens. */
  async given(
    db: Executor,
    kind: string,
    ids: string[],
  ): Promise<Selectable<TokenWarningsTable>[]> {
    if (ids.length === 0) return []
    return db
      .selectFrom('token_warnings')
      .selectAll()
      .where('kind', '=', kind)
      .where('token_id', 'in', ids)
      .execute()
  },

  /** Warnings of a kind about an account's tokens, with the token and its last use. */
  async warnedOf(db: Executor, username: string, kind: string) {
    const rows = await db
      .selectFrom('token_warnings')
      .innerJoin('tokens', 'tokens.id', 'token_warnings.token_id')
      .leftJoin('token_last_used', 'token_last_used.token_id', 'tokens.id')
      .selectAll('tokens')
      .select([
        'token_warnings.basis',
        'token_warnings.at as warned',
        'token_last_used.at as last_used',
      ])
      .where('token_warnings.username', '=', username)
      .where('token_warnings.kind', '=', kind)
      .execute()
    return rows.map((row) => {
      const { basis, warned, last_used, ...token } = row as Selectable<TokensTable> & {
        basis: string
        warned: string
        last_used: string | null
      }
      return { token: toToken(token), basis, warned, lastUsed: last_used ?? undefined }
    })
  },

  /** Forgets the warnings of tokens that are gone. */
  async prune(db: Executor): Promise<void> {
    await db
      .deleteFrom('token_warnings')
      .where(({ not, exists, selectFrom }) =>
        not(
          exists(
            selectFrom('tokens').select('id').whereRef('tokens.id', '=', 'token_warnings.token_id'),
          ),
        ),
      )
      .execute()
  },
}
