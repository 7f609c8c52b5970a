import type { Config } from '../config.js'
import { type AppContext, createContext } from '../context.js'
import { UsageError } from './args.js'
import {
  accountCommand,
  adminKeyCommand,
  auditCommand,
  type Group,
  record,
  tokenCommand,
} from './commands.js'
import { creditsCommand } from './credits.js'
import { rotateKeys } from './keys.js'
import { memberCommand } from './members.js'
import { policyCommand } from './policy.js'
import { ratelimitsCommand } from './ratelimits.js'
import { verificationsCommand } from './verifications.js'
import { webhookCommand } from './webhooks.js'
import type { Args, Command } from './words.js'

/** The commands that run on the services, by their first word. */
const groups = new Map<string, Group>([
  ['admin-key', adminKeyCommand],
  ['audit', auditCommand],
  ['webhook', webhookCommand],
  ['member', memberCommand],
  ['account', accountCommand],
  ['token', tokenCommand],
  ['credits', creditsCommand],
  ['policy', policyCommand],
  ['ratelimits', ratelimitsCommand],
  ['verifications', verificationsCommand],
])

async function withContext<T>(config: Config, use: (ctx: AppContext) => Promise<T>) {
  const ctx = await createContext(config)
  try {
    return await use(ctx)
  } finally {
    await ctx.close()
  }
}

/**
 * A command on the database, through the same services as the API (src/context.ts, without
 * the HTTP server): what it prints.
 */
export function runOnServices(command: Command, args: Args, config: Config): Promise<unknown> {
  if (command.words === 'keys rotate') {
    return rotateKeys(config, (id) =>
      withContext(config, (ctx) => record(ctx, 'signing_key.added', { type: 'signing_key', id })),
    )
  }
  return withContext(config, async (ctx) => {
    if (command.words === 'migrate') return { migrated: true }
    const done = await groups.get(args.positionals[0] as string)?.(ctx, config, args)
    // The words name a command, but not its arguments: its own usage line.
    if (done === undefined) throw new UsageError(`usage: tessera ${command.usage}`)
    return done
  })
}
