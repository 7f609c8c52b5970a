import type { Env } from './env.js'
import { ConfigError } from './error.js'
import { flag, parseUrl } from './values.js'

export interface DashboardConfig {
  /** Anyone may create an account at /account/sign-up; otherwise accounts come by invite. */
  signup: boolean
  /** Every member of every account signs in with a second factor (or SSO, a portal link). */
  require2fa: boolean
  /** Origins a portal link's `returnUrl` may lead to (https only). */
  portalReturnOrigins: string[]
  /** Single sign-on through an OpenID Connect provider. */
  oidc?: {
    issuer: string
    clientId: string
    clientSecret: string
    /** The provider's name on the sign-in button. */
    name: string
    /** People who have signed in through it may not use a password any more. */
    only: boolean
    /** PEM certificate authorities trusted for the provider besides the system's. */
    caFile?: string
  }
}

function portalReturnOrigins(value: string | undefined): string[] {
  return (value ?? '')
    .split(',')
    .map((o) => o.trim())
    .filter((o) => o !== '')
    .map((o) => {
      const url = parseUrl(o, `PORTAL_RETURN_ORIGINS: not a URL: "${o}"`)
      if (url.protocol !== 'https:') {
        throw new ConfigError(`PORTAL_RETURN_ORIGINS: not an https:// origin: "${o}"`)
      }
      return url.origin
    })
}

/** Single sign-on: the three OIDC_ settings together, or none of them. */
function oidcConfig(env: Env): DashboardConfig['oidc'] {
  const given = [env.OIDC_ISSUER, env.OIDC_CLIENT_ID, env.OIDC_CLIENT_SECRET]
  if (given.every((v) => v === undefined)) {
    if (env.OIDC_ONLY !== undefined && flag('OIDC_ONLY', env.OIDC_ONLY)) {
      throw new ConfigError('OIDC_ONLY=1 needs OIDC_ISSUER, OIDC_CLIENT_ID and OIDC_CLIENT_SECRET')
    }
    return undefined
  }
  if (given.some((v) => v === undefined)) {
    throw new ConfigError(
      'OIDC_ISSUER, OIDC_CLIENT_ID and OIDC_CLIENT_SECRET must be given together',
    )
  }
  const issuer = parseUrl(
    env.OIDC_ISSUER as string,
    `OIDC_ISSUER is not a URL: "${env.OIDC_ISSUER}"`,
  )
  if (issuer.protocol !== 'https:') throw new ConfigError('OIDC_ISSUER must be an https:// URL')
  return {
    issuer: env.OIDC_ISSUER as string,
    clientId: env.OIDC_CLIENT_ID as string,
    clientSecret: env.OIDC_CLIENT_SECRET as string,
    name: env.OIDC_NAME ?? 'single sign-on',
    only: flag('OIDC_ONLY', env.OIDC_ONLY),
    caFile: env.OIDC_CA_FILE,
  }
}

/** DASHBOARD_SIGNUP, DASHBOARD_REQUIRE_2FA, PORTAL_RETURN_ORIGINS and the OIDC_ settings. */
export function dashboardConfig(env: Env): DashboardConfig {
  const signup = env.DASHBOARD_SIGNUP ?? 'closed'
  if (signup !== 'open' && signup !== 'closed') {
    throw new ConfigError(`DASHBOARD_SIGNUP must be open or closed, got "${signup}"`)
  }
  const origins = portalReturnOrigins(env.PORTAL_RETURN_ORIGINS)
  return {
    signup: signup === 'open',
    require2fa: flag('DASHBOARD_REQUIRE_2FA', env.DASHBOARD_REQUIRE_2FA),
    portalReturnOrigins: origins,
    oidc: oidcConfig(env),
  }
}
