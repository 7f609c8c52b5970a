import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { cliActor } from '../../src/audit/events.js'
import { all, call, type Harness, harness, T0 } from '../helpers.js'

let h: Harness
let sk: { id: string; token: string }
/** alice's tokens in creation order: default, sk, then ten made a second apart. */
let ids: string[]

beforeAll(async () => {
  h = await harness({ PUBLIC_URL: 'https://tokens.example.com' })
  sk = await h.token('alice', all)
  const made: string[] = []
  for (let i = 0; i < 10; i++) {
    h.clock.now = T0 + (i + 1) * 1000
    made.push(
      (await h.token('alice', i % 2 ? ['styles:write'] : ['styles:read'], { note: `t${i}` })).id,
    )
  }
  h.clock.now = T0
  const first = await call(h.app, 'GET', '/tokens/v2/alice?limit=2', sk.token)
  ids = [...first.body.map((t: { id: string }) => t.id), ...made]
})
afterAll(() => h.close())

const nextLink = (headers: Record<string, unknown>) => {
  const link = headers.link as string | undefined
  return link && /^<([^>]+)>; rel="next"$/.exec(link)?.[1]
}

/** Follows Link headers from `url` and returns every page's ids. */
async function walk(url: string) {
  const pages: string[][] = []
  let next: string | undefined = url
  while (next !== undefined) {
    const res = await call(h.app, 'GET', next.replace('https://tokens.example.com', ''), sk.token)
    expect(res.status).toBe(200)
    pages.push(res.body.map((t: { id: string }) => t.id))
    next = nextLink(res.headers)
  }
  return pages
}

describe('list tokens', () => {
  it('lists oldest first, sk entries without token, and allowedUrls only where set', async () => {
    const res = await call(h.app, 'GET', '/tokens/v2/alice', sk.token)
    expect(res.body.map((t: { id: string }) => t.id)).toEqual(ids)
    expect(res.headers.link).toBeUndefined()
    for (const t of res.body) {
      expect('token' in t).toBe(t.usage === 'pk')
      expect('allowedUrls' in t).toBe(false)
    }
  })

  it('pages with an absolute Link that carries every filter and never the access token', async () => {
    const res = await call(
      h.app,
      'GET',
      '/tokens/v2/alice?limit=3&sortby=created&usage=pk&default=false',
      sk.token,
    )
    const link = res.headers.link as string
    expect(link).toMatch(
      /^<https:\/\/tokens\.example\.com\/tokens\/v2\/alice\?limit=3&start=[A-Za-z0-9_-]+&sortby=created&usage=pk&default=false>; rel="next"$/,
    )
    expect(link).not.toContain('access_token')
  })

  it('walks every token exactly once, in pages of the limit, with no Link on the last page', async () => {
    const pages = await walk('/tokens/v2/alice?limit=5')
    expect(pages.map((p) => p.length)).toEqual([5, 5, 2])
    expect(pages.flat()).toEqual(ids)
  })

  it('sorts by modified, most recent first, ties broken by id', async () => {
    const pages = await walk('/tokens/v2/alice?limit=4&sortby=modified')
    const tiedAtT0 = ids.slice(0, 2).sort().reverse()
    expect(pages.flat()).toEqual([...ids.slice(2).reverse(), ...tiedAtT0])
  })

  it('filters by usage and default', async () => {
    const pks = await call(h.app, 'GET', '/tokens/v2/alice?usage=pk', sk.token)
    expect(pks.body.every((t: { usage: string }) => t.usage === 'pk')).toBe(true)
    expect(pks.body).toHaveLength(6)
    const defaultId = (await call(h.app, 'GET', '/tokens/v2/alice?default=true', sk.token)).body[0]
      .id
    const notDefault = await call(h.app, 'GET', '/tokens/v2/alice?default=false', sk.token)
    expect(notDefault.body.map((t: { id: string }) => t.id)).toEqual(
      ids.filter((id) => id !== defaultId),
    )
    const walked = await walk('/tokens/v2/alice?usage=sk&limit=2')
    expect(walked.flat()).toEqual(ids.filter((id, i) => id === sk.id || (i >= 2 && i % 2 === 1)))
  })

  it('keeps a cursor valid when the token it points after is deleted', async () => {
    await h.ctx.accounts.create('dave', undefined, [], cliActor)
    h.clock.now = T0 + 1000
    const writer = await h.token('dave', all)
    const made = []
    for (let i = 2; i < 6; i++) {
      h.clock.now = T0 + i * 1000
      made.push((await h.token('dave', [])).id)
    }
    h.clock.now = T0
    const first = await call(h.app, 'GET', '/tokens/v2/dave?limit=3', writer.token)
    expect(first.body[2].id).toBe(made[0])
    await call(h.app, 'DELETE', `/tokens/v2/dave/${made[0]}`, writer.token)
    const next = (nextLink(first.headers) as string).replace('https://tokens.example.com', '')
    const rest = await call(h.app, 'GET', next, writer.token)
    expect(rest.status).toBe(200)
    expect(rest.body.map((t: { id: string }) => t.id)).toEqual(made.slice(1))
  })

  it("refuses a cursor from another account's listing or another order", async () => {
    const bobsToken = await h.token('bob', all)
    const bobsPage = await call(h.app, 'GET', '/tokens/v2/bob?limit=1', bobsToken.token)
    const start = new URL(nextLink(bobsPage.headers) as string).searchParams.get('start')
    expect(await call(h.app, 'GET', `/tokens/v2/alice?start=${start}`, sk.token)).toMatchObject({
      status: 422,
      body: { message: 'start is invalid' },
    })
    const alicePage = await call(h.app, 'GET', '/tokens/v2/alice?limit=1', sk.token)
    const aliceStart = new URL(nextLink(alicePage.headers) as string).searchParams.get('start')
    expect(
      await call(h.app, 'GET', `/tokens/v2/alice?sortby=modified&start=${aliceStart}`, sk.token),
    ).toMatchObject({
      status: 422,
      body: { message: 'start is invalid' },
    })
  })

  it('takes the first value of a repeated query parameter', async () => {
    const res = await call(h.app, 'GET', '/tokens/v2/alice?limit=2&limit=abc', sk.token)
    expect(res.status).toBe(200)
    expect(res.body).toHaveLength(2)
  })
})
