import { type Kysely, sql } from 'kysely'

// Metering (issue 33). Verifications by outcome, per account, token and time bucket, in three
// tables of one shape: minutes, hours and days. A flush adds to all three in one transaction
// (the rollup is done when counts are written), and each table is pruned on its own retention.
// `at` is the bucket's start as a prefix of ISO 8601 in UTC: `YYYY-MM-DDTHH:MM` (minutes),
// `YYYY-MM-DDTHH` (hours), `YYYY-MM-DD` (days). `account` is '' for a string no account can be
// told from (malformed, or a signature that fails); `token_id` is '' for temporary tokens,
// which carry no id. One column per outcome: a row per token and bucket, not per outcome.
// `usage_reports`: the batches verifiers reported, so that a batch sent twice counts once.
// `credits`: a token's balance (`token_id`) or its account's (`token_id` ''), see usage/credits.
// `credit_leases`: the leases granted to verifiers, so that a return counts once, for the
// lease's own account and token, and in the periods it was granted in.
// The hourly `token_usage` of validations (0003) is copied into `usage_hours` and dropped.
// Shipped migrations are never edited; add a new one instead.
export const outcomeColumns = [
  'valid',
  'malformed',
  'invalid',
  'expired',
  'revoked',
  'rate_limited',
  'url_not_allowed',
  'ip_not_allowed',
  'scope_missing',
  'credits_exhausted',
] as const

const tables = [
  ['usage_minutes', 16],
  ['usage_hours', 13],
  ['usage_days', 10],
] as const

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const [table, width] of tables) {
    let create = db.schema
      .createTable(table)
      .addColumn('account', 'varchar(32)', (c) => c.notNull())
      .addColumn('at', `varchar(${width})`, (c) => c.notNull())
      .addColumn('token_id', 'varchar(25)', (c) => c.notNull())
    for (const outcome of outcomeColumns) {
      create = create.addColumn(outcome, 'bigint', (c) => c.notNull().defaultTo(0))
    }
    await create.addPrimaryKeyConstraint(`${table}_pk`, ['account', 'at', 'token_id']).execute()
    await db.schema.createIndex(`${table}_by_at`).on(table).column('at').execute()
  }
  await sql`insert into usage_hours (account, at, token_id, valid)
    select tokens.username, token_usage.hour, token_usage.token_id, token_usage.count
    from token_usage join tokens on tokens.id = token_usage.token_id`.execute(db)
  await sql`insert into usage_days (account, at, token_id, valid)
    select tokens.username, substr(token_usage.hour, 1, 10), token_usage.token_id,
      sum(token_usage.count)
    from token_usage join tokens on tokens.id = token_usage.token_id
    group by tokens.username, substr(token_usage.hour, 1, 10), token_usage.token_id`.execute(db)
  await db.schema.dropTable('token_usage').execute()

  await db.schema
    .createTable('usage_reports')
    .addColumn('reporter', 'varchar(64)', (c) => c.notNull())
    .addColumn('batch', 'varchar(64)', (c) => c.notNull())
    .addColumn('received', 'varchar(24)', (c) => c.notNull())
    .addPrimaryKeyConstraint('usage_reports_pk', ['reporter', 'batch'])
    .execute()
  await db.schema
    .createIndex('usage_reports_by_received')
    .on('usage_reports')
    .column('received')
    .execute()

  await db.schema
    .createTable('credits')
    .addColumn('account', 'varchar(32)', (c) => c.notNull())
    .addColumn('token_id', 'varchar(25)', (c) => c.notNull())
    .addColumn('remaining', 'bigint', (c) => c.notNull())
    // The balance the period started with (set or refilled): thresholds are shares of it.
    .addColumn('balance', 'bigint', (c) => c.notNull())
    // A refill sets `remaining` to `refill_amount`: `daily` at 00:00 UTC, or `monthly` on
    // `refill_day` (1 to 28) at 00:00 UTC. Null: no refill.
    .addColumn('refill_interval', 'varchar(8)')
    .addColumn('refill_amount', 'bigint')
    .addColumn('refill_day', 'integer')
    // When the current period began (ISO 8601): the last set or refill.
    .addColumn('period', 'varchar(24)', (c) => c.notNull())
    // The highest threshold (percent spent) already announced in this period; 0 for none.
    .addColumn('notified', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('changed', 'varchar(24)', (c) => c.notNull())
    // A balance the account's plan gave: the plan and its credits settings it came from
    // (`<plan> <amount> <refill | none> <day | ->`); when they are no longer the account's, the
    // balance follows the plan. Null: set by an operator, which no plan change touches.
    .addColumn('plan', 'varchar(128)')
    .addPrimaryKeyConstraint('credits_pk', ['account', 'token_id'])
    .execute()

  await db.schema
    .createTable('credit_leases')
    // 128 random bits, base64url: what the verifier returns.
    .addColumn('id', 'varchar(22)', (c) => c.notNull().primaryKey())
    .addColumn('account', 'varchar(32)', (c) => c.notNull())
    // '' for a lease of the account's balance alone (a tk).
    .addColumn('token_id', 'varchar(25)', (c) => c.notNull())
    // The periods of the balances it was taken from; null: that balance did not exist.
    .addColumn('token_period', 'varchar(24)')
    .addColumn('account_period', 'varchar(24)')
    .addColumn('granted', 'bigint', (c) => c.notNull())
    // What was credited back; null until the lease is returned (a lease is returned once).
    .addColumn('returned', 'bigint')
    .addColumn('expires', 'varchar(24)', (c) => c.notNull())
    .execute()
  await db.schema
    .createIndex('credit_leases_by_expires')
    .on('credit_leases')
    .column('expires')
    .execute()
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('credit_leases').execute()
  await db.schema.dropTable('credits').execute()
  await db.schema.dropTable('usage_reports').execute()
  await db.schema
    .createTable('token_usage')
    .addColumn('token_id', 'varchar(25)', (c) => c.notNull())
    .addColumn('hour', 'varchar(13)', (c) => c.notNull())
    .addColumn('count', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('token_usage_pk', ['token_id', 'hour'])
    .execute()
  await db.schema.createIndex('token_usage_by_hour').on('token_usage').column('hour').execute()
  await sql`insert into token_usage (token_id, hour, count)
    select token_id, at, valid from usage_hours where token_id <> '' and valid > 0`.execute(db)
  for (const [table] of tables) await db.schema.dropTable(table).execute()
}
