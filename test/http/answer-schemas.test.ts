import { Kind, type TSchema, Type } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { cliActor } from '../../src/audit/events.js'
import { answerInvalid, answerValid } from '../../src/http/ahead/answers.js'
import { temporaryJson } from '../../src/http/ahead/create.js'
import { CreateResult, TokenObject, Validation } from '../../src/http/schemas.js'
import { type Harness, harness } from '../helpers.js'

/**
 * Answers written as JSON text by hand (a list page, a create, retrieve's answers) bypass the
 * serializer that would hold them to their route's response schema. Each is checked here against
 * that schema made strict: a field the schema does not declare, a required field missing or a
 * value of the wrong type fails. Update and roll answers are objects the serializer writes, but
 * an undeclared field would be dropped silently from them: checked the same way.
 */

/** The schema with every object closed to fields it does not declare. */
function strict<T extends TSchema>(schema: T): T {
  const copy: TSchema = { ...schema }
  if (schema[Kind] === 'Object') {
    copy.additionalProperties = false
    copy.properties = Object.fromEntries(
      Object.entries(schema.properties as Record<string, TSchema>).map(([k, s]) => [k, strict(s)]),
    )
  }
  if (schema[Kind] === 'Array') copy.items = strict(schema.items as TSchema)
  if (Array.isArray(schema.anyOf)) copy.anyOf = schema.anyOf.map((s: TSchema) => strict(s))
  return copy as T
}

/** What the answer breaks of the strict schema: empty when it fits. */
function misfits(schema: TSchema, answer: string): string[] {
  const value: unknown = JSON.parse(answer)
  return [...Value.Errors(strict(schema), value)].map((e) => `${e.path || '/'}: ${e.message}`)
}

/** The response schemas the routes declare, as the OpenAPI document publishes them. */
const declared = {
  list: ['/tokens/v2/{username}', 'get', Type.Array(TokenObject)],
  create: ['/tokens/v2/{username}', 'post', CreateResult],
  update: ['/tokens/v2/{username}/{token_id}', 'patch', TokenObject],
  roll: ['/tokens/v2/{username}/{token_id}/roll', 'post', TokenObject],
  retrieve: ['/tokens/v2', 'get', Validation],
} as const

/** Retrieve's headers are not what is checked here. */
const sink = { headers() {}, header() {} }

describe('answers written as JSON fit their declared response schemas', () => {
  let h: Harness
  beforeAll(async () => {
    h = await harness()
  })
  afterAll(() => h.close())

  const holder = () => h.ctx.accounts.holder(h.alice)

  it('checks the schemas the routes declare (those of the OpenAPI document)', async () => {
    const doc = (await h.app.inject({ url: '/openapi.json' })).json()
    for (const [path, method, schema] of Object.values(declared)) {
      const published = doc.paths[path][method].responses['200'].content['application/json'].schema
      const plain = JSON.parse(
        JSON.stringify(schema, (key, value) => (key === 'errorMessage' ? undefined : value)),
      )
      expect(published, `${method} ${path}`).toEqual(plain)
    }
  })

  it('a create: sk and pk, with and without allowed URLs and IP ranges', async () => {
    const inputs = [
      { note: 'plain', scopes: ['styles:read'] },
      { note: 'secret', scopes: ['styles:read', 'tokens:write'] },
      { scopes: ['styles:read'], allowedUrls: ['https://example.com'], allowedIps: ['10.0.0.0/8'] },
      { scopes: ['tokens:write'], expiresAt: new Date(h.clock.now + 86_400_000).toISOString() },
      {},
    ]
    for (const input of inputs) {
      const json = await h.ctx.tokens.createJson(h.alice, holder(), input, cliActor)
      expect(misfits(CreateResult, json), json).toEqual([])
    }
    const temporary = await h.ctx.tokens.createTemporary(
      h.alice,
      holder(),
      { expires: new Date(h.clock.now + 60_000).toISOString(), scopes: ['styles:read'] },
      cliActor,
    )
    expect(misfits(CreateResult, JSON.stringify(temporary))).toEqual([])
    // The create fast path writes a temporary token's answer itself.
    expect(misfits(CreateResult, temporaryJson(temporary))).toEqual([])
  })

  it('a list page: pk entries with their strings, sk entries without', async () => {
    await h.ctx.tokens.createJson(
      h.alice,
      holder(),
      {
        scopes: ['tokens:write'],
        allowedUrls: ['https://a.example'],
        allowedIps: ['::1'],
        expiresAt: new Date(h.clock.now + 86_400_000).toISOString(),
      },
      cliActor,
    )
    const { body } = await h.ctx.tokens.list(h.alice, { limit: 100, sortby: 'created' })
    const entries = JSON.parse(body) as { usage: string; token?: string }[]
    expect(entries.some((e) => e.usage === 'sk')).toBe(true)
    expect(entries.some((e) => e.usage === 'pk' && e.token !== undefined)).toBe(true)
    expect(misfits(Type.Array(TokenObject), body)).toEqual([])
    const modified = await h.ctx.tokens.list(h.alice, { limit: 1, sortby: 'modified' })
    expect(misfits(Type.Array(TokenObject), modified.body)).toEqual([])
  })

  it('an update and a roll', async () => {
    const made = await h.ctx.tokens.create(h.alice, holder(), { scopes: ['styles:read'] }, cliActor)
    const changes = {
      note: 'n',
      allowedUrls: ['https://b.example'],
      allowedIps: ['10.1.0.0/16'],
      expiresAt: new Date(h.clock.now + 86_400_000).toISOString(),
    }
    const updated = await h.ctx.tokens.update(h.alice, holder(), made.id, changes, cliActor)
    expect(misfits(TokenObject, JSON.stringify(updated))).toEqual([])
    const rolled = await h.ctx.tokens.roll(h.alice, holder(), made.id, {}, cliActor)
    expect(misfits(TokenObject, JSON.stringify(rolled))).toEqual([])
  })

  it("retrieve's answers: valid pk, sk and temporary tokens, and every refusal", async () => {
    const sk = await h.token('alice', ['styles:read', 'tokens:write'])
    const temporary = await h.ctx.tokens.createTemporary(
      h.alice,
      holder(),
      { expires: new Date(h.clock.now + 60_000).toISOString(), scopes: ['styles:read'] },
      cliActor,
    )
    const revoked = await h.token('alice', ['styles:read'])
    await h.ctx.tokens.remove(h.alice, revoked.id, cliActor)
    const forged = `${sk.token.slice(0, -4)}AAAA`
    const strings = [h.alice.defaultToken.token, sk.token, temporary.token, revoked.token, forged]
    const answers: string[] = []
    for (const token of [...strings, 'not-a-token']) {
      const validation = await h.ctx.tokens.validate(token as string)
      answers.push(
        await (validation.code === 'TokenValid'
          ? answerValid(h.ctx, validation, sink)
          : answerInvalid(h.ctx, validation, '127.0.0.1', sink)),
      )
    }
    h.clock.now += 120_000
    const expired = await h.ctx.tokens.validate(temporary.token)
    if (expired.code !== 'TokenValid') {
      answers.push(await answerInvalid(h.ctx, expired, '127.0.0.1', sink))
    }
    const codes = answers.map((a) => (JSON.parse(a) as { code: string }).code)
    expect(new Set(codes)).toEqual(
      new Set(['TokenValid', 'TokenRevoked', 'TokenInvalid', 'TokenMalformed', 'TokenExpired']),
    )
    for (const answer of answers) expect(misfits(Validation, answer), answer).toEqual([])
  })
})
