import type { Logger } from 'pino'
import type { Db } from '../db/database.js'
import type { TokenView } from '../db/token-document.js'
import type { ScopeCatalog } from '../scopes/catalog.js'
import type { TokenService } from '../tokens/service.js'

export const dayMs = 86_400_000
const hourMs = 3_600_000
/** How long before an idle deletion the warning comes, and how far ahead notices look. */
export const idleNoticeMs = 7 * dayMs
/** How long before a rolled token's end its warning comes. */
export const retiringNoticeMs = hourMs
/** Tokens a scan reads at most (the rest on the next sweep). */
export const batch = 500

/** A warning given, as the mail that may follow it needs it. */
export interface TokenWarning {
  kind: 'expiring' | 'retiring' | 'idle'
  account: string
  token: TokenView
  /** What the warning is about: the end of life, the rolled token's end, the idle deletion. */
  at: string
  threshold?: '7d' | '1d'
}

/** What the dashboard lists as needing attention (see TokenHygiene.upcoming). */
export interface Notice {
  kind: TokenWarning['kind']
  token: TokenView
  at: string
}

export interface HygieneDeps {
  db: Db
  catalog: ScopeCatalog
  tokens: TokenService
  log: Logger
  /** Called once a warning is recorded, by the instance that recorded it (mail). */
  onWarning?: (warning: TokenWarning) => void
}
