import { readFileSync } from 'node:fs'
import { cliActor } from '../audit/events.js'
import { CommandError } from './args.js'
import type { Group } from './commands.js'

/**
 * The limits as the command line gives them: JSON text, or `@file` holding it; a list stands
 * for `{"limits": list}`. What is wrong with the limits themselves the service says.
 */
function limitsOf(given: string): unknown {
  let text = given
  if (given.startsWith('@')) {
    try {
      text = readFileSync(given.slice(1), 'utf8')
    } catch (err) {
      throw new CommandError(`cannot read ${given.slice(1)}: ${(err as Error).message}`)
    }
  }
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    throw new CommandError(
      `the limits are not JSON: give a list such as '[{"name": "requests", "limit": 600, "duration": 60000}]' or @file`,
    )
  }
  return Array.isArray(value) ? { limits: value } : value
}

/**
 * `tessera ratelimits show|set <username> [<limits>]`: the account's named rate limits
 * (docs/ratelimits.md), the same service as the admin API's, a change audited as the CLI's.
 * `set` replaces the account's own as a whole: `[]` leaves none of its own (its plan's hold).
 */
export const ratelimitsCommand: Group = async (ctx, _config, { positionals }) => {
  const [, sub, username, given, extra] = positionals
  if (username === undefined || extra !== undefined) return undefined
  const { book } = ctx.checkpoint
  if (sub === 'show' && given === undefined) {
    return ctx.accounts.ratelimits(await ctx.accounts.get(username), book)
  }
  if (sub === 'set' && given !== undefined) {
    return ctx.accounts.setRatelimits(username, limitsOf(given), cliActor, book)
  }
  return undefined
}
