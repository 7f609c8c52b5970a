import { readFileSync } from 'node:fs'
import { parse as parseYaml } from 'yaml'
import { ConfigError, systemReason } from '../config.js'
import { type NamedLimit, readNamedLimits } from '../ratelimit/named.js'
import { readTokenPolicy, type TokenPolicy } from '../token-policy.js'

export interface Scope {
  id: string
  description: string
  public: boolean
}

interface Grant {
  scopes: string[]
  credits?: PlanCredits
  policy?: TokenPolicy
  ratelimits?: NamedLimit[]
}

const noPolicy: TokenPolicy = Object.freeze({})

/**
 * A plan's default credits (`plans.<name>.credits`): what an account on the plan without credits
 * of its own starts with, and its refill (daily, or monthly on `day` 1-28, at 00:00 UTC).
 */
export interface PlanCredits {
  amount: number
  refill?: 'daily' | 'monthly'
  day?: number
}

/** Scope ids travel in token payloads; this alphabet keeps their base64 free of `-` and `_`. */
export const scopeIdPattern = /^[a-z0-9:._-]{1,64}$/

/**
 * The scope catalog (CONTRACT.md section 6): scopes, and plans and features naming the scopes
 * they enable. Loaded once; lookups are by precomputed maps.
 */
export class ScopeCatalog {
  readonly defaultPlan: string
  private readonly scopes: Map<string, Scope>
  private readonly plans: Map<string, Grant>
  private readonly features: Map<string, Grant>
  private readonly available = new Map<string, Scope[]>()

  constructor(doc: unknown, source = 'scope catalog') {
    const bad = (why: string) => new ConfigError(`${source}: ${why}`)
    if (!isRecord(doc)) throw bad('must be an object with scopes, plans and features')
    if (!Array.isArray(doc.scopes)) throw bad('scopes must be a list')
    this.scopes = new Map()
    for (const s of doc.scopes) {
      if (!isRecord(s) || typeof s.id !== 'string' || !scopeIdPattern.test(s.id)) {
        throw bad(`scope ids must match ${scopeIdPattern}: ${JSON.stringify(s)}`)
      }
      if (typeof s.description !== 'string') throw bad(`scope ${s.id} needs a description`)
      if (s.public !== undefined && typeof s.public !== 'boolean') {
        throw bad(`scope ${s.id}: public must be true or false`)
      }
      if (this.scopes.has(s.id)) throw bad(`scope ${s.id} is listed twice`)
      this.scopes.set(s.id, { id: s.id, description: s.description, public: s.public === true })
    }
    this.plans = this.grants(doc.plans, 'plans', bad)
    this.features = this.grants(doc.features ?? {}, 'features', bad)
    const defaultPlan = doc.defaultPlan ?? this.plans.keys().next().value
    if (typeof defaultPlan !== 'string' || !this.plans.has(defaultPlan)) {
      throw bad('defaultPlan must name a plan')
    }
    this.defaultPlan = defaultPlan
  }

  static fromFile(file: string): ScopeCatalog {
    let text: string
    try {
      text = readFileSync(file, 'utf8')
    } catch (err) {
      throw new ConfigError(`SCOPES_FILE cannot be read: ${file}: ${systemReason(err)}`)
    }
    let doc: unknown
    try {
      doc = file.endsWith('.json') ? JSON.parse(text) : parseYaml(text)
    } catch (err) {
      // The parser's message goes on with an excerpt of the file: its first line says it.
      const why = (err as Error).message.split('\n')[0]
      throw new ConfigError(`SCOPES_FILE ${file} is not valid YAML or JSON: ${why}`)
    }
    return new ScopeCatalog(doc, file)
  }

  hasPlan = (plan: string) => this.plans.has(plan)
  /** The plan's default credits, if it carries any. */
  planCredits = (plan: string) => this.plans.get(plan)?.credits
  /** The plan's token policy (`plans.<name>.policy`); an empty one if it sets none. */
  planPolicy = (plan: string): TokenPolicy => this.plans.get(plan)?.policy ?? noPolicy
  /** The plan's named rate limits (`plans.<name>.ratelimits`); none when it sets none. */
  planLimits = (plan: string): readonly NamedLimit[] => this.plans.get(plan)?.ratelimits ?? noLimits
  /** The plans whose policy has `idleDays`: their accounts are swept for idle tokens. */
  plansWithIdle = (): string[] =>
    [...this.plans].filter(([, g]) => g.policy?.idleDays !== undefined).map(([name]) => name)
  /** Whether any plan carries credits: when none does, an account's plan need not be read. */
  get plansCarryCredits(): boolean {
    for (const grant of this.plans.values()) if (grant.credits !== undefined) return true
    return false
  }
  hasFeature = (feature: string) => this.features.has(feature)
  get = (id: string) => this.scopes.get(id)

  /** The scopes an account may use, in catalog order. Cached per plan and feature set. */
  availableTo(plan: string, features: readonly string[]): Scope[] {
    const key = `${plan}|${features.join(',')}`
    let list = this.available.get(key)
    if (list === undefined) {
      const ids = new Set(this.plans.get(plan)?.scopes)
      for (const f of features) for (const id of this.features.get(f)?.scopes ?? []) ids.add(id)
      list = [...this.scopes.values()].filter((s) => ids.has(s.id))
      this.available.set(key, list)
    }
    return list
  }

  private grants(value: unknown, what: string, bad: (why: string) => Error): Map<string, Grant> {
    if (!isRecord(value)) throw bad(`${what} must be a mapping of names to { scopes: [...] }`)
    const out = new Map<string, Grant>()
    for (const [name, grant] of Object.entries(value)) {
      if (!isRecord(grant) || !Array.isArray(grant.scopes))
        throw bad(`${what}.${name} needs scopes`)
      const scopes = (grant.scopes as unknown[]).flat(2)
      for (const id of scopes) {
        if (typeof id !== 'string' || !this.scopes.has(id)) {
          throw bad(`${what}.${name} names an unknown scope: ${String(id)}`)
        }
      }
      const credits = what === 'plans' ? planCredits(grant.credits, name, bad) : undefined
      const policy = what === 'plans' ? planPolicy(grant.policy, name, bad) : undefined
      const ratelimits = what === 'plans' ? planLimits(grant.ratelimits, name, bad) : undefined
      out.set(name, {
        scopes: scopes as string[],
        ...(credits === undefined ? {} : { credits }),
        ...(policy === undefined ? {} : { policy }),
        ...(ratelimits === undefined ? {} : { ratelimits }),
      })
    }
    return out
  }
}

const noLimits: readonly NamedLimit[] = Object.freeze([])

function planLimits(value: unknown, plan: string, bad: (why: string) => Error) {
  if (value === undefined) return undefined
  const limits = readNamedLimits(value, `plans.${plan}.ratelimits`)
  if (typeof limits === 'string') throw bad(limits)
  return limits
}

const maxCredits = Number.MAX_SAFE_INTEGER

function planCredits(
  value: unknown,
  plan: string,
  bad: (why: string) => Error,
): PlanCredits | undefined {
  if (value === undefined) return undefined
  const at = `plans.${plan}.credits`
  if (!isRecord(value)) throw bad(`${at} must be { amount, refill?, day? }`)
  const { amount, refill, day } = value
  if (!Number.isSafeInteger(amount) || (amount as number) < 0 || (amount as number) > maxCredits) {
    throw bad(`${at}.amount must be a whole number of 0 or more`)
  }
  if (refill !== undefined && refill !== 'daily' && refill !== 'monthly') {
    throw bad(`${at}.refill must be daily or monthly`)
  }
  if (
    day !== undefined &&
    (refill !== 'monthly' || !Number.isInteger(day) || (day as number) < 1 || (day as number) > 28)
  ) {
    throw bad(`${at}.day must be 1 to 28, with a monthly refill`)
  }
  const credits: PlanCredits = { amount: amount as number }
  if (refill !== undefined) credits.refill = refill
  if (refill === 'monthly') credits.day = (day as number | undefined) ?? 1
  return credits
}

function planPolicy(
  value: unknown,
  plan: string,
  bad: (why: string) => Error,
): TokenPolicy | undefined {
  if (value === undefined) return undefined
  const policy = readTokenPolicy(value)
  if (typeof policy === 'string') throw bad(`plans.${plan}.policy: ${policy}`)
  return policy
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}
