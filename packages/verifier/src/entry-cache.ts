import type { Entry } from './entry.js'

/** Drops remembered for lookups in flight; past this many, they all start over instead. */
const dropLogLimit = 10_000

/**
 * Cached answers by token string, indexed by token id and account so that an event drops them.
 *
 * A lookup takes a ticket when it asks Tessera; its answer is kept only if nothing that could
 * concern it was dropped meanwhile (an event for its token or account, or everything), since an
 * answer read before a change may arrive after the change's event.
 */
export class EntryCache {
  private readonly entries = new Map<string, Entry>()
  private readonly byId = new Map<string, Set<Entry>>()
  private readonly byAccount = new Map<string, Set<Entry>>()
  /** Sequence of drops; a ticket is its value when the lookup started. */
  private seq = 0
  /** Answers with a ticket below this are not kept (everything was dropped since). */
  private barrier = 0
  /** `i<id>` / `a<account>` -> seq of the last drop, while lookups may be in flight. */
  private readonly drops = new Map<string, number>()

  constructor(private readonly maxEntries: number) {}

  get size(): number {
    return this.entries.size
  }

  get(token: string): Entry | undefined {
    return this.entries.get(token)
  }

  ticket(): number {
    return this.seq
  }

  /** Keeps an answer unless something it may depend on was dropped after its ticket. */
  add(entry: Entry, ticket: number): boolean {
    if (ticket < this.barrier || this.maxEntries <= 0) return false
    if (entry.id !== undefined && (this.drops.get(`i${entry.id}`) ?? -1) > ticket) return false
    if (entry.account !== undefined && (this.drops.get(`a${entry.account}`) ?? -1) > ticket) {
      return false
    }
    const existing = this.entries.get(entry.token)
    if (existing !== undefined) this.delete(existing)
    if (this.entries.size >= this.maxEntries) {
      // Refusals (any string an attacker makes up) never push out an answer to keep.
      if (!entry.answer.valid) return false
      const oldest = this.entries.values().next().value
      if (oldest !== undefined) this.delete(oldest)
    }
    this.entries.set(entry.token, entry)
    if (entry.id !== undefined) index(this.byId, entry.id, entry)
    if (entry.account !== undefined) index(this.byAccount, entry.account, entry)
    return true
  }

  delete(entry: Entry): void {
    if (this.entries.get(entry.token) === entry) this.entries.delete(entry.token)
    if (entry.id !== undefined) unindex(this.byId, entry.id, entry)
    if (entry.account !== undefined) unindex(this.byAccount, entry.account, entry)
  }

  dropToken(id: string): void {
    this.logDrop(`i${id}`)
    for (const entry of this.byId.get(id) ?? []) this.delete(entry)
  }

  dropAccount(account: string): void {
    this.logDrop(`a${account}`)
    for (const entry of this.byAccount.get(account) ?? []) this.delete(entry)
  }

  clear(): void {
    this.entries.clear()
    this.byId.clear()
    this.byAccount.clear()
    this.drops.clear()
    this.barrier = ++this.seq
  }

  /** No lookup is in flight: the drop log has nobody left to warn. */
  settled(): void {
    this.drops.clear()
  }

  private logDrop(key: string) {
    this.seq++
    if (this.drops.size >= dropLogLimit) {
      this.drops.clear()
      this.barrier = this.seq
    }
    this.drops.set(key, this.seq)
  }
}

function index(map: Map<string, Set<Entry>>, key: string, entry: Entry) {
  let set = map.get(key)
  if (set === undefined) {
    set = new Set()
    map.set(key, set)
  }
  set.add(entry)
}

function unindex(map: Map<string, Set<Entry>>, key: string, entry: Entry) {
  const set = map.get(key)
  if (set === undefined) return
  set.delete(entry)
  if (set.size === 0) map.delete(key)
}
