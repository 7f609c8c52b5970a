import { mkdirSync } from 'node:fs'
import path from 'node:path'
import type { Page } from 'playwright-core'
import { describe, expect, it } from 'vitest'
import { api } from '../e2e/client.js'
import { tessera } from '../e2e/server.js'
import { browserAvailable } from './browser.js'
import {
  button,
  click,
  field,
  follow,
  heading,
  inspect,
  link,
  newContext,
  pathAndQuery,
  screenshotDir,
  signedIn,
  signIn,
  tokenNotes,
  tokenRow,
  visit,
} from './dashboard.js'
import { useDashboard } from './fixture.js'

const available = browserAvailable()
const password = 'correct horse battery'

const desktop = { width: 1280, height: 800 }
const phone = { width: 390, height: 844 }
const widths = [
  ['desktop', desktop],
  ['phone', phone],
] as const

/** The page's width beside the window's: wider means the page scrolls sideways. */
const widthOf = (page: Page) =>
  page.evaluate<{ scroll: number; client: number }>(
    '({ scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth })',
  )

async function expectNoSidewaysScroll(page: Page, what: string) {
  const { scroll, client } = await widthOf(page)
  expect(scroll, `${what}: the page's width (${scroll}) within the window (${client})`).toBe(client)
}

/** A note typed without a single space: 1,000 characters. */
const longNote = 'Productionmapsforthewebsiteofacme'.repeat(30).slice(0, 1000)
/** A URL whose every part is short: a line may only break at its slashes, dots and hyphens. */
const longUrl =
  'https://tiles.maps.example.com/v4/streets-satellite/terrain-rgb/hillshade/contours/labels/buildings/water?style=streets&lang=en'

/**
 * Where the lines of the list item holding `text` break: the characters either side of each
 * break (a character on a lower line than the one before it begins a line).
 */
function lineBreaks(page: Page, text: string) {
  return page.evaluate<string[]>(`(() => {
    const item = [...document.querySelectorAll('li')].find((li) => li.textContent === ${JSON.stringify(text)})
    if (item === undefined) return ['missing']
    const chars = []
    const walker = document.createTreeWalker(item, NodeFilter.SHOW_TEXT)
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (let i = 0; i < node.data.length; i++) {
        const range = document.createRange()
        range.setStart(node, i)
        range.setEnd(node, i + 1)
        chars.push({ c: node.data[i], top: range.getBoundingClientRect().top })
      }
    }
    const breaks = []
    for (let i = 1; i < chars.length; i++) {
      if (chars[i].top > chars[i - 1].top + 2) breaks.push(chars[i - 1].c + '|' + chars[i].c)
    }
    return breaks
  })()`)
}

/** Issue 45 items 6 and 11: long notes, phones, the token page's sections, the list's search. */
describe.skipIf(!available)('the pages a newcomer meets first, at desktop and phone widths', () => {
  const dash = useDashboard({ env: { RATE_LIMIT_PER_MINUTE: '100000', USAGE_FLUSH_SECONDS: '1' } })

  /** A secret token of `username` that makes tokens, from the command line. */
  const maker = async (username: string): Promise<string> => {
    const made = await tessera(
      dash.server.env,
      'token',
      'create',
      username,
      '--scopes',
      'tokens:write,tokens:read,styles:read',
      '--note',
      'maker',
    )
    return made.token
  }
  const create = async (
    username: string,
    sk: string,
    body: { note: string; scopes: string[]; allowedUrls?: string[] },
  ) => {
    const made = await api(dash.server, 'POST', `/tokens/v2/${username}`, sk, body)
    expect(made.status, JSON.stringify(made.body)).toBe(200)
    return made.body as { id: string; token: string; note: string }
  }

  it('keeps a 1,000-character note and a long allowed URL within the window: tokens, a token, Activity', async () => {
    const { context, page } = await signedIn(dash.browser, dash.server, 'longnote', password)
    const sk = await maker('longnote')
    const made = await create('longnote', sk, {
      note: longNote,
      scopes: ['styles:read'],
      allowedUrls: [longUrl, 'example.com'],
    })
    for (const [name, size] of widths) {
      await page.setViewportSize(size)
      await visit(page, `${dash.server.url}/account`)
      await expectNoSidewaysScroll(page, `tokens, ${name}`)
      // Cut to three lines in the list; the whole note is the link's name and title.
      const named = link(page, longNote)
      await expect(named.getAttribute('title')).resolves.toBe(longNote)
      const shown = (await named.boundingBox())?.height ?? 0
      expect(shown, `the note's height on the list, ${name}`).toBeLessThan(80)
      // The URL wraps at its separators, never inside a word.
      const breaks = await lineBreaks(page, longUrl)
      if (name === 'phone') expect(breaks.length).toBeGreaterThan(0)
      for (const at of breaks) expect(at, `a line break in ${longUrl}`).toMatch(/^[/.?&=#_-]\|/)
      await inspect(page, `first-hour-tokens-long-note-${name}`)

      await visit(page, `${dash.server.url}/account/tokens/${made.id}`)
      await expectNoSidewaysScroll(page, `the token's page, ${name}`)
      expect(await heading(page)).toBe(longNote)
      await inspect(page, `first-hour-token-long-note-${name}`)

      await visit(page, `${dash.server.url}/account/activity`)
      await expectNoSidewaysScroll(page, `Activity, ${name}`)
      await expect(link(page, longNote).getAttribute('href')).resolves.toBe(
        `/account/tokens/${made.id}`,
      )
      await inspect(page, `first-hour-activity-long-note-${name}`)
    }
    await context.close()
  })

  it('fits Members on a phone: every role control and Remove within the window', async () => {
    const { context, page } = await signedIn(dash.browser, dash.server, 'crew', password)
    for (const [login, email, role] of [
      ['devon', 'devon.developer@platform-engineering.example.com', 'developer'],
      ['vera', 'vera.viewer@customer-success.example.org', 'viewer'],
    ] as const) {
      const made = await tessera(dash.server.env, 'member', 'add', 'crew', email, '--role', role)
      const joining = await newContext(dash.browser)
      const their = await joining.newPage()
      await visit(their, dash.server.url + new URL(made.invitationUrl).pathname)
      await field(their, 'Username').fill(login)
      await field(their, 'New password').fill(password)
      await field(their, 'Confirm password').fill(password)
      expect((await click(their, 'Join crew')).statuses).toEqual([303, 200])
      await joining.close()
    }
    for (const [name, size] of widths) {
      await page.setViewportSize(size)
      await visit(page, `${dash.server.url}/account/members`)
      await expectNoSidewaysScroll(page, `Members, ${name}`)
      const { client } = await widthOf(page)
      for (const login of ['crew', 'devon', 'vera']) {
        for (const control of [
          page.getByRole('combobox', { name: `Role of ${login}`, exact: true }),
          button(page, `Change role of ${login}`),
          button(page, `Remove ${login}`),
        ]) {
          const box = await control.boundingBox()
          expect(box, `${login} on ${name}`).not.toBeNull()
          expect((box?.x ?? 0) + (box?.width ?? 0)).toBeLessThanOrEqual(client)
          expect(box?.x ?? -1).toBeGreaterThanOrEqual(0)
        }
      }
      await inspect(page, `first-hour-members-${name}`)
    }
    await context.close()
  })

  it("orders a token's page: overview, parent and children, settings, limits and credits, danger zone", async () => {
    const { context, page, account } = await signedIn(dash.browser, dash.server, 'order', password)
    const sk = await maker('order')
    const made = await create('order', sk, { note: 'website', scopes: ['styles:read'] })
    for (const [name, size] of widths) {
      await page.setViewportSize(size)
      await visit(page, `${dash.server.url}/account/tokens/${made.id}`)
      const sections = page.getByRole('heading', { level: 2 })
      await expect(sections.allInnerTexts()).resolves.toEqual([
        'Overview',
        'Parent and children',
        'Settings',
        'Limits and credits',
        'Danger zone',
      ])
      await expect(page.getByRole('heading', { level: 3 }).allInnerTexts()).resolves.toEqual([
        'Verifications',
        'Credits',
        'Roll this token',
        'Delete this token',
      ])
      // The token's own settings come before its credits, and nothing that ends it before them.
      const order = await page.evaluate<string[]>(
        `[...document.querySelectorAll('button')].map((b) => b.textContent.trim()).filter((t) => ['Save changes', 'Save credits', 'Roll token', 'Delete token'].includes(t))`,
      )
      expect(order).toEqual(['Save changes', 'Save credits', 'Roll token', 'Delete token'])
      // The names DASHBOARD.md fixes.
      await expect(field(page, 'Note').inputValue()).resolves.toBe('website')
      await expect(field(page, 'Allowed URLs').count()).resolves.toBe(1)
      await expect(
        page.getByRole('checkbox', { name: 'styles:read', exact: true }).isChecked(),
      ).resolves.toBe(true)
      // The whole pk string, on its page, with or without the script.
      await expect(page.locator('#token-string').innerText()).resolves.toBe(made.token)
      await expectNoSidewaysScroll(page, `the token's page, ${name}`)
      await inspect(page, `first-hour-token-${name}`)
    }
    // The default token: no Delete token, and Roll is still there.
    await visit(page, `${dash.server.url}/account/tokens/${account.defaultToken.id}`)
    await expect(button(page, 'Delete token').count()).resolves.toBe(0)
    await expect(page.getByText('The default token cannot be deleted.').count()).resolves.toBe(1)
    await context.close()
  })

  it('finds tokens by note or id, pk or sk: a GET form that pages, without the script too', async () => {
    const { account } = await signedIn(dash.browser, dash.server, 'finder', password)
    const sk = await maker('finder')
    const pk = (note: string) => create('finder', sk, { note, scopes: ['styles:read'] })
    const maps = await pk('Website maps')
    await pk('website geocoding')
    const backend = await create('finder', sk, { note: 'Backend batch', scopes: ['tokens:read'] })
    await pk('100% coverage')
    await pk('under_score')
    for (let i = 0; i < 105; i++) await pk(`bulk ${String(i).padStart(3, '0')}`)

    const context = await newContext(dash.browser, { javaScriptEnabled: false })
    const page = await context.newPage()
    expect((await signIn(page, dash.server, 'finder', password)).statuses).toEqual([303, 200])
    const search = async (text: string, usage = 'pk and sk') => {
      await field(page, 'Note or id').fill(text)
      await field(page, 'Usage').selectOption({ label: usage })
      const sent = await click(page, 'Search')
      expect(sent.statuses).toEqual([200])
      return sent
    }
    const summary = () => page.getByRole('status').filter({ hasText: /token/ }).innerText()

    await search('WEBSITE')
    expect(pathAndQuery(page.url())).toBe('/account?q=WEBSITE&usage=')
    await expect(tokenNotes(page)).resolves.toEqual(['Website maps', 'website geocoding'])
    await expect(summary()).resolves.toBe('2 tokens whose note or id contains “WEBSITE”.')
    await expect(field(page, 'Note or id').inputValue()).resolves.toBe('WEBSITE')

    await search('', 'sk only')
    expect(pathAndQuery(page.url())).toBe('/account?q=&usage=sk')
    await expect(tokenNotes(page)).resolves.toEqual(['maker', 'Backend batch'])
    await expect(summary()).resolves.toBe('2 sk tokens.')

    await search(backend.id)
    await expect(tokenNotes(page)).resolves.toEqual(['Backend batch'])
    await search(maps.id.slice(3, 12), 'pk only')
    await expect(tokenNotes(page)).resolves.toEqual(['Website maps'])
    // Typed as is: % and _ are not wildcards.
    await search('%')
    await expect(tokenNotes(page)).resolves.toEqual(['100% coverage'])
    await search('_')
    await expect(tokenNotes(page)).resolves.toEqual(['under_score'])

    await search('nothing like it')
    await expect(tokenNotes(page)).resolves.toEqual([])
    await expect(summary()).resolves.toBe('No tokens whose note or id contains “nothing like it”.')
    expect((await follow(page, 'Show all tokens')).statuses).toEqual([200])
    expect(pathAndQuery(page.url())).toBe('/account')
    await expect(tokenNotes(page)).resolves.toHaveLength(100)

    // 105 matches: the pages keep the search.
    await search('bulk', 'pk only')
    const first = await tokenNotes(page)
    expect(first).toHaveLength(100)
    expect(first[0]).toBe('bulk 000')
    await expect(summary()).resolves.toBe(
      '100 pk tokens on this page whose note or id contains “bulk”.',
    )
    await follow(page, 'Next page')
    expect(pathAndQuery(page.url())).toMatch(/^\/account\?q=bulk&usage=pk&start=[^&]+$/)
    await expect(tokenNotes(page)).resolves.toEqual([
      'bulk 100',
      'bulk 101',
      'bulk 102',
      'bulk 103',
      'bulk 104',
    ])
    await expect(field(page, 'Note or id').inputValue()).resolves.toBe('bulk')
    await expect(field(page, 'Usage').inputValue()).resolves.toBe('pk')
    await follow(page, 'Previous page')
    expect(pathAndQuery(page.url())).toMatch(/^\/account\?q=bulk&usage=pk&before=[^&]+$/)
    await expect(tokenNotes(page)).resolves.toEqual(first)

    // Without the script: no Copy button that would do nothing; the whole string is there.
    await visit(page, `${dash.server.url}/account`)
    const row = tokenRow(page, 'Default public token')
    await expect(button(row, 'Copy').count()).resolves.toBe(0)
    await expect(row.locator('code').innerText()).resolves.toBe(account.defaultToken.token)

    // Addresses no form or link makes.
    for (const query of ['usage=tk', 'usage=PK', `q=${'x'.repeat(1025)}`]) {
      const refused = await visit(page, `${dash.server.url}/account?${query}`)
      expect(refused.statuses, query).toEqual([422])
      expect(await heading(page)).toBe('Request refused')
    }
    await context.close()
  })

  it('cuts the pk strings of the list to a line, ends shown, and copies them whole', async () => {
    const { context, page, account } = await signedIn(
      dash.browser,
      dash.server,
      'copier',
      password,
      {
        permissions: ['clipboard-read', 'clipboard-write'],
      },
    )
    const token = account.defaultToken.token
    for (const [name, size] of widths) {
      await page.setViewportSize(size)
      await visit(page, `${dash.server.url}/account`)
      await expectNoSidewaysScroll(page, `tokens, ${name}`)
      const row = tokenRow(page, 'Default public token')
      const code = row.locator('code')
      await expect(code.innerText()).resolves.toBe(token)
      await expect(code.getAttribute('title')).resolves.toBe(token)
      const cut = await page.evaluate(`(() => {
        const code = document.querySelector('table.tokens code')
        const head = code.querySelector('.head')
        const tail = code.querySelector('.tail')
        return {
          headCut: head.scrollWidth > head.clientWidth,
          tailShown: tail.getBoundingClientRect().right <= code.getBoundingClientRect().right + 0.5,
          tail: tail.textContent,
        }
      })()`)
      expect(cut).toEqual({ headCut: true, tailShown: true, tail: token.slice(-6) })
      await button(row, 'Copy').click()
      await expect
        .poll(() => page.locator('#copy-status').innerText())
        .toBe('Copied to the clipboard.')
      await expect(page.evaluate<string>('navigator.clipboard.readText()')).resolves.toBe(token)
      await inspect(page, `first-hour-tokens-${name}`)
    }
    await context.close()
  })

  it('shows the pages as the docs do: the tokens list, a token, Members on a phone', async () => {
    const { context, page } = await signedIn(dash.browser, dash.server, 'acme', password)
    const env = dash.server.env
    const cli = (...args: string[]) => tessera(env, 'token', 'create', 'acme', ...args)
    const map = await cli(
      '--note',
      'Store locator map',
      '--scopes',
      'styles:tiles,styles:read',
      '--allowed-url',
      'https://acme.example',
      '--allowed-url',
      '*.acme.example',
    )
    const sync = await cli(
      '--note',
      'Nightly style sync',
      '--scopes',
      'styles:list,styles:download',
    )
    await cli('--note', 'Data pipeline', '--scopes', 'datasets:read,datasets:write,uploads:write')
    for (let i = 0; i < 40; i++) await api(dash.server, 'GET', '/tokens/v2', map.token)
    for (let i = 0; i < 12; i++) await api(dash.server, 'GET', '/tokens/v2', sync.token)
    // Written every USAGE_FLUSH_SECONDS (1 here).
    await visit(page, `${dash.server.url}/account`)
    await expect
      .poll(async () => {
        await visit(page, `${dash.server.url}/account/tokens/${map.id}`)
        return page.locator('#usage-summary').innerText()
      })
      .toBe('40 verifications in the last 24 hours, all valid.')

    /** The top of the page, `height` pixels at most. */
    const shot = async (name: string, height: number) => {
      const whole = await page.evaluate<number>('document.documentElement.scrollHeight')
      const width = page.viewportSize()?.width ?? 0
      mkdirSync(screenshotDir, { recursive: true })
      await page.screenshot({
        path: path.join(screenshotDir, `${name}.png`),
        fullPage: true,
        clip: { x: 0, y: 0, width, height: Math.min(whole, height) },
      })
    }
    await page.setViewportSize(desktop)
    await visit(page, `${dash.server.url}/account`)
    await expectNoSidewaysScroll(page, 'tokens')
    await shot('docs-tokens', 1000)
    await visit(page, `${dash.server.url}/account/tokens/${map.id}`)
    await shot('docs-token', 1500)

    for (const [login, role] of [
      ['dana', 'developer'],
      ['vic', 'viewer'],
    ] as const) {
      const made = await tessera(
        env,
        'member',
        'add',
        'acme',
        `${login}@acme.example`,
        '--role',
        role,
      )
      const joining = await newContext(dash.browser)
      const their = await joining.newPage()
      await visit(their, dash.server.url + new URL(made.invitationUrl).pathname)
      await field(their, 'Username').fill(login)
      await field(their, 'New password').fill(password)
      await field(their, 'Confirm password').fill(password)
      expect((await click(their, 'Join acme')).statuses).toEqual([303, 200])
      await joining.close()
    }
    await page.setViewportSize(phone)
    await visit(page, `${dash.server.url}/account/members`)
    await expectNoSidewaysScroll(page, 'Members')
    await shot('docs-members-phone', 1400)
    await context.close()
  })
})
