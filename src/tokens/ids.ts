import { randomBytes } from 'node:crypto'

const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789'

/** `length` characters of [a-z0-9], uniform, from the cryptographic random source. */
export function randomAlnum(length: number): string {
  let out = ''
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      // 252 = 7 * 36: rejecting the top four values keeps every character equally likely.
      if (byte < 252) out += alphabet[byte % 36]
      if (out.length === length) break
    }
  }
  return out
}

export const newTokenId = () => `c${randomAlnum(24)}`

export const tokenIdPattern = /^c[a-z0-9]{24}$/
