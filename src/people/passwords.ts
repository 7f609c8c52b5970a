import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto'
import { ApiError } from '../errors.js'

/** Passwords of account holders (DASHBOARD.md section 2): 12 to 256 characters, scrypt. */
export const minPasswordLength = 12
export const maxPasswordLength = 256

// N = 2^15, r = 8: 32 MiB and some 50-100 ms per hash, on libuv's thread pool (the event loop
// does not wait). The parameters are stored with each hash, so they can be raised later.
const cost = { log2N: 15, r: 8, p: 1 }
const keyLength = 32

const derive = (password: string, salt: Buffer, c: typeof cost) =>
  new Promise<Buffer>((resolve, reject) => {
    const N = 2 ** c.log2N
    scrypt(
      password.normalize('NFC'),
      salt,
      keyLength,
      { N, r: c.r, p: c.p, maxmem: 256 * N * c.r },
      (err, key) => (err ? reject(err) : resolve(key)),
    )
  })

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16)
  const key = await derive(password, salt, cost)
  return [
    'scrypt',
    cost.log2N,
    cost.r,
    cost.p,
    salt.toString('base64url'),
    key.toString('base64url'),
  ].join('$')
}

/** Constant time in the password; a stored value it cannot read matches nothing. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, log2N, r, p, salt, key] = stored.split('$')
  if (scheme !== 'scrypt' || salt === undefined || key === undefined) return false
  const expected = Buffer.from(key, 'base64url')
  const actual = await derive(password, Buffer.from(salt, 'base64url'), {
    log2N: Number(log2N),
    r: Number(r),
    p: Number(p),
  })
  return actual.length === expected.length && timingSafeEqual(actual, expected)
}

/**
 * Compared against for a username that has no password (unknown, or not set up yet), so that
 * the answer takes as long as for a wrong password and no one learns which usernames exist.
 */
let decoy: Promise<string> | undefined
export const decoyHash = () => {
  decoy ??= hashPassword(randomBytes(18).toString('base64'))
  return decoy
}

/** Why a new password cannot be used, or undefined when it can. */
export function passwordProblem(password: string): string | undefined {
  const length = [...password].length
  if (length < minPasswordLength || length > maxPasswordLength) {
    return `Passwords must be ${minPasswordLength} to ${maxPasswordLength} characters long`
  }
  return undefined
}

/** Refuses a new password that cannot be used, or that its confirmation does not repeat. */
export function checkNewPassword(password: string, confirm?: string) {
  const problem = passwordProblem(password)
  if (problem !== undefined) throw new ApiError('badPassword', problem)
  if (confirm !== undefined && confirm !== password) {
    throw new ApiError('passwordMismatch', 'The two passwords are not the same')
  }
}
