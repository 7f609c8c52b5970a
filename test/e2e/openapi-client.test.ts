import { execFile } from 'node:child_process'
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { request } from 'node:https'
import { createRequire } from 'node:module'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import { type RulesetDefinition, Spectral } from '@stoplight/spectral-core'
import { oas } from '@stoplight/spectral-rulesets'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { randomAlnum } from '../../src/ids.js'
import { type Document, usageSource } from './openapi-client/usage.js'
import { type ServerProcess, startServer, tessera } from './server.js'

/**
 * What independent tools make of the served `/openapi.json`: Spectral's default OpenAPI ruleset
 * finds nothing, and a client generated from it by openapi-typescript, called through
 * openapi-fetch, type-checks a use of every operation without a cast and works against a real
 * server.
 */
const root = path.resolve(import.meta.dirname, '../..')
const run = promisify(execFile)
const operatorKey = 'k'.repeat(40)
/** The origin of Link headers, and of the document's `servers`. */
const publicUrl = 'https://tokens.example.net'

let server: ServerProcess
let ca: Buffer
let doc: Document & Record<string, unknown>
let holder: { token: string }

beforeAll(async () => {
  server = await startServer({ ADMIN_KEYS: `ops:${operatorKey}`, PUBLIC_URL: publicUrl })
  ca = readFileSync(server.certFile)
  await tessera(server.env, 'account', 'create', 'typed')
  holder = await tessera(
    server.env,
    'token',
    'create',
    'typed',
    '--scopes',
    'tokens:read,tokens:write,scopes:list,styles:read',
    '--note',
    'holder',
  )
  const answer = await httpsFetch(new Request(`${server.url}/openapi.json`))
  expect(answer.status).toBe(200)
  doc = (await answer.json()) as typeof doc
})
afterAll(async () => {
  await server?.stop()
})

/** `fetch` over Node's HTTPS, trusting the server's generated certificate. */
async function httpsFetch(req: Request): Promise<Response> {
  const body = req.body === null ? undefined : Buffer.from(await req.arrayBuffer())
  return new Promise((resolve, reject) => {
    const headers = Object.fromEntries(req.headers)
    const out = request(req.url, { method: req.method, headers, ca, agent: false }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (chunk: Buffer) => chunks.push(chunk))
      res.on('end', () => {
        const status = res.statusCode ?? 0
        const empty = status === 204 || status === 202 || req.method === 'HEAD'
        const answer = new Response(empty ? null : Buffer.concat(chunks), {
          status,
          headers: Object.entries(res.headers).flatMap(([name, value]) =>
            [value ?? []].flat().map((v): [string, string] => [name, v]),
          ),
        })
        resolve(answer)
      })
    })
    out.on('error', reject)
    out.end(body)
  })
}

describe('Spectral (spectral:oas)', () => {
  it('finds no error and no warning in the served document', async () => {
    const spectral = new Spectral()
    // spectral:oas as Spectral's CLI reads it: its recommended rules.
    spectral.setRuleset({ extends: [[oas as RulesetDefinition, 'recommended']] })
    const results = await spectral.run(JSON.stringify(doc))
    expect(results.map((r) => `${r.code} at ${r.path.join('.')}: ${r.message}`)).toEqual([])
  })
})

describe('the document', () => {
  const tokenApi = [
    ['get', '/tokens/v2/{username}', 'listTokens'],
    ['post', '/tokens/v2/{username}', 'createToken'],
    ['patch', '/tokens/v2/{username}/{token_id}', 'updateToken'],
    ['delete', '/tokens/v2/{username}/{token_id}', 'deleteToken'],
    ['post', '/tokens/v2/{username}/{token_id}/roll', 'rollToken'],
    ['get', '/tokens/v2', 'retrieveToken'],
    ['get', '/scopes/v1/{username}', 'listScopes'],
  ] as const
  type Op = {
    operationId: string
    security?: unknown
    parameters: { name: string; in: string; required: boolean }[]
    responses: Record<string, { headers?: Record<string, unknown> }>
  }
  const op = (method: string, at: string) => doc.paths[at]?.[method] as unknown as Op
  const limits = [
    'X-Rate-Limit-Interval',
    'X-Rate-Limit-Limit',
    'X-Rate-Limit-Reset',
    'RateLimit-Policy',
    'RateLimit',
  ]

  it('names the server, and says what the API is', () => {
    expect(doc.servers).toEqual([{ url: publicUrl, description: 'This server (PUBLIC_URL)' }])
    expect(doc.info).toMatchObject({
      title: 'Tessera token API',
      description: expect.stringContaining('wire format of the Mapbox Tokens API'),
      contact: { name: 'The operator of this Tessera server', url: publicUrl },
    })
  })

  it.each(tokenApi)(
    '%s %s: the token in the query or the bearer header, and the headers of its answers',
    (method, at, operationId) => {
      const o = op(method, at)
      expect(o.operationId).toBe(operationId)
      expect(o.security).toEqual([{ accessToken: [] }, { bearerToken: [] }])
      const token = o.parameters.filter((p) => p.name === 'access_token')
      expect(token).toMatchObject([{ in: 'query', required: false }])
      for (const [status, response] of Object.entries(o.responses)) {
        const expected = [
          ...limits,
          ...(status === '429' ? ['Retry-After'] : []),
          ...(status === '401' ? ['WWW-Authenticate'] : []),
          ...(status === '200' && method === 'get' && at === '/tokens/v2/{username}'
            ? ['Link']
            : []),
        ]
        expect([status, Object.keys(response.headers ?? {})]).toEqual([status, expected])
      }
    },
  )

  it('declares the two schemes and the headers once, in components', () => {
    const components = doc.components as {
      securitySchemes: Record<string, unknown>
      headers: Record<string, unknown>
    }
    expect(components.securitySchemes.accessToken).toMatchObject({
      type: 'apiKey',
      in: 'query',
      name: 'access_token',
    })
    expect(components.securitySchemes.bearerToken).toMatchObject({ type: 'http', scheme: 'bearer' })
    expect(Object.keys(components.headers).sort()).toEqual(
      [...limits, 'Retry-After', 'Link', 'WWW-Authenticate', 'Verification-Log-Dropped'].sort(),
    )
  })

  it('gives every operation an id of its own', () => {
    const ids = Object.values(doc.paths).flatMap((ops) =>
      Object.values(ops).map((o) => (o as unknown as Op).operationId),
    )
    expect(ids.length).toBeGreaterThan(60)
    expect(new Set(ids).size).toBe(ids.length)
    expect(op('get', '/admin/v1/accounts/{username}').operationId).toBe(
      'getAdminV1AccountsByUsername',
    )
  })
})

describe('a client generated by openapi-typescript', () => {
  it('type-checks a use of every operation without a cast, and calls the server', async () => {
    const work = path.join(root, 'test-output', `openapi-client-${randomAlnum(8)}`)
    mkdirSync(work, { recursive: true })
    try {
      // openapi-typescript needs TypeScript 5's API: installed beside it (openapi-client/).
      const beside = createRequire(path.join(import.meta.dirname, 'openapi-client/package.json'))
      const generator = await import(pathToFileURL(beside.resolve('openapi-typescript')).href)
      const ast = await generator.default(doc)
      writeFileSync(path.join(work, 'schema.d.ts'), generator.astToString(ast))
      writeFileSync(path.join(work, 'use.ts'), usageSource(doc))
      const compilerOptions = {
        target: 'ES2022',
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        lib: ['ES2023'],
        types: ['node'],
        strict: true,
        noUncheckedIndexedAccess: true,
        noEmit: true,
        skipLibCheck: true,
      }
      writeFileSync(
        path.join(work, 'tsconfig.json'),
        JSON.stringify({ compilerOptions, files: ['use.ts'] }),
      )
      const tsc = path.join(root, 'node_modules/typescript/bin/tsc')
      const checked = await run(process.execPath, [tsc, '-p', work]).catch((e) => e)
      expect(`${checked.stdout}${checked.stderr}`).toBe('')

      const use = await import(pathToFileURL(path.join(work, 'use.ts')).href)
      const api = use.connect(server.url, httpsFetch)
      const expires = new Date(Date.now() + 30 * 60_000).toISOString()
      expect(await use.tokenApi(api, 'typed', holder.token, expires)).toEqual({
        statuses: [200, 200, 200, 200, 200, 204, 200, 200, 401, 202],
        notes: ['Default public token', 'holder'],
        usage: 'pk',
        expiresIn: expect.any(Number),
        note: 'typed, changed',
        allowedUrls: undefined,
        code: 'TokenValid',
        scopes: expect.arrayContaining(['tokens:read', 'styles:read']),
        refusal: {
          message: 'Unauthorized',
          details:
            'no token: give it as the access_token query parameter or an Authorization: Bearer header',
        },
        limit: '100',
      })
      // The admin API through the same client, with an operator key as its bearer token.
      const account = await api.GET('/admin/v1/accounts/{username}', {
        params: { path: { username: 'typed' } },
        headers: { Authorization: `Bearer ${operatorKey}` },
      })
      expect([account.response.status, account.data.username]).toEqual([200, 'typed'])
    } finally {
      rmSync(work, { recursive: true, force: true })
    }
  })
})
