import { randomBytes } from 'node:crypto'

const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789'

// Random bytes drawn in blocks: one call to the system source serves many ids.
let pool = Buffer.alloc(0)
let offset = 0
const nextByte = () => {
  if (offset === pool.length) {
    pool = randomBytes(4096)
    offset = 0
  }
  return pool[offset++] as number
}

/** `length` characters of [a-z0-9], uniform, from the cryptographic random source. */
export function randomAlnum(length: number): string {
  let out = ''
  while (out.length < length) {
    const byte = nextByte()
    // 252 = 7 * 36: rejecting the top four values keeps every character equally likely.
    if (byte < 252) out += alphabet[byte % 36]
  }
  return out
}

const base32 = 'abcdefghijklmnopqrstuvwxyz234567'

/** `length` characters of [a-z2-7], uniform (32 divides 256: no byte is rejected). */
export function randomBase32(length: number): string {
  let out = ''
  for (let i = 0; i < length; i++) out += base32[nextByte() & 31]
  return out
}
