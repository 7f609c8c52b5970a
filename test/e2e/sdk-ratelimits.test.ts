import { readFileSync } from 'node:fs'
import https from 'node:https'
import { createRequire } from 'node:module'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type ServerProcess, startServer, tessera } from './server.js'

const require = createRequire(import.meta.url)
const mbxTokens = require('@mapbox/mapbox-sdk/services/tokens')

/**
 * A token's own `ratelimits` (Tessera) as a real client of the original API meets them: the
 * Mapbox SDK lists, updates and retrieves such tokens unchanged, and a token past its own limit
 * is a 429 it surfaces as any other.
 */
let server: ServerProcess
let holder: { token: string; id: string }

beforeAll(async () => {
  server = await startServer()
  https.globalAgent.options.ca = readFileSync(server.certFile)
  await tessera(server.env, 'account', 'create', 'limited')
  holder = await tessera(
    server.env,
    'token',
    'create',
    'limited',
    '--scopes',
    'tokens:read,tokens:write,styles:read',
    '--note',
    'e2e',
  )
})
afterAll(async () => {
  await server?.stop()
})

const client = (accessToken: string) => mbxTokens({ accessToken, origin: server.url })
// A day's window (aligned to the epoch): the three retrieves below fall in one.
const daily = { name: 'daily', limit: 2, duration: 86_400_000 }

describe('the @mapbox/mapbox-sdk tokens client and ratelimits', () => {
  it('creates, lists, updates and retrieves tokens carrying ratelimits', async () => {
    const tokens = client(holder.token)
    // The SDK's create has no such option; the field added to its request body goes through.
    const request = tokens.createToken({ note: 'limited', scopes: ['styles:read'] })
    request.body = { ...request.body, ratelimits: [daily] }
    const created = await request.send()
    expect(created.statusCode).toBe(200)
    expect(created.body).toMatchObject({ usage: 'pk', note: 'limited', ratelimits: [daily] })

    const listed = (await tokens.listTokens().send()).body
    const byId = (id: string) => listed.find((t: { id: string }) => t.id === id)
    expect(byId(created.body.id)).toMatchObject({ note: 'limited', ratelimits: [daily] })
    // Tokens without any: nothing new.
    expect(byId(holder.id)).not.toHaveProperty('ratelimits')

    const renamed = await tokens.updateToken({ tokenId: created.body.id, note: 'renamed' }).send()
    expect(renamed.body).toMatchObject({ note: 'renamed', ratelimits: [daily] })

    const limited = client(created.body.token)
    // The server's clock is the real one: not across a window's end (midnight UTC).
    const left = daily.duration - (Date.now() % daily.duration)
    if (left < 10_000) await new Promise((r) => setTimeout(r, left + 100))
    const described = {
      code: 'TokenValid',
      token: { usage: 'pk', user: 'limited', authorization: created.body.id },
    }
    const first = await limited.getToken().send()
    expect(first.body).toEqual(described)
    expect(first.headers['ratelimit-policy']).toBe('"daily";q=2;w=86400')
    expect((await limited.getToken().send()).body).toEqual(described)
    const refused = await limited
      .getToken()
      .send()
      .catch((e: unknown) => e)
    expect(refused).toMatchObject({ statusCode: 429, message: 'Too Many Requests' })

    // Removed through the SDK's update with the field added: it works again at once.
    const update = tokens.updateToken({ tokenId: created.body.id, note: 'free' })
    update.body = { ...update.body, ratelimits: null }
    const freed = await update.send()
    expect(freed.statusCode).toBe(200)
    expect(freed.body).not.toHaveProperty('ratelimits')
    expect((await limited.getToken().send()).body).toEqual(described)
  })
})
