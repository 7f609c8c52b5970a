import { type Kysely, PostgresAdapter, sql } from 'kysely'

// The verification log (issue 47, docs/verifications.md): one row per verification. Append-only
// and large, so it is laid out for its two uses: an account's rows newest first (by token or
// not), and whole days going at once. On PostgreSQL the table is partitioned by day on `at`
// (epoch ms; declarative range partitions, made by the writer as days come, dropped whole by
// retention: db/verifications.ts); on SQLite it is one table pruned in bounded steps by `at`
// within each account.
// `id` is unique per row (instance prefix and counter): the cursor's tie-break within one ms.
// Shipped migrations are never edited; add a new one instead.
const columns = `
  at bigint not null,
  id varchar(32) not null,
  account varchar(32) not null,
  token_id varchar(25) not null,
  source varchar(16) not null,
  outcome varchar(24) not null,
  limit_name varchar(64),
  ip varchar(64),
  origin varchar(255),
  request_id varchar(64),
  duration_us bigint`

export async function up(db: Kysely<unknown>): Promise<void> {
  const postgres = db.getExecutor().adapter instanceof PostgresAdapter
  const partitioned = postgres ? ' partition by range (at)' : ''
  await sql.raw(`create table verifications (${columns})${partitioned}`).execute(db)
  // Indexes on a partitioned table are made on each partition, as it is attached or created.
  await sql
    .raw('create index verifications_by_account on verifications (account, at, id)')
    .execute(db)
  await sql
    .raw('create index verifications_by_token on verifications (account, token_id, at, id)')
    .execute(db)
  // No index by `at` alone: a third B-tree for every row written, where retention (SQLite's,
  // PostgreSQL drops partitions) finds its rows by account (db/verifications.ts `prune`).
  // Rows the buffer dropped, per minute and instance: the operator is told a list may lack some.
  await db.schema
    .createTable('verification_drops')
    .addColumn('minute', 'bigint', (c) => c.notNull())
    .addColumn('instance', 'varchar(32)', (c) => c.notNull())
    .addColumn('dropped', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('verification_drops_pk', ['minute', 'instance'])
    .execute()
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('verification_drops').execute()
  await db.schema.dropTable('verifications').execute()
}
