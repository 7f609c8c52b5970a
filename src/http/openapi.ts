import { STATUS_CODES } from 'node:http'
import type { TObject, TSchema } from '@sinclair/typebox'
import type { FastifyInstance, RouteOptions } from 'fastify'
import { apiDescription, responseHeaders, tokenSecuritySchemes } from './documented.js'

interface Operation {
  method: string
  path: string
  schema: NonNullable<RouteOptions['schema']> & Documented
  scope?: string
  /** An admin route's operator scope: `admin`, or `verifier` (which an `admin` key holds too). */
  operatorScope?: string
}

/** What a route's schema may say besides its inputs and responses. */
interface Documented {
  /** Named once and kept: a generated client's method name. Made of the method and path if absent. */
  operationId?: string
  summary?: string
  description?: string
  tags?: string[]
  security?: Record<string, string[]>[]
  /** Every answer carries the rate-limit headers, and a 429 `Retry-After`. */
  rateLimited?: boolean
  /** A body the handler reads itself, without a schema to validate it: documented only. */
  documentedBody?: TSchema
  /** The media type of a response that is not JSON, by status (`text/event-stream`). */
  mediaTypes?: Record<number, string>
}

/** Besides the routes: named tags, and the security schemes their routes' `security` names. */
export interface OpenApiInfo {
  version: string
  /** Listed in this order; the first is the tag of every route whose schema names none. */
  tags?: { name: string; description: string }[]
  securitySchemes?: Record<string, unknown>
}

/** JSON Schema as OpenAPI 3.1 takes it, without TypeBox's symbols and our own keywords. */
const clean = (schema: unknown): unknown =>
  JSON.parse(JSON.stringify(schema, (key, value) => (key === 'errorMessage' ? undefined : value)))

/**
 * `GET /openapi.json`: an OpenAPI 3.1 document generated from the same route schemas that
 * validate requests and serialize responses, so it cannot drift from the code.
 */
export function openapi(app: FastifyInstance, info: OpenApiInfo) {
  const operations: Operation[] = []
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method]
    if (
      route.schema === undefined ||
      (route.schema as { hide?: boolean }).hide ||
      route.url.endsWith('/')
    )
      return
    for (const method of methods) {
      if (method === 'HEAD') continue
      operations.push({
        method: method.toLowerCase(),
        path: route.url.replace(/:([a-z_]+)/g, '{$1}'),
        schema: route.schema,
        scope: (route.config as { scope?: string } | undefined)?.scope,
        operatorScope: route.config?.operatorScope,
      })
    }
  })

  let document: unknown
  app.get('/openapi.json', async () => {
    // The origin is known once the server listens (PORT=0 picks the port then).
    document ??= build(operations, info, app.publicUrl)
    return document
  })
}

const pascal = (word: string) =>
  word
    .split(/[-_]/)
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join('')

/** `getAdminV1AccountsByUsername`: an operation's id made of its method and path. */
const madeId = (method: string, path: string) =>
  method +
  path
    .split('/')
    .filter((segment) => segment !== '')
    .map((segment) =>
      segment.startsWith('{') ? `By${pascal(segment.slice(1, -1))}` : pascal(segment),
    )
    .join('')

/** The token API's `access_token`: optional, since the Authorization header may carry it. */
const accessTokenParameter = {
  name: 'access_token',
  in: 'query',
  required: false,
  description: 'The token; or give it as `Authorization: Bearer <token>`',
  schema: { type: 'string' },
}

/** The operation's path, query and header parameters; a token API route's `access_token` too. */
function parameters(op: Operation) {
  const list: unknown[] = []
  for (const [where, schema] of [
    ['path', op.schema.params],
    ['query', op.schema.querystring],
    ['header', op.schema.headers],
  ] as const) {
    const props = (schema as TObject | undefined)?.properties ?? {}
    const required = new Set((schema as TObject | undefined)?.required ?? [])
    for (const [name, s] of Object.entries(props)) {
      if (where === 'query' && name === 'access_token') list.push(accessTokenParameter)
      else {
        const needed = where === 'path' || required.has(name)
        list.push({ name, in: where, required: needed, schema: clean(s) })
      }
    }
  }
  const tokenInQuery = op.schema.security?.some((r) => 'accessToken' in r)
  if (tokenInQuery && !list.includes(accessTokenParameter)) list.push(accessTokenParameter)
  return list
}

/** The headers of one response, as references to `components.headers`. */
function headersOf(op: Operation, status: string) {
  const names: string[] = []
  if (op.schema.rateLimited) {
    names.push('X-Rate-Limit-Interval', 'X-Rate-Limit-Limit', 'X-Rate-Limit-Reset')
    names.push('RateLimit-Policy', 'RateLimit')
    if (status === '429') names.push('Retry-After')
  }
  if (status === '401' && op.schema.security !== undefined) names.push('WWW-Authenticate')
  const query = (op.schema.querystring as TObject | undefined)?.properties ?? {}
  if (status === '200' && op.method === 'get' && 'start' in query) names.push('Link')
  if (status === '200' && op.path.endsWith('/verifications')) names.push('Verification-Log-Dropped')
  if (names.length === 0) return {}
  const refs = names.map((name) => [name, { $ref: `#/components/headers/${name}` }])
  return { headers: Object.fromEntries(refs) }
}

function responses(op: Operation) {
  const out: Record<string, unknown> = {}
  for (const [status, s] of Object.entries(op.schema.response ?? {})) {
    const description = STATUS_CODES[status] ?? status
    const mediaType = op.schema.mediaTypes?.[Number(status)] ?? 'application/json'
    // `Type.Null()`: an answer without a body (204, or the 202 of a report).
    const empty = (s as TSchema).type === 'null'
    out[status] = {
      description: status === '204' ? 'No content' : description,
      ...headersOf(op, status),
      ...(empty ? {} : { content: { [mediaType]: { schema: clean(s as TSchema) } } }),
    }
  }
  return out
}

/** The operator key an admin operation needs, said after its own description. */
function operatorKeyNeeded(op: Operation) {
  if (op.operatorScope === undefined) return undefined
  return op.operatorScope === 'verifier'
    ? 'Requires an operator key of the `verifier` or `admin` scope.'
    : 'Requires an operator key of the `admin` scope.'
}

function operation(op: Operation, info: OpenApiInfo) {
  const { summary, description, security } = op.schema
  const body = op.schema.body ?? op.schema.documentedBody
  const own = description ?? (op.scope ? `Requires the \`${op.scope}\` scope.` : undefined)
  const tags = op.schema.tags ?? (info.tags?.[0] ? [info.tags[0].name] : undefined)
  return {
    operationId: op.schema.operationId ?? madeId(op.method, op.path),
    summary,
    description:
      [own, operatorKeyNeeded(op)].filter((s) => s !== undefined).join(' ') || 'No scope required.',
    ...(tags ? { tags } : {}),
    ...(security ? { security } : {}),
    // An operator key's scope: OpenAPI 3.1 allows it as the requirement's role, but most tools
    // read roles as OAuth scopes only (Spectral's oas3-operation-security-defined).
    ...(op.operatorScope ? { 'x-operator-scope': op.operatorScope } : {}),
    parameters: parameters(op),
    ...(body ? { requestBody: { content: { 'application/json': { schema: clean(body) } } } } : {}),
    responses: responses(op),
  }
}

function build(operations: Operation[], info: OpenApiInfo, origin: string) {
  const paths: Record<string, Record<string, unknown>> = {}
  for (const op of operations) {
    paths[op.path] ??= {}
    ;(paths[op.path] as Record<string, unknown>)[op.method] = operation(op, info)
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Tessera token API',
      version: info.version,
      description: apiDescription,
      contact: { name: 'The operator of this Tessera server', url: origin },
    },
    servers: [{ url: origin, description: 'This server (PUBLIC_URL)' }],
    ...(info.tags ? { tags: info.tags } : {}),
    paths,
    components: {
      securitySchemes: { ...tokenSecuritySchemes, ...info.securitySchemes },
      headers: responseHeaders,
    },
  }
}
