import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { api } from '../e2e/client.js'
import { type ServerProcess, startServer, tessera } from '../e2e/server.js'
import { fleetEnv } from './env.js'
import { type TcpProxy, tcpProxy } from './tcp-proxy.js'

const scopes = 'tokens:read,tokens:write,scopes:list'
const until = async (what: string, check: () => Promise<boolean>, ms = 8000) => {
  const since = performance.now()
  while (performance.now() - since < ms) {
    if (await check()) return performance.now() - since
    await new Promise((r) => setTimeout(r, 100))
  }
  throw new Error(`${what}: not within ${ms} ms`)
}

describe('when Redis is unreachable', () => {
  const fleet = fleetEnv()
  let proxy: TcpProxy
  let server: ServerProcess
  let redis: Redis
  let token: string

  beforeAll(async () => {
    proxy = await tcpProxy(Number(new URL(fleet.redisUrl).port || 6379))
    await proxy.cut()
    redis = new Redis(fleet.redisUrl)
    server = await startServer({ ...fleet.env, REDIS_URL: `redis://127.0.0.1:${proxy.port}` })
    await tessera(server.env, 'account', 'create', 'redisless')
    token = (
      await tessera(
        server.env,
        'token',
        'create',
        'redisless',
        '--scopes',
        scopes,
        '--note',
        'test',
      )
    ).token
  })
  afterAll(async () => {
    await server?.stop()
    await proxy?.close()
    redis?.disconnect()
    await fleet.drop()
  })

  const sharedCount = async () => {
    const keys = await redis.keys(`${fleet.prefix}rl:*:user:redisless`)
    return keys.length === 0 ? 0 : Number(await redis.get(keys[0] as string))
  }

  it('keeps answering from the start, counting per instance, with a warning', async () => {
    const res = await api(server, 'GET', '/scopes/v1/redisless', token)
    expect(res.status).toBe(200)
    expect(res.headers['x-rate-limit-limit']).toBe('100')
    expect(await sharedCount()).toBe(0)
    expect(server.output()).toContain(
      'Redis is unreachable: counting rate limits per instance until it returns',
    )
  })

  it('resumes shared counting when Redis returns', async () => {
    await proxy.restore()
    await until('shared counting', async () => {
      await api(server, 'GET', '/scopes/v1/redisless', token)
      return (await sharedCount()) > 0
    })
    const before = await sharedCount()
    await api(server, 'GET', '/scopes/v1/redisless', token)
    expect(await sharedCount()).toBe(before + 1)
    expect(server.output()).toContain('Redis is reachable again')
  })

  it('keeps answering quickly when the connection is lost later', async () => {
    await proxy.cut('blackhole')
    for (let i = 0; i < 5; i++) {
      const res = await api(server, 'GET', '/scopes/v1/redisless', token)
      expect(res.status).toBe(200)
      expect(res.ms).toBeLessThan(2000)
    }
    await proxy.restore()
  })
})

describe('when PostgreSQL is unreachable', () => {
  const fleet = fleetEnv()
  let proxy: TcpProxy
  let server: ServerProcess
  let token: string

  beforeAll(async () => {
    const target = new URL(fleet.databaseUrl)
    proxy = await tcpProxy(Number(target.port || 5432))
    target.host = `127.0.0.1:${proxy.port}`
    server = await startServer({ ...fleet.env, DATABASE_URL: target.toString() })
    await tessera(server.env, 'account', 'create', 'pgless')
    token = (
      await tessera(server.env, 'token', 'create', 'pgless', '--scopes', scopes, '--note', 'test')
    ).token
  })
  afterAll(async () => {
    await server?.stop()
    await proxy?.close()
    await fleet.drop()
  })

  it.each(['refuse', 'blackhole'] as const)(
    'answers 503 Service Unavailable within seconds (%s), then recovers by itself',
    async (mode) => {
      expect((await api(server, 'GET', '/tokens/v2/pgless', token)).status).toBe(200)
      await proxy.cut(mode)
      const down = await api(server, 'GET', '/tokens/v2/pgless', token)
      expect(down.status).toBe(503)
      expect(down.body).toEqual({ message: 'Service Unavailable' })
      expect(down.headers['content-type']).toBe('application/json; charset=utf-8')
      expect(down.ms).toBeLessThan(5000)
      await proxy.restore()
      await until(
        'recovery',
        async () => (await api(server, 'GET', '/tokens/v2/pgless', token)).status === 200,
      )
      expect(server.output()).not.toMatch(/(pk|sk|tk)\.eyJ/)
    },
  )
})

describe('when PostgreSQL is unreachable at start', () => {
  const fleet = fleetEnv()
  let proxy: TcpProxy
  let server: ServerProcess

  afterAll(async () => {
    await server?.stop()
    await proxy?.close()
    await fleet.drop()
  })

  it('comes up answering 503, then migrates and serves once the database is back', async () => {
    const target = new URL(fleet.databaseUrl)
    proxy = await tcpProxy(Number(target.port || 5432))
    await proxy.cut()
    target.host = `127.0.0.1:${proxy.port}`
    server = await startServer({ ...fleet.env, DATABASE_URL: target.toString() })
    const down = await api(server, 'GET', '/tokens/v2', 'x.y.z')
    expect(down.status).toBe(503)
    expect(down.body).toEqual({
      message: 'Service Unavailable',
      details: 'the database is not reachable yet',
    })
    expect(server.output()).toContain('database unreachable: answering 503 until it is back')
    await proxy.restore()
    await until(
      'migrations',
      async () => (await api(server, 'GET', '/tokens/v2', 'x.y.z')).status === 200,
    )
    expect((await api(server, 'GET', '/tokens/v2', 'x.y.z')).body).toEqual({
      code: 'TokenMalformed',
    })
  })
})
