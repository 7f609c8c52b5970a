import { Type } from '@sinclair/typebox'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { AppContext } from '../../context.js'
import type { OutboxEvent } from '../../db/outbox.js'
import { ApiError } from '../../errors.js'
import { forVerifier, tags } from './common.js'
import { adminErrors, operatorKey } from './schemas.js'

/** A stream further behind than this (a consumer that stopped reading) is cut; it resumes. */
const maxBufferedBytes = 4 * 1024 * 1024
const pingEveryMs = 15_000
const position = /^[0-9]{1,15}$/

const description = [
  'Server-Sent Events (`text/event-stream`): every event of the audit log as it is committed,',
  'as `id: <sequence number>`, `event: <action>`, `data: <the audit event as JSON>`. Resumable:',
  'with `Last-Event-ID` (or `?after=`, the header wins) the stream first sends every event after',
  'that number that is still kept (EVENT_RETENTION_HOURS), then follows; without either it starts',
  'after the newest event. When events after the given number are no longer kept, the stream',
  'begins with `event: reset` (`data: {}`): drop whatever was derived from earlier events.',
  'A comment line `: ping` every 15 s keeps idle connections open. 422 `resources are invalid`',
  'for a position that is not a number.',
].join(' ')

const frame = (e: OutboxEvent) => `id: ${e.seq}\nevent: ${e.action}\ndata: ${e.body}\n\n`

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
        response: { ...adminErrors(422) },
      },
    },
    async (request: FastifyRequest, reply: FastifyReply) => {
      const given =
        (request.headers['last-event-id'] as string | undefined) ??
        (request.query as { after?: string }).after
      if (given !== undefined && !position.test(given.trim())) {
        throw new ApiError('invalidResources', 'Last-Event-ID must be an event sequence number')
      }
      const newest = await ctx.events.newest()
      let after = newest
      let reset = false
      if (given !== undefined) {
        after = Number(given.trim())
        const oldest = await ctx.events.oldest()
        if (after > newest) {
          // Ahead of this database (restored, or another deployment): start afresh.
          reset = true
          after = newest
        } else if (oldest !== undefined && oldest > after + 1) reset = true
      }

      reply.hijack()
      const raw = reply.raw
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
      const unsubscribe = ctx.events.subscribe(after, (events) => {
        let text = ''
        for (const e of events) text += frame(e)
        write(text)
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
