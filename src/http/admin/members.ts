import type { Static } from '@sinclair/typebox'
import { Type } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import type { AppContext } from '../../context.js'
import { forAdmin, operator, tags } from './common.js'
import {
  adminErrors,
  Invited,
  InviteMemberBody,
  MemberObject,
  MemberParams,
  operatorKey,
  PortalLink,
  PortalLinkBody,
  SetRoleBody,
  UsernameParams,
} from './schemas.js'

const missing = 'No such user (404) when the account does not exist.'

/** Where the links handed out point: the public URL, else the address the server listens on. */
const originOf = (app: FastifyInstance, ctx: AppContext) =>
  ctx.config.http.publicUrl ?? app.publicUrl

/** The people of an account (members, roles, invitations) and one-time portal links. */
export function memberRoutes(app: FastifyInstance, ctx: AppContext) {
  listAndInvite(app, ctx)
  roleAndRemoval(app, ctx)
  portalLinks(app, ctx)
}

/** List an account's members; invite one. */
function listAndInvite(app: FastifyInstance, ctx: AppContext) {
  app.get(
    '/accounts/:username/members',
    {
      config: forAdmin,
      schema: {
        summary: "List an account's members",
        description: `Owners first, then developers, then viewers; by login within a role. ${missing}`,
        tags,
        security: operatorKey,
        params: UsernameParams,
        response: { 200: Type.Array(MemberObject), ...adminErrors(404) },
      },
    },
    async (request) => {
      const { username } = request.params as Static<typeof UsernameParams>
      return ctx.members.list(username)
    },
  )

  app.post(
    '/accounts/:username/members',
    {
      config: forAdmin,
      schema: {
        summary: 'Invite a member',
        description:
          'A one-time invitation link (7 days) for the person to join with the role: they ' +
          'choose a username and password, or join as the person they are signed in as. Where ' +
          'SMTP_URL is set the link is also mailed to the email, unless the account or the ' +
          'address has reached its limit of invitation mails for 24 hours (INVITATION_MAILS_PER_*): ' +
          '`mailed` says which. 422 `resources are invalid` ' +
          `for a bad email or role. ${missing}`,
        tags,
        security: operatorKey,
        params: UsernameParams,
        body: InviteMemberBody,
        response: { 201: Invited, ...adminErrors(404, 422) },
      },
    },
    async (request, reply) => {
      const { username } = request.params as Static<typeof UsernameParams>
      const body = request.body as Static<typeof InviteMemberBody>
      const made = await ctx.members.invite(username, body, operator(request))
      return reply
        .code(201)
        .header('cache-control', 'no-store')
        .send({
          email: made.invitation.email,
          role: made.invitation.role,
          invitationUrl: `${originOf(app, ctx)}/account/invitations/${made.secret}`,
          expires: made.invitation.expires,
          ...(made.mailed === undefined ? {} : { mailed: made.mailed }),
        })
    },
  )
}

/** Change a member's role; remove a member. */
function roleAndRemoval(app: FastifyInstance, ctx: AppContext) {
  app.patch(
    '/accounts/:username/members/:login',
    {
      config: forAdmin,
      schema: {
        summary: "Change a member's role",
        description:
          'Their sessions in the account end at once, on every instance. 409 when it would ' +
          'leave the account without an owner; 404 `Not found` for a login that is no member.',
        tags,
        security: operatorKey,
        params: MemberParams,
        body: SetRoleBody,
        response: { 200: MemberObject, ...adminErrors(404, 409, 422) },
      },
    },
    async (request) => {
      const { username, login } = request.params as Static<typeof MemberParams>
      const { role } = request.body as Static<typeof SetRoleBody>
      return ctx.members.setRole(username, login, role, operator(request))
    },
  )

  app.delete(
    '/accounts/:username/members/:login',
    {
      config: forAdmin,
      schema: {
        summary: 'Remove a member',
        description:
          'Their sessions in the account end at once, on every instance. 409 for the last ' +
          'owner; 404 `Not found` for a login that is no member.',
        tags,
        security: operatorKey,
        params: MemberParams,
        response: { 204: Type.Null(), ...adminErrors(404, 409) },
      },
    },
    async (request, reply) => {
      const { username, login } = request.params as Static<typeof MemberParams>
      await ctx.members.remove(username, login, operator(request))
      return reply.code(204).send()
    },
  )
}

/** One-time portal links. */
function portalLinks(app: FastifyInstance, ctx: AppContext) {
  app.post(
    '/accounts/:username/portal-links',
    {
      config: forAdmin,
      schema: {
        summary: 'Make a one-time portal link',
        description:
          'For a person your platform vouches for: the link signs them into the account with ' +
          'the role, once, within 5 minutes, creating or updating the member with that email ' +
          '(matched within the account). A GET of the link only shows a page with a Continue ' +
          'button; the POST it makes signs in. `returnUrl` (https, on an origin listed in ' +
          'PORTAL_RETURN_ORIGINS) is where the page links back to. 422 `resources are ' +
          `invalid\` for a bad email, role or returnUrl. ${missing}`,
        tags,
        security: operatorKey,
        params: UsernameParams,
        body: PortalLinkBody,
        response: { 201: PortalLink, ...adminErrors(404, 422) },
      },
    },
    async (request, reply) => {
      const { username } = request.params as Static<typeof UsernameParams>
      const body = request.body as Static<typeof PortalLinkBody>
      const made = await ctx.members.createPortalLink(username, body, operator(request))
      return reply
        .code(201)
        .header('cache-control', 'no-store')
        .send({ url: `${originOf(app, ctx)}/account/portal/${made.secret}`, expires: made.expires })
    },
  )
}
