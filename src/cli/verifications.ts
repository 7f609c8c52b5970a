import { ApiError } from '../errors.js'
import { isoTime, parseTimestamp } from '../time.js'
import { listVerifications } from '../verification/listing.js'
import { type Group, limitOption } from './commands.js'
import { inFlags } from './ends.js'

const unitMs = { m: 60_000, h: 3_600_000, d: 86_400_000, w: 7 * 86_400_000 } as const

/** The API's names in a refusal, said as the flags the person typed. */
const flags = {
  from: '--since',
  to: '--until',
  token: '--token',
  outcome: '--outcome',
  source: '--source',
}

/** `--since`: a duration back from `now` (`15m`, `2h`, `7d`, `2w`), or a date or timestamp. */
function sinceOption(text: string | undefined, now: number): string | undefined {
  if (text === undefined) return undefined
  const duration = /^([0-9]{1,5})([mhdw])$/.exec(text)
  if (duration !== null) {
    return isoTime(now - Number(duration[1]) * unitMs[duration[2] as keyof typeof unitMs])
  }
  const date = /^[0-9]{4}-[0-9]{2}-[0-9]{2}$/.test(text)
  if (parseTimestamp(date ? `${text}T00:00:00Z` : text) !== undefined) return text
  throw new ApiError(
    'invalidResources',
    '--since must be a duration back from now (15m, 2h, 7d, 2w), a date (2026-12-10: its start, ' +
      `UTC) or an ISO 8601 timestamp; not ${text}`,
  )
}

/**
 * `tessera verifications <username> [--token ID] [--outcome a,b] [--source a,b] [--since T]
 * [--until T] [--limit N]`: a page of the account's verification log, newest first, the rows
 * as the admin API answers them (the same listing). Rows dropped unwritten in the range are
 * told on stderr, as the API's `Verification-Log-Dropped` header tells them.
 */
export const verificationsCommand: Group = async (ctx, _config, { positionals, values }) => {
  const [, username, extra] = positionals
  if (username === undefined || extra !== undefined) return undefined
  const limit = limitOption(values.limit)
  const now = ctx.tokens.now()
  const query = {
    from: sinceOption(values.since, now),
    to: values.until,
    token: values.token,
    outcome: values.outcome,
    source: values.source,
    limit,
  }
  const account = await ctx.accounts.get(username)
  const page = await inFlags(flags, () =>
    listVerifications(ctx.verifications, {
      account,
      query,
      now,
      retentionDays: ctx.config.usage.log.retentionDays,
    }),
  )
  if (page.dropped > 0) {
    process.stderr.write(
      `tessera: warning: ${page.dropped} rows of the verification log (of every account) were ` +
        `dropped unwritten between ${isoTime(page.from)} and ${isoTime(page.to)}: this list ` +
        'may lack some\n',
    )
  }
  return page.rows
}
