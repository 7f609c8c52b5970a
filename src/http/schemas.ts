import { type TSchema, Type } from '@sinclair/typebox'
import { errorTable } from '../errors.js'
import { maxAllowedUrls, maxNoteLength, maxUrlLength } from '../tokens/rules.js'

/**
 * Route schemas. They validate input (a failing field answers with its `errorMessage`, a
 * message of the contract's table), serialize output (a field not listed here can never reach a
 * client) and generate the OpenAPI document.
 */

const message = (kind: keyof typeof errorTable) => ({ errorMessage: errorTable[kind][1] })
const resources = message('invalidResources')

export const ErrorBody = Type.Object({
  message: Type.String(),
  details: Type.Optional(Type.String()),
})

export const AccessTokenQuery = Type.Object({ access_token: Type.Optional(Type.String()) })

export const UsernameParams = Type.Object({ username: Type.String() })
export const TokenIdParams = Type.Object({ username: Type.String(), token_id: Type.String() })

export const ListQuery = Type.Object({
  access_token: Type.Optional(Type.String()),
  usage: Type.Optional(Type.Union([Type.Literal('pk'), Type.Literal('sk')], message('badUsage'))),
  default: Type.Optional(
    Type.Union([Type.Literal('true'), Type.Literal('false')], message('badDefault')),
  ),
  limit: Type.Optional(Type.String({ pattern: '^0*([1-9][0-9]?|100)$', ...message('badLimit') })),
  sortby: Type.Optional(
    Type.Union([Type.Literal('created'), Type.Literal('modified')], message('badSortby')),
  ),
  start: Type.Optional(Type.String(message('badStart'))),
  parent: Type.Optional(
    Type.String({
      ...resources,
      description: "Tessera: only this token's children (docs/machines.md)",
    }),
  ),
})

const Note = Type.String({ maxLength: maxNoteLength, ...resources })
const Scopes = Type.Array(Type.String(resources), resources)
const AllowedUrls = Type.Array(Type.String({ maxLength: maxUrlLength, ...resources }), {
  maxItems: maxAllowedUrls,
  ...resources,
})

const AllowedIps = Type.Array(Type.String({ maxLength: 64, ...resources }), {
  maxItems: 100,
  ...resources,
  description: 'Tessera: IPv4/IPv6 addresses or CIDR blocks the token may be used from',
})

const ExpiresAt = Type.String({
  ...resources,
  description:
    'Tessera: the end of life of a pk or sk, ISO 8601, in the future and at most 10 years ahead; ' +
    'from then on the token is TokenExpired. Not with expires (a temporary token)',
})

/** One named rate limit (docs/ratelimits.md), as token objects show it. */
const NamedLimit = Type.Object({
  name: Type.String({ description: 'Its name: [a-z0-9][a-z0-9._-]{0,63}, unique in the list' }),
  limit: Type.Integer({ description: 'At most this many in each window (1 to 1,000,000,000)' }),
  duration: Type.Integer({ description: 'The window, milliseconds (1,000 to 86,400,000)' }),
  cost: Type.Optional(
    Type.Integer({ description: 'What one request counts (0 to 1,000,000,000); 1 when absent' }),
  ),
})

/**
 * Shapes only: the bounds, the names and unknown keys are readNamedLimits' (tokens/rules.ts),
 * which says in `details` what is wrong, as for a bad expiresAt.
 */
const Ratelimits = Type.Array(Type.Object(NamedLimit.properties, resources), {
  ...resources,
  description:
    "Tessera: a pk or sk's own named rate limits, at most 50, applied to every verification " +
    "of the token on top of its account's (docs/ratelimits.md). Not with expires",
})

/** One body for both creates: the presence of `expires` selects a temporary token. */
export const CreateBody = Type.Object(
  {
    note: Type.Optional(Note),
    scopes: Type.Optional(Scopes),
    allowedUrls: Type.Optional(AllowedUrls),
    allowedIps: Type.Optional(AllowedIps),
    expiresAt: Type.Optional(ExpiresAt),
    ratelimits: Type.Optional(Ratelimits),
    expires: Type.Optional(Type.String({ ...resources, description: 'Makes a temporary token' })),
  },
  resources,
)

/** A child token's create (docs/machines.md): a permanent create's fields, and its credits. */
export const ChildBody = Type.Object(
  {
    note: Type.Optional(Note),
    scopes: Type.Optional(Scopes),
    allowedUrls: Type.Optional(AllowedUrls),
    allowedIps: Type.Optional(AllowedIps),
    expiresAt: Type.Optional(ExpiresAt),
    ratelimits: Type.Optional(Ratelimits),
    credits: Type.Optional(
      Type.Integer({
        ...resources,
        minimum: 0,
        description:
          "Credits the child is given, taken off its parent's balance; required when the parent has one",
      }),
    ),
  },
  resources,
)

export const UpdateBody = Type.Object(
  {
    note: Type.Optional(Note),
    scopes: Type.Optional(Scopes),
    allowedUrls: Type.Optional(Type.Union([AllowedUrls, Type.Null()], resources)),
    allowedIps: Type.Optional(Type.Union([AllowedIps, Type.Null()], resources)),
    expiresAt: Type.Optional(Type.Union([ExpiresAt, Type.Null()], resources)),
    ratelimits: Type.Optional(Type.Union([Ratelimits, Type.Null()], resources)),
  },
  resources,
)

/** A roll's optional body (read by the route, which names an unknown field in `details`). */
export const RollBody = Type.Object({
  expires: Type.Optional(
    Type.String({
      description:
        'Until when the old string works: ISO 8601, at most 24 hours ahead; now if absent',
    }),
  ),
  children: Type.Optional(
    Type.Union([Type.Literal('move'), Type.Literal('end')], {
      description:
        'Tessera: its child tokens go to the token that replaces it (move, the default) or end now (end)',
    }),
  ),
})

export const TokenObject = Type.Object({
  id: Type.String(),
  usage: Type.String(),
  client: Type.String(),
  default: Type.Boolean(),
  scopes: Type.Array(Type.String()),
  note: Type.String(),
  created: Type.String(),
  modified: Type.String(),
  allowedUrls: Type.Optional(Type.Array(Type.String())),
  allowedIps: Type.Optional(Type.Array(Type.String())),
  expiresAt: Type.Optional(
    Type.String({ description: 'Tessera: its end of life; absent when it has none' }),
  ),
  ratelimits: Type.Optional(
    Type.Array(NamedLimit, { description: 'Tessera: its own named rate limits; absent when none' }),
  ),
  parent: Type.Optional(
    Type.String({ description: 'Tessera: the token it was made under; absent for any other' }),
  ),
  token: Type.Optional(Type.String()),
})

/**
 * What create answers: a token object, or for a temporary token {token, issued_at, expires,
 * expires_in}. One object schema with optional fields rather than a union, which the
 * serializer would have to resolve by validating each branch on every response.
 */
export const CreateResult = Type.Object(
  {
    ...Type.Partial(Type.Omit(TokenObject, ['token'])).properties,
    token: Type.String(),
    issued_at: Type.Optional(Type.String()),
    expires: Type.Optional(Type.String()),
    expires_in: Type.Optional(Type.Integer()),
  },
  { description: 'A token object, or a temporary token when the request had expires' },
)

export const Validation = Type.Object({
  code: Type.String(),
  token: Type.Optional(
    Type.Object({
      usage: Type.String(),
      user: Type.String(),
      authorization: Type.Optional(Type.String()),
      expires: Type.Optional(Type.String()),
      created: Type.Optional(Type.String()),
      scopes: Type.Optional(Type.Array(Type.String())),
      client: Type.Optional(Type.String()),
    }),
  ),
})

export const ScopeObject = Type.Object({
  id: Type.String(),
  description: Type.String(),
  public: Type.Optional(Type.Boolean()),
})

/** Error responses every authenticated route may give. */
export const errorResponses = (...statuses: number[]): Record<number, TSchema> =>
  Object.fromEntries(statuses.map((s) => [s, ErrorBody]))

/** The OpenAPI tag of the token API: the routes of the original API, listed first. */
export const leakTag = {
  name: 'leaks',
  description:
    'Tessera: reports of leaked tokens, from GitHub secret scanning (signed) and from anyone ' +
    "(GitHub's credential revocation shape). A live token reported is revoked or flagged.",
}

export const tokenApiTag = {
  name: 'tokens',
  description: [
    'The token API, in the wire format of the Mapbox Tokens API. Every request carries a token in',
    'the `access_token` query parameter or, as a Tessera extension, an `Authorization: Bearer`',
    'header (both may be given when they name the same token); each route names the scope it',
    'needs. Errors are JSON `{"message"}` with the fixed messages of the contract (401',
    '`Unauthorized`, 404 `No such user` or `Not found`, 422 naming what is invalid, 429 `Too Many',
    'Requests`), so clients can match on `message`, and often a `details` sentence. Lists are',
    'paged with `limit` and `start` and a `Link: <...>; rel="next"` header.',
  ].join(' '),
}
