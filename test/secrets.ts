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

/**
 * Spellings of `<prefix><secret>` (a prefix such as `/account/portal/`) that the router takes
 * for the same route: the secret percent-encoded, a letter of the path encoded, doubled
 * slashes and a trailing one, a query or a fragment after it.
 */
export function pathSpellings(prefix: string, secret: string): string[] {
  const last = prefix.lastIndexOf('/', prefix.length - 2) + 1
  const letter = `${prefix.slice(0, last)}${percentEncoded(prefix.charAt(last), false)}${prefix.slice(last + 1)}`
  return [
    `${prefix}${secret}`,
    `${prefix}${percentEncoded(secret)}`,
    `${prefix}${percentEncoded(secret, false)}`,
    `${letter}${secret}`,
    `${prefix.replaceAll('/', '//')}${secret}/`,
    `${prefix}${secret}?x=1`,
    `${prefix}${secret}#x`,
  ]
}

/**
 * The forms a secret could be written in: as given, its signature part for a token, and with
 * `+` for each space (a password in a form body).
 */
export function spellingsOfSecret(secret: string): string[] {
  const parts = secret.split('.')
  const forms = parts.length === 3 && parts[2] !== undefined ? [secret, parts[2]] : [secret]
  if (secret.includes(' ')) forms.push(secret.replaceAll(' ', '+'))
  return forms
}
