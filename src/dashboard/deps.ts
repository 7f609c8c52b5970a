import type { AppContext } from '../context.js'
import type { SingleSignOn } from '../people/oidc.js'
import type { SsoService } from '../people/sso.js'
import type { SignInThrottle } from './throttle.js'

/** What every page module is given by the plugin. */
export interface DashboardDeps {
  ctx: AppContext
  throttle: SignInThrottle
  /** Single sign-on, when configured (OIDC_ISSUER). */
  sso: SingleSignOn
  /** The sign-in flows through that provider. */
  ssoFlows: SsoService
}
