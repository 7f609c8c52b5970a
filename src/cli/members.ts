import { cliActor } from '../audit/events.js'
import { configuredOrigin } from '../config.js'
import type { Group } from './commands.js'

/** `tessera member ...`: what it prints, or undefined for a command it does not know. */
export const memberCommand: Group = async (ctx, config, { positionals, values }) => {
  const [, sub, account, a, b, ...rest] = positionals
  if (account === undefined || rest.length > 0) return undefined
  const { members } = ctx
  if (sub === 'list' && a === undefined) return members.list(account)
  if (sub === 'add' && a !== undefined && b === undefined) {
    const role = values.role ?? 'developer'
    const made = await members.invite(account, { email: a, role }, cliActor)
    const origin = configuredOrigin(config.http)
    return {
      email: made.invitation.email,
      role: made.invitation.role,
      invitationUrl: `${origin}/account/invitations/${made.secret}`,
      expires: made.invitation.expires,
      // Where SMTP_URL is set: whether it was mailed too, or held by the day's limits.
      ...(made.mailed === undefined ? {} : { mailed: made.mailed }),
    }
  }
  if (sub === 'set-role' && a !== undefined && b !== undefined) {
    return members.setRole(account, a, b, cliActor)
  }
  if (sub === 'remove' && a !== undefined && b === undefined) {
    await members.remove(account, a, cliActor)
    return { account, login: a, removed: true }
  }
  return undefined
}
