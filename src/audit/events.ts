import { randomBase32 } from '../ids.js'
import { isoTime } from '../time.js'

/**
 * Who made a change, and from where. Services take one with every change and write it into the
 * audit log in the same transaction as the change: they never see the request itself.
 */
export interface Actor {
  /** `token`: an API token; `session`: the dashboard; `cli`: a shell on the server;
   * `admin`: an operator key; `anonymous`: nobody signed in yet (sign-in, setup, sign-up);
   * `system`: Tessera itself (warnings before an end, idle tokens deleted by policy). */
  type: 'token' | 'session' | 'cli' | 'admin' | 'anonymous' | 'system'
  /** The token id (pk/sk; a tk has none), the session's stored hash prefix, the admin key id. */
  id?: string
  /** The kind of token, for a `token` actor. */
  usage?: 'pk' | 'sk' | 'tk'
  /** The person (their login), for a `session` actor. */
  login?: string
  /** How that person signed in, for a `session` actor. */
  method?: SignInMethod
  /** The client address, for actors that come over HTTP. */
  address?: string
  /** The request id (also in the request log line). */
  requestId?: string
}

/**
 * `password`: username and password (with a second factor when the person has one);
 * `passkey`: a passkey alone; `link`: a portal link; `sso`: single sign-on.
 */
export type SignInMethod = 'password' | 'passkey' | 'link' | 'sso'

export const cliActor: Actor = { type: 'cli' }
export const systemActor: Actor = { type: 'system' }

export const auditActions = [
  'token.created',
  'token.temporary_issued',
  'token.updated',
  'token.deleted',
  'token.rolled',
  'token.leaked',
  'token.expiring',
  'token.retiring',
  'token.idle',
  'token.exchanged',
  'token.exchange_refused',
  'trust_policies.changed',
  'token_policy.changed',
  'ratelimits.changed',
  'ratelimit_override.set',
  'ratelimit_override.deleted',
  'account.created',
  'account.changed',
  'account.disabled',
  'account.enabled',
  'account.deleted',
  'account.invited',
  'password.set',
  'member.invited',
  'member.added',
  'member.role_changed',
  'member.removed',
  'invitation.revoked',
  'portal_link.created',
  'factor.added',
  'factor.removed',
  'recovery_code.used',
  'recovery_codes.generated',
  'policy.changed',
  'password.changed',
  'signin.succeeded',
  'signin.failed',
  'sessions.ended',
  'signing_key.added',
  'admin_key.created',
  'admin_key.revoked',
  'webhook.created',
  'webhook.deleted',
  'credits.changed',
  'credits.threshold',
] as const
export type AuditAction = (typeof auditActions)[number]

export interface AuditTarget {
  type:
    | 'token'
    | 'account'
    | 'session'
    | 'signing_key'
    | 'admin_key'
    | 'webhook'
    | 'member'
    | 'invitation'
    | 'portal_link'
    /** A limit of the namespace API: `<namespace>/<identifier>` (ratelimit_override.*). */
    | 'ratelimit'
  id?: string
}

/** One event, as stored and as the admin API answers it. */
export interface AuditEvent {
  id: string
  at: string
  action: AuditAction
  actor: {
    type: Actor['type']
    id?: string
    usage?: Actor['usage']
    login?: string
    method?: SignInMethod
  }
  /** The account the event concerns, when it concerns one. */
  account?: string
  target: AuditTarget
  address?: string
  requestId?: string
  details?: Record<string, unknown>
}

let lastMs = 0
let sequence = 0

/**
 * Time-ordered and unique: 13 hex digits of epoch ms, 4 of a sequence that keeps the events of
 * one process in order within a millisecond (and if its clock steps back), 8 random base32
 * characters that keep instances apart.
 */
export function newEventId(now: number): string {
  let ms = Math.max(0, Math.floor(now))
  if (ms <= lastMs) {
    ms = lastMs
    sequence++
    if (sequence > 0xffff) {
      ms = ++lastMs
      sequence = 0
    }
  } else {
    lastMs = ms
    sequence = 0
  }
  // From the pool of random bytes: a call of its own to the system source costs as much as
  // drawing 4 KB (randomBytes(8) 3.5-4 µs on the bench machine), 4 % of a create.
  const tail = randomBase32(8)
  return `${ms.toString(16).padStart(13, '0')}${sequence.toString(16).padStart(4, '0')}${tail}`
}

/** Builds the event a change records; `details` never holds a token string or a password. */
export function auditEvent(
  now: number,
  action: AuditAction,
  actor: Actor,
  target: AuditTarget,
  account?: string,
  details?: Record<string, unknown>,
): AuditEvent {
  const event: AuditEvent = {
    id: newEventId(now),
    at: isoTime(now),
    action,
    actor: { type: actor.type },
    target,
  }
  if (actor.id !== undefined) event.actor.id = actor.id
  if (actor.usage !== undefined) event.actor.usage = actor.usage
  if (actor.login !== undefined) event.actor.login = actor.login
  if (actor.method !== undefined) event.actor.method = actor.method
  if (account !== undefined) event.account = account
  if (actor.address !== undefined) event.address = actor.address
  if (actor.requestId !== undefined) event.requestId = actor.requestId
  if (details !== undefined) event.details = details
  return event
}
