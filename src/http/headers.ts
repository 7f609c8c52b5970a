import type { FastifyReply } from 'fastify'
import { rateLimitHeaders } from './limit-headers.js'

/**
 * HSTS: two years, Mozilla's recommended value (its HTTP Observatory asks for six months at
 * least). No `includeSubDomains`: the other hosts of the operator's domain are theirs to decide.
 */
export const hsts = 'max-age=63072000'

/** The token API's CORS: any origin (the contract's clients run in browsers), these exposed. */
export const cors = {
  'access-control-allow-origin': '*',
  'access-control-expose-headers': ['Link', ...rateLimitHeaders].join(', '),
}

/**
 * The headers every answer starts with, lowercase names and string values (Node and Fastify
 * take them as they are, which halves their cost): the token API's CORS, `nosniff` (the API
 * answers JSON), and HSTS wherever the client reached Tessera over HTTPS: over TLS here, or
 * through the proxy of TRUST_PROXY, which answers only requests forwarded as https (a browser
 * ignores the header on a plain HTTP answer, such as a probe's). Pages and the admin API take
 * the CORS headers out again (`withoutCors`).
 */
export function firstHeaders(https: boolean): Record<string, string> {
  return {
    ...cors,
    'x-content-type-options': 'nosniff',
    ...(https ? { 'strict-transport-security': hsts } : {}),
  }
}

/** An answer for this origin or for servers only: no CORS headers. */
export const withoutCors = (reply: FastifyReply) =>
  reply.removeHeader('access-control-allow-origin').removeHeader('access-control-expose-headers')
