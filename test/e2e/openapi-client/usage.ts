/**
 * The source of a program that uses a client generated from Tessera's OpenAPI document
 * (openapi-typescript's `paths`, called through openapi-fetch) for every operation, without a
 * cast: test/e2e/openapi-client.test.ts writes it beside the generated `schema.d.ts`,
 * type-checks both with tsc, then imports it and runs `tokenApi` against a real server.
 */

interface Schema {
  type?: string
  const?: unknown
  anyOf?: Schema[]
  items?: Schema
  properties?: Record<string, Schema>
  required?: string[]
}

interface Operation {
  parameters?: { name: string; in: string; required: boolean; schema: Schema }[]
  requestBody?: { content: Record<string, { schema: Schema }> }
}

export interface Document {
  paths: Record<string, Record<string, Operation>>
}

/** A value of the schema, as TypeScript source: required fields only, empty arrays. */
function sample(schema: Schema): string {
  if (schema.const !== undefined) return JSON.stringify(schema.const)
  if (schema.anyOf !== undefined) return sample(schema.anyOf[0] as Schema)
  switch (schema.type) {
    case 'string':
      return "'x'"
    case 'integer':
    case 'number':
      return '1'
    case 'boolean':
      return 'true'
    case 'null':
      return 'null'
    case 'array':
      return '[]'
    default: {
      const fields = (schema.required ?? []).map(
        (name) => `${JSON.stringify(name)}: ${sample(schema.properties?.[name] ?? {})}`,
      )
      return `{ ${fields.join(', ')} }`
    }
  }
}

/** One call of an operation with sample values: for the type checker, never run. */
function call(path: string, method: string, op: Operation) {
  const needed = (where: string) =>
    (op.parameters ?? [])
      .filter((p) => p.in === where && p.required)
      .map((p) => `${p.name}: ${sample(p.schema)}`)
  const parts = ['path', 'query']
    .filter((where) => needed(where).length > 0)
    .map((where) => `${where}: { ${needed(where).join(', ')} }`)
  const params = `{ ${parts.join(', ')} }`
  const schema = op.requestBody?.content['application/json']?.schema
  const body = schema === undefined ? '' : `, body: ${sample(schema)}`
  return `  await api.${method.toUpperCase()}('${path}', { params: ${params}${body}, ...key })`
}

/** The program: hand-written uses of the token API, and a call of every admin operation. */
export function usageSource(doc: Document): string {
  const admin = Object.entries(doc.paths)
    .filter(([path]) => path.startsWith('/admin/'))
    .flatMap(([path, ops]) => Object.entries(ops).map(([method, op]) => call(path, method, op)))
  return `${tokenApiSource}
/** Every operation of the admin API, with an operator key. */
export async function adminApi(api: Api, operatorKey: string) {
  const key = { headers: { Authorization: \`Bearer \${operatorKey}\` } }
${admin.join('\n')}
}
`
}

/** Hand-written: each token API operation once, the token in the query or the header. */
const tokenApiSource = `import createClient, { type Client } from 'openapi-fetch'
import type { paths } from './schema.js'

export type Api = Client<paths>

export const connect = (baseUrl: string, fetch: (request: Request) => Promise<Response>): Api =>
  createClient<paths>({ baseUrl, fetch })

/** The token API, as its users call it. */
export async function tokenApi(api: Api, username: string, token: string, expires: string) {
  const bearer = { headers: { Authorization: \`Bearer \${token}\` } }
  const path = { username }
  const listed = await api.GET('/tokens/v2/{username}', {
    params: { path, query: { access_token: token, limit: '10', sortby: 'created' } },
  })
  const notes: string[] = (listed.data ?? []).map((t) => t.note)
  const created = await api.POST('/tokens/v2/{username}', {
    params: { path },
    body: { note: 'typed', scopes: ['styles:read'], allowedUrls: ['https://example.com'] },
    ...bearer,
  })
  const id: string = created.data?.id ?? ''
  const temporary = await api.POST('/tokens/v2/{username}', {
    params: { path, query: { access_token: token } },
    body: { expires, scopes: ['styles:read'] },
  })
  const expiresIn: number | undefined = temporary.data?.expires_in
  const updated = await api.PATCH('/tokens/v2/{username}/{token_id}', {
    params: { path: { username, token_id: id } },
    body: { note: 'typed, changed', allowedUrls: null },
    ...bearer,
  })
  const rolled = await api.POST('/tokens/v2/{username}/{token_id}/roll', {
    params: { path: { username, token_id: id }, query: { access_token: token } },
    body: {},
  })
  const successor: string = rolled.data?.id ?? ''
  const deleted = await api.DELETE('/tokens/v2/{username}/{token_id}', {
    params: { path: { username, token_id: successor } },
    ...bearer,
  })
  const retrieved = await api.GET('/tokens/v2', { params: { query: { access_token: token } } })
  const scopes = await api.GET('/scopes/v1/{username}', { params: { path }, ...bearer })
  const ids: string[] = (scopes.data ?? []).map((s) => s.id)
  const refused = await api.GET('/scopes/v1/{username}', { params: { path } })
  const reported = await api.POST('/leaks/v1/revoke', { body: { credentials: ['pk.x.y'] } })
  return {
    statuses: [listed, created, temporary, updated, rolled, deleted, retrieved, scopes, refused, reported].map(
      (answer) => answer.response.status,
    ),
    notes,
    usage: created.data?.usage,
    expiresIn,
    note: updated.data?.note,
    allowedUrls: updated.data?.allowedUrls,
    code: retrieved.data?.code,
    scopes: ids,
    refusal: refused.error,
    limit: listed.response.headers.get('X-Rate-Limit-Limit'),
  }
}

/** What the types refuse: they are the document's, not \`any\`. Never run. */
export async function refusedByTheTypes(api: Api) {
  // @ts-expect-error the path parameter is required
  await api.GET('/tokens/v2/{username}', {})
  // @ts-expect-error scopes are an array of strings
  await api.POST('/tokens/v2/{username}', { params: { path: { username: 'x' } }, body: { scopes: 'styles:read' } })
  const listed = await api.GET('/tokens/v2/{username}', { params: { path: { username: 'x' } } })
  // @ts-expect-error a token object has no such field
  listed.data?.[0]?.secret
}
`
