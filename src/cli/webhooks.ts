import { cliActor } from '../audit/events.js'
import { type Group, limitOption } from './commands.js'

/** `tessera webhook ...`: what it prints, or undefined for a command it does not know. */
export const webhookCommand: Group = async (ctx, _config, { positionals, values }) => {
  const [, sub, arg] = positionals
  const hooks = ctx.webhooks.service
  if (sub === 'list' && arg === undefined) {
    const all = []
    for (;;) {
      const page = await hooks.list(all.at(-1)?.id, 100)
      all.push(...page)
      if (page.length < 100) return all
    }
  }
  if (arg === undefined) return undefined
  if (sub === 'add') {
    const events = values.events
      ?.split(',')
      .map((e) => e.trim())
      .filter((e) => e !== '')
    return hooks.create(arg, events, cliActor)
  }
  if (sub === 'remove') {
    await hooks.remove(arg, cliActor)
    return { id: arg, removed: true }
  }
  if (sub === 'ping') return hooks.ping(arg)
  if (sub === 'deliveries') return hooks.deliveries(arg, values.start, limitOption(values.limit))
  return undefined
}
