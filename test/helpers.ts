import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../src/app.js'
import { cliActor } from '../src/audit/events.js'
import { type Env, toConfig } from '../src/config.js'
import { type AppContext, createContext } from '../src/context.js'
import type { AccountRecord } from '../src/db/repositories.js'
import type { TokenView } from '../src/tokens/service.js'
import { dialectEnv } from './dialect.js'

export interface Harness {
  ctx: AppContext
  app: FastifyInstance
  dir: string
  clock: { now: number }
  /** Made by the account service: each with its default token. */
  alice: AccountRecord & { defaultToken: TokenView }
  bob: AccountRecord & { defaultToken: TokenView }
  /** A token of `username` created by its holder, with these scopes. */
  token(
    username: string,
    scopes: string[],
    extra?: { note?: string; allowedUrls?: string[] },
  ): Promise<TokenView & { token: string }>
  close(): Promise<void>
}

export const T0 = Date.parse('2026-11-22T12:00:00.000Z')

/** `accountsCreated`: when alice and bob were created (T0 unless given: usage history before
 * an account's creation is not its own). */
export async function harness(
  env: Env = {},
  { accountsCreated = T0 }: { accountsCreated?: number } = {},
): Promise<Harness> {
  const dir = mkdtempSync(path.join(tmpdir(), 'tessera-test-'))
  const clock = { now: T0 }
  const storage = dialectEnv()
  const config = toConfig({
    DATA_DIR: dir,
    RATE_LIMIT_PER_MINUTE: '100000',
    // The test process keeps its event loop busy on purpose (property runs): no shedding here.
    SHED_DELAY_MS: '0',
    ...storage.env,
    ...env,
  })
  const ctx = await createContext(config, { now: () => clock.now }).catch(async (err) => {
    await storage.drop()
    throw err
  })
  const app = buildApp(ctx)
  await app.ready()
  clock.now = accountsCreated
  const alice = await ctx.accounts.create('alice', undefined, [], cliActor)
  const bob = await ctx.accounts.create('bob', undefined, [], cliActor)
  clock.now = T0
  return {
    ctx,
    app,
    dir,
    clock,
    alice,
    bob,
    async token(username, scopes, extra = {}) {
      const account = await ctx.accounts.find(username)
      if (!account) throw new Error(`no account ${username}`)
      const view = await ctx.tokens.create(
        account,
        ctx.accounts.holder(account),
        {
          scopes,
          ...extra,
        },
        cliActor,
      )
      return view as TokenView & { token: string }
    },
    async close() {
      await app.close()
      await ctx.close()
      await storage.drop()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

export const all = ['tokens:read', 'tokens:write', 'scopes:list']

/**
 * The token with one character of its signature changed: always a different signature (a fixed
 * replacement such as `AA` at the end is the token itself once in 256 draws: the last character
 * of a signature is one of A, Q, g, w).
 */
export function tampered(token: string): string {
  const at = token.length - 2
  return `${token.slice(0, at)}${token[at] === 'A' ? 'B' : 'A'}${token.slice(at + 1)}`
}

/** `app.inject` with the access token in the query and a JSON body. */
export async function call(
  app: FastifyInstance,
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE',
  url: string,
  token?: string,
  body?: unknown,
) {
  const sep = url.includes('?') ? '&' : '?'
  const res = await app.inject({
    method,
    url: token === undefined ? url : `${url}${sep}access_token=${encodeURIComponent(token)}`,
    ...(body === undefined
      ? {}
      : { payload: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
  })
  return {
    status: res.statusCode,
    body: res.body === '' ? undefined : res.json(),
    headers: res.headers,
  }
}
