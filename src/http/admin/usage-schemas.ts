import { Type } from '@sinclair/typebox'
import { limitNamePattern, maxLimits } from '../../ratelimit/named.js'
import { outcomes } from '../../usage/outcomes.js'
import { batchCountMax } from '../../verification/reports.js'
import { PageQuery, resources } from './schemas.js'

/** Schemas of the admin API's usage routes (docs/metering.md). */

const usernameOrNone = '^([a-z0-9][a-z0-9_-]{0,31})?$'
const tokenOrNone = '^(c[a-z0-9]{24})?$'
const name = '^[A-Za-z0-9._:-]{1,64}$'
/** A count of a batch; the sum of one outcome of one (account, token, minute) in a batch is
 * bounded the same, so that no flush of them overflows a bigint. */
const countMax = batchCountMax
/** An address as a verifier saw it (IPv4, IPv6), and a host of an Origin. */
const ipish = '^[0-9A-Fa-f.:]+$'
const hostish = '^[A-Za-z0-9.:[\\]_-]+$'
/** Refused rows in one report: a verifier sends the rest as counts only. */
export const maxRefusedRows = 1000
/** Credits a returned lease gives back. */
const leaseMax = 1_000_000_000_000

/** Counts by outcome, outcomes with no count left out. */
export const Outcomes = Type.Object(
  Object.fromEntries(outcomes.map((o) => [o, Type.Optional(Type.Integer())])),
  { description: `Counts by outcome (${outcomes.join(', ')}); an outcome not counted is absent` },
)

const InputOutcomes = Type.Object(
  Object.fromEntries(
    outcomes.map((o) => [o, Type.Optional(Type.Integer({ minimum: 0, maximum: countMax }))]),
  ),
  { additionalProperties: false, ...resources },
)

/** `rate_limited` by limit name (the API's name: the outcome it splits, and by what). */
export const RateLimitedBy = Type.Record(Type.String(), Type.Integer(), {
  description:
    '`rate_limited` split by the name of the limit that refused (`{"<limit name>": n}`); ' +
    'absent when none was',
})

/** A report's split: names of limits, at most as many as an account and a token may hold. */
const InputRateLimitedBy = Type.Record(
  Type.String({ pattern: limitNamePattern.source }),
  Type.Integer({ minimum: 0, maximum: countMax }),
  {
    additionalProperties: false,
    maxProperties: 4 * maxLimits,
    ...resources,
    description: "The row's rate_limited by limit name; adds up to at most its rate_limited",
  },
)

const Time = (description: string) => Type.String({ ...resources, description })
const Resolution = Type.Union([Type.Literal('minute'), Type.Literal('hour'), Type.Literal('day')], {
  ...resources,
  description: 'Buckets of a minute, an hour (default) or a day (UTC)',
})

const Range = {
  from: Time('The first instant (ISO 8601 date or timestamp): the bucket it falls in is the first'),
  to: Time('The end (exclusive): buckets that start before it'),
}

export const UsageQuery = Type.Object({
  ...Range,
  resolution: Type.Optional(Resolution),
  token: Type.Optional(
    Type.String({
      ...resources,
      pattern: tokenOrNone,
      description: "One token's buckets; empty for the temporary tokens' and refusals' ('')",
    }),
  ),
  limit: PageQuery.properties.limit,
  start: PageQuery.properties.start,
})

export const UsageTokensQuery = Type.Object({ ...Range, resolution: Type.Optional(Resolution) })

export const UsageSeries = Type.Object({
  resolution: Type.String(),
  from: Type.String(),
  to: Type.String(),
  series: Type.Array(
    Type.Object({
      start: Type.String(),
      outcomes: Outcomes,
      rate_limited_by: Type.Optional(RateLimitedBy),
    }),
    { description: 'Buckets with any count, oldest first' },
  ),
  totals: Outcomes,
  rate_limited_by: Type.Optional(RateLimitedBy),
  next: Type.Optional(Type.String({ description: 'The path and query of the next page' })),
})

export const UsageByToken = Type.Object({
  tokens: Type.Array(
    Type.Object({
      token: Type.String(),
      outcomes: Outcomes,
      rate_limited_by: Type.Optional(RateLimitedBy),
    }),
    { description: 'Most counted first; token "" holds temporary tokens and refused strings' },
  ),
})

/** A verifier's refused decision, a row of the verification log (docs/verifications.md). */
const RefusedRow = Type.Object(
  {
    at: Time('When it was decided (ISO 8601), at most 5 minutes ahead'),
    account: Type.String({ ...resources, pattern: usernameOrNone }),
    token: Type.String({ ...resources, pattern: tokenOrNone }),
    outcome: Type.Union(
      outcomes.filter((o) => o !== 'valid').map((o) => Type.Literal(o)),
      resources,
    ),
    limit: Type.Optional(Type.String({ ...resources, pattern: limitNamePattern.source })),
    ip: Type.Optional(Type.String({ ...resources, minLength: 2, maxLength: 64, pattern: ipish })),
    origin: Type.Optional(Type.String({ ...resources, maxLength: 255, pattern: hostish })),
    request_id: Type.Optional(Type.String({ ...resources, pattern: name })),
    duration_us: Type.Optional(Type.Integer({ minimum: 0, maximum: 3_600_000_000 })),
  },
  { additionalProperties: false, ...resources },
)

export const UsageReport = Type.Object(
  {
    reporter: Type.String({ ...resources, pattern: name, description: 'The verifier' }),
    batch: Type.String({ ...resources, pattern: name, description: 'Counted once per reporter' }),
    counts: Type.Array(
      Type.Object(
        {
          minute: Time('The minute counted (ISO 8601), at most 5 minutes ahead'),
          account: Type.String({ ...resources, pattern: usernameOrNone }),
          token: Type.String({ ...resources, pattern: tokenOrNone }),
          outcomes: InputOutcomes,
          rate_limited_by: Type.Optional(InputRateLimitedBy),
        },
        { additionalProperties: false, ...resources },
      ),
      { maxItems: 10_000, ...resources },
    ),
    returned: Type.Optional(
      Type.Array(
        Type.Object(
          {
            account: Type.String({ ...resources, pattern: '^[a-z0-9][a-z0-9_-]{0,31}$' }),
            token: Type.Optional(Type.String({ ...resources, pattern: tokenOrNone })),
            amount: Type.Integer({ minimum: 0, maximum: leaseMax }),
            lease: Type.String({ ...resources, minLength: 1, maxLength: 1024 }),
          },
          { additionalProperties: false, ...resources },
        ),
        { maxItems: 10_000, ...resources },
      ),
    ),
    refused: Type.Optional(
      Type.Array(RefusedRow, {
        maxItems: maxRefusedRows,
        ...resources,
        description: 'Refused decisions, one row each, for the verification log',
      }),
    ),
  },
  { additionalProperties: false, ...resources },
)

export const ReportAnswer = Type.Object({
  counted: Type.Boolean({ description: 'False: this batch was counted before, nothing was now' }),
})
