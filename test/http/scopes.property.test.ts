import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { call, harness, T0 } from '../helpers.js'

const catalogIds = [
  'styles:read',
  'fonts:read',
  'styles:tiles',
  'tokens:read',
  'tokens:write',
  'styles:write',
  'fonts:list',
  'user:read',
  'user:write',
  'scopes:list',
]

const rootScopes = ['tokens:write', 'tokens:read', 'styles:read', 'styles:write', 'fonts:read']
// Mostly scopes the root holds, so that many operations go through; sometimes any scope.
const scopes = fc.oneof(
  { weight: 3, arbitrary: fc.subarray(rootScopes) },
  { weight: 1, arbitrary: fc.subarray(catalogIds) },
)

const op = fc.oneof(
  fc.record({ kind: fc.constant('create' as const), by: fc.nat(), scopes }),
  fc.record({
    kind: fc.constant('temporary' as const),
    by: fc.nat(),
    scopes,
    minutes: fc.integer({ min: 1, max: 59 }),
  }),
  fc.record({ kind: fc.constant('update' as const), by: fc.nat(), target: fc.nat(), scopes }),
)

describe('scopes only narrow (property)', () => {
  it('no token ever holds a scope its authorizer lacked, and no pk ever holds a secret scope', async () => {
    let succeeded = 0
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 5, maxLength: 25 }), async (ops) => {
        const h = await harness()
        try {
          const root = await h.token('alice', rootScopes)
          const tokens: { token: string; id?: string }[] = [{ token: root.token, id: root.id }]
          const scopesOf = async (token: string) => {
            const v = await h.ctx.tokens.validate(token)
            return v.code === 'TokenValid' ? v.principal.scopes : new Set<string>()
          }
          for (const o of ops) {
            const by = tokens[o.by % tokens.length] as { token: string }
            const held = await scopesOf(by.token)
            let granted: string[] | undefined
            if (o.kind === 'create') {
              const res = await call(h.app, 'POST', '/tokens/v2/alice', by.token, {
                scopes: o.scopes,
              })
              if (res.status === 200) {
                tokens.push({ token: res.body.token, id: res.body.id })
                granted = res.body.scopes
              }
            } else if (o.kind === 'temporary') {
              const expires = new Date(T0 + o.minutes * 60_000).toISOString()
              const res = await call(h.app, 'POST', '/tokens/v2/alice', by.token, {
                expires,
                scopes: o.scopes,
              })
              if (res.status === 200) {
                tokens.push({ token: res.body.token })
                granted = [...(await scopesOf(res.body.token))]
              }
            } else {
              const target = tokens[o.target % tokens.length] as { id?: string }
              if (target.id === undefined) continue
              const res = await call(h.app, 'PATCH', `/tokens/v2/alice/${target.id}`, by.token, {
                scopes: o.scopes,
              })
              if (res.status === 200) granted = res.body.scopes
            }
            if (granted !== undefined) succeeded++
            for (const s of granted ?? []) expect(held.has(s)).toBe(true)
          }
          const listed = await h.ctx.tokens.list(h.alice, { limit: 100, sortby: 'created' })
          for (const t of JSON.parse(listed.body) as { usage: string; scopes: string[] }[]) {
            if (t.usage !== 'pk') continue
            for (const s of t.scopes) expect(h.ctx.catalog.get(s)?.public).toBe(true)
          }
        } finally {
          await h.close()
        }
      }),
      { numRuns: 40 },
    )
    // The property is only worth something if many operations went through: about 120 of some
    // 600 do on average; a run on CI once had 98, so the floor sits well below the mean.
    expect(succeeded).toBeGreaterThan(50)
  })
})
