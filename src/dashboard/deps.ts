import type { AppContext } from '../context.js'
import type { SignInThrottle } from './throttle.js'

/** What every page module is given by the plugin. */
export interface DashboardDeps {
  ctx: AppContext
  throttle: SignInThrottle
}
