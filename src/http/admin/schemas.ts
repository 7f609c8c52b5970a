import { type TSchema, Type } from '@sinclair/typebox'
import { errorTable } from '../../errors.js'
import { ErrorBody, TokenObject } from '../schemas.js'

/** Schemas of the admin API: input validation, serialization and its OpenAPI document. */

const message = (kind: keyof typeof errorTable) => ({ errorMessage: errorTable[kind][1] })
/** A field whose every failure is the contract's `resources are invalid`. */
export const resources = message('invalidResources')

export const adminTag = {
  name: 'admin',
  description: [
    "The operator's API, for the operator's own backend; never reachable with an account's token.",
    'Every request carries an operator key: `Authorization: Bearer <key>` (a key of `ADMIN_KEYS`,',
    'or one made by `tessera admin-key create`). Without a valid key every route, and every',
    'unknown path under `/admin/v1`, answers 401 `{"message":"Unauthorized"}`.',
    "A key has a scope, and each route names the one it needs as its security requirement's",
    'role: `admin` (every route) or `verifier` (introspection, credit and rate-limit leases, the',
    "namespace API's limit requests, usage reports, the",
    "event stream: what `@tessera/verifier` needs). A route outside the key's scope answers 403",
    '`{"message":"the operator key\'s scope does not allow this"}`, before its input is read.',
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
    description:
      'An operator key: an ADMIN_KEYS secret, or a key of `tessera admin-key create`; its scope ' +
      '(`admin` or `verifier`) is the role a route names',
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
    login: Type.Optional(
      Type.String({ description: 'The person, for a dashboard session (their login)' }),
    ),
    method: Type.Optional(
      Type.String({
        description: 'How that person signed in: `password`, `link` (portal link) or `sso`',
      }),
    ),
  }),
  account: Type.Optional(Type.String()),
  target: Type.Object({ type: Type.String(), id: Type.Optional(Type.String()) }),
  address: Type.Optional(Type.String()),
  requestId: Type.Optional(Type.String()),
  details: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
})

export const MemberParams = Type.Object({ username: Type.String(), login: Type.String() })

const RoleField = Type.String({
  ...resources,
  description: '`owner` (everything, members too), `developer` (tokens) or `viewer` (reads only)',
})

export const MemberObject = Type.Object({
  login: Type.String({ description: 'The username the person signs in with' }),
  email: Type.Optional(Type.String()),
  name: Type.Optional(Type.String()),
  role: Type.String(),
  created: Type.String({ description: 'When they joined the account' }),
  sso: Type.Boolean({ description: 'They have signed in through single sign-on' }),
})

export const InviteMemberBody = Type.Object(
  { email: Type.String({ ...resources, maxLength: 254 }), role: RoleField },
  resources,
)

export const Invited = Type.Object({
  email: Type.String(),
  role: Type.String(),
  invitationUrl: Type.String({
    description: 'A one-time link (7 days) to pass on: the person joins with it',
  }),
  expires: Type.String(),
  mailed: Type.Optional(
    Type.Boolean({
      description:
        'Where SMTP_URL is set: whether the link was mailed to the email too; false when the ' +
        'account or the address has reached its limit of invitation mails for 24 hours ' +
        '(INVITATION_MAILS_PER_ACCOUNT, INVITATION_MAILS_PER_ADDRESS), and the link is only ' +
        'here to pass on. Absent without mail.',
    }),
  ),
})

export const SetRoleBody = Type.Object({ role: RoleField }, resources)

export const PortalLinkBody = Type.Object(
  {
    email: Type.String({ ...resources, maxLength: 254 }),
    name: Type.Optional(Type.String({ ...resources, maxLength: 128 })),
    role: RoleField,
    returnUrl: Type.Optional(
      Type.String({
        ...resources,
        maxLength: 2048,
        description: 'https, on an origin listed in PORTAL_RETURN_ORIGINS',
      }),
    ),
  },
  resources,
)

export const PortalLink = Type.Object({
  url: Type.String({ description: 'Works once, within 5 minutes; a GET alone does not use it' }),
  expires: Type.String(),
})
