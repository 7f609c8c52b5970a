import type { Migration, MigrationProvider } from 'kysely'
import * as initial from './0001-initial.js'
import * as accountHolders from './0002-account-holders.js'
import * as operations from './0003-operations.js'
import * as eventOutbox from './0004-event-outbox.js'
import * as webhooks from './0005-webhooks.js'
import * as members from './0006-members.js'
import * as factors from './0007-factors.js'
import * as roll from './0008-roll.js'
import * as retiringIndex from './0009-retiring-index.js'
import * as emailProof from './0010-email-proof.js'
import * as rollLineage from './0011-roll-lineage.js'
import * as sessionProof from './0012-session-proof.js'
import * as metering from './0013-metering.js'
import * as tokenHygiene from './0014-token-hygiene.js'
import * as reporterNamespace from './0015-reporter-namespace.js'
import * as goneTokens from './0016-gone-tokens.js'
import * as invitationMailsIndex from './0017-invitation-mails-index.js'
import * as namedRatelimits from './0018-named-ratelimits.js'
import * as usageLimited from './0019-usage-limited.js'
import * as childTokens from './0020-child-tokens.js'
import * as verificationLog from './0021-verification-log.js'

/** Registered explicitly (no globbing) so that they survive bundling. Append only. */
const migrations: Record<string, Migration> = {
  '0001-initial': initial,
  '0002-account-holders': accountHolders,
  '0003-operations': operations,
  '0004-event-outbox': eventOutbox,
  '0005-webhooks': webhooks,
  '0006-members': members,
  '0007-factors': factors,
  '0008-roll': roll,
  '0009-retiring-index': retiringIndex,
  '0010-email-proof': emailProof,
  '0011-roll-lineage': rollLineage,
  '0012-session-proof': sessionProof,
  '0013-metering': metering,
  '0014-token-hygiene': tokenHygiene,
  '0015-reporter-namespace': reporterNamespace,
  '0016-gone-tokens': goneTokens,
  '0017-invitation-mails-index': invitationMailsIndex,
  '0018-named-ratelimits': namedRatelimits,
  '0019-usage-limited': usageLimited,
  '0020-child-tokens': childTokens,
  '0021-verification-log': verificationLog,
}

export const migrationProvider: MigrationProvider = {
  getMigrations: async () => migrations,
}
