import { Type } from '@sinclair/typebox'

/** Schemas of the namespace rate-limit routes (http/admin/ratelimits-namespaces.ts). */

const namespace = Type.String({
  description: '1-64 characters of a-z, 0-9, `.`, `_` and `-`, starting with a letter or digit',
})
const identifier = Type.String({
  description:
    '1-256 characters, no control characters; an override’s may end in `*` (every identifier ' +
    'starting with what comes before it). Percent-encode `/`, `%`, `?` and `#` in the path',
})

export const NamespaceParams = Type.Object({ namespace })
export const OverrideParams = Type.Object({ namespace, identifier })

export const LimitAnswer = Type.Object({
  success: Type.Boolean({ description: 'Whether the request passes (it was counted if so)' }),
  limit: Type.Integer({ description: 'The limit that applied: an override’s, or the request’s' }),
  remaining: Type.Integer({ description: 'What is left in the window after this request' }),
  reset: Type.Integer({ description: 'When the window ends: epoch milliseconds' }),
})

export const OverrideObject = Type.Object({
  namespace: Type.String(),
  identifier: Type.String(),
  limit: Type.Integer({ description: 'At most this many in each window' }),
  duration: Type.Integer({ description: 'The window, in milliseconds' }),
  created: Type.String(),
  modified: Type.String(),
})

// Checked by the service, whose sentences name the field: the schemas document them.
export const LimitBody = Type.Unknown({
  description:
    '`{"identifier", "limit", "duration", "cost"?}`: the identifier (1-256 characters), at most ' +
    '`limit` (1-1,000,000,000) in each window of `duration` milliseconds (1,000-86,400,000) ' +
    'unless an override says otherwise, this request counting `cost` (default 1; 0 counts ' +
    'nothing and says whether anything is left)',
  examples: [{ identifier: 'user_123', limit: 10, duration: 60_000 }],
})

export const OverrideBody = Type.Unknown({
  description:
    '`{"limit", "duration"}`: at most `limit` (1-1,000,000,000) in each window of `duration` ' +
    'milliseconds (1,000-86,400,000), whatever the requests ask',
  examples: [{ limit: 1000, duration: 60_000 }],
})
