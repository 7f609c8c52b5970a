import { type Kysely, sql } from 'kysely'

// The people behind an account: a person has a login (unique across the service), an email, a
// password or none (portal links, single sign-on), and a role in each account they belong to.
// Each account's holder becomes a person whose login is the account's username, its first
// owner, with the account's password: sign-ins, sessions and setup links keep working.
// Secrets (invitation and portal link ids, sign-in flow ids) are stored only as SHA-256 hashes.
// Shipped migrations are never edited; add a new one instead.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('people')
    .addColumn('login', 'varchar(32)', (c) => c.primaryKey())
    .addColumn('email', 'varchar(254)')
    .addColumn('name', 'varchar(128)')
    // `scrypt$...` (see accounts/passwords.ts); null: no password sign-in.
    .addColumn('password', 'text')
    .addColumn('password_changed', 'varchar(24)')
    // The single sign-on identity (`iss`, `sub`), once the person has used it.
    .addColumn('oidc_issuer', 'varchar(512)')
    .addColumn('oidc_subject', 'varchar(255)')
    .addColumn('created', 'varchar(24)', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('people_by_email').on('people').column('email').execute()
  await db.schema
    .createIndex('people_by_oidc')
    .unique()
    .on('people')
    .columns(['oidc_issuer', 'oidc_subject'])
    .execute()

  await db.schema
    .createTable('memberships')
    .addColumn('username', 'varchar(32)', (c) =>
      c.notNull().references('accounts.username').onDelete('cascade'),
    )
    .addColumn('login', 'varchar(32)', (c) =>
      c.notNull().references('people.login').onDelete('cascade'),
    )
    // `owner`, `developer` or `viewer`.
    .addColumn('role', 'varchar(16)', (c) => c.notNull())
    .addColumn('created', 'varchar(24)', (c) => c.notNull())
    .addPrimaryKeyConstraint('memberships_pk', ['username', 'login'])
    .execute()
  await db.schema.createIndex('memberships_by_login').on('memberships').column('login').execute()

  await db.schema
    .createTable('invitations')
    .addColumn('id_hash', 'varchar(64)', (c) => c.primaryKey())
    .addColumn('username', 'varchar(32)', (c) =>
      c.notNull().references('accounts.username').onDelete('cascade'),
    )
    .addColumn('email', 'varchar(254)', (c) => c.notNull())
    .addColumn('role', 'varchar(16)', (c) => c.notNull())
    .addColumn('invited_by', 'varchar(32)')
    .addColumn('created', 'varchar(24)', (c) => c.notNull())
    .addColumn('expires', 'varchar(24)', (c) => c.notNull())
    // Set when accepted or revoked: the link then answers 410.
    .addColumn('ended', 'varchar(24)')
    .execute()
  await db.schema
    .createIndex('invitations_by_username')
    .on('invitations')
    .column('username')
    .execute()

  await db.schema
    .createTable('portal_links')
    .addColumn('id_hash', 'varchar(64)', (c) => c.primaryKey())
    .addColumn('username', 'varchar(32)', (c) =>
      c.notNull().references('accounts.username').onDelete('cascade'),
    )
    .addColumn('email', 'varchar(254)', (c) => c.notNull())
    .addColumn('name', 'varchar(128)')
    .addColumn('role', 'varchar(16)', (c) => c.notNull())
    .addColumn('return_url', 'varchar(2048)')
    .addColumn('created', 'varchar(24)', (c) => c.notNull())
    .addColumn('expires', 'varchar(24)', (c) => c.notNull())
    .addColumn('used', 'varchar(24)')
    .execute()

  // Single sign-on redirects under way: what the callback needs to check the answer.
  await db.schema
    .createTable('sign_in_flows')
    .addColumn('id_hash', 'varchar(64)', (c) => c.primaryKey())
    .addColumn('state', 'varchar(64)', (c) => c.notNull())
    .addColumn('nonce', 'varchar(64)', (c) => c.notNull())
    .addColumn('verifier', 'varchar(128)', (c) => c.notNull())
    .addColumn('next', 'varchar(1024)', (c) => c.notNull())
    .addColumn('expires', 'varchar(24)', (c) => c.notNull())
    .execute()

  // A session is a person's, in one account at a time, begun one way.
  await db.schema.alterTable('sessions').addColumn('login', 'varchar(32)').execute()
  await db.schema
    .alterTable('sessions')
    .addColumn('method', 'varchar(16)', (c) => c.notNull().defaultTo('password'))
    .execute()
  // Where a portal link's person goes back to (its `returnUrl`), for the header's link.
  await db.schema.alterTable('sessions').addColumn('return_url', 'varchar(2048)').execute()
  await db.schema.createIndex('sessions_by_login').on('sessions').column('login').execute()

  // Who did it: the person and how they signed in, for session actors.
  await db.schema.alterTable('audit_events').addColumn('actor_login', 'varchar(32)').execute()
  await db.schema.alterTable('audit_events').addColumn('actor_method', 'varchar(16)').execute()

  await sql`insert into people (login, password, password_changed, created)
    select a.username, p.hash, p.changed, a.created
    from accounts a left join passwords p on p.username = a.username`.execute(db)
  await sql`insert into memberships (username, login, role, created)
    select username, username, 'owner', created from accounts`.execute(db)
  await sql`update sessions set login = username`.execute(db)
  await db.schema.dropTable('passwords').execute()
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('passwords')
    .addColumn('username', 'varchar(32)', (c) =>
      c.primaryKey().references('accounts.username').onDelete('cascade'),
    )
    .addColumn('hash', 'text', (c) => c.notNull())
    .addColumn('changed', 'varchar(24)', (c) => c.notNull())
    .execute()
  await sql`insert into passwords (username, hash, changed)
    select p.login, p.password, p.password_changed from people p
    join accounts a on a.username = p.login where p.password is not null`.execute(db)
  await db.schema.alterTable('audit_events').dropColumn('actor_method').execute()
  await db.schema.alterTable('audit_events').dropColumn('actor_login').execute()
  await db.schema.dropIndex('sessions_by_login').execute()
  await db.schema.alterTable('sessions').dropColumn('return_url').execute()
  await db.schema.alterTable('sessions').dropColumn('method').execute()
  await db.schema.alterTable('sessions').dropColumn('login').execute()
  await db.schema.dropTable('sign_in_flows').execute()
  await db.schema.dropTable('portal_links').execute()
  await db.schema.dropTable('invitations').execute()
  await db.schema.dropTable('memberships').execute()
  await db.schema.dropTable('people').execute()
}
