import { type Kysely, sql } from 'kysely'

// 0008's index on tokens.retires held a null for every token, and every create paid for it.
// Only rolled tokens have a `retires`: a partial index holds those alone. The sweep's
// `retires <= ?` implies `retires is not null`, so both databases use it for the sweep.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('tokens_retiring').execute()
  await db.schema
    .createIndex('tokens_retiring')
    .on('tokens')
    .column('retires')
    .where(sql.ref('retires'), 'is not', null)
    .execute()
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('tokens_retiring').execute()
  await db.schema.createIndex('tokens_retiring').on('tokens').column('retires').execute()
}
