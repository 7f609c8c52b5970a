import { randomAlnum } from '../../src/ids.js'
import { dialect } from '../dialect.js'

/** Redis beside PostgreSQL when the run has it: the throttle is then shared, as in a fleet. */
export const sharedThrottle = () =>
  dialect === 'postgres' && process.env.TEST_REDIS_URL
    ? {
        REDIS_URL: process.env.TEST_REDIS_URL,
        REDIS_KEY_PREFIX: `tessera-test-${randomAlnum(10)}:`,
      }
    : {}

/** How many answers had each status, by status. */
export const tally = (statuses: number[]) =>
  Object.fromEntries(
    [...new Set(statuses)].sort().map((s) => [s, statuses.filter((t) => t === s).length]),
  )
