import { createHash, randomBytes } from 'node:crypto'

/** 256 random bits, base64url: link secrets, session ids and CSRF tokens. */
export const secret = () => randomBytes(32).toString('base64url')

/** How a secret is stored: SHA-256, hex. The secret itself never is. */
export const digest = (value: string) => createHash('sha256').update(value).digest('hex')
