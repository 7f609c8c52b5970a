import type { Static } from '@sinclair/typebox'
import { Type } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import type { AppContext } from '../../context.js'
import { forAdmin, nextPage, operator, pageSize, tags } from './common.js'
import { adminErrors, operatorKey, PageQuery } from './schemas.js'
import {
  CreatedWebhook,
  CreateWebhookBody,
  WebhookDelivery,
  WebhookObject,
  WebhookParams,
  WebhookSecret,
} from './webhook-schemas.js'

const missing = '404 `Not found` when there is no such webhook.'
const params = (p: unknown) => (p as Static<typeof WebhookParams>).id

const signing = [
  'Each event is POSTed as the JSON of the audit event (`{"id", "at", "action", ...}`) with',
  '`Content-Type: application/json`, `User-Agent: Tessera-Webhooks/1`, `Tessera-Event-Id` (for',
  'de-duplication) and `Tessera-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of',
  '"<t>.<body>" keyed with the secret>`. A 2xx answer within 10 s delivers it; anything else is',
  'retried with exponential backoff (from 1 s, doubling up to 1 hour, full jitter) for 24 hours',
  'from the first attempt, then marked failed. At least once, in order per endpoint: the next',
  'event waits until the previous is delivered or failed.',
].join(' ')

/** Webhook endpoints: register, read, remove, ping, and their deliveries. */
export function webhookRoutes(app: FastifyInstance, ctx: AppContext): void {
  createAndList(app, ctx)
  readAndRemove(app, ctx)
  pingAndDeliveries(app, ctx)
}

/** Register a webhook; list them. */
function createAndList(app: FastifyInstance, ctx: AppContext) {
  app.post(
    '/webhooks',
    {
      config: forAdmin,
      schema: {
        summary: 'Register a webhook endpoint',
        description:
          'Answers the endpoint with its `secret` (201); it receives the events committed from ' +
          'now on, those of `events` only when given, but never its own `webhook.created` ' +
          '(written to the audit log with `{url, events}`, never the secret; other endpoints ' +
          `get it). ${signing} 422 \`resources are ` +
          'invalid` with `details` for an unknown event, a URL that is not https, carries ' +
          'credentials, does not resolve, or resolves to a loopback, private, link-local or ' +
          'otherwise non-public address (allowed with WEBHOOK_ALLOW_PRIVATE=1).',
        tags,
        security: operatorKey,
        body: CreateWebhookBody,
        response: { 201: CreatedWebhook, ...adminErrors(422) },
      },
    },
    async (request, reply) => {
      const body = request.body as Static<typeof CreateWebhookBody>
      return reply
        .code(201)
        .send(await ctx.webhooks.service.create(body.url, body.events, operator(request)))
    },
  )

  app.get(
    '/webhooks',
    {
      config: forAdmin,
      schema: {
        summary: 'List webhook endpoints',
        description:
          'In creation order, without their secrets. `start` is the id of the last endpoint of ' +
          'the previous page; a `Link: <...>; rel="next"` header leads to the next page.',
        tags,
        security: operatorKey,
        querystring: PageQuery,
        response: { 200: Type.Array(WebhookObject), ...adminErrors(422) },
      },
    },
    async (request, reply) => {
      const q = request.query as Static<typeof PageQuery>
      const limit = pageSize(q.limit)
      const rows = await ctx.webhooks.service.list(q.start, limit + 1)
      const page = rows.slice(0, limit)
      const last = page.at(-1)
      if (rows.length > limit && last !== undefined) {
        nextPage(app, ctx, reply, '/webhooks', { limit: String(limit), start: last.id })
      }
      return page
    },
  )
}

/** Read a webhook and its secret; remove it. */
function readAndRemove(app: FastifyInstance, ctx: AppContext) {
  app.get(
    '/webhooks/:id',
    {
      config: forAdmin,
      schema: {
        summary: 'Get a webhook endpoint',
        description: `Without its secret. ${missing}`,
        tags,
        security: operatorKey,
        params: WebhookParams,
        response: { 200: WebhookObject, ...adminErrors(404) },
      },
    },
    async (request) => ctx.webhooks.service.get(params(request.params)),
  )

  app.get(
    '/webhooks/:id/secret',
    {
      config: forAdmin,
      schema: {
        summary: "Reveal a webhook endpoint's signing secret",
        description: `The key receivers check \`Tessera-Signature\` with. ${missing}`,
        tags,
        security: operatorKey,
        params: WebhookParams,
        response: { 200: WebhookSecret, ...adminErrors(404) },
      },
    },
    async (request) => ctx.webhooks.service.secret(params(request.params)),
  )

  app.delete(
    '/webhooks/:id',
    {
      config: forAdmin,
      schema: {
        summary: 'Remove a webhook endpoint',
        description:
          'Nothing more is delivered to it; its deliveries are forgotten. Written to the audit ' +
          `log as \`webhook.deleted\` (not delivered to the endpoint removed). ${missing}`,
        tags,
        security: operatorKey,
        params: WebhookParams,
        response: { 204: Type.Null(), ...adminErrors(404) },
      },
    },
    async (request, reply) => {
      await ctx.webhooks.service.remove(params(request.params), operator(request))
      return reply.code(204).send()
    },
  )
}

/** A test event now; the deliveries so far. */
function pingAndDeliveries(app: FastifyInstance, ctx: AppContext) {
  app.post(
    '/webhooks/:id/ping',
    {
      config: forAdmin,
      schema: {
        summary: 'Send a test event to a webhook endpoint',
        description:
          'Posts `{"id", "at", "action": "ping", "target": {"type": "webhook", "id"}}`, signed ' +
          'like every delivery, right away (outside the order of the other events, never ' +
          "retried), and answers the delivery it recorded: `delivered` with the receiver's " +
          `status, or \`failed\` with the error. 200 either way. ${missing}`,
        tags,
        security: operatorKey,
        params: WebhookParams,
        response: { 200: WebhookDelivery, ...adminErrors(404) },
      },
    },
    async (request) => ctx.webhooks.service.ping(params(request.params)),
  )

  app.get(
    '/webhooks/:id/deliveries',
    {
      config: forAdmin,
      schema: {
        summary: "A webhook endpoint's deliveries",
        description:
          'Newest first, each with every attempt (status, time, error, duration): `pending` ' +
          '(to be retried at `nextAttempt`), `delivered` or `failed`. Events not attempted yet ' +
          'are not listed. `start` is the event id of the last delivery of the previous page; a ' +
          '`Link: <...>; rel="next"` header leads to the next page. Kept as long as the event ' +
          `outbox keeps events (EVENT_RETENTION_HOURS). ${missing}`,
        tags,
        security: operatorKey,
        params: WebhookParams,
        querystring: PageQuery,
        response: { 200: Type.Array(WebhookDelivery), ...adminErrors(404, 422) },
      },
    },
    async (request, reply) => {
      const id = params(request.params)
      const q = request.query as Static<typeof PageQuery>
      const limit = pageSize(q.limit)
      const rows = await ctx.webhooks.service.deliveries(id, q.start, limit + 1)
      const page = rows.slice(0, limit)
      const last = page.at(-1)
      if (rows.length > limit && last !== undefined) {
        const path = `/webhooks/${encodeURIComponent(id)}/deliveries`
        nextPage(app, ctx, reply, path, { limit: String(limit), start: last.eventId })
      }
      return page
    },
  )
}
