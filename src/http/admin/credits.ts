import type { FastifyInstance } from 'fastify'
import type { AppContext } from '../../context.js'

/** Placeholder: see /tmp/design.md. */
export function creditsRoutes(_app: FastifyInstance, _ctx: AppContext): void {}
