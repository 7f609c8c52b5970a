import { ApiError, type ErrorKind } from '../../errors.js'
import { normalizeAllowedIps, normalizeAllowedUrls } from '../../tokens/rules.js'
import type { FieldError, FormError } from '../views/forms.js'
import type { TokenFormValues } from '../views/token-form.js'

/**
 * A token form refused with what to put right at each field: the dashboard's own rule (a new
 * token needs a note and a scope), or an API rule the form broke before the service was asked
 * (`api`: then the API's message is said too). An ApiError, so that any page shows it.
 */
export class FormRefusal extends ApiError {
  constructor(
    readonly fields: readonly FieldError[],
    readonly api = true,
  ) {
    super('invalidResources', fields.map((f) => f.text).join(' '))
  }
}

/** A textarea's lines as the API gets them: trimmed, without the empty ones. */
export const linesOf = (text: string) =>
  text
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== '')

/** A line typed, quoted in a sentence: whole when short. */
export const quoted = (line: string) => `“${line.length > 60 ? `${line.slice(0, 57)}…` : line}”`

/** The first line that `check` (a rule of the token service) refuses. */
function firstRefused(text: string, check: (line: string) => unknown) {
  return linesOf(text).find((line) => {
    try {
      check(line)
      return false
    } catch {
      return true
    }
  })
}

const badLine = (text: string, check: (line: string) => unknown, is: string, otherwise: string) => {
  const line = firstRefused(text, check)
  return line === undefined ? otherwise : `${quoted(line)} ${is}.`
}

const policy = 'Your account’s token policy'
/** An instant of the API's sentence as the Expires at field is read: "2026-12-10 09:00 UTC". */
const clock = (iso: string) => `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`

type Reading = (m: RegExpExecArray, v: TokenFormValues) => string
/**
 * The token service's refusals of a form, read: the field each concerns, and what to do, in the
 * form's words (the service's sentences name the API's fields). The first match holds.
 */
const readings: [ErrorKind, RegExp, string, Reading][] = [
  [
    'tokenPolicy',
    /secret token to end within (\d+) days: give expiresAt/,
    'expires-at',
    (m) => `${policy} requires a secret token to end within ${m[1]} days: set Expires at.`,
  ],
  [
    'tokenPolicy',
    /secret token to end within (\d+) days: expiresAt stays/,
    'expires-at',
    (m) =>
      `${policy} requires a secret token to end within ${m[1]} days: Expires at may not be removed.`,
  ],
  [
    'tokenPolicy',
    /secret token (\d+) days at most: expiresAt (\S+) or sooner/,
    'expires-at',
    (m) =>
      `${policy} allows a secret token ${m[1]} days at most: set Expires at to ${clock(m[2] ?? '')} or sooner.`,
  ],
  [
    'tokenPolicy',
    /public token to have allowed URLs/,
    'allowed-urls',
    () => `${policy} requires a public token to have allowed URLs: add at least one.`,
  ],
  [
    'invalidScopes',
    /^"(.+)" is not available to this account$/,
    'scopes',
    (m) => `${m[1]} is not available to this account.`,
  ],
  [
    'invalidScopes',
    /created with no scopes/,
    'scopes',
    () =>
      'This token was created without scopes, so it cannot be given any: create a new token with the scopes it needs.',
  ],
  [
    'invalidScopes',
    /public token may hold public scopes only/,
    'scopes',
    () =>
      'A public (pk) token may hold public scopes only, and a token never changes its kind: create a new token for secret scopes.',
  ],
  [
    'invalidResources',
    /^every allowedUrls entry/,
    'allowed-urls',
    (_, v) =>
      badLine(
        v.allowedUrls,
        (line) => normalizeAllowedUrls([line]),
        'is not a URL or host name',
        'Every line must be a URL or host name.',
      ),
  ],
  [
    'invalidResources',
    /^every allowedIps entry/,
    'allowed-ips',
    (_, v) =>
      badLine(
        v.allowedIps,
        (line) => normalizeAllowedIps([line]),
        'is not an IP address or CIDR block',
        'Every line must be an IP address or CIDR block.',
      ),
  ],
  [
    'invalidResources',
    /^allowedUrls may hold at most (\d+)/,
    'allowed-urls',
    (m) => `Give at most ${m[1]} allowed URLs.`,
  ],
  [
    'invalidResources',
    /^allowedIps may hold at most (\d+)/,
    'allowed-ips',
    (m) => `Give at most ${m[1]} IP addresses or ranges.`,
  ],
  [
    'invalidResources',
    /^expiresAt must be in the future/,
    'expires-at',
    () => 'Expires at must be in the future.',
  ],
  [
    'invalidResources',
    /^expiresAt may be at most (\d+) years/,
    'expires-at',
    (m) => `Expires at may be at most ${m[1]} years ahead.`,
  ],
  [
    'invalidResources',
    /^expiresAt /,
    'expires-at',
    () => 'Expires at must be a date and time (UTC).',
  ],
]

/** What the refusal says at its field, if it concerns one of the form. */
export function fieldOf(err: ApiError, values: TokenFormValues): FieldError | undefined {
  for (const [kind, pattern, id, read] of readings) {
    const m = kind === err.kind ? pattern.exec(err.details ?? '') : null
    if (m !== null) return { id, text: read(m, values) }
  }
  if (err.kind === 'invalidScopes') {
    return { id: 'scopes', text: 'These scopes cannot be given to this token.' }
  }
  return undefined
}

/**
 * A token form's refusal (422) as the page shows it: what did not happen, then each field's
 * sentence (said at the field too), then the API's message for the same rule. Anything else
 * goes on to the plugin's error handler.
 */
export function tokenFormError(
  err: unknown,
  kind: 'create' | 'update',
  values: TokenFormValues,
): FormError & { status: number } {
  if (!(err instanceof ApiError) || err.statusCode !== 422) throw err
  const message = kind === 'create' ? 'The token was not created.' : 'Your changes were not saved.'
  if (err instanceof FormRefusal) {
    return { message, fields: err.fields, ...(err.api ? { api: err.message } : {}), status: 422 }
  }
  const field = fieldOf(err, values)
  if (field !== undefined) return { message, fields: [field], api: err.message, status: 422 }
  // A rule the form does not show a field for: the service's sentence, in the form's words.
  const details = err.details?.replace(/\bexpiresAt\b/g, 'Expires at')
  return { message, ...(details === undefined ? {} : { details }), api: err.message, status: 422 }
}
