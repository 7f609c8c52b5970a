import type { TObject, TSchema } from '@sinclair/typebox'
import type { FastifyInstance, RouteOptions } from 'fastify'

interface Operation {
  method: string
  path: string
  schema: NonNullable<RouteOptions['schema']>
  scope?: string
}

/** JSON Schema as OpenAPI 3.1 takes it, without TypeBox's symbols and our own keywords. */
const clean = (schema: unknown): unknown =>
  JSON.parse(JSON.stringify(schema, (key, value) => (key === 'errorMessage' ? undefined : value)))

/**
 * `GET /openapi.json`: an OpenAPI 3.1 document generated from the same route schemas that
 * validate requests and serialize responses, so it cannot drift from the code.
 */
export function openapi(app: FastifyInstance, info: { version: string }) {
  const operations: Operation[] = []
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method]
    if (route.schema === undefined || route.url.endsWith('/')) return
    for (const method of methods) {
      if (method === 'HEAD') continue
      operations.push({
        method: method.toLowerCase(),
        path: route.url.replace(/:([a-z_]+)/g, '{$1}'),
        schema: route.schema,
        scope: (route.config as { scope?: string } | undefined)?.scope,
      })
    }
  })

  let document: unknown
  app.get('/openapi.json', async () => {
    document ??= build(operations, info.version)
    return document
  })
}

function build(operations: Operation[], version: string) {
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
              description: status,
              content: { 'application/json': { schema: clean(s as TSchema) } },
            }
    }
    paths[op.path] ??= {}
    ;(paths[op.path] as Record<string, unknown>)[op.method] = {
      summary: (op.schema as { summary?: string }).summary,
      description: op.scope ? `Requires the \`${op.scope}\` scope.` : 'No scope required.',
      parameters,
      ...(op.schema.body
        ? { requestBody: { content: { 'application/json': { schema: clean(op.schema.body) } } } }
        : {}),
      responses,
    }
  }
  return {
    openapi: '3.1.0',
    info: { title: 'Tessera token API', version },
    paths,
  }
}
