import { cliActor } from '../audit/events.js'
import type { Group } from './commands.js'
import { inFlags } from './ends.js'
import type { Args } from './words.js'

/** An option's text as the number it spells, or as it is (the service says what is wrong). */
const number = (text: string | undefined) =>
  text === undefined ? undefined : /^[0-9]{1,9}$/.test(text) ? Number(text) : text

/** The policy the options spell; a key without its option has no rule of the account's own. */
function policyOf(values: Args['values']): Record<string, unknown> {
  const policy: Record<string, unknown> = {
    maxSkLifetimeDays: number(values['max-sk-lifetime-days']),
    idleDays: number(values['idle-days']),
    rollGraceMaxHours: number(values['roll-grace-max-hours']),
  }
  if (values['pk-allowed-urls'] === true) policy.pkAllowedUrls = true
  for (const key of Object.keys(policy)) if (policy[key] === undefined) delete policy[key]
  return policy
}

/** The policy's keys as `policy set` spells them. */
const flags = {
  maxSkLifetimeDays: '--max-sk-lifetime-days',
  pkAllowedUrls: '--pk-allowed-urls',
  idleDays: '--idle-days',
  rollGraceMaxHours: '--roll-grace-max-hours',
}

/**
 * `tessera policy show|set <username> [...]`: the account's token policy (docs/token-policy.md),
 * the same service as the admin API's, a change audited as the CLI's. `set` replaces the
 * account's own policy as a whole: with no option, it has none (its plan's still holds).
 */
export const policyCommand: Group = async (ctx, _config, { positionals, values }) => {
  const [, sub, username, extra] = positionals
  if (username === undefined || extra !== undefined) return undefined
  if (sub === 'show') return ctx.accounts.tokenPolicy(await ctx.accounts.get(username))
  if (sub !== 'set') return undefined
  const set = () => ctx.accounts.setTokenPolicy(username, policyOf(values), cliActor)
  return inFlags(flags, set)
}
