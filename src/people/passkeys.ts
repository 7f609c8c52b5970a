import type {
  AuthenticationResponseJSON,
  AuthenticatorTransport,
  RegistrationResponseJSON,
  VerifiedRegistrationResponse,
} from '@simplewebauthn/server'
import { type Actor, auditEvent } from '../audit/events.js'
import { auditRepo } from '../db/audit.js'
import type { Db } from '../db/database.js'
import { factorsRepo } from '../db/factors.js'
import { isoTime } from '../time.js'
import { secret } from './secrets.js'

/**
 * The WebAuthn library, loaded at the first ceremony: it is the heaviest import of the context
 * (a third of its load time), and a CLI command never needs it.
 */
let library: Promise<typeof import('@simplewebauthn/server')> | undefined
const webauthn = () => {
  library ??= import('@simplewebauthn/server')
  return library
}

/** Where the ceremonies happen: the dashboard's origin, and its host as relying party id. */
export interface RelyingParty {
  origin: string
  id: string
}

const challengeLifetimeMs = 5 * 60_000
/** Sign-in challenges of nobody yet kept at once; the oldest go first. */
export const maxAnonymousChallenges = 10_000
type Purpose = 'register' | 'signin' | 'second'

/** The JSON a browser sent, or undefined when it is not an object. */
function parsed<T>(text: string): T | undefined {
  try {
    const value = JSON.parse(text) as unknown
    return typeof value === 'object' && value !== null ? (value as T) : undefined
  } catch {
    return undefined
  }
}

/**
 * Passkeys (WebAuthn) with @simplewebauthn/server: registration on one's settings page, sign-in
 * with a discoverable credential alone, or as the second step after a password; user
 * verification required. Challenges are stored, single-use and short-lived, so that any
 * instance can finish a ceremony another began.
 */
export class PasskeyService {
  constructor(
    private readonly db: Db,
    private readonly now: () => number,
  ) {}

  private async challenge(purpose: Purpose, login: string | null): Promise<string> {
    const challenge = secret()
    await factorsRepo.addChallenge(this.db, {
      challenge,
      purpose,
      login,
      expires: isoTime(this.now() + challengeLifetimeMs),
    })
    // Anyone may ask for a sign-in challenge: however many addresses ask, so many rows at most.
    if (login === null) {
      await factorsRepo.capAnonymousChallenges(this.db, purpose, maxAnonymousChallenges)
    }
    return challenge
  }

  /** Checks a challenge of the purpose (and person) once. */
  private taker(purpose: Purpose, login: string | null) {
    // The library sends a string challenge as its UTF-8 bytes: what comes back is their base64url.
    return async (challenge: string) => {
      const sent = Buffer.from(challenge, 'base64url').toString('utf8')
      const row = await factorsRepo.takeChallenge(this.db, sent, purpose, isoTime(this.now()))
      return row !== undefined && (login === null || row.login === login)
    }
  }

  async registrationOptions(rp: RelyingParty, login: string) {
    const existing = (await factorsRepo.ofPerson(this.db, login)).filter(
      (f) => f.kind === 'passkey' && f.credential_id !== null,
    )
    const { generateRegistrationOptions } = await webauthn()
    return generateRegistrationOptions({
      rpName: 'Tessera',
      rpID: rp.id,
      userName: login,
      userID: new TextEncoder().encode(login),
      challenge: await this.challenge('register', login),
      attestationType: 'none',
      excludeCredentials: existing.map((f) => ({ id: f.credential_id as string })),
      authenticatorSelection: { residentKey: 'required', userVerification: 'required' },
    })
  }

  /** Registers the passkey the browser made; false when the response does not verify. */
  async register(
    rp: RelyingParty,
    login: string,
    name: string,
    responseText: string,
    actor: Actor,
    username: string,
  ): Promise<boolean> {
    const response = parsed<RegistrationResponseJSON>(responseText)
    if (response === undefined) return false
    const { verifyRegistrationResponse } = await webauthn()
    let info: VerifiedRegistrationResponse['registrationInfo']
    try {
      const verified = await verifyRegistrationResponse({
        response,
        expectedChallenge: this.taker('register', login),
        expectedOrigin: rp.origin,
        expectedRPID: rp.id,
        requireUserVerification: true,
      })
      info = verified.verified ? verified.registrationInfo : undefined
    } catch {
      return false
    }
    if (info === undefined) return false
    const { credential } = info
    const at = isoTime(this.now())
    await this.db.transaction().execute(async (trx) => {
      await factorsRepo.insert(trx, {
        id: `f_${secret().slice(0, 22)}`,
        login,
        kind: 'passkey',
        name: name.trim().slice(0, 64) || 'Passkey',
        secret: null,
        last_step: 0,
        credential_id: credential.id,
        public_key: Buffer.from(credential.publicKey).toString('base64url'),
        counter: credential.counter,
        transports: (credential.transports ?? []).join(','),
        confirmed: 1,
        created: at,
        last_used: null,
      })
      const target = { type: 'member' as const, id: login }
      const details = { kind: 'passkey', name: name.trim().slice(0, 64) || 'Passkey' }
      const event = auditEvent(this.now(), 'factor.added', actor, target, username, details)
      await auditRepo.insert(trx, event)
    })
    return true
  }

  /** A passkey sign-in: any of the person's discoverable credentials (none listed). */
  async signInOptions(rp: RelyingParty) {
    const { generateAuthenticationOptions } = await webauthn()
    return generateAuthenticationOptions({
      rpID: rp.id,
      userVerification: 'required',
      challenge: await this.challenge('signin', null),
    })
  }

  /** The second step after a password: one of this person's passkeys. */
  async secondOptions(rp: RelyingParty, login: string) {
    const passkeys = (await factorsRepo.ofPerson(this.db, login)).filter(
      (f) => f.kind === 'passkey' && f.credential_id !== null,
    )
    const { generateAuthenticationOptions } = await webauthn()
    return generateAuthenticationOptions({
      rpID: rp.id,
      userVerification: 'required',
      challenge: await this.challenge('second', login),
      allowCredentials: passkeys.map((f) => ({
        id: f.credential_id as string,
        transports: (f.transports ?? '').split(',').filter((t) => t !== '') as
          | AuthenticatorTransport[]
          | undefined,
      })),
    })
  }

  /**
   * The person a passkey assertion proves (`purpose` signin: anyone's; second: `login`'s), or
   * undefined: an unknown or removed credential, a used or late challenge, a bad signature.
   */
  async authenticate(
    rp: RelyingParty,
    responseText: string,
    purpose: 'signin' | 'second',
    login: string | null = null,
  ): Promise<string | undefined> {
    const response = parsed<AuthenticationResponseJSON>(responseText)
    if (response === undefined || typeof response.id !== 'string') return undefined
    const factor = await factorsRepo.byCredential(this.db, response.id)
    if (factor === undefined || factor.public_key === null) return undefined
    if (login !== null && factor.login !== login) return undefined
    const { verifyAuthenticationResponse } = await webauthn()
    try {
      const verified = await verifyAuthenticationResponse({
        response,
        expectedChallenge: this.taker(purpose, login),
        expectedOrigin: rp.origin,
        expectedRPID: rp.id,
        requireUserVerification: true,
        credential: {
          id: factor.credential_id as string,
          publicKey: new Uint8Array(Buffer.from(factor.public_key, 'base64url')),
          counter: Number(factor.counter),
          transports: (factor.transports ?? '').split(',').filter((t) => t !== '') as
            | AuthenticatorTransport[]
            | undefined,
        },
      })
      if (!verified.verified) return undefined
      await factorsRepo.usePasskey(
        this.db,
        factor.id,
        verified.authenticationInfo.newCounter,
        isoTime(this.now()),
      )
      return factor.login
    } catch {
      return undefined
    }
  }
}
