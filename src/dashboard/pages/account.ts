import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { AppContext } from '../../context.js'
import type { Session } from '../../people/sessions.js'
import type { DashboardDeps } from '../deps.js'
import {
  form,
  holderOf,
  redirect,
  refusal,
  refused,
  sendPage,
  textOf,
  tooManyAttempts,
} from '../reply.js'
import type { ThrottleKey } from '../throttle.js'
import { scopesView, settingsView } from '../views/account.js'
import { noticesOf } from './hygiene-data.js'
import { passkeyPlace } from './passkeys.js'

const notices: Record<string, string> = {
  password: 'Password changed',
  totp: 'Authenticator app turned on',
  passkey: 'Passkey added',
  'factor-removed': 'Removed',
  'token-policy': 'Token policy saved',
  extended: 'Token extended',
}
const refusals: Record<string, string> = {
  last: 'Your account requires a second factor: add another before you remove this one.',
  missing: 'There is no such sign-in method.',
  passkey: 'The passkey was not added: the browser’s answer did not check out. Try again.',
}

type SettingsMore = Partial<
  Pick<Parameters<typeof settingsView>[0], 'error' | 'notice' | 'policyValues' | 'policyError'>
> & { refusal?: string }

/**
 * The settings page: the account, its rate limits and token policy, what needs attention, the
 * person signed in and their sign-in methods; with what the last form left on it.
 */
export async function settingsPage(ctx: AppContext, request: FastifyRequest, more: SettingsMore) {
  const { account, signedIn, session } = holderOf(request)
  const scopeCount = ctx.catalog.availableTo(account.plan, account.features).length
  const { refusal, ...rest } = more
  const [person, factors, upcoming, trust] = await Promise.all([
    personOf(ctx, session),
    factorsOf(ctx, session, account.username, refusal),
    noticesOf(ctx, account),
    ctx.exchange.policies(account.username),
  ])
  return settingsView({
    signedIn,
    account,
    scopeCount,
    person,
    factors: { ...factors, passkeys: passkeyPlace(request, ctx.config.http) },
    notices: upcoming,
    now: ctx.tokens.now(),
    policy: ctx.accounts.tokenPolicy(account),
    ratelimits: ctx.accounts.ratelimits(account, ctx.checkpoint.book).effective,
    trustPolicies: trust?.length ?? 0,
    ...rest,
  })
}

async function personOf(ctx: AppContext, session: Session) {
  const row = await ctx.members.person(session.login)
  const person = { hasPassword: row?.password != null, method: session.method }
  return row?.email == null ? person : { ...person, email: row.email }
}

async function factorsOf(ctx: AppContext, session: Session, username: string, refusal?: string) {
  const [factors, codesLeft, required] = await Promise.all([
    ctx.factors.list(session.login),
    ctx.factors.recoveryCodesLeft(session.login),
    ctx.factors.required(username),
  ])
  return {
    factors,
    codesLeft,
    required,
    ...(refusal === undefined ? {} : { error: { message: refusal } }),
  }
}

/** The scopes page and settings (plan, features, token policy, password). */
export function accountPages(app: FastifyInstance, { ctx, throttle }: DashboardDeps) {
  app.get('/scopes', async (request, reply) => {
    const { account, signedIn } = holderOf(request)
    const scopes = ctx.catalog.availableTo(account.plan, account.features)
    return sendPage(reply, scopesView({ signedIn, scopes }))
  })

  app.get('/settings', async (request, reply) => {
    const q = request.query as { done?: string; refused?: string }
    const more = { notice: textOf(notices, q.done), refusal: textOf(refusals, q.refused) }
    return sendPage(reply, await settingsPage(ctx, request, more))
  })

  // The current password is a guess like a sign-in's: counted in the same throttle, taken
  // before it is checked, given back only when it was right.
  app.post('/settings/password', async (request, reply) => {
    const { session, actor } = holderOf(request)
    const f = form(request)
    const keys: ThrottleKey[] = [
      { kind: 'user', value: session.login },
      { kind: 'ip', value: request.ip },
    ]
    const wait = await throttle.reserve(keys)
    if (wait > 0) return tooManyAttempts(reply, wait)
    try {
      const [current, next] = [f.get('current') ?? '', f.get('password') ?? '']
      await ctx.holders.changePassword(session, current, next, actor)
      await throttle.release(keys)
      return redirect(reply, '/account/settings?done=password')
    } catch (err) {
      const no = refusal(err, ['wrongPassword', 'badPassword', 'passwordMismatch'])
      if (no.kind !== 'wrongPassword') await throttle.release(keys)
      return sendPage(reply, await settingsPage(ctx, request, { error: refused(no) }), 422)
    }
  })
}
