/**
 * The contract's error table (CONTRACT.md section 2). Every client-visible failure is one of
 * these kinds; the status and message of a kind are fixed so that clients can match on them.
 */
export const errorTable = {
  accessTokenRequired: [422, 'access token is required'],
  unauthorized: [401, 'Unauthorized'],
  httpsRequired: [403, 'HTTPS is required'],
  tooManyRequests: [429, 'Too Many Requests'],
  noSuchUser: [404, 'No such user'],
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
  /** The admin API's create, for a username already taken. */
  accountExists: [409, 'account already exists'],
  /** The admin API's member changes that would leave an account without an owner. */
  lastOwner: [409, 'an account must keep an owner'],
  unavailable: [503, 'Service Unavailable'],
  internal: [500, 'Internal Server Error'],
} as const satisfies Record<string, readonly [number, string]>

export type ErrorKind = keyof typeof errorTable

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
