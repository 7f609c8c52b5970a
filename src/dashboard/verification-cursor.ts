/**
 * The `start` cursor of the Requests page: base64url of `<at>.<id>` of a page's last row, the
 * admin API's shape (src/http/admin is not the dashboard's to import). It names a position, so
 * it stays valid as rows arrive or are pruned.
 */
export interface VerificationCursor {
  at: number
  id: string
}

export const encodeVerificationCursor = (c: VerificationCursor) =>
  Buffer.from(`${c.at}.${c.id}`).toString('base64url')

/** The position, or undefined for a `start` this page never made. */
export function decodeVerificationCursor(start: string): VerificationCursor | undefined {
  if (start.length > 128 || !/^[A-Za-z0-9_-]+$/.test(start)) return undefined
  const m = /^(\d{1,15})\.([A-Za-z0-9]{1,64})$/.exec(Buffer.from(start, 'base64url').toString())
  if (m === null) return undefined
  return { at: Number(m[1]), id: m[2] as string }
}
