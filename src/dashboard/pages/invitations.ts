import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { AppContext } from '../../context.js'
import { actorOf } from '../../http/actor.js'
import type { DashboardDeps } from '../deps.js'
import { form, redirect, refusal, refused, sendPage } from '../reply.js'
import { sessionId } from '../session.js'
import { messageView } from '../views/auth.js'
import { invitationView } from '../views/members.js'
import { beginSession } from './begin.js'

const signedOut = { config: { signedOut: true } }
const secretPattern = /^[A-Za-z0-9_-]{43}$/
/** What accepting an invitation refuses: a link that does not work, a bad new login. */
const acceptRefusals = [
  'linkUnknown',
  'linkGone',
  'badPassword',
  'passwordMismatch',
  'badUsername',
  'loginTaken',
  'lastOwner',
] as const

/** The session of a person who already has one: they may join as themselves. */
const signedInPerson = async (ctx: AppContext, request: FastifyRequest) => {
  const id = sessionId(request)
  return id === undefined ? undefined : await ctx.holders.session(id)
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

/** Invitation links: before a session, or with the session of a person who joins one more. */
export function invitationPages(app: FastifyInstance, { ctx }: DashboardDeps) {
  app.get('/invitations/:secret', signedOut, async (request, reply) => {
    const { secret: link } = request.params as { secret: string }
    if (!secretPattern.test(link)) return linkUnknown(reply)
    const found = await ctx.members.invitation(link)
    if (found.state === 'unknown') return linkUnknown(reply)
    if (found.state === 'gone') return linkGone(reply)
    const session = await signedInPerson(ctx, request)
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
    const session = await signedInPerson(ctx, request)
    const asSignedIn = session !== undefined && f.get('as') === session.login
    const login = (f.get('login') ?? '').trim().toLowerCase()
    const anonymous = actorOf(request, { type: 'anonymous' })
    try {
      const joined = asSignedIn
        ? await ctx.members.accept(link, { login: session.login }, anonymous)
        : await ctx.members.accept(
            link,
            { newLogin: login, password: f.get('password') ?? '', confirm: f.get('confirm') ?? '' },
            anonymous,
          )
      if (asSignedIn) {
        await ctx.holders.switchAccount(session, joined.username)
        return redirect(reply, '/account')
      }
      const person = { login: joined.login, accounts: [joined.username] }
      return beginSession(ctx, request, reply, person, 'password', '/account')
    } catch (err) {
      const no = refusal(err, acceptRefusals)
      if (no.kind === 'linkUnknown') return linkUnknown(reply)
      if (no.kind === 'linkGone') return linkGone(reply)
      const found = await ctx.members.invitation(link)
      if (found.state !== 'open') return linkGone(reply)
      const view = invitationView({
        action: `/account/invitations/${link}`,
        username: found.username,
        role: found.role,
        email: found.email,
        values: { login },
        error: refused(no),
      })
      return sendPage(reply, view, 422)
    }
  })
}
