import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'

/**
 * Stripe's scheme, which receivers already know: `Tessera-Signature: t=<unix seconds>,v1=<hex
 * HMAC-SHA256 of "<t>.<body>">`, keyed with the endpoint's whole secret string (`whsec_...`) as
 * UTF-8. The timestamp is signed so that a receiver can refuse a replayed delivery.
 */
export const signatureHeaderName = 'Tessera-Signature'

/** 192 random bits, `whsec_` and 32 base64url characters. */
export const newSecret = () => `whsec_${randomBytes(24).toString('base64url')}`

export const sign = (secret: string, t: number, body: string) =>
  createHmac('sha256', secret).update(`${t}.${body}`).digest('hex')

export function signatureHeader(secret: string, body: string, nowMs: number): string {
  const t = Math.floor(nowMs / 1000)
  return `t=${t},v1=${sign(secret, t, body)}`
}

/**
 * What a receiver does: true when one `v1` of the header is the body's signature and `t` is
 * within `toleranceS` of now. Compared in constant time.
 */
export function verifySignature(
  secret: string,
  body: string,
  header: string,
  nowMs: number,
  toleranceS = 300,
): boolean {
  let t: number | undefined
  const signatures: string[] = []
  for (const part of header.split(',')) {
    const [key, value = ''] = part.trim().split('=', 2)
    if (key === 't' && /^\d{1,12}$/.test(value)) t = Number(value)
    else if (key === 'v1' && /^[0-9a-f]{64}$/.test(value)) signatures.push(value)
  }
  if (t === undefined || Math.abs(nowMs / 1000 - t) > toleranceS) return false
  const expected = Buffer.from(sign(secret, t, body))
  return signatures.some((s) => timingSafeEqual(Buffer.from(s), expected))
}
