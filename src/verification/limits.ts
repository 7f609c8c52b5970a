import type { AccountRecord } from '../db/repositories.js'
import { mergeLimits, type NamedLimit, requestsName } from '../ratelimit/named.js'
import type { ScopeCatalog } from '../scopes/catalog.js'
import type { Principal } from '../tokens/principal.js'

/** Allowed and refused verdicts of one limit name, for /metrics (one per name, not per key). */
export interface NameCounts {
  allowed: number
  limited: number
}

/** A limit applied to a request: its rule, the count it goes to, and what a request costs. */
export interface Applied {
  readonly rule: NamedLimit
  /** The count's key: `user:<username>[:<name>]`, `token:<id>:<name>`, `ip:<address>`, `ns:...`. */
  readonly key: string
  readonly cost: number
  /** Whose limit it is, as introspection and the docs say it. */
  readonly on: 'account' | 'token' | 'address' | 'identifier'
  readonly counts: NameCounts
}

/** Every limit on one token's verifications, in order: its account's, then its own. */
export interface Gate {
  readonly list: readonly Applied[]
  /** The account's `requests` limit: what Mapbox's X-Rate-Limit-* headers describe. */
  readonly requests: Applied
}

/** Distinct names counted per name in /metrics; past this many, a name counts as `other`. */
const maxNames = 100

/**
 * The limits that apply, resolved once per account record and principal (records are replaced,
 * never changed, when their limits change: a new record is a new resolution). An account's are
 * the service's `requests` (RATE_LIMIT_PER_MINUTE per 60 s), replaced by its plan's of the same
 * name, replaced by its own; a pk's or sk's own come on top.
 */
export class LimitBook {
  private readonly accounts = new WeakMap<AccountRecord, readonly Applied[]>()
  private readonly gates = new WeakMap<Principal, { account: AccountRecord; gate: Gate }>()
  private readonly addresses: Applied
  /** Verdicts by limit name, for /metrics. */
  readonly byName = new Map<string, NameCounts>()

  constructor(
    private readonly catalog: ScopeCatalog,
    readonly requests: NamedLimit,
  ) {
    this.addresses = this.applied(requests, 'ip:', 'address')
  }

  /** The limits of an account, in order (`requests` first). */
  effective(account: AccountRecord): NamedLimit[] {
    return mergeLimits([this.requests], this.catalog.planLimits(account.plan), account.ratelimits)
  }

  /** Every limit on a valid token's request. */
  gateOf(principal: Principal, account: AccountRecord): Gate {
    const known = this.gates.get(principal)
    if (known !== undefined && known.account === account) return known.gate
    const list = [...this.ofAccount(account)]
    const id = principal.tokenId
    for (const rule of principal.limits ?? []) {
      list.push(this.applied(rule, `token:${id}:${rule.name}`, 'token'))
    }
    const gate = { list, requests: list[0] as Applied }
    this.gates.set(principal, { account, gate })
    return gate
  }

  /**
   * The limit of requests with no valid token: the service's `requests`, per client address
   * (`kind` keeps apart counts of the same address: `ip`, `leak` for leak reports).
   */
  address(ip: string | undefined, kind = 'ip'): Applied {
    return { ...this.addresses, key: `${kind}:${ip}` }
  }

  /** A namespace identifier's limit (the namespace API). */
  identifier(namespace: string, identifier: string, rule: NamedLimit): Applied {
    return this.applied(rule, `ns:${namespace}:${identifier}`, 'identifier')
  }

  private ofAccount(account: AccountRecord): readonly Applied[] {
    let list = this.accounts.get(account)
    if (list === undefined) {
      const user = `user:${account.username}`
      list = this.effective(account).map((rule) =>
        this.applied(rule, rule.name === requestsName ? user : `${user}:${rule.name}`, 'account'),
      )
      this.accounts.set(account, list)
    }
    return list
  }

  private applied(rule: NamedLimit, key: string, on: Applied['on']): Applied {
    return { rule, key, cost: rule.cost ?? 1, on, counts: this.countsOf(rule.name) }
  }

  private countsOf(name: string): NameCounts {
    const label = this.byName.has(name) || this.byName.size < maxNames ? name : 'other'
    let counts = this.byName.get(label)
    if (counts === undefined) {
      counts = { allowed: 0, limited: 0 }
      this.byName.set(label, counts)
    }
    return counts
  }
}
