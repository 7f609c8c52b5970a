/** The exchange's request and answers: RFC 8693 and RFC 6749's names and shapes. */

/** RFC 8693's names. */
export const grantType = 'urn:ietf:params:oauth:grant-type:token-exchange'
export const jwtType = 'urn:ietf:params:oauth:token-type:jwt'
const idTokenType = 'urn:ietf:params:oauth:token-type:id_token'
export const accessTokenType = 'urn:ietf:params:oauth:token-type:access_token'

/** How far an identity token's times may be off Tessera's clock (exp, nbf, iat), in seconds. */
export const leewaySeconds = 60

/** An exchange's answer: RFC 8693 section 2.2.1, or RFC 6749 section 5.2's error. */
export type ExchangeAnswer =
  | {
      status: 200
      body: {
        access_token: string
        issued_token_type: string
        token_type: 'Bearer'
        expires_in: number
        scope: string
      }
    }
  | {
      status: 400 | 429 | 503
      /** 429: the seconds to wait (Retry-After). */
      retryAfter?: number
      body: {
        error: 'invalid_request' | 'invalid_grant' | 'invalid_scope' | 'temporarily_unavailable'
        error_description: string
      }
    }

/**
 * What a stranger is told of every refusal that would say whether an account exists or which
 * issuers it trusts: no account, no policy naming the issuer, no key for the `kid`, a signature
 * that does not hold. The account's audit log has the reason.
 */
export const untrusted = 'the token is not signed by an issuer this account trusts'

/** The longest an identity token may live: its `jti` is kept until its end. */
export const maxIdentityLifeSeconds = 86_400

/**
 * A refusal on its way out of `exchange`: its RFC error, its reason (audited), what the caller
 * is told when that is less (`shown`), and what else the audit log records.
 */
export class Refusal extends Error {
  constructor(
    readonly error:
      | 'invalid_request'
      | 'invalid_grant'
      | 'invalid_scope'
      | 'temporarily_unavailable',
    readonly description: string,
    readonly audited: Record<string, unknown> = {},
    readonly shown: string = description,
  ) {
    super(description)
  }
}

/** RFC 8693 section 2.1's request, or invalid_request saying what is missing or wrong. */
export function readForm(form: Record<string, string>) {
  if (form.grant_type !== grantType) {
    throw new Refusal('invalid_request', `grant_type must be ${grantType}`)
  }
  const subjectToken = form.subject_token
  if (subjectToken === undefined || subjectToken === '') {
    throw new Refusal('invalid_request', 'subject_token is required')
  }
  const type = form.subject_token_type
  if (type !== jwtType && type !== idTokenType) {
    throw new Refusal('invalid_request', `subject_token_type must be ${jwtType}`)
  }
  const requested = form.requested_token_type
  if (requested !== undefined && requested !== accessTokenType) {
    throw new Refusal('invalid_request', `requested_token_type may only be ${accessTokenType}`)
  }
  if (form.actor_token !== undefined) {
    throw new Refusal('invalid_request', 'actor_token is not supported: exchange the subject alone')
  }
  return { subjectToken, scope: form.scope }
}
