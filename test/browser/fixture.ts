import type { Browser, BrowserContext, BrowserContextOptions, Page } from 'playwright-core'
import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest'
import { type ServerProcess, startServer } from '../e2e/server.js'
import { launchBrowser } from './browser.js'
import { newContext } from './dashboard.js'

/**
 * The set-up of a browser test file: a server (the built one, `startServer`), a Chromium and,
 * when asked, a browser context and page shared by the file's tests. `useDashboard` registers
 * its own hooks in the describe block that calls it; its getters are read inside tests and hooks.
 */

export interface DashboardOptions {
  /**
   * The server's environment beyond startServer's defaults; a function runs in the fixture's
   * beforeAll, before the server starts (to start an OpenID provider first, say).
   */
  env?: Record<string, string> | (() => Promise<Record<string, string>>)
  /**
   * WebAuthn wants a domain name as relying party id: the server listens on a free port and is
   * reached as https://localhost:<port> (its PUBLIC_URL, and `url`).
   */
  webauthn?: boolean
  /** A context (with these options) and its page, kept for all the tests of the block. */
  page?: boolean | BrowserContextOptions
  /**
   * `file` (the default): one server for all the tests of the block; `test`: a new server for
   * each test (for what a server keeps in its memory, such as sign-in counts).
   */
  server?: 'file' | 'test'
  /** Whether to launch Chromium (default true): plain HTTP requests need none. */
  browser?: boolean
}

export interface Dashboard {
  readonly server: ServerProcess
  readonly browser: Browser
  /** Where the dashboard is reached: the server's address, or https://localhost:<port>. */
  readonly url: string
  /** The fixture's context and page (option `page`). */
  readonly context: BrowserContext
  readonly page: Page
  /**
   * Stops the server with SIGTERM unless it has already exited, and starts it again with the
   * same environment on the same data directory.
   */
  restart(): Promise<void>
}

export function useDashboard(options: DashboardOptions = {}): Dashboard {
  const state: {
    env?: Record<string, string>
    url?: string
    browser?: Browser
    context?: BrowserContext
    page?: Page
  } = {}
  /** Every server started, the current one last: all are stopped at the end (restart). */
  const servers: ServerProcess[] = []

  const given = (what: string) => {
    throw new Error(`useDashboard: no ${what} (read outside a test, or not asked for)`)
  }
  const environment = async () => {
    const env = typeof options.env === 'function' ? await options.env() : { ...options.env }
    if (options.webauthn) {
      const { freePort } = await import('../oidc.js')
      const port = await freePort()
      return { ...env, PORT: String(port), PUBLIC_URL: `https://localhost:${port}` }
    }
    return env
  }
  const start = async (env: Record<string, string>) => {
    servers.push(await startServer(env))
  }
  const stopAll = async () => {
    for (const server of servers.splice(0).reverse()) await server.stop()
  }

  const server = () => servers.at(-1) ?? given('server')
  const browser = () => state.browser ?? given('browser')

  beforeAll(async () => {
    // Kept as each is ready, for afterAll to end even when the other failed to start.
    await Promise.all([
      environment().then(async (env) => {
        state.env = env
        if (options.server !== 'test') await start(env)
      }),
      options.browser !== false &&
        launchBrowser().then((launched) => {
          state.browser = launched
        }),
    ])
    if (options.page) {
      state.context = await newContext(browser(), options.page === true ? {} : options.page)
      state.page = await state.context.newPage()
    }
  })
  if (options.server === 'test') {
    beforeEach(() => start(state.env ?? {}))
    afterEach(stopAll)
  }
  afterAll(async () => {
    await state.context?.close()
    await state.browser?.close()
    await stopAll()
  })

  return {
    get server() {
      return server()
    },
    get browser() {
      return browser()
    },
    get url() {
      return state.env?.PUBLIC_URL ?? server().url
    },
    get context() {
      return state.context ?? given('context')
    },
    get page() {
      return state.page ?? given('page')
    },
    async restart() {
      const current = server()
      await current.kill('SIGTERM')
      await start({ ...state.env, DATA_DIR: current.env.DATA_DIR as string })
    },
  }
}
