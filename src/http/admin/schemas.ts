import { type TSchema, Type } from '@sinclair/typebox'
import { errorTable } from '../../errors.js'
import { ErrorBody, TokenObject } from '../schemas.js'

/** Schemas of the admin API: input validation, serialization and its OpenAPI document. */

const message = (kind: keyof typeof errorTable) => ({ errorMessage: errorTable[kind][1] })
const resources = message('invalidResources')

export const adminTag = {
  name: 'admin',
  description: [
    "The operator's API, for the operator's own backend; never reachable with an account's token.",
    'Every request carries an operator key: `Authorization: Bearer <key>` (a key of `ADMIN_KEYS`,',
    'or one made by `tessera admin-key create`). Without a valid key every route, and every',
    'unknown path under `/admin/v1`, answers 401 `{"message":"Unauthorized"}`.',
    'Errors are JSON `{"message"}` with an optional `details` sentence: 404 `No such user` (no',
    'such account), 404 `Not found` (no such token in the account), 409 `account already exists`,',
    '422 `resources are invalid` (a bad body or filter; `details` says which),',
    '422 `limit must be an integer between 1 and 100`, 422 `start is invalid`.',
    'Lists are paged: `limit` (1-100, default 100) and `start`; when more follow, the response has',
    'a `Link: <...>; rel="next"` header carrying the same filters, and none on the last page.',
  ].join(' '),
}

/** Every admin route: the operator key as a bearer token. */
export const operatorKey = [{ operatorKey: [] }]
export const securitySchemes = {
  operatorKey: {
    type: 'http',
    scheme: 'bearer',
    description: 'An operator key: an ADMIN_KEYS secret, or a key of `tessera admin-key create`',
  },
}

export const adminErrors = (...statuses: number[]): Record<number, TSchema> =>
  Object.fromEntries([401, ...statuses].map((s) => [s, ErrorBody]))

const Limit = Type.String({
  pattern: '^0*([1-9][0-9]?|100)$',
  description: '1-100, default 100',
  ...message('badLimit'),
})

export const UsernameParams = Type.Object({ username: Type.String() })
export const TokenParams = Type.Object({ username: Type.String(), token_id: Type.String() })

export const PageQuery = Type.Object({
  limit: Type.Optional(Limit),
  start: Type.Optional(
    Type.String({ description: "From the previous page's Link header", ...message('badStart') }),
  ),
})

export const AuditQuery = Type.Object({
  action: Type.Optional(
    Type.String({ description: 'Comma-separated actions, e.g. account.created,token.deleted' }),
  ),
  since: Type.Optional(
    Type.String({ description: 'Events at or after this time: ISO 8601 date or timestamp' }),
  ),
  until: Type.Optional(Type.String({ description: 'Events before this time' })),
  ...PageQuery.properties,
})

const Features = Type.Array(Type.String(resources), resources)

export const CreateAccountBody = Type.Object(
  {
    username: Type.String({
      ...resources,
      description: '1-32 characters of a-z, 0-9, _ and -, starting with a letter or digit',
    }),
    plan: Type.Optional(Type.String({ ...resources, description: 'The default plan if absent' })),
    features: Type.Optional(Features),
  },
  resources,
)

export const ChangeAccountBody = Type.Object(
  { plan: Type.Optional(Type.String(resources)), features: Type.Optional(Features) },
  { ...resources, description: 'At least one of plan and features' },
)

export const AccountObject = Type.Object({
  username: Type.String(),
  plan: Type.String(),
  features: Type.Array(Type.String()),
  created: Type.String(),
  disabled: Type.Boolean(),
})

export const SetupLink = Type.Object({
  username: Type.String(),
  setupUrl: Type.String({
    description: 'A one-time link to set the password (24 hours); earlier links stop working',
  }),
})

export const CreatedAccount = Type.Object({
  ...AccountObject.properties,
  defaultToken: TokenObject,
  setupUrl: SetupLink.properties.setupUrl,
})

const LastUsed = Type.Union([Type.String(), Type.Null()], {
  description: 'The minute of the last successful validation, or null',
})

export const AdminToken = Type.Object({ ...TokenObject.properties, lastUsed: LastUsed })

export const TokenUsage = Type.Object({
  lastUsed: LastUsed,
  hours: Type.Array(Type.Object({ hour: Type.String(), count: Type.Integer() }), {
    description: 'Validations per hour (YYYY-MM-DDTHH, UTC) of the last 30 days, oldest first',
  }),
})

export const AuditEventObject = Type.Object({
  id: Type.String(),
  at: Type.String(),
  action: Type.String(),
  actor: Type.Object({
    type: Type.String(),
    id: Type.Optional(Type.String()),
    usage: Type.Optional(Type.String()),
  }),
  account: Type.Optional(Type.String()),
  target: Type.Object({ type: Type.String(), id: Type.Optional(Type.String()) }),
  address: Type.Optional(Type.String()),
  requestId: Type.Optional(Type.String()),
  details: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
})
