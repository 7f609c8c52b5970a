/** How a page puts a refusal to a person, from the sentence the service wrote as its details. */
type Shown = (details: string) => string

const capital = (text: string) => text.charAt(0).toUpperCase() + text.slice(1)
/** The service's sentence as it is, with a capital: most are written for a person already. */
const asIs: Shown = capital
/** The service's sentence with a capital and a full stop: those written for the admin API. */
const sentence: Shown = (text) => `${capital(text)}.`.replace(/\.\.$/, '.')

/**
 * The error table. Its first part is the contract's (CONTRACT.md section 2): every
 * client-visible failure is one of these kinds, with a fixed status and message that clients
 * match on. The rest are the domain's refusals that a page, the CLI or a sender tells apart;
 * each answers the admin API with a contract row's status and message, its sentence as
 * `details`. A third element marks a refusal told to a person by that sentence (see
 * `personText`); a row without one is told by its message and details, as the API says them.
 */
export const errorTable = {
  accessTokenRequired: [422, 'access token is required'],
  unauthorized: [401, 'Unauthorized'],
  httpsRequired: [403, 'HTTPS is required'],
  tooManyRequests: [429, 'Too Many Requests'],
  noSuchUser: [404, 'No such user', asIs],
  notFound: [404, 'Not found'],
  badUsage: [422, 'usage must be pk or sk'],
  badDefault: [422, 'default must be true or false'],
  badLimit: [422, 'limit must be an integer between 1 and 100'],
  badSortby: [422, 'sortby must be created or modified'],
  badStart: [422, 'start is invalid'],
  expiresInPast: [422, 'expires is in the past'],
  expiresTooFar: [422, 'expires is more than one hour in the future'],
  expiresAfterAuthorizer: [
    422,
    'expires may not be greater than the expiration of the authorizing token',
  ],
  invalidScopes: [422, 'scopes are invalid'],
  invalidResources: [422, 'resources are invalid'],
  defaultTokenUndeletable: [422, 'the default token cannot be deleted'],
  /** Roll (Tessera's extension): a `tk` authorises no roll; the old string ends within a day. */
  temporaryNotRollable: [422, 'temporary tokens cannot be rolled'],
  rollTooFar: [422, 'expires is more than 24 hours in the future'],
  /** Roll: a token is rolled once; its successor is rolled instead. */
  tokenRetiring: [409, 'the token was rolled already'],
  /** A retiring string (rolled, in its grace period) may not change the tokens that replaced it. */
  retiringLine: [403, 'a retiring token cannot change the token that replaced it'],
  /** The admin API's create, for a username already taken; sign-up says it in its own words. */
  accountExists: [409, 'account already exists', () => 'This username is taken.'],
  /** The admin API's member changes that would leave an account without an owner. */
  lastOwner: [409, 'an account must keep an owner', sentence],
  /** The admin API: a route outside the operator key's scope (a `verifier` key, src/admin/keys.ts). */
  operatorScope: [403, "the operator key's scope does not allow this"],
  unavailable: [503, 'Service Unavailable'],
  internal: [500, 'Internal Server Error'],

  // Accounts.
  /** No such plan or feature. */
  badPlan: [422, 'resources are invalid', asIs],
  /** A new account's or person's name breaks the username pattern. */
  badUsername: [422, 'resources are invalid', asIs],
  /** The name of an account deleted within the hour: its temporary tokens may still be live. */
  nameResting: [409, 'account already exists', asIs],
  /** A new account's name is a person's login (logins and usernames share a namespace). */
  personExists: [409, 'account already exists', asIs],

  // Members, invitations, setup links, passwords.
  /** A bad email, role or portal return URL. */
  memberInvalid: [422, 'resources are invalid', sentence],
  /** No such member or invitation in the account. */
  memberMissing: [404, 'Not found', sentence],
  /** An invitation accepted under a login someone has. */
  loginTaken: [422, 'resources are invalid', asIs],
  /** An invitation or setup link that never existed: the page says so (404). */
  linkUnknown: [422, 'resources are invalid', asIs],
  /** An invitation or setup link used, replaced or expired: the page says so (410). */
  linkGone: [422, 'resources are invalid', asIs],
  badPassword: [422, 'resources are invalid', asIs],
  passwordMismatch: [422, 'resources are invalid', asIs],
  /** A password change whose current password is wrong. */
  wrongPassword: [422, 'resources are invalid', asIs],

  // Second factors.
  /** An authenticator app not being set up, unreadable, or a wrong code while setting it up. */
  totpRefused: [422, 'resources are invalid', asIs],
  noSuchFactor: [404, 'Not found', asIs],
  /** The last second factor of a person whose account requires one. */
  lastFactor: [422, 'resources are invalid', asIs],

  // Token policies (src/token-policy.ts).
  /** A create, update or roll the account's token policy forbids, or a policy that is not one. */
  tokenPolicy: [422, 'resources are invalid', asIs],

  // Webhooks.
  /** An endpoint URL that may not be posted to; also why a delivery was refused. */
  badWebhookUrl: [422, 'resources are invalid'],
} as const satisfies Record<string, readonly [number, string, Shown?]>

export type ErrorKind = keyof typeof errorTable

const rows: Record<ErrorKind, readonly [number, string, Shown?]> = errorTable

export class ApiError extends Error {
  readonly statusCode: number
  readonly kind: ErrorKind

  constructor(
    kind: ErrorKind,
    /** A sentence saying exactly what was wrong; sent as `details`. Never holds a token string. */
    readonly details?: string,
  ) {
    const [status, message] = errorTable[kind]
    // An ApiError is an answer, not a fault: its stack would never be read, and capturing it
    // is the dearest part of refusing a request (401 floods, malformed input).
    const limit = Error.stackTraceLimit
    Error.stackTraceLimit = 0
    super(message)
    Error.stackTraceLimit = limit
    this.kind = kind
    this.statusCode = status
  }

  toJSON(): { message: string; details?: string } {
    return this.details === undefined
      ? { message: this.message }
      : { message: this.message, details: this.details }
  }
}

export const fail = (kind: ErrorKind, details?: string): never => {
  throw new ApiError(kind, details)
}

/**
 * Whether the error is a refusal that a page or command catches and tells next to its form; one
 * that nothing caught is a fault (a page answers 500 and logs it).
 */
export const isRefusal = (err: ApiError) => rows[err.kind][2] !== undefined

/**
 * What a person is told of an error, on a page or on the CLI's one line: a refusal by its
 * sentence (on a page as its row shapes it), anything else by the API's message and details.
 */
export function personText(err: ApiError, on: 'page' | 'line'): string {
  const shown = rows[err.kind][2]
  if (shown !== undefined && err.details) return on === 'page' ? shown(err.details) : err.details
  const text = err.details ? `${err.message}: ${err.details}` : err.message
  return on === 'page' ? `${text}.` : text
}
