import { type Kysely, sql } from 'kysely'

// Child tokens (issue 46, docs/machines.md): a token made under another records its parent's id.
// Deleting, revoking or expiring a parent ends its descendants (tokens/family.ts), which are
// found by this column, level by level: hence the index. Null for every other token. The
// parent's id is also in the token's document (the wire object shows it).
//
// Workload identity exchange: each account's trust policies (JSON, exchange/policies.ts), and the
// `jti`s of the identity tokens exchanged, kept until each token's own end so that a replay is
// refused on every instance (exchange_jtis, unique by issuer and jti).
// Shipped migrations are never edited; add a new one instead.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('tokens').addColumn('parent', 'varchar(32)').execute()
  // Partial: only child tokens have a parent, and every other insert then maintains no index.
  await db.schema
    .createIndex('tokens_by_parent')
    .on('tokens')
    .column('parent')
    .where(sql.ref('parent'), 'is not', null)
    .execute()
  await db.schema.alterTable('accounts').addColumn('trust_policies', 'text').execute()
  await db.schema
    .createTable('exchange_jtis')
    .addColumn('issuer', 'varchar(512)', (c) => c.notNull())
    .addColumn('jti', 'varchar(256)', (c) => c.notNull())
    .addColumn('expires', 'varchar(24)', (c) => c.notNull())
    .addPrimaryKeyConstraint('exchange_jtis_pk', ['issuer', 'jti'])
    .execute()
  await db.schema
    .createIndex('exchange_jtis_by_expires')
    .on('exchange_jtis')
    .column('expires')
    .execute()
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('exchange_jtis').execute()
  await db.schema.alterTable('accounts').dropColumn('trust_policies').execute()
  await db.schema.dropIndex('tokens_by_parent').execute()
  await db.schema.alterTable('tokens').dropColumn('parent').execute()
}
