import { readFileSync } from 'node:fs'
import https from 'node:https'
import { createRequire } from 'node:module'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { api } from './client.js'
import { type ServerProcess, startServer, tessera } from './server.js'

const require = createRequire(import.meta.url)
const mbxTokens = require('@mapbox/mapbox-sdk/services/tokens')

let server: ServerProcess
let holder: { token: string; id: string }

beforeAll(async () => {
  server = await startServer()
  // The SDK (got) uses Node's global agent: trust the certificate generated on first start.
  https.globalAgent.options.ca = readFileSync(server.certFile)
  // The CLI works on the same data while the server runs.
  await tessera(server.env, 'account', 'create', 'sdkuser')
  holder = await tessera(
    server.env,
    'token',
    'create',
    'sdkuser',
    '--scopes',
    'tokens:read,tokens:write,scopes:list,styles:read,styles:write',
    '--note',
    'e2e',
  )
})
afterAll(async () => {
  await server?.stop()
})

const client = (accessToken: string) => mbxTokens({ accessToken, origin: server.url })

describe('the @mapbox/mapbox-sdk tokens client', () => {
  it('lists tokens, creates pk and sk, updates, retrieves, deletes and lists scopes', async () => {
    const tokens = client(holder.token)
    const listed = await tokens.listTokens().send()
    expect(listed.statusCode).toBe(200)
    expect(listed.body.map((t: { note: string }) => t.note)).toEqual([
      'Default public token',
      'e2e',
    ])

    const pk = await tokens
      .createToken({
        note: 'public',
        scopes: ['styles:read'],
        allowedUrls: ['https://example.com'],
      })
      .send()
    expect(pk.body).toMatchObject({
      usage: 'pk',
      note: 'public',
      scopes: ['styles:read'],
      allowedUrls: ['https://example.com'],
    })
    const sk = await tokens.createToken({ note: 'secret', scopes: ['styles:write'] }).send()
    expect(sk.body).toMatchObject({ usage: 'sk', scopes: ['styles:write'] })

    const updated = await tokens
      .updateToken({ tokenId: pk.body.id, note: 'renamed', allowedUrls: null })
      .send()
    expect(updated.body.note).toBe('renamed')
    expect(updated.body.allowedUrls).toBeUndefined()

    const retrieved = await client(pk.body.token).getToken().send()
    expect(retrieved.body).toEqual({
      code: 'TokenValid',
      token: { usage: 'pk', user: 'sdkuser', authorization: pk.body.id },
    })

    const deleted = await tokens.deleteToken({ tokenId: sk.body.id }).send()
    expect(deleted.statusCode).toBe(204)
    const revoked = await client(sk.body.token).getToken().send()
    expect(revoked.body.code).toBe('TokenRevoked')

    const scopes = await tokens.listScopes().send()
    expect(scopes.body).toContainEqual({
      id: 'styles:read',
      description: 'Read styles',
      public: true,
    })
  })

  it('works with the new token of a roll, and the old one answers TokenRevoked', async () => {
    const rolled = await tessera(server.env, 'token', 'roll', 'sdkuser', holder.id)
    expect(rolled.token).toMatch(/^sk\./)
    const tokens = client(rolled.token)
    const listed = await tokens.listTokens().send()
    expect(listed.statusCode).toBe(200)
    expect(listed.body.map((t: { id: string }) => t.id)).toContain(rolled.id)
    const old = await client(rolled.token).getToken().send()
    expect(old.body.code).toBe('TokenValid')
    // Rolled by another process (the CLI): the server hears of it through the change feed.
    let code = ''
    for (let i = 0; i < 40 && code !== 'TokenRevoked'; i++) {
      code = (await client(holder.token).getToken().send()).body.code
      if (code !== 'TokenRevoked') await new Promise((r) => setTimeout(r, 50))
    }
    expect(code).toBe('TokenRevoked')
    holder = { token: rolled.token, id: rolled.id }
  })

  it('creates a temporary token that the SDK can use', async () => {
    const expires = new Date(Date.now() + 10 * 60_000)
    const res = await client(holder.token)
      .createTemporaryToken({ expires, scopes: ['tokens:read'] })
      .send()
    expect(res.statusCode).toBe(200)
    expect(res.body.expires).toBe(
      new Date(Math.floor(expires.getTime() / 1000) * 1000).toISOString(),
    )
    const listed = await client(res.body.token).listTokens().send()
    expect(listed.statusCode).toBe(200)
  })

  it('pages through nextPage()', async () => {
    const tokens = client(holder.token)
    for (let i = 0; i < 5; i++) await tokens.createToken({ note: `page ${i}`, scopes: [] }).send()
    const all = (await tokens.listTokens().send()).body.map((t: { id: string }) => t.id)
    const seen: string[] = []
    const request = tokens.listTokens()
    request.query = { limit: 3 }
    let response = await request.send()
    let pages = 1
    seen.push(...response.body.map((t: { id: string }) => t.id))
    while (response.hasNextPage()) {
      response = await response.nextPage().send()
      seen.push(...response.body.map((t: { id: string }) => t.id))
      pages++
    }
    expect(seen).toEqual(all)
    expect(pages).toBe(Math.ceil(all.length / 3))
  })

  it('surfaces contract errors as MapiError with the message', async () => {
    const err = await client(holder.token)
      .createToken({ scopes: ['user:write'] })
      .send()
      .catch((e: unknown) => e)
    expect(err).toMatchObject({ statusCode: 422, message: 'scopes are invalid' })
  })

  it('reads token objects carrying expiresAt (Tessera), with and without expires', async () => {
    const tokens = client(holder.token)
    const end = new Date(Math.floor(Date.now() / 1000) * 1000 + 86_400_000).toISOString()
    // Made by the CLI (`--expires-at`), listed and retrieved by the SDK.
    const ending = await tessera(
      server.env,
      'token',
      'create',
      'sdkuser',
      '--scopes',
      'styles:read',
      '--note',
      'ending',
      '--expires-at',
      end,
    )
    expect(ending.expiresAt).toBe(end)
    const listed = (await tokens.listTokens().send()).body
    expect(listed.find((t: { id: string }) => t.id === ending.id)).toMatchObject({
      usage: 'pk',
      note: 'ending',
      expiresAt: end,
    })
    const retrieved = await client(ending.token).getToken().send()
    expect(retrieved.body).toEqual({
      code: 'TokenValid',
      token: { usage: 'pk', user: 'sdkuser', authorization: ending.id },
    })
    // The SDK's create has no such option; the field added to its request body goes through.
    const request = tokens.createToken({ note: 'sdk ending', scopes: ['styles:read'] })
    request.body = { ...request.body, expiresAt: end }
    const created = await request.send()
    expect(created.statusCode).toBe(200)
    expect(created.body).toMatchObject({ usage: 'pk', note: 'sdk ending', expiresAt: end })
    expect((await client(created.body.token).getToken().send()).body.code).toBe('TokenValid')
    // Without it, nothing new; with expires, a temporary token as before.
    const plain = await tokens.createToken({ note: 'sdk plain', scopes: ['styles:read'] }).send()
    expect(plain.body).not.toHaveProperty('expiresAt')
    const expires = new Date(Date.now() + 10 * 60_000)
    const temporary = await tokens.createTemporaryToken({ expires, scopes: ['styles:read'] }).send()
    expect(Object.keys(temporary.body)).toEqual(['token', 'issued_at', 'expires', 'expires_in'])
    expect((await client(temporary.body.token).getToken().send()).body.code).toBe('TokenValid')
  })

  it('reads child tokens (Tessera) and lists an account with children; an agent uses its child with the SDK', async () => {
    const tokens = client(holder.token)
    // Made through the children route (the SDK has no method for it), read through the SDK.
    const parent = await api(server, 'POST', '/tokens/v2/sdkuser', holder.token, {
      note: 'agents',
      scopes: ['tokens:read', 'tokens:write', 'styles:read'],
    })
    const agent = await api(
      server,
      'POST',
      `/tokens/v2/sdkuser/${parent.body.id}/children`,
      holder.token,
      {
        note: 'agent',
        scopes: ['tokens:read', 'tokens:write', 'styles:read'],
      },
    )
    expect(agent.status).toBe(200)
    const listed = (await tokens.listTokens().send()).body
    expect(listed.find((t: { id: string }) => t.id === agent.body.id)).toEqual({
      id: agent.body.id,
      usage: 'sk',
      client: 'api',
      default: false,
      scopes: ['tokens:read', 'tokens:write', 'styles:read'],
      note: 'agent',
      created: agent.body.created,
      modified: agent.body.modified,
      parent: parent.body.id,
    })
    // The agent's own SDK: what it makes is its child; it sees its own family alone.
    const own = client(agent.body.token)
    const made = await own.createToken({ note: 'sub-agent', scopes: ['styles:read'] }).send()
    expect(made.statusCode).toBe(200)
    expect(made.body).toMatchObject({ usage: 'pk', note: 'sub-agent', parent: agent.body.id })
    const family = (await own.listTokens().send()).body
    expect(family.map((t: { id: string }) => t.id)).toEqual([made.body.id])
    const renamed = await own.updateToken({ tokenId: made.body.id, note: 'renamed' }).send()
    expect(renamed.body).toMatchObject({ note: 'renamed', parent: agent.body.id })
    expect((await client(made.body.token).getToken().send()).body).toEqual({
      code: 'TokenValid',
      token: { usage: 'pk', user: 'sdkuser', authorization: made.body.id },
    })
    // The owner deletes the parent: the agent's token and what it made end with it.
    expect((await tokens.deleteToken({ tokenId: parent.body.id }).send()).statusCode).toBe(204)
    expect((await client(agent.body.token).getToken().send()).body.code).toBe('TokenRevoked')
    expect((await client(made.body.token).getToken().send()).body.code).toBe('TokenRevoked')
  })

  it('never writes a token string into the request log', async () => {
    expect(server.output()).toContain('access_token=[redacted]')
    expect(server.output()).not.toMatch(/(pk|sk|tk)\.eyJ/)
  })
})
