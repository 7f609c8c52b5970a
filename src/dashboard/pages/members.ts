import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { AppContext } from '../../context.js'
import { isRole, type Role } from '../../people/members.js'
import type { DashboardDeps } from '../deps.js'
import { form, holderOf, redirect, refusal, refused, sendPage, textOf } from '../reply.js'
import { Forbidden, safeNext } from '../session.js'
import { accountsView, membersView } from '../views/members.js'
import { invitationPages } from './invitations.js'

/**
 * Who may act on the account changes only with a recent proof, as a sign-in method does: a
 * stolen session could otherwise invite an owner of its own and keep the account.
 */
const ownersProven = {
  config: { role: 'owner' as const, sudo: 'page' as const, back: '/account/members' },
}
const notices: Record<string, string> = {
  role: 'Role changed. Their sessions in this account have ended.',
  removed: 'Member removed. Their sessions in this account have ended.',
  revoked: 'Invitation revoked.',
  policy: 'Sign-in policy saved.',
}

/** The members page, with what the last form left on it. */
async function page(
  ctx: AppContext,
  request: FastifyRequest,
  more: Omit<
    Parameters<typeof membersView>[0],
    'signedIn' | 'members' | 'invitations' | 'policy'
  > = {},
) {
  const { account, signedIn, role } = holderOf(request)
  const list = await ctx.members.list(account.username)
  const invitations = role === 'owner' ? await ctx.members.invitations(account.username) : []
  const policy = {
    required: await ctx.factors.accountRequires(account.username),
    byOperator: ctx.factors.requiredByOperator,
  }
  return membersView({ signedIn, members: list, invitations, policy, ...more })
}

/** A change to a member that the page reports; a refusal is shown on the page (409/404). */
async function change(
  ctx: AppContext,
  request: FastifyRequest,
  reply: FastifyReply,
  done: string,
  act: () => Promise<unknown>,
) {
  try {
    await act()
    return redirect(reply, `/account/members?done=${done}`)
  } catch (err) {
    const no = refusal(err, ['memberInvalid', 'memberMissing', 'lastOwner'])
    return sendPage(reply, await page(ctx, request, { error: refused(no) }), no.statusCode)
  }
}

/** The members page (owners change it), invitation links, and choosing an account. */
export function memberPages(app: FastifyInstance, deps: DashboardDeps) {
  const { ctx } = deps
  const { members, holders } = ctx
  const origin = () => ctx.config.http.publicUrl ?? app.publicUrl

  app.get('/members', async (request, reply) => {
    const done = (request.query as { done?: string }).done ?? ''
    return sendPage(reply, await page(ctx, request, { notice: textOf(notices, done) }))
  })

  app.post('/members/invite', ownersProven, async (request, reply) => {
    const { account, actor } = holderOf(request)
    const f = form(request)
    const email = (f.get('email') ?? '').trim()
    const role = f.get('role') ?? ''
    try {
      const made = await members.invite(account.username, { email, role }, actor)
      const url = `${origin()}/account/invitations/${made.secret}`
      const { email: to, role: as } = made.invitation
      const created = {
        url,
        email: to,
        role: as,
        ...(made.mailed === undefined ? {} : { mailed: made.mailed }),
      }
      return sendPage(reply, await page(ctx, request, { created }))
    } catch (err) {
      const error = refused(refusal(err, ['memberInvalid']))
      const values = { email, role: isRole(role) ? role : ('developer' as Role) }
      return sendPage(reply, await page(ctx, request, { values, error }), 422)
    }
  })

  app.post('/members/:login/role', ownersProven, async (request, reply) => {
    const { account, actor } = holderOf(request)
    const { login } = request.params as { login: string }
    const role = form(request).get('role')
    return change(ctx, request, reply, 'role', () =>
      members.setRole(account.username, login, role, actor),
    )
  })

  app.post('/members/:login/remove', ownersProven, async (request, reply) => {
    const { account, actor } = holderOf(request)
    const { login } = request.params as { login: string }
    return change(ctx, request, reply, 'removed', () =>
      members.remove(account.username, login, actor),
    )
  })

  app.post('/members/invitations/:id/revoke', ownersProven, async (request, reply) => {
    const { account, actor } = holderOf(request)
    const { id } = request.params as { id: string }
    return change(ctx, request, reply, 'revoked', () =>
      members.revokeInvitation(account.username, id, actor),
    )
  })

  // Choosing the account a session is in.
  app.get('/accounts', async (request, reply) => {
    const { signedIn, session } = holderOf(request)
    const next = safeNext((request.query as { next?: string }).next)
    const accounts = await members.memberships(session.login)
    return sendPage(reply, accountsView({ signedIn, accounts, next }))
  })

  app.post('/accounts', async (request, reply) => {
    const { session } = holderOf(request)
    const f = form(request)
    const wanted = f.get('account') ?? ''
    const open = await holders.accountsOf(session.login)
    if (!open.includes(wanted)) throw new Forbidden('You are not a member of that account.')
    await holders.switchAccount(session, wanted)
    return redirect(reply, safeNext(f.get('next')))
  })
  invitationPages(app, deps)
}
