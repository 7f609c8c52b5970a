import type { FastifyInstance, FastifyReply } from 'fastify'
import { actorOf } from '../../http/actor.js'
import type { DashboardDeps } from '../deps.js'
import { sendPage } from '../reply.js'
import { messageView } from '../views/auth.js'
import { portalView } from '../views/members.js'
import { beginSession } from './begin.js'

const signedOut = { config: { signedOut: true } }
const secretPattern = /^[A-Za-z0-9_-]{43}$/

/**
 * One-time portal links: a platform's backend makes one for a person it vouches for (admin
 * API), the person's browser opens it. A GET only shows a page (link previewers fetch URLs);
 * its `Continue` button posts the secret back, which signs the person in, once. The secret
 * never leaves in a Referer header.
 */
export function portalPages(app: FastifyInstance, { ctx }: DashboardDeps) {
  const { members } = ctx
  /** Used, expired or never issued: the same page for all three. */
  const gone = (reply: FastifyReply) =>
    sendPage(
      reply.header('referrer-policy', 'no-referrer'),
      messageView('Link no longer valid', [
        'This sign-in link has been used or has expired (links work once, within 5 minutes).',
        'Go back to where you found it and open a new one.',
      ]),
      410,
    )

  app.get('/portal/:secret', signedOut, async (request, reply) => {
    const { secret: link } = request.params as { secret: string }
    if (!secretPattern.test(link)) return gone(reply)
    const found = await members.portalLink(link)
    if (found.state !== 'open') return gone(reply)
    const { returnUrl, username, email, role } = found
    const view = portalView({ action: `/account/portal/${link}`, returnUrl, username, email, role })
    return sendPage(reply.header('referrer-policy', 'no-referrer'), view)
  })

  app.post('/portal/:secret', signedOut, async (request, reply) => {
    const { secret: link } = request.params as { secret: string }
    if (!secretPattern.test(link)) return gone(reply)
    const used = await members.usePortalLink(link, actorOf(request, { type: 'anonymous' }))
    if (used === undefined) return gone(reply)
    reply.header('referrer-policy', 'no-referrer')
    const person = { login: used.login, accounts: [used.username] }
    const back = used.returnUrl ?? undefined
    return beginSession(ctx, request, reply, person, 'link', '/account', back)
  })
}
