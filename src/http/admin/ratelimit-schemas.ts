import { Type } from '@sinclair/typebox'
import { durationBounds } from '../../ratelimit/limiter.js'
import { limitNamePattern, maxLimit, maxLimits } from '../../ratelimit/named.js'

// The schemas of named rate limits (docs/ratelimits.md), shared by the admin routes that set
// and show them. They document and serialize; what is accepted is read by readNamedLimits,
// whose sentences name the field.

const Name = Type.String({
  pattern: limitNamePattern.source,
  description: 'The limit’s name: `requests` is the per-account limit of the contract',
})

/** One named limit: at most `limit` in each window of `duration` ms, a request costing `cost`. */
export const NamedLimitObject = Type.Object(
  {
    name: Name,
    limit: Type.Integer({
      minimum: 1,
      maximum: maxLimit,
      description: 'At most this many per window',
    }),
    duration: Type.Integer({
      minimum: durationBounds.min,
      maximum: durationBounds.max,
      description: 'The window, in milliseconds (windows are aligned to the epoch)',
    }),
    cost: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: maxLimit,
        description: 'What one request counts where the caller gives no cost (default 1)',
      }),
    ),
  },
  { additionalProperties: false },
)

/** A list of named limits, names unique: at most `maxLimits` of one owner. */
export const NamedLimitList = Type.Array(NamedLimitObject, { maxItems: maxLimits })

/** One limit as a request left it (introspection's `ratelimits[]`). */
export const RateLimitState = Type.Object({
  name: Name,
  limit: Type.Integer({ description: 'At most this many per window' }),
  remaining: Type.Integer({ description: 'What is left in the current window' }),
  reset: Type.Integer({ description: 'When the current window ends: epoch milliseconds' }),
})

/** An account's limits: its own, its plan's, and those in force. */
export const RatelimitView = Type.Object({
  own: NamedLimitList,
  plan: NamedLimitList,
  // The service's `requests` and the plan's and the account's: more than one owner's bound.
  effective: Type.Array(NamedLimitObject),
})
