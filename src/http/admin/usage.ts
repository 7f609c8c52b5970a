import type { FastifyInstance } from 'fastify'
import type { AppContext } from '../../context.js'

/** Placeholder: see /tmp/design.md. */
export function usageRoutes(_app: FastifyInstance, _ctx: AppContext): void {}
