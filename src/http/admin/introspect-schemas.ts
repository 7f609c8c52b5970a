import { Type } from '@sinclair/typebox'
import { maxLimit } from '../../ratelimit/named.js'
import { RateLimitState } from './ratelimit-schemas.js'
import { resources } from './schemas.js'

// The schemas of what a verifier asks: introspection (RFC 7662, Tessera's way) and rate-limit
// leases. They validate input, serialize output (a field not here never reaches a client) and
// make the OpenAPI document.

export const IntrospectBody = Type.Object(
  {
    token: Type.String({ minLength: 1, ...resources, description: 'The token string to check' }),
    token_type_hint: Type.Optional(
      Type.String({ ...resources, description: 'Accepted and ignored (RFC 7662)' }),
    ),
    ip: Type.Optional(
      Type.String({
        ...resources,
        maxLength: 64,
        description: "Tessera: the caller's client address, checked against the token's allowedIps",
      }),
    ),
    cost: Type.Optional(
      Type.Integer({
        ...resources,
        minimum: 0,
        maximum: Number.MAX_SAFE_INTEGER,
        description: 'Tessera: the credits this use spends (default 1; 0 spends none)',
      }),
    ),
    count: Type.Optional(
      Type.Boolean({
        ...resources,
        description:
          'Tessera: count this check in the usage and consume its rate limits (default true); a ' +
          'verifier sends false, as it reports its own decisions and leases its limits',
      }),
    ),
  },
  resources,
)

/**
 * RFC 7662's answer plus Tessera's `id`, `usage`, `allowedUrls` and retrieve `code`, in the
 * order they are written; an inactive token has `active` and `code` only (and `unowned` or
 * `reason` when it has one, a rate-limited one its limits too).
 */
export const Introspection = Type.Object({
  active: Type.Boolean(),
  code: Type.String({
    description:
      'What retrieve says of the same string: TokenValid when active, otherwise ' +
      'TokenMalformed, TokenInvalid, TokenExpired or TokenRevoked',
  }),
  scope: Type.Optional(Type.String({ description: 'The scopes, space-separated' })),
  username: Type.Optional(Type.String({ description: 'The account' })),
  token_type: Type.Optional(Type.Literal('Bearer')),
  exp: Type.Optional(
    Type.Integer({
      description:
        "Expiry, epoch seconds: a tk's; a pk's or sk's end when it has one (the earlier of " +
        'its expiresAt and, rolled, the end of its old string)',
    }),
  ),
  iat: Type.Optional(
    Type.Integer({ description: 'tk: issued at; pk and sk: created at; epoch seconds' }),
  ),
  client_id: Type.Optional(
    Type.String({ description: "The token's `client`, as token objects and retrieve say it" }),
  ),
  id: Type.Optional(Type.String({ description: 'pk and sk: the token id; a tk carries none' })),
  usage: Type.Optional(Type.Union([Type.Literal('pk'), Type.Literal('sk'), Type.Literal('tk')])),
  allowedUrls: Type.Optional(
    Type.Array(Type.String(), { description: 'pk and sk: only when the token is restricted' }),
  ),
  allowedIps: Type.Optional(
    Type.Array(Type.String(), { description: 'pk and sk: only when restricted to IP ranges' }),
  ),
  unowned: Type.Optional(
    Type.Literal(true, {
      description:
        'TokenExpired or TokenRevoked of a string not made in the account that has its name ' +
        'now (none, or a later one): counted against nobody, not the account it names',
    }),
  ),
  reason: Type.Optional(
    Type.Union(
      [
        Type.Literal('ip_not_allowed'),
        Type.Literal('credits_exhausted'),
        Type.Literal('rate_limited'),
      ],
      {
        description:
          'Inactive although valid: `ip_not_allowed`, `ip` was given and is outside its ' +
          'allowedIps; `credits_exhausted`, the token or its account has less than `cost` ' +
          'left; `rate_limited`, a limit on it has nothing left in its window (`ratelimit`)',
      },
    ),
  ),
  ratelimit: Type.Optional(
    Type.String({ description: 'rate_limited: the name of the limit that refused it' }),
  ),
  ratelimits: Type.Optional(
    Type.Array(RateLimitState, {
      description:
        'Every limit on the token, in order (its account’s, then its own): what is left of ' +
        'each window after this use, and when it ends',
    }),
  ),
  credits: Type.Optional(
    Type.Object(
      { token: Type.Optional(Type.Integer()), account: Type.Optional(Type.Integer()) },
      { description: "A metered token: the balances after this use (the token's, the account's)" },
    ),
  ),
})

export const LimitLeaseBody = Type.Object(
  {
    token: Type.String({
      minLength: 1,
      maxLength: 4096,
      ...resources,
      description: 'The token string whose limits are leased (as introspected)',
    }),
    want: Type.Integer({
      ...resources,
      minimum: 1,
      maximum: maxLimit,
      description: 'Verifications wanted: each takes every limit’s cost',
    }),
  },
  resources,
)

/** One limit of a lease: its window after the grant, and the block taken of it. */
const LeasedLimit = Type.Object({
  ...RateLimitState.properties,
  duration: Type.Integer({ description: 'The window, in milliseconds' }),
  cost: Type.Integer({ description: 'What one verification takes of it' }),
  granted: Type.Integer({ description: 'Units taken off the shared count for this lease' }),
  ttlMs: Type.Integer({
    description: "Milliseconds from Tessera's now to `reset`: when the block ends, on any clock",
  }),
})

export const LimitLeaseAnswer = Type.Object({
  granted: Type.Integer({
    description:
      'Verifications granted: of every limit, this many times its cost (0: none, `ratelimit` ' +
      'says which limit has nothing left, or `code` that the token is not valid)',
  }),
  ratelimit: Type.Optional(
    Type.String({ description: 'Nothing granted: the first limit with too little left' }),
  ),
  code: Type.Optional(
    Type.String({
      description: 'The token is not valid now: what retrieve says of it (nothing granted)',
    }),
  ),
  ratelimits: Type.Array(LeasedLimit),
})
