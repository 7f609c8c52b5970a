import { mkdirSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import type {
  APIResponse,
  Browser,
  BrowserContext,
  BrowserContextOptions,
  Locator,
  Page,
  Request,
  Response,
} from 'playwright-core'
import { expect } from 'vitest'
import { api } from '../e2e/client.js'
import { type ServerProcess, tessera } from '../e2e/server.js'

/** Drives the dashboard the way a person does: by the accessible names of DASHBOARD.md. */

const require = createRequire(import.meta.url)
const axeSource = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8')

export const outputDir = path.resolve(import.meta.dirname, '../../test-output')
export const screenshotDir = path.join(outputDir, 'screenshots')

export interface Account {
  username: string
  plan: string
  defaultToken: { id: string; token: string; note: string; usage: string }
  setupUrl: string
}

/** `tessera account create <username> [...options]` (e.g. `--plan pro`, `--feature f`). */
export async function createAccount(
  server: ServerProcess,
  username: string,
  ...options: string[]
): Promise<Account> {
  return tessera(server.env, 'account', 'create', username, ...options)
}

/** The setup link on this server (the printed origin comes from config and may say port 0). */
export const setupLink = (server: ServerProcess, setupUrl: string) =>
  server.url + new URL(setupUrl).pathname

export async function newContext(
  browser: Browser,
  options: BrowserContextOptions = {},
): Promise<BrowserContext> {
  const context = await browser.newContext({ ignoreHTTPSErrors: true, ...options })
  context.setDefaultTimeout(10_000)
  return context
}

export interface Visit {
  /** The answer that was finally shown. */
  response: Response
  /** The statuses of the whole chain, first request first: [303, 200] after a form's redirect. */
  statuses: number[]
  /** The answer to the first request of the chain (a form's POST). */
  first: Response
}

async function visitOf(response: Response | null): Promise<Visit> {
  if (response === null) throw new Error('the navigation produced no response')
  const chain: Response[] = [response]
  for (let r: Request | null = response.request().redirectedFrom(); r; r = r.redirectedFrom()) {
    const answer = await r.response()
    if (answer) chain.unshift(answer)
  }
  return { response, statuses: chain.map((r) => r.status()), first: chain[0] as Response }
}

export async function visit(page: Page, url: string): Promise<Visit> {
  return visitOf(await page.goto(url))
}

/** Runs an action that loads a new document (a form's submit) and waits for that document. */
export async function navigation(page: Page, action: () => Promise<unknown>): Promise<Visit> {
  const [response] = await Promise.all([page.waitForNavigation(), action()])
  return visitOf(response)
}

export const button = (scope: Page | Locator, name: string) =>
  scope.getByRole('button', { name, exact: true })
export const link = (scope: Page | Locator, name: string) =>
  scope.getByRole('link', { name, exact: true })
export const field = (scope: Page | Locator, label: string) =>
  scope.getByLabel(label, { exact: true })
export const checkbox = (scope: Page | Locator, name: string) =>
  scope.getByRole('checkbox', { name, exact: true })
export const heading = async (page: Page) =>
  (await page.getByRole('heading', { level: 1 }).innerText()).trim()
export const alertText = async (page: Page) => (await page.getByRole('alert').innerText()).trim()
export const bodyText = (page: Page) => page.locator('body').innerText()
export const click = (page: Page, name: string) =>
  navigation(page, () => button(page, name).click())
export const follow = (page: Page, name: string) => navigation(page, () => link(page, name).click())

/** The text of each cell (td or th), row by row, of the rows `rows` finds. */
export function rowTexts(rows: Locator): Promise<string[][]> {
  return rows.evaluateAll((found) =>
    found.map((r) =>
      [...(r as { cells: Iterable<{ innerText: string }> }).cells].map((c) => c.innerText.trim()),
    ),
  )
}

/** The notes (link texts) of the tokens table, row by row. */
export function tokenNotes(page: Page): Promise<string[]> {
  return tokenRows(page).evaluateAll((rows) =>
    rows.map((r) => {
      const row = r as { querySelector(s: string): { innerText: string } | null }
      return row.querySelector('a')?.innerText.trim() ?? ''
    }),
  )
}

/** A site that is not the dashboard: the origin of forged requests and redirects. */
export const evil = 'https://evil.example'
export const cookieName = '__Host-tessera_session'

/** The path and query of an address. */
export const pathAndQuery = (url: string) => {
  const u = new URL(url)
  return `${u.pathname}${u.search}`
}

export const sessionCookieOf = async (context: BrowserContext, server: ServerProcess) =>
  (await context.cookies(server.url)).find((c) => c.name === cookieName)

/** The path of the page's address, without its query (pages may add one, e.g. `?saved=1`). */
export const pathOf = (page: Page) => new URL(page.url()).pathname

/** The rows of the tokens table: those that link to a token. */
export const tokenRows = (page: Page) =>
  page.getByRole('row').filter({ has: page.getByRole('link') })

/** The row of the tokens table whose first cell links to the token named `note`. */
export const tokenRow = (page: Page, note: string) =>
  page.getByRole('row').filter({ has: link(page, note) })

/** The id of a token from the link of its row. */
export async function tokenId(page: Page, note: string): Promise<string> {
  const href = (await link(tokenRow(page, note), note).getAttribute('href')) ?? ''
  const id = /^\/account\/tokens\/(c[a-z0-9]{24})$/.exec(href)?.[1]
  expect(id, `link of ${note} (${href})`).toBeDefined()
  return id as string
}

export async function setPassword(
  page: Page,
  server: ServerProcess,
  setupUrl: string,
  password: string,
  confirmation = password,
): Promise<Visit> {
  await visit(page, setupLink(server, setupUrl))
  await field(page, 'New password').fill(password)
  await field(page, 'Confirm password').fill(confirmation)
  return click(page, 'Set password')
}

export async function signIn(
  page: Page,
  server: ServerProcess,
  username: string,
  password: string,
  query = '',
): Promise<Visit> {
  await visit(page, `${server.url}/account/sign-in${query}`)
  await field(page, 'Username').fill(username)
  await field(page, 'Password').fill(password)
  return click(page, 'Sign in')
}

/** A new account whose holder has set `password` (in a context of its own, then closed). */
export async function accountWithPassword(
  browser: Browser,
  server: ServerProcess,
  username: string,
  password: string,
): Promise<Account> {
  const account = await createAccount(server, username)
  const context = await newContext(browser)
  try {
    const page = await context.newPage()
    const set = await setPassword(page, server, account.setupUrl, password)
    expect(set.statuses).toEqual([303, 200])
  } finally {
    await context.close()
  }
  return account
}

/** A page signed in as a new account: its holder has just set `password` with the setup link. */
export async function signedIn(
  browser: Browser,
  server: ServerProcess,
  username: string,
  password = 'correct horse battery',
  options: BrowserContextOptions = {},
) {
  const account = await createAccount(server, username)
  const context = await newContext(browser, options)
  const page = await context.newPage()
  const set = await setPassword(page, server, account.setupUrl, password)
  expect(set.statuses).toEqual([303, 200])
  return { account, context, page, password }
}

/** The answer of the API's retrieve endpoint for a token string. */
export async function retrieveCode(server: ServerProcess, token: string): Promise<string> {
  const answer = await api(server, 'GET', '/tokens/v2', token)
  return answer.body?.code
}

export interface SentForm {
  /** Where the form posts (absolute). */
  action: string
  /** The fields it would send when its button is pressed, in order. */
  fields: [string, string][]
}

/** What the form of the submit button `submit` would send. */
export function formOf(submit: Locator): Promise<SentForm> {
  return submit.evaluate((b: { form: { action: string } }) => ({
    action: b.form.action,
    // biome-ignore lint/suspicious/noExplicitAny: the page's FormData, not Node's (no DOM lib here)
    fields: [...new (FormData as any)(b.form, b)].map(([k, v]: [string, unknown]) => [
      k,
      String(v),
    ]),
  }))
}

/** The fields with the CSRF token removed, or replaced by `value`. */
export const withCsrf = (fields: [string, string][], value?: string): [string, string][] =>
  value === undefined
    ? fields.filter(([k]) => k !== '_csrf')
    : fields.map(([k, v]) => [k, k === '_csrf' ? value : v])

/** POSTs a form with the context's cookies, as a page of `origin` would, without redirects. */
export function postForm(
  context: BrowserContext,
  url: string,
  fields: [string, string][],
  headers: Record<string, string>,
): Promise<APIResponse> {
  return context.request.post(url, {
    data: new URLSearchParams(fields).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    maxRedirects: 0,
  })
}

/** Fails the test if the page opens any dialog (alert, confirm, prompt). */
export function refuseDialogs(page: Page): string[] {
  const opened: string[] = []
  page.on('dialog', (dialog) => {
    opened.push(`${dialog.type()}: ${dialog.message()}`)
    void dialog.dismiss()
  })
  return opened
}

const requiredCsp: [string, string][] = [
  ['default-src', "'self'"],
  ['script-src', "'self'"],
  ['style-src', "'self'"],
  ['frame-ancestors', "'none'"],
  ['form-action', "'self'"],
  ['base-uri', "'none'"],
]

/** The headers DASHBOARD.md section 5 requires on every HTML answer of a dashboard route. */
export function expectPageHeaders(
  headers: Record<string, string>,
  what: string,
  options: { noStore?: boolean } = {},
) {
  const csp = headers['content-security-policy'] ?? ''
  const directives = new Map(
    csp
      .split(';')
      .map((d) => d.trim().split(/\s+/))
      .filter((d) => d[0] !== '')
      .map(([name, ...sources]) => [name, sources]),
  )
  for (const [name, source] of requiredCsp) {
    expect(directives.get(name), `${what}: CSP ${name} in "${csp}"`).toEqual([source])
  }
  expect(headers['content-type'], `${what}: Content-Type`).toBe('text/html; charset=utf-8')
  expect(headers['x-content-type-options'], `${what}: X-Content-Type-Options`).toBe('nosniff')
  expect(headers['referrer-policy'], `${what}: Referrer-Policy`).toBe('same-origin')
  if (options.noStore) {
    const cache = (headers['cache-control'] ?? '').split(',').map((d) => d.trim())
    expect(cache, `${what}: Cache-Control`).toContain('no-store')
  }
}

export async function screenshot(page: Page, name: string) {
  mkdirSync(screenshotDir, { recursive: true })
  await page.screenshot({ path: path.join(screenshotDir, `${name}.png`), fullPage: true })
}

interface Violation {
  id: string
  impact: string | null
  help: string
  nodes: string[]
}

/** Runs axe-core on the page; no violation of impact serious or critical may remain. */
export async function expectAccessible(page: Page, name: string) {
  // page.evaluate is not subject to the page's CSP (an injected script tag would be).
  await page.evaluate(axeSource)
  const violations: Violation[] =
    await page.evaluate(`axe.run().then((r) => r.violations.map((v) => ({
    id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => n.target.join(' ')),
  })))`)
  const serious = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
  expect(serious, `axe on ${name} (${page.url()}):\n${JSON.stringify(serious, null, 2)}`).toEqual(
    [],
  )
}

/** Screenshot and axe for one page of the dashboard. */
export async function inspect(page: Page, name: string) {
  await screenshot(page, name)
  await expectAccessible(page, name)
}

/**
 * A virtual authenticator in the page's browser (the DevTools Protocol's WebAuthn domain):
 * CTAP2, internal transport, resident keys, user verification, presence given at once.
 */
export async function virtualAuthenticator(page: Page) {
  const cdp = await page.context().newCDPSession(page)
  await cdp.send('WebAuthn.enable')
  const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: {
      protocol: 'ctap2',
      transport: 'internal',
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  })
  return { cdp, authenticatorId }
}
