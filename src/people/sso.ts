import type { Actor } from '../audit/events.js'
import { type PersonRow, peopleRepo } from '../db/people.js'
import { isoTime } from '../time.js'
import { emailUnproven, personOfIdentity, signUpWithIdentity } from './identities.js'
import { openAccountsOf, type PeopleDeps } from './membership.js'
import { type Identity, type SingleSignOn, SsoRefused } from './oidc.js'
import { digest, secret } from './secrets.js'
import { type SignedInPerson, SignInService } from './sign-ins.js'

/** How long the browser has to come back from the provider. */
export const ssoFlowLifetimeMs = 10 * 60_000

/**
 * Why a sign-in through the provider signs nobody in. `expired`: no flow this browser began
 * (expired, used, or never); `provider`: its answer did not hold; `unverified`: nobody matched
 * and the provider has not verified the email; `unproven`: only people who never proved the
 * email have it; `unknown`: nobody has it; `noAccount`: the person belongs to no enabled account.
 */
export type SsoRefusal =
  | { reason: 'expired' | 'unverified' | 'noAccount' }
  | { reason: 'provider'; message: string }
  | { reason: 'unproven' | 'unknown'; email: string | undefined }

export type SsoOutcome = { person: SignedInPerson; next: string } | { refused: SsoRefusal }

/**
 * Sign-in through the OpenID Connect provider: the flow each browser begins (its checks stored
 * until the callback, taken once), then who the provider's identity is here, and whether they
 * may come in. Open sign-up (DASHBOARD_SIGNUP) makes an account for a verified stranger.
 */
export class SsoService {
  private readonly signIns: SignInService

  constructor(
    private readonly oidc: SingleSignOn,
    private readonly deps: PeopleDeps,
    private readonly signUpOpen: boolean,
  ) {
    this.signIns = new SignInService(deps)
  }

  get configured(): boolean {
    return this.oidc.configured
  }

  /** Where to send the browser, and the flow's id for it to keep; undefined: no provider now. */
  async start(
    callbackUrl: string,
    next: string,
  ): Promise<{ url: URL; flowId: string } | undefined> {
    await this.oidc.ready()
    const started = await this.oidc.start(callbackUrl)
    if (started === undefined) return undefined
    const flowId = secret()
    await peopleRepo.addFlow(this.deps.db, {
      id_hash: digest(flowId),
      ...started.checks,
      next,
      expires: isoTime(this.deps.now() + ssoFlowLifetimeMs),
    })
    return { url: started.url, flowId }
  }

  /** Ends the browser's flow with the provider's answer (the URL of the callback). */
  async finish(flowId: string | undefined, callbackUrl: URL, actor: Actor): Promise<SsoOutcome> {
    const { db, now } = this.deps
    const flow =
      flowId === undefined
        ? undefined
        : await peopleRepo.takeFlow(db, digest(flowId), isoTime(now()))
    if (flow === undefined) return { refused: { reason: 'expired' } }
    let identity: Identity
    try {
      identity = await this.oidc.finish(callbackUrl, flow)
    } catch (err) {
      if (err instanceof SsoRefused)
        return { refused: { reason: 'provider', message: err.message } }
      throw err
    }
    const person = await this.personOf(identity, actor)
    if ('refused' in person) return person
    const accounts = await openAccountsOf(this.deps, person.login)
    const [first] = accounts
    if (first === undefined) return { refused: { reason: 'noAccount' } }
    await this.signIns.recordSsoSignIn(person.login, first, actor)
    return { person: { login: person.login, accounts }, next: flow.next }
  }

  private async personOf(
    identity: Identity,
    actor: Actor,
  ): Promise<PersonRow | { refused: SsoRefusal }> {
    let person = await personOfIdentity(this.deps, identity, actor)
    if (person === undefined && !identity.emailVerified) {
      return { refused: { reason: 'unverified' } }
    }
    if (person === undefined && this.signUpOpen) {
      person = await signUpWithIdentity(this.deps, identity, actor)
    }
    if (person !== undefined) return person
    const unproven = await emailUnproven(this.deps.db, identity.email)
    return { refused: { reason: unproven ? 'unproven' : 'unknown', email: identity.email } }
  }
}
