/** Helpers for the tests that look for secrets in what the service writes. */

/** Everything a log line could spell a secret with: the text, and the text percent-decoded. */
export function readable(output: string): string {
  const decoded = output.replace(/%([0-9a-f]{2})/gi, (_, h: string) =>
    String.fromCharCode(parseInt(h, 16)),
  )
  // A Buffer in a line (a raw packet) is written as its bytes: spell them out too.
  const buffers = [...output.matchAll(/"type":"Buffer","data":\[([\d,]*)\]/g)].map((m) =>
    Buffer.from((m[1] ?? '').split(',').filter(Boolean).map(Number)).toString('latin1'),
  )
  return [output, decoded, ...buffers].join('\n')
}

/** Every character percent-encoded. */
export const percentEncoded = (text: string, upper = true) =>
  [...text]
    .map((c) => {
      const h = c.charCodeAt(0).toString(16).padStart(2, '0')
      return `%${upper ? h.toUpperCase() : h}`
    })
    .join('')

/** Spellings of `access_token=<token>` that the server takes as the token. */
export const tokenSpellings = (token: string) => [
  `access_token=${token}`,
  `access%5Ftoken=${token}`,
  `access%5ftoken=${token}`,
  `%61ccess_token=${token}`,
  `${percentEncoded('access_token')}=${token}`,
  `access_token=${percentEncoded(token)}`,
  `access_token=${percentEncoded(token, false)}`,
  `access_token=${token}&access_token=${token}`,
  `access%5Ftoken=${token}&access_token=nothing`,
]

/** The forms a secret could be written in: as given, and its signature part for a token. */
export function spellingsOfSecret(secret: string): string[] {
  const parts = secret.split('.')
  return parts.length === 3 && parts[2] !== undefined ? [secret, parts[2]] : [secret]
}
