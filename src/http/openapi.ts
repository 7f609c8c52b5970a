import { STATUS_CODES } from 'node:http'
import type { TObject, TSchema } from '@sinclair/typebox'
import type { FastifyInstance, RouteOptions } from 'fastify'

interface Operation {
  method: string
  path: string
  schema: NonNullable<RouteOptions['schema']> & Documented
  scope?: string
  /** An admin route's operator scope: the role its security requirement names. */
  operatorScope?: string
}

/** What a route's schema may say besides its inputs and responses. */
interface Documented {
  summary?: string
  description?: string
  tags?: string[]
  security?: Record<string, string[]>[]
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
    document ??= build(operations, info)
    return document
  })
}

function build(operations: Operation[], info: OpenApiInfo) {
  const paths: Record<string, Record<string, unknown>> = {}
  for (const op of operations) {
    const parameters: unknown[] = []
    for (const [where, schema] of [
      ['path', op.schema.params],
      ['query', op.schema.querystring],
    ] as const) {
      const props = (schema as TObject | undefined)?.properties ?? {}
      const required = new Set((schema as TObject | undefined)?.required ?? [])
      for (const [name, s] of Object.entries(props)) {
        parameters.push({
          name,
          in: where,
          required: where === 'path' || required.has(name) || name === 'access_token',
          schema: clean(s),
        })
      }
    }
    const responses: Record<string, unknown> = {}
    for (const [status, s] of Object.entries(op.schema.response ?? {})) {
      responses[status] =
        status === '204'
          ? { description: 'No content' }
          : {
              description: STATUS_CODES[status] ?? status,
              content: { 'application/json': { schema: clean(s as TSchema) } },
            }
    }
    paths[op.path] ??= {}
    const { summary, description } = op.schema
    // OpenAPI 3.1: a requirement of a scheme other than OAuth may name the roles it needs.
    const security = op.schema.security?.map((requirement) =>
      op.operatorScope === undefined
        ? requirement
        : Object.fromEntries(Object.keys(requirement).map((name) => [name, [op.operatorScope]])),
    )
    const tags = op.schema.tags ?? (info.tags?.[0] ? [info.tags[0].name] : undefined)
    ;(paths[op.path] as Record<string, unknown>)[op.method] = {
      summary,
      description:
        description ?? (op.scope ? `Requires the \`${op.scope}\` scope.` : 'No scope required.'),
      ...(tags ? { tags } : {}),
      ...(security ? { security } : {}),
      parameters,
      ...(op.schema.body
        ? { requestBody: { content: { 'application/json': { schema: clean(op.schema.body) } } } }
        : {}),
      responses,
    }
  }
  return {
    openapi: '3.1.0',
    info: { title: 'Tessera token API', version: info.version },
    ...(info.tags ? { tags: info.tags } : {}),
    paths,
    ...(info.securitySchemes ? { components: { securitySchemes: info.securitySchemes } } : {}),
  }
}
