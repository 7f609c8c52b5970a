import { Type } from '@sinclair/typebox'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { AppContext } from '../../context.js'
import type { OutboxEvent } from '../../db/outbox.js'
import { ApiError } from '../../errors.js'
import { withoutCors } from '../headers.js'
import { forVerifier, tags } from './common.js'
import { adminErrors, operatorKey } from './schemas.js'

/** A stream further behind than this (a consumer that stopped reading) is cut; it resumes. */
const maxBufferedBytes = 4 * 1024 * 1024
const pingEveryMs = 15_000
const position = /^[0-9]{1,15}$/

/**
 * What a `verifier` key (the internet-facing side) gets of the stream: the events after which
 * @tessera/verifier drops cached answers or credit leases (packages/verifier/src/invalidation.ts),
 * each cut to what it reads there; never the audit log's client addresses, actors, request ids
 * or other details (an invitee's email, a sign-in's typed login). An `admin` key gets it all.
 */
const verifierActions = new Set([
  'token.updated',
  'token.deleted',
  'token.rolled',
  'account.changed',
  'account.disabled',
  'account.enabled',
  'account.deleted',
  'credits.changed',
])

const description = [
  'Server-Sent Events (`text/event-stream`): every event of the audit log as it is committed,',
  'as `id: <sequence number>`, `event: <action>`, `data: <the audit event as JSON>`. Resumable:',
  'with `Last-Event-ID` (or `?after=`, the header wins) the stream first sends every event after',
  'that number that is still kept (EVENT_RETENTION_HOURS), then follows; without either it starts',
  'after the newest event. When events after the given number are no longer kept, the stream',
  'begins with `event: reset` (`data: {}`): drop whatever was derived from earlier events.',
  'A comment line `: ping` every 15 s keeps idle connections open. A `verifier` key gets only',
  `the events @tessera/verifier acts on (${[...verifierActions].join(', ')}), each as`,
  '`{id, at, action, account, target}` (a `token.rolled` with `details.previous`), never the',
  "actor, address, request id or other details; the other events' positions still reach it (a",
  'frame with only an `id:` line), so that it resumes where it was. 422 `resources are invalid`',
  'for a position that is not a number.',
].join(' ')

const frame = (e: OutboxEvent) => `id: ${e.seq}\nevent: ${e.action}\ndata: ${e.body}\n\n`

/** The frames of a batch of events, for one stream. */
type Framer = (events: OutboxEvent[]) => string

/** A verifier's view of each event, made once however many verifiers follow the stream. */
const verifierViews = new WeakMap<OutboxEvent, string>()

/** The event as a verifier reads it, or null when a verifier does not get it. */
function verifierView(e: OutboxEvent): string | null {
  if (!verifierActions.has(e.action)) return null
  const known = verifierViews.get(e)
  if (known !== undefined) return known
  let view: string
  try {
    const full = JSON.parse(e.body)
    const target: { type?: unknown; id?: unknown } = { type: full.target?.type }
    if (full.target?.id !== undefined) target.id = full.target.id
    const slim: Record<string, unknown> = { id: full.id, at: full.at, action: full.action }
    if (full.account !== undefined) slim.account = full.account
    slim.target = target
    // The old token of a roll: its cached answers are the ones outdated.
    if (e.action === 'token.rolled') slim.details = { previous: full.details?.previous }
    view = JSON.stringify(slim)
  } catch {
    // Never the case (the outbox holds our own JSON): one that names nothing clears a cache.
    view = JSON.stringify({ action: e.action })
  }
  verifierViews.set(e, view)
  return view
}

const adminFrames: Framer = (events) => {
  let text = ''
  for (const e of events) text += frame(e)
  return text
}

/**
 * A verifier's frames. When the batch ends with events it does not get, a frame with only
 * their last position (no data: nothing is dispatched, but EventSource and @tessera/verifier
 * take it as the last event id) moves its Last-Event-ID past them: a reconnection resumes
 * there, not before them, and is not told `reset` for events it never needed.
 */
const verifierFrames: Framer = (events) => {
  let text = ''
  let skipped: number | undefined
  for (const e of events) {
    const view = verifierView(e)
    if (view === null) {
      skipped = e.seq
      continue
    }
    text += `id: ${e.seq}\nevent: ${e.action}\ndata: ${view}\n\n`
    skipped = undefined
  }
  if (skipped !== undefined) text += `id: ${skipped}\n\n`
  return text
}

/**
 * Where a stream starts: after the position the consumer gives (Last-Event-ID, or `after`), or
 * the newest event; `reset` when that position is gone or ahead of this database.
 */
async function startOf(ctx: AppContext, request: FastifyRequest) {
  const given =
    (request.headers['last-event-id'] as string | undefined) ??
    (request.query as { after?: string }).after
  if (given !== undefined && !position.test(given.trim())) {
    throw new ApiError('invalidResources', 'Last-Event-ID must be an event sequence number')
  }
  const newest = await ctx.events.newest()
  if (given === undefined) return { after: newest, reset: false }
  const after = Number(given.trim())
  // Ahead of this database (restored, or another deployment): start afresh.
  if (after > newest) return { after: newest, reset: true }
  const oldest = await ctx.events.oldest()
  return { after, reset: oldest !== undefined && oldest > after + 1 }
}

/** The event stream: the outbox followed, for consumers such as @tessera/verifier. */
export function eventRoutes(app: FastifyInstance, ctx: AppContext): void {
  const streams = new Set<() => void>()
  // A stream never ends by itself: shutdown ends them, so that draining does not wait on them.
  app.addHook('preClose', (done) => {
    for (const end of streams) end()
    done()
  })

  app.get(
    '/events',
    {
      config: forVerifier,
      schema: {
        summary: 'Follow the events (Server-Sent Events)',
        description,
        tags,
        security: operatorKey,
        querystring: Type.Object({ after: Type.Optional(Type.String()) }),
        headers: Type.Object({ 'last-event-id': Type.Optional(Type.String()) }),
        // The stream is written by hand (the reply is hijacked): its schema documents it only.
        response: { 200: Type.String({ description: 'Server-Sent Events' }), ...adminErrors(422) },
        mediaTypes: { 200: 'text/event-stream' },
      },
    },
    async (request: FastifyRequest, reply: FastifyReply) => {
      const { after, reset } = await startOf(ctx, request)
      reply.hijack()
      const raw = reply.raw
      // The app's first headers (nosniff, HSTS over HTTPS), without the token API's CORS.
      for (const [name, value] of Object.entries(withoutCors(reply).getHeaders())) {
        if (value !== undefined) raw.setHeader(name, value)
      }
      raw.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-store',
        'x-accel-buffering': 'no',
      })
      // A HEAD has no body to follow: Node would hold its headers back until the end.
      if (request.method === 'HEAD') {
        raw.end()
        return
      }
      raw.write(reset ? 'retry: 1000\n\nevent: reset\ndata: {}\n\n' : 'retry: 1000\n\n')
      const write = (text: string) => {
        if (raw.writableLength > maxBufferedBytes) raw.destroy()
        else raw.write(text)
      }
      const frames = request.adminKeyScope === 'admin' ? adminFrames : verifierFrames
      const unsubscribe = ctx.events.subscribe(after, (events) => {
        const text = frames(events)
        if (text !== '') write(text)
      })
      const ping = setInterval(() => write(': ping\n\n'), pingEveryMs)
      const end = () => {
        clearInterval(ping)
        unsubscribe()
        streams.delete(end)
        if (!raw.writableEnded) raw.end()
      }
      streams.add(end)
      raw.on('close', end)
      // Gone while the positions were read: 'close' has fired already.
      if (raw.destroyed) end()
    },
  )
}
