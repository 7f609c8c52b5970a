import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { api } from '../e2e/client.js'
import { type ServerProcess, startServer, tessera } from '../e2e/server.js'
import { awayFromWindowEdge, fleetEnv } from './env.js'

const fleet = fleetEnv()
let first: ServerProcess
let second: ServerProcess
const scopes = 'tokens:read,tokens:write,scopes:list,styles:read'

beforeAll(async () => {
  const env = { ...fleet.env, RATE_LIMIT_PER_MINUTE: '5' }
  // Started together: the migration lock lets exactly one of them apply each migration.
  ;[first, second] = await Promise.all([startServer(env), startServer(env)])
})
afterAll(async () => {
  await Promise.all([first?.stop(), second?.stop()])
  await fleet.drop()
})

describe('two instances on PostgreSQL and Redis', () => {
  it('validate on one a token created on the other, and revoke within one second', async () => {
    await awayFromWindowEdge(10)
    await tessera(first.env, 'account', 'create', 'fleet-a')
    const holder = await tessera(
      first.env,
      'token',
      'create',
      'fleet-a',
      '--scopes',
      scopes,
      '--note',
      'test',
    )
    const created = await api(first, 'POST', '/tokens/v2/fleet-a', holder.token, {
      scopes: ['styles:read'],
    })
    expect(created.status).toBe(200)
    expect((await api(second, 'GET', '/tokens/v2', created.body.token)).body).toEqual({
      code: 'TokenValid',
      token: { usage: 'pk', user: 'fleet-a', authorization: created.body.id },
    })

    const deleted = await api(
      second,
      'DELETE',
      `/tokens/v2/fleet-a/${created.body.id}`,
      holder.token,
    )
    expect(deleted.status).toBe(204)
    const since = performance.now()
    let code = ''
    while (performance.now() - since < 2000) {
      code = (await api(first, 'GET', '/tokens/v2', created.body.token)).body.code
      if (code === 'TokenRevoked') break
      await new Promise((r) => setTimeout(r, 25))
    }
    const elapsed = performance.now() - since
    expect(code).toBe('TokenRevoked')
    expect(elapsed).toBeLessThan(1000)
  })

  it('roll on one: the other refuses the old string within one second, and takes the new', async () => {
    await tessera(first.env, 'account', 'create', 'fleet-r')
    const holder = await tessera(
      first.env,
      'token',
      'create',
      'fleet-r',
      '--scopes',
      scopes,
      '--note',
      'test',
    )
    const made = await api(first, 'POST', '/tokens/v2/fleet-r', holder.token, {
      scopes: ['styles:read'],
    })
    // Every request here but the polls that find the old string revoked counts against
    // fleet-r's 5 a minute: create, roll, each poll still valid, and the last GET. So no other
    // request, and polls 450 ms apart: two polls still valid cover the whole second.
    expect(made.status).toBe(200)
    const rolled = await api(
      second,
      'POST',
      `/tokens/v2/fleet-r/${made.body.id}/roll`,
      holder.token,
    )
    expect(rolled.status).toBe(200)
    const since = performance.now()
    let code = ''
    while (performance.now() - since < 2000) {
      code = (await api(first, 'GET', '/tokens/v2', made.body.token)).body.code
      if (code === 'TokenRevoked') break
      await new Promise((r) => setTimeout(r, 450))
    }
    expect(code).toBe('TokenRevoked')
    expect(performance.now() - since).toBeLessThan(1000)
    expect((await api(first, 'GET', '/tokens/v2', rolled.body.token)).body.code).toBe('TokenValid')
  })

  it('count one limit across instances: with 5 a minute, 3 requests on each give exactly one 429', async () => {
    await awayFromWindowEdge(10)
    await tessera(first.env, 'account', 'create', 'fleet-b')
    const holder = await tessera(
      first.env,
      'token',
      'create',
      'fleet-b',
      '--scopes',
      scopes,
      '--note',
      'test',
    )
    const answers = []
    for (let i = 0; i < 3; i++) {
      answers.push(await api(first, 'GET', '/scopes/v1/fleet-b', holder.token))
      answers.push(await api(second, 'GET', '/scopes/v1/fleet-b', holder.token))
    }
    expect(answers.map((a) => a.status).sort()).toEqual([200, 200, 200, 200, 200, 429])
    const last = answers[answers.length - 1]
    expect(last?.status).toBe(429)
    expect(last?.body).toEqual({ message: 'Too Many Requests' })
    const resets = new Set(answers.map((a) => a.headers['x-rate-limit-reset']))
    expect(resets.size).toBe(1)
    expect(answers.every((a) => a.headers['x-rate-limit-limit'] === '5')).toBe(true)
  })
})
