import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { actorOf } from '../../http/actor.js'
import { isRole, MemberError, type Role } from '../../people/members.js'
import type { DashboardDeps } from '../deps.js'
import { form, holderOf, redirect, sendPage } from '../reply.js'
import { Forbidden, safeNext, sessionId } from '../session.js'
import { messageView } from '../views/auth.js'
import { accountsView, invitationView, membersView } from '../views/members.js'
import { beginSession } from './begin.js'

const owners = { config: { role: 'owner' as const } }
const signedOut = { config: { signedOut: true } }
const secretPattern = /^[A-Za-z0-9_-]{43}$/

/** The members page (owners change it), invitation links, and choosing an account. */
export function memberPages(app: FastifyInstance, { ctx }: DashboardDeps) {
  const { members, holders } = ctx
  const origin = () => ctx.config.http.publicUrl ?? app.publicUrl

  const page = async (
    request: FastifyRequest,
    more: Omit<
      Parameters<typeof membersView>[0],
      'signedIn' | 'members' | 'invitations' | 'policy'
    > = {},
  ) => {
    const { account, signedIn, role } = holderOf(request)
    const list = await members.list(account.username)
    const invitations = role === 'owner' ? await members.invitations(account.username) : []
    const policy = {
      required: await ctx.factors.accountRequires(account.username),
      byOperator: ctx.factors.requiredByOperator,
    }
    return membersView({ signedIn, members: list, invitations, policy, ...more })
  }

  const notices: Record<string, string> = {
    role: 'Role changed. Their sessions in this account have ended.',
    removed: 'Member removed. Their sessions in this account have ended.',
    revoked: 'Invitation revoked.',
    policy: 'Sign-in policy saved.',
  }

  app.get('/members', async (request, reply) => {
    const done = (request.query as { done?: string }).done ?? ''
    return sendPage(reply, await page(request, { notice: notices[done] }))
  })

  app.post('/members/invite', owners, async (request, reply) => {
    const { account, actor } = holderOf(request)
    const f = form(request)
    const email = (f.get('email') ?? '').trim()
    const role = f.get('role') ?? ''
    try {
      const made = await members.invite(account.username, { email, role }, actor)
      const url = `${origin()}/account/invitations/${made.secret}`
      const created = { url, email: made.invitation.email, role: made.invitation.role }
      return sendPage(reply, await page(request, { created }))
    } catch (err) {
      if (!(err instanceof MemberError)) throw err
      const values = { email, role: isRole(role) ? role : ('developer' as Role) }
      return sendPage(reply, await page(request, { values, error: sentence(err) }), 422)
    }
  })

  /** A change to a member that the page reports; a refusal is shown on the page (409/404). */
  const change = async (
    request: FastifyRequest,
    reply: FastifyReply,
    done: string,
    act: () => Promise<unknown>,
  ) => {
    try {
      await act()
      return redirect(reply, `/account/members?done=${done}`)
    } catch (err) {
      if (!(err instanceof MemberError)) throw err
      const status = err.reason === 'lastOwner' ? 409 : err.reason === 'missing' ? 404 : 422
      return sendPage(reply, await page(request, { error: sentence(err) }), status)
    }
  }

  app.post('/members/:login/role', owners, async (request, reply) => {
    const { account, actor } = holderOf(request)
    const { login } = request.params as { login: string }
    const role = form(request).get('role')
    return change(request, reply, 'role', () =>
      members.setRole(account.username, login, role, actor),
    )
  })

  app.post('/members/:login/remove', owners, async (request, reply) => {
    const { account, actor } = holderOf(request)
    const { login } = request.params as { login: string }
    return change(request, reply, 'removed', () => members.remove(account.username, login, actor))
  })

  app.post('/members/invitations/:id/revoke', owners, async (request, reply) => {
    const { account, actor } = holderOf(request)
    const { id } = request.params as { id: string }
    return change(request, reply, 'revoked', () =>
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

  // Invitation links: before a session, or with the session of a person who joins one more.
  const signedInPerson = async (request: FastifyRequest) => {
    const id = sessionId(request)
    return id === undefined ? undefined : await holders.session(id)
  }
  const linkGone = (reply: FastifyReply) =>
    sendPage(
      reply,
      messageView('Link no longer valid', [
        'This invitation has been used, revoked or has expired (invitations last 7 days).',
        'Ask an owner of the account for a new one.',
      ]),
      410,
    )
  const linkUnknown = (reply: FastifyReply) =>
    sendPage(reply, messageView('Page not found', ['This invitation link is not valid.']), 404)

  app.get('/invitations/:secret', signedOut, async (request, reply) => {
    const { secret: link } = request.params as { secret: string }
    if (!secretPattern.test(link)) return linkUnknown(reply)
    const found = await members.invitation(link)
    if (found.state === 'unknown') return linkUnknown(reply)
    if (found.state === 'gone') return linkGone(reply)
    const session = await signedInPerson(request)
    const view = invitationView({
      action: `/account/invitations/${link}`,
      username: found.username,
      role: found.role,
      email: found.email,
      ...(session === undefined ? {} : { signedInAs: session.login }),
    })
    return sendPage(reply, view)
  })

  app.post('/invitations/:secret', signedOut, async (request, reply) => {
    const { secret: link } = request.params as { secret: string }
    if (!secretPattern.test(link)) return linkUnknown(reply)
    const f = form(request)
    const session = await signedInPerson(request)
    const asSignedIn = session !== undefined && f.get('as') === session.login
    const login = (f.get('login') ?? '').trim().toLowerCase()
    const anonymous = actorOf(request, { type: 'anonymous' })
    try {
      const joined = asSignedIn
        ? await members.accept(link, { login: session.login }, anonymous)
        : await members.accept(
            link,
            { newLogin: login, password: f.get('password') ?? '', confirm: f.get('confirm') ?? '' },
            anonymous,
          )
      if (asSignedIn) {
        await holders.switchAccount(session, joined.username)
        return redirect(reply, '/account')
      }
      const person = { login: joined.login, accounts: [joined.username] }
      return beginSession(ctx, request, reply, person, 'password', '/account')
    } catch (err) {
      if (!(err instanceof MemberError)) throw err
      if (err.reason === 'unknown') return linkUnknown(reply)
      if (err.reason === 'gone') return linkGone(reply)
      const found = await members.invitation(link)
      if (found.state !== 'open') return linkGone(reply)
      const view = invitationView({
        action: `/account/invitations/${link}`,
        username: found.username,
        role: found.role,
        email: found.email,
        values: { login },
        error: { message: err.message },
      })
      return sendPage(reply, view, 422)
    }
  })
}

/** A service refusal as the page shows it: a sentence. */
const sentence = (err: MemberError) => ({
  message: `${err.message.charAt(0).toUpperCase()}${err.message.slice(1)}.`.replace(/\.\.$/, '.'),
})
