import type { Logger } from 'pino'
import type { Config } from '../config.js'
import type { Db } from '../db/database.js'
import type { ScopeCatalog } from '../scopes/catalog.js'

export interface CreditDeps {
  db: Db
  catalog: ScopeCatalog
  config: Config
  log: Logger
  now: () => number
}

/** Placeholder: see /tmp/design.md. Owned by the credits helper. */
export class CreditService {
  constructor(readonly deps: CreditDeps) {}
}
