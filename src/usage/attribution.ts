import { usernamePattern } from '../accounts/directory.js'
import type { MinuteRow } from '../db/usage.js'
import { tokenIdPattern } from '../tokens/ids.js'
import type { Validation, ValidationCode } from '../tokens/validator.js'
import { outcomeIndex } from './outcomes.js'

/**
 * The in-memory key of an (account, token id) pair: a space cannot be in either (usernames are
 * `[a-z0-9_-]`, ids `c[a-z0-9]{24}`), so the first space splits it back.
 */
export const meterKey = (account: string, tokenId: string) => `${account} ${tokenId}`

export function splitKey(key: string): { account: string; tokenId: string } {
  const at = key.indexOf(' ')
  return { account: key.slice(0, at), tokenId: key.slice(at + 1) }
}

/** A window's counts by key (and their split by limit name) as the rows of its minute. */
export function rowsOf(
  minute: number,
  counts: Map<string, number[]>,
  limited?: ReadonlyMap<string, ReadonlyMap<string, number>>,
): MinuteRow[] {
  const at = new Date(minute).toISOString().slice(0, 16)
  return [...counts].map(([key, c]) => {
    const row: MinuteRow = { minute: at, ...splitKey(key), counts: c }
    const names = limited?.get(key)
    if (names !== undefined) row.limited = Object.fromEntries(names)
    return row
  })
}

/** The outcome a validation code stands for. */
export const outcomeOfCode: Record<ValidationCode, number> = {
  TokenValid: outcomeIndex.valid,
  TokenMalformed: outcomeIndex.malformed,
  TokenInvalid: outcomeIndex.invalid,
  TokenExpired: outcomeIndex.expired,
  TokenRevoked: outcomeIndex.revoked,
}

const nobody = meterKey('', '')

/**
 * Whom a validation is counted against (docs/metering.md, "Attribution"). A valid token: its
 * account and id (a tk has none). Expired or revoked: the signature verified, so the payload
 * is ours and says whose it was; but nobody's when the account that has that name now is not
 * the one that made it (`unowned`: none has it, or a later one does, which must not see a
 * former account's counts). Malformed or invalid: nobody's, so that no one can charge
 * refusals to an account by sending strings that name it.
 */
export function keyOf(validation: Validation): string {
  if (validation.code === 'TokenValid') {
    const { principal } = validation
    return principal.meterKey ?? meterKey(principal.username, principal.tokenId ?? '')
  }
  if (validation.code === 'TokenMalformed' || validation.code === 'TokenInvalid') return nobody
  if (validation.unowned === true) return nobody
  const { parsed } = validation
  const { u } = parsed.payload
  // Signed by one of our keys, so a username; checked all the same, as the columns are bounded.
  if (typeof u !== 'string' || !usernamePattern.test(u)) return nobody
  const a = parsed.usage === 'tk' ? undefined : parsed.payload.a
  return meterKey(u, typeof a === 'string' && tokenIdPattern.test(a) ? a : '')
}
