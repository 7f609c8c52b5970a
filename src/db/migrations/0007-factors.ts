import type { Kysely } from 'kysely'

// Second factors of people (authenticator apps, passkeys), recovery codes, the sign-ins that
// wait for a second factor, single-use WebAuthn challenges, and an account's policy. TOTP
// secrets are stored encrypted with a key that is not in the database; recovery codes,
// challenges and pending sign-in ids only as SHA-256 hashes.
// Shipped migrations are never edited; add a new one instead.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('factors')
    .addColumn('id', 'varchar(32)', (c) => c.primaryKey())
    .addColumn('login', 'varchar(32)', (c) =>
      c.notNull().references('people.login').onDelete('cascade'),
    )
    // `totp` or `passkey`.
    .addColumn('kind', 'varchar(16)', (c) => c.notNull())
    .addColumn('name', 'varchar(64)', (c) => c.notNull())
    // TOTP: the secret, AES-256-GCM under the factors key (`v1.<iv>.<tag>.<ciphertext>`).
    .addColumn('secret', 'text')
    // TOTP: the last time step accepted; a code of it or earlier is refused (no replay).
    .addColumn('last_step', 'bigint', (c) => c.notNull().defaultTo(0))
    // Passkey: the credential id (base64url), its public key (COSE, base64url), signature count.
    .addColumn('credential_id', 'varchar(1024)')
    .addColumn('public_key', 'text')
    .addColumn('counter', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('transports', 'varchar(256)')
    // 0 until its first code confirms an authenticator app.
    .addColumn('confirmed', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('created', 'varchar(24)', (c) => c.notNull())
    .addColumn('last_used', 'varchar(24)')
    .execute()
  await db.schema.createIndex('factors_by_login').on('factors').column('login').execute()
  await db.schema
    .createIndex('factors_by_credential')
    .unique()
    .on('factors')
    .column('credential_id')
    .execute()

  await db.schema
    .createTable('recovery_codes')
    .addColumn('login', 'varchar(32)', (c) =>
      c.notNull().references('people.login').onDelete('cascade'),
    )
    .addColumn('code_hash', 'varchar(64)', (c) => c.notNull())
    .addColumn('used', 'varchar(24)')
    .addPrimaryKeyConstraint('recovery_codes_pk', ['login', 'code_hash'])
    .execute()

  // A password that was right, waiting for the second factor (5 minutes).
  await db.schema
    .createTable('pending_signins')
    .addColumn('id_hash', 'varchar(64)', (c) => c.primaryKey())
    .addColumn('login', 'varchar(32)', (c) =>
      c.notNull().references('people.login').onDelete('cascade'),
    )
    .addColumn('next', 'varchar(1024)', (c) => c.notNull())
    .addColumn('expires', 'varchar(24)', (c) => c.notNull())
    .execute()

  // WebAuthn challenges, single-use and short-lived, for any instance to finish a ceremony.
  await db.schema
    .createTable('webauthn_challenges')
    .addColumn('challenge', 'varchar(128)', (c) => c.primaryKey())
    // `register`, `signin` (a passkey alone) or `second` (after a password).
    .addColumn('purpose', 'varchar(16)', (c) => c.notNull())
    .addColumn('login', 'varchar(32)')
    .addColumn('expires', 'varchar(24)', (c) => c.notNull())
    .execute()

  await db.schema
    .createTable('account_policies')
    .addColumn('username', 'varchar(32)', (c) =>
      c.primaryKey().references('accounts.username').onDelete('cascade'),
    )
    // 1: every member signs in with a second factor (or through SSO or a portal link).
    .addColumn('require_2fa', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('changed', 'varchar(24)', (c) => c.notNull())
    .execute()
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('account_policies').execute()
  await db.schema.dropTable('webauthn_challenges').execute()
  await db.schema.dropTable('pending_signins').execute()
  await db.schema.dropTable('recovery_codes').execute()
  await db.schema.dropTable('factors').execute()
}
