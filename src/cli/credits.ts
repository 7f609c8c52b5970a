import { cliActor } from '../audit/events.js'
import { ApiError } from '../errors.js'
import type { CreditTarget, Refill } from '../usage/credits.js'
import type { Group } from './commands.js'
import type { Args } from './words.js'

/** A whole number of `min` or more, as the admin API takes it. */
function whole(name: string, text: string | undefined, min: number): number {
  const n = text !== undefined && /^[0-9]{1,16}$/.test(text) ? Number(text) : Number.NaN
  if (!Number.isSafeInteger(n) || n < min) {
    throw new ApiError('invalidResources', `${name} must be a whole number of ${min} or more`)
  }
  return n
}

/** `--refill daily|monthly|none [--amount N] [--day D]`: undefined keeps the refill there is. */
function refillOption(values: Args['values']): Refill | null | undefined {
  const { refill, amount, day } = values
  if (refill === undefined) {
    if (amount !== undefined || day !== undefined) {
      throw new ApiError('invalidResources', '--amount and --day go with --refill')
    }
    return undefined
  }
  if (refill === 'none') {
    if (amount !== undefined || day !== undefined) {
      throw new ApiError('invalidResources', '--refill none takes no --amount or --day')
    }
    return null
  }
  if (refill !== 'daily' && refill !== 'monthly') {
    throw new ApiError('invalidResources', '--refill must be daily, monthly or none')
  }
  const out: Refill = { interval: refill, amount: whole('--amount', amount, 0) }
  if (refill === 'daily' && day !== undefined) {
    throw new ApiError('invalidResources', 'a daily refill takes no --day')
  }
  if (refill === 'monthly') {
    out.day = day === undefined ? 1 : whole('--day', day, 1)
    if (out.day > 28) throw new ApiError('invalidResources', '--day must be 1 to 28')
  }
  return out
}

/**
 * `tessera credits show|set|increment|decrement|remove <username> [...] [--token <id>]`: the
 * same service as the admin API's credits routes, changes audited as the CLI's.
 */
export const creditsCommand: Group = async (ctx, _config, { positionals, values }) => {
  const [, sub, username, arg, extra] = positionals
  if (username === undefined || extra !== undefined) return undefined
  const target: CreditTarget =
    values.token === undefined
      ? { account: username }
      : { account: username, tokenId: values.token }
  if (sub === 'show' && arg === undefined) {
    // No credits is no limit, an answer rather than a failure: scripts read `credits` null.
    const credits = await ctx.credits.get(target)
    if (credits !== undefined) return credits
    return values.token === undefined
      ? { account: username, credits: null }
      : { account: username, token: values.token, credits: null }
  }
  if (sub === 'set' && arg !== undefined) {
    const remaining = whole('remaining', arg, 0)
    return ctx.credits.set(target, { remaining, refill: refillOption(values) }, cliActor)
  }
  if ((sub === 'increment' || sub === 'decrement') && arg !== undefined) {
    const amount = whole('amount', arg, 1)
    return ctx.credits.adjust(target, sub === 'increment' ? amount : -amount, cliActor)
  }
  if (sub === 'remove' && arg === undefined) {
    await ctx.credits.remove(target, cliActor)
    return { removed: true }
  }
  return undefined
}
