import { Type } from '@sinclair/typebox'
import { resources } from './schemas.js'

/** Schemas of the credits routes (http/admin/credits.ts). */

const whole = (minimum: number, description: string) =>
  Type.Integer({ ...resources, minimum, maximum: Number.MAX_SAFE_INTEGER, description })

const RefillSchema = Type.Object(
  {
    interval: Type.Union([Type.Literal('daily'), Type.Literal('monthly')], {
      ...resources,
      description: '`daily` at 00:00 UTC, or `monthly` on `day` at 00:00 UTC',
    }),
    amount: whole(0, 'What a refill sets the remaining credits to (it sets, never adds)'),
    day: Type.Optional(
      Type.Integer({
        ...resources,
        minimum: 1,
        maximum: 28,
        description: 'monthly only: the day of the month, 1-28 (default 1)',
      }),
    ),
  },
  { ...resources, additionalProperties: false },
)

export const CreditsObject = Type.Object({
  remaining: Type.Integer({ description: 'What is left to spend' }),
  balance: Type.Integer({
    description: 'What the period began with (set or refilled), plus increments',
  }),
  refill: Type.Union([RefillSchema, Type.Null()]),
  period: Type.String({ description: 'When the current period began: the last set or refill' }),
  nextRefill: Type.Optional(Type.String({ description: 'The next refill, with a refill' })),
  plan: Type.Optional(
    Type.Literal(true, { description: "The account's plan gave them; no operator changed them" }),
  ),
})

export const SetCreditsBody = Type.Object(
  {
    remaining: whole(0, 'The credits to spend from now on: a new period begins'),
    refill: Type.Optional(
      Type.Union([RefillSchema, Type.Null()], {
        ...resources,
        description: 'null: no refill; absent: the current refill is kept',
      }),
    ),
  },
  { ...resources, additionalProperties: false },
)

export const AmountBody = Type.Object(
  { amount: whole(1, 'How many credits') },
  { ...resources, additionalProperties: false },
)

export const LeaseBody = Type.Object(
  {
    account: Type.String({ ...resources, maxLength: 32, description: 'The username' }),
    token: Type.Optional(
      Type.String({ ...resources, maxLength: 25, description: 'The token id (pk or sk)' }),
    ),
    want: whole(1, 'How many credits the verifier asks for'),
  },
  { ...resources, additionalProperties: false },
)

export const LeaseAnswer = Type.Object({
  granted: Type.Union([Type.Integer(), Type.Null()], {
    description: 'Taken off the balances now; null when neither carries credits',
  }),
  lease: Type.Optional(
    Type.String({ description: 'Opaque: returned with the unspent part in a usage report' }),
  ),
  expires: Type.Optional(
    Type.String({
      description:
        'Spend no later than this (a minute, or the next refill); with 0 granted, ' +
        'how long that answer holds',
    }),
  ),
  ttlMs: Type.Optional(
    Type.Integer({
      minimum: 0,
      description:
        "Milliseconds from Tessera's now to `expires`: a verifier measures the lease's end on " +
        'its own monotonic clock from when it asked, whatever its wall clock says',
    }),
  ),
})
