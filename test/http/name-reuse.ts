import { cliActor } from '../../src/audit/events.js'
import { all } from '../helpers.js'
import type { serving } from './serving.js'

type Serving = Awaited<ReturnType<typeof serving>>

const minute = 60_000
const hour = 60 * minute

/** A temporary token made over the socket by a new sk with every scope: both. */
async function temporary(s: Serving, name: string, lifeMs: number) {
  const maker = await s.h.token(name, all)
  const made = await s.socket(
    `/tokens/v2/${name}?access_token=${maker.token}`,
    'POST',
    {},
    JSON.stringify({ expires: new Date(s.h.clock.now + lifeMs).toISOString(), scopes: [] }),
  )
  return { token: JSON.parse(made.body).token as string, maker }
}

/**
 * Two expired temporary tokens of one name: `former`, made by the account that had it and was
 * deleted, and `own`, made by the account that has it now (re-created two hours later); and
 * the sks that made them.
 */
export async function expiredTemporaries(s: Serving, name: string) {
  const former = await temporary(s, name, hour)
  await s.h.ctx.accounts.remove(name, cliActor)
  s.h.clock.now += 2 * hour
  await s.h.ctx.accounts.create(name, undefined, [], cliActor)
  const own = await temporary(s, name, minute)
  s.h.clock.now += 2 * minute
  return { former: former.token, formerMaker: former.maker, own: own.token, ownMaker: own.maker }
}
