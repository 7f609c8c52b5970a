import type { FastifyReply, FastifyRequest } from 'fastify'
import type { AccountRecord } from '../accounts/service.js'
import { ApiError, type ErrorKind, personText } from '../errors.js'
import { sessionActor } from '../http/actor.js'
import type { Role } from '../people/members.js'
import type { Session } from '../people/sessions.js'
import { messageView } from './views/auth.js'
import type { FormError } from './views/forms.js'
import type { Html } from './views/html.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** The signed-in holder of a dashboard request; set before every page that needs one. */
    holder: { session: Session; account: AccountRecord; role: Role; switchable: boolean } | null
  }
  interface FastifyContextConfig {
    /** A dashboard page that needs no session (sign in, setup, sign up, assets). */
    signedOut?: boolean
    /** The least role in the account the page needs; any member when absent. */
    role?: Role
    /** Open to a person a 2FA policy holds until they have enrolled a second factor. */
    enrolment?: boolean
    /**
     * Changes who may act on the account (a sign-in method, a member, a role, an invitation, the
     * two-step policy): only within 10 minutes of a proof (sign-in or "Confirm it's you");
     * otherwise a page is sent there, a script's JSON call gets 403 with its address.
     */
    sudo?: 'page' | 'json'
    /** Where a form refused for want of a proof comes back to after it: the page it is on. */
    back?: string
  }
}

/** The holder of a page that requires a session (the plugin's hook has checked). */
export const holderOf = (request: FastifyRequest) => {
  const holder = request.holder as NonNullable<FastifyRequest['holder']>
  return {
    ...holder,
    signedIn: {
      username: holder.account.username,
      csrf: holder.session.csrf,
      login: holder.session.login,
      role: holder.role,
      switchable: holder.switchable,
      ...(holder.session.returnUrl === undefined ? {} : { returnUrl: holder.session.returnUrl }),
    },
    /** The session as the audit log records it: the person and how they signed in. */
    actor: sessionActor(request, holder.session),
  }
}

/** Every page may show a token string or a secret link: none is ever kept by a cache. */
export const sendPage = (reply: FastifyReply, page: Html, status = 200) =>
  reply
    .code(status)
    .header('cache-control', 'no-store')
    .type('text/html; charset=utf-8')
    .send(page.text)

export const redirect = (reply: FastifyReply, to: string) => reply.code(303).redirect(to, 303)

/** The sign-in throttle's answer (DASHBOARD.md section 5): 429, when to retry, the password unchecked. */
export function tooManyAttempts(reply: FastifyReply, wait: number) {
  const minutes = Math.ceil(wait / 60)
  reply.header('retry-after', String(wait))
  const lines = [
    'Too many failed sign-in attempts.',
    `Try again in ${minutes} minute${minutes === 1 ? '' : 's'}.`,
  ]
  const view = messageView('Too many attempts', lines, {
    href: '/account/sign-in',
    text: 'Sign in',
  })
  return sendPage(reply, view, 429)
}

/** A rule of the contract broken by what was typed: shown next to the form (422). */
export function formError(err: unknown): FormError & { status: number } {
  if (err instanceof ApiError && err.statusCode === 422) {
    // The API's field `expiresAt` is the forms' `Expires at`.
    const details = err.details?.replace(/\bexpiresAt\b/g, 'Expires at')
    return { message: err.message, details, status: 422 }
  }
  throw err
}

/**
 * The error when it is one of the refusals a page answers itself, next to its form or as a page
 * of its own; anything else goes on to the plugin's error handler.
 */
export function refusal<K extends ErrorKind>(
  err: unknown,
  kinds: readonly K[],
): ApiError & { readonly kind: K } {
  if (err instanceof ApiError && (kinds as readonly ErrorKind[]).includes(err.kind)) {
    return err as ApiError & { readonly kind: K }
  }
  throw err
}

/** A refusal next to its form, in the words the error table gives a person. */
export const refused = (err: ApiError): FormError => ({ message: personText(err, 'page') })

export const form = (request: FastifyRequest) =>
  request.body instanceof URLSearchParams ? request.body : new URLSearchParams()

/** The text `table` gives `key` (a query parameter): its own entries only, never Object's. */
export const textOf = (table: Record<string, string>, key: string | undefined) =>
  key !== undefined && Object.hasOwn(table, key) ? table[key] : undefined
