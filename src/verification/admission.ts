import type { Validation } from '../tokens/validator.js'

export type { Valid } from './checkpoint.js'

/** Why a token may not act: not valid here (401), or not for this account or scope (404). */
export type Refusal = 'unauthorized' | 'otherAccount' | 'lacksScope'

/**
 * Whether `validation` lets a request from `ip` at a route of `username` that needs `scope`:
 * the guard's rule, which the create fast path applies too. 'unauthorized' stands for every
 * token that is not valid, so anything else comes of a valid one.
 */
export function refusal(
  validation: Validation | undefined,
  username: string,
  scope: string,
  ip: string,
): Refusal | undefined {
  if (validation?.code !== 'TokenValid') return 'unauthorized'
  const { principal } = validation
  // A token restricted to IP ranges, used from elsewhere, authorises nothing (Tessera).
  if (principal.allowedIps !== undefined && !principal.allowedIps(ip)) return 'unauthorized'
  if (principal.username !== username) return 'otherAccount'
  if (!principal.scopes.has(scope)) return 'lacksScope'
  return undefined
}
