// Types of bench/fuzz.js, for the test that runs a seeded pass (test/e2e/fuzz.test.ts).

export interface FuzzAccount {
  username: string
  /** Every scope available to the account. */
  scopes: string[]
  /** Secret, with tokens:read, tokens:write and scopes:list. */
  sk: string
  skId: string
  /** Secret, with every scope the account has. */
  rich: string
  richId: string
  pk: string
  pkId: string
  tk: string
  defaultId: string
  defaultToken: string
  victims: { id: string; token: string }[]
  cursors: string[]
  setupLink: string
  password: string
  session: { cookie: string; csrf: string }
  sacrificial: boolean
}

/** What the requests are mutated from. */
export interface Material {
  now: number
  origin: string
  host: string
  secret: Buffer | undefined
  scopes: string[]
  accounts: FuzzAccount[]
}

export interface FuzzRequest {
  index: number
  method?: string
  path?: string
  headers?: Record<string, string>
  body?: string
  setHost?: boolean
  /** Bytes sent as they are over a TLS connection of their own. */
  raw?: string
}

export interface Failure extends FuzzRequest {
  outcome: { status: number | string; text?: string }
}

export interface FuzzResult {
  requests: number
  seed: number
  concurrency: number
  seconds: number
  rps: number
  /** By status code, plus "closed" (the server closed the connection) and failures' kinds. */
  counts: Record<string, number>
  fivexx: number
  /** 5xx, timeouts, refused connections, requests that could not be sent. */
  failed: number
  /** Up to 20 distinct failures, each with what it takes to repeat it. */
  failures: Failure[]
  /** Up to 5 answers that Node's HTTP parser refused ("garbled"): not failures, but odd. */
  oddities: Failure[]
}

export function signingKey(): { env: string; secret: Buffer }

export function prepare(options: {
  base: string
  ca?: Buffer
  secret?: Buffer
  cli: (...args: string[]) => Promise<unknown>
  victims?: number
}): Promise<Material>

export function generate(material: Material, seed: number, index: number): FuzzRequest

export function fuzz(options: {
  base: string
  ca?: Buffer
  material: Material
  requests: number
  seed: number
  concurrency?: number
  timeoutMs?: number
  onProgress?: (done: number, perSecond: number) => void
}): Promise<FuzzResult>

export function report(result: FuzzResult): string

export function call(
  base: string,
  ca: Buffer | undefined,
  method: string,
  route: string,
  options?: { headers?: Record<string, string>; body?: string },
): Promise<{
  status: number
  headers: Record<string, string | string[] | undefined>
  text: string
  json: unknown
}>

export function enc(value: unknown): string
export function mix(seed: number, index: number): number
