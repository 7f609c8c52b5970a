import { readFileSync } from 'node:fs'
import { request as httpsRequest } from 'node:https'
import { rootCertificates } from 'node:tls'
import * as client from 'openid-client'
import type { Logger } from 'pino'
import type { Config } from '../config.js'

type Settings = NonNullable<Config['dashboard']['oidc']>

/** What the callback checks the provider's answer against (kept in `sign_in_flows`). */
export interface FlowChecks {
  state: string
  nonce: string
  verifier: string
}

/** What a single sign-on provider vouched for (the ID token's claims). */
export interface Identity {
  issuer: string
  subject: string
  email?: string
  emailVerified: boolean
  name?: string
}

/** A sign-in the provider's answer did not allow; `message` is for the person. */
export class SsoRefused extends Error {}

const retryMs = 30_000
const firstWaitMs = 2_000
const timeoutSeconds = 10

/**
 * Single sign-on through an OpenID Connect provider: the authorization code flow with PKCE,
 * `state` and `nonce`, with the ID token checked by openid-client. The provider is discovered
 * from its issuer; one that cannot be reached is a one-line warning, and the sign-in button
 * stays off until a later attempt (at most every 30 s, when the sign-in page is asked for)
 * reaches it.
 */
export class SingleSignOn {
  private config: client.Configuration | undefined
  private pending: Promise<void> | undefined
  private nextTry = 0

  constructor(
    private readonly settings: Settings | undefined,
    private readonly log: Logger,
  ) {}

  /** People who have signed in through the provider may not use a password (OIDC_ONLY). */
  get only(): boolean {
    return this.settings?.only ?? false
  }

  get configured(): boolean {
    return this.settings !== undefined
  }

  /** Begins discovery; answers when it has ended or after a short wait. */
  async ready(wait = firstWaitMs): Promise<void> {
    if (this.settings === undefined || this.config !== undefined) return
    if (this.pending === undefined && Date.now() >= this.nextTry) {
      this.pending = this.discover(this.settings).finally(() => {
        this.pending = undefined
      })
    }
    if (this.pending === undefined) return
    let timer: NodeJS.Timeout | undefined
    const late = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, wait)
    })
    await Promise.race([this.pending, late])
    clearTimeout(timer)
  }

  private async discover(settings: Settings): Promise<void> {
    try {
      const options: client.DiscoveryRequestOptions = { timeout: timeoutSeconds }
      if (settings.caFile !== undefined) {
        options[client.customFetch] = trustingFetch([
          ...rootCertificates,
          readFileSync(settings.caFile, 'utf8'),
        ])
      }
      this.config = await client.discovery(
        new URL(settings.issuer),
        settings.clientId,
        settings.clientSecret,
        undefined,
        options,
      )
      this.log.info({ issuer: settings.issuer }, 'single sign-on provider discovered')
    } catch (err) {
      this.nextTry = Date.now() + retryMs
      const reason = err instanceof Error ? err.message : String(err)
      this.log.warn(
        { issuer: settings.issuer },
        `single sign-on is off until its provider answers: ${reason.split('\n')[0]}`,
      )
    }
  }

  /** The sign-in button's text while the provider is known. */
  button(): string | undefined {
    if (this.settings === undefined) return undefined
    if (this.config === undefined) {
      void this.ready(0)
      return undefined
    }
    return `Sign in with ${this.settings.name}`
  }

  /** Where to send the browser, with fresh checks for the callback. */
  async start(redirectUri: string): Promise<{ url: URL; checks: FlowChecks } | undefined> {
    const config = this.config
    if (config === undefined) return undefined
    const verifier = client.randomPKCECodeVerifier()
    const checks = { state: client.randomState(), nonce: client.randomNonce(), verifier }
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: redirectUri,
      scope: 'openid email profile',
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state: checks.state,
      nonce: checks.nonce,
    })
    return { url, checks }
  }

  /**
   * The identity the provider vouches for, from the callback's URL: the code is exchanged
   * (with the PKCE verifier) and the ID token checked (signature, issuer, audience, expiry,
   * nonce). Throws SsoRefused when anything does not hold.
   */
  async finish(callbackUrl: URL, checks: FlowChecks): Promise<Identity> {
    const config = this.config
    if (config === undefined) throw new SsoRefused('Single sign-on is not available right now.')
    let claims: Record<string, unknown>
    try {
      const tokens = await client.authorizationCodeGrant(config, callbackUrl, {
        expectedState: checks.state,
        expectedNonce: checks.nonce,
        pkceCodeVerifier: checks.verifier,
        idTokenExpected: true,
      })
      const idToken = tokens.claims()
      if (idToken === undefined) throw new Error('no ID token')
      claims = { ...idToken }
      // Providers that follow the letter of OpenID Connect Core 5.4 put scope claims (email)
      // only in the UserInfo answer; its `sub` must be the ID token's.
      if (idToken.email === undefined && config.serverMetadata().userinfo_endpoint) {
        const info = await client.fetchUserInfo(config, tokens.access_token, idToken.sub)
        claims = { ...info, ...idToken, email: info.email, email_verified: info.email_verified }
      }
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err)
      this.log.info({ reason: reason.split('\n')[0] }, 'single sign-on refused')
      throw new SsoRefused(
        'The sign-in through your provider could not be completed. Start again from the sign-in page.',
      )
    }
    const identity: Identity = {
      issuer: String(claims.iss),
      subject: String(claims.sub),
      emailVerified: claims.email_verified === true,
    }
    if (typeof claims.email === 'string') identity.email = claims.email
    if (typeof claims.name === 'string') identity.name = claims.name
    return identity
  }
}

/**
 * A fetch for openid-client that trusts the given certificate authorities (OIDC_CA_FILE): a
 * provider behind a private CA. Only what openid-client sends: a method, headers and a body.
 */
function trustingFetch(ca: string[]): client.CustomFetch {
  return (url, options) =>
    new Promise<Response>((resolve, reject) => {
      const target = new URL(url)
      const req = httpsRequest(
        target,
        {
          method: options.method,
          headers: options.headers,
          ca,
          signal: options.signal ?? undefined,
        },
        (res) => {
          const chunks: Buffer[] = []
          res.on('data', (chunk: Buffer) => chunks.push(chunk))
          res.on('error', reject)
          res.on('end', () => {
            const headers = new Headers()
            for (const [name, value] of Object.entries(res.headers)) {
              if (value === undefined) continue
              for (const v of [value].flat()) headers.append(name, v)
            }
            const status = res.statusCode ?? 502
            const body = status === 204 || status === 304 ? null : Buffer.concat(chunks)
            const response = new Response(body, { status, headers })
            Object.defineProperty(response, 'url', { value: url })
            resolve(response)
          })
        },
      )
      req.on('error', reject)
      const body = options.body
      if (body === undefined || body === null) req.end()
      else
        req.end(
          typeof body === 'string'
            ? body
            : body instanceof URLSearchParams
              ? body.toString()
              : Buffer.from(body as ArrayBuffer),
        )
    })
}
