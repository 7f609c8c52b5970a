import { timingSafeEqual } from 'node:crypto'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Session } from '../people/sessions.js'
import { sessionLifetimeMs } from '../people/sessions.js'

/** The dashboard's security rules (DASHBOARD.md section 5): cookie, origin, CSRF, redirects. */

export const cookieName = '__Host-tessera_session'
/** A sign-in whose password was right, waiting for its second factor. */
export const pendingCookieName = '__Host-tessera_pending'
export const csrfField = '_csrf'

/** Why a request was refused with 403; the page says it. */
export class Forbidden extends Error {}

/**
 * How long a sign-in or a confirmation proves the person, for what keeps an account after a
 * session's cookie is gone: sign-in methods, members and roles, the two-step policy, and tokens
 * that can make tokens.
 */
export const proofWindowMs = 10 * 60_000

export const recentlyProven = (session: Session, now: number) =>
  now - session.proven < proofWindowMs

/** The scope of tokens that make tokens: one only a recent proof hands out (see proofWindowMs). */
export const tokenMakingScope = 'tokens:write'

/** "Confirm it's you", coming back to `next` (a dashboard path) afterwards. */
export const confirmPath = (next: string) =>
  `/account/settings/confirm?next=${encodeURIComponent(next)}`

/**
 * Whether the session entered the account without a proof the account trusts in place of its
 * own policy: a password alone, or a portal link made for another account. Single sign-on is
 * the provider's to secure; a portal link, the platform's, in the account it was made for.
 */
export const heldByPolicy = (session: Session, username: string) =>
  session.method === 'password' || (session.method === 'link' && session.linkAccount !== username)

export const sessionId = (request: FastifyRequest) => cookieOf(request, cookieName)
export const pendingId = (request: FastifyRequest) => cookieOf(request, pendingCookieName)

/** A cookie holding one of our 256-bit secrets (base64url), or undefined. */
export function cookieOf(request: FastifyRequest, name: string): string | undefined {
  const header = request.headers.cookie
  if (header === undefined) return undefined
  for (const pair of header.split(';')) {
    const eq = pair.indexOf('=')
    if (eq !== -1 && pair.slice(0, eq).trim() === name) {
      const value = pair.slice(eq + 1).trim()
      return /^[A-Za-z0-9_-]{43}$/.test(value) ? value : undefined
    }
  }
  return undefined
}

export function setSessionCookie(reply: FastifyReply, id: string) {
  reply.header(
    'set-cookie',
    `${cookieName}=${id}; Path=/; Max-Age=${sessionLifetimeMs / 1000}; Secure; HttpOnly; SameSite=Lax`,
  )
}

export function setPendingCookie(reply: FastifyReply, id: string) {
  return reply.header(
    'set-cookie',
    `${pendingCookieName}=${id}; Path=/; Max-Age=300; Secure; HttpOnly; SameSite=Lax`,
  )
}

export function clearPendingCookie(reply: FastifyReply) {
  return reply.header(
    'set-cookie',
    `${pendingCookieName}=; Path=/; Max-Age=0; Secure; HttpOnly; SameSite=Lax`,
  )
}

export function clearSessionCookie(reply: FastifyReply) {
  reply.header('set-cookie', `${cookieName}=; Path=/; Max-Age=0; Secure; HttpOnly; SameSite=Lax`)
}

const originOf = (url: string) => {
  try {
    const origin = new URL(url).origin
    return origin === 'null' ? undefined : origin
  } catch {
    return undefined
  }
}

/**
 * A state-changing request must come from the dashboard's own origin: PUBLIC_URL's, or the one
 * the browser addressed (a cross-site page cannot choose the Host header a browser sends).
 */
export function checkOrigin(request: FastifyRequest, publicUrl: string) {
  const origin = request.headers.origin
  // A page sent with `Referrer-Policy: no-referrer` (portal links) makes the browser say
  // `Origin: null`; its Fetch Metadata still tells a same-origin form from another site's.
  if (origin === 'null' && request.headers['sec-fetch-site'] === 'same-origin') return
  const referer = request.headers.referer
  const claimed =
    typeof origin === 'string'
      ? originOf(origin)
      : referer === undefined
        ? undefined
        : originOf(referer)
  if (claimed === undefined) {
    throw new Forbidden('The request did not say which page it came from (no Origin or Referer).')
  }
  if (claimed !== originOf(publicUrl) && claimed !== originOf(`https://${request.headers.host}`)) {
    throw new Forbidden('The request came from another site.')
  }
}

export function checkCsrf(form: URLSearchParams, session: Session) {
  const sent = Buffer.from(form.get(csrfField) ?? '')
  const expected = Buffer.from(session.csrf)
  if (sent.length !== expected.length || !timingSafeEqual(sent, expected)) {
    throw new Forbidden(
      'The form has expired or did not come from this dashboard. Reload the page and try again.',
    )
  }
}

/** Where to go after signing in: a path of the dashboard, never another site. */
export function safeNext(value: unknown): string {
  if (typeof value !== 'string' || !/^\/account(?:[/?#]|$)/.test(value)) return '/account'
  // Encoded again into the sign-in link, a long one would make a header no proxy takes.
  if (value.length > 1024) return '/account'
  if (/[\\\s]/.test(value) || value.includes('//')) return '/account'
  const url = new URL(value, 'https://dashboard.invalid')
  return url.origin === 'https://dashboard.invalid' ? `${url.pathname}${url.search}` : '/account'
}

export const signInPath = (next: string) =>
  next === '/account' ? '/account/sign-in' : `/account/sign-in?next=${encodeURIComponent(next)}`
