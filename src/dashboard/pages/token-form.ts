import type { TSchema } from '@sinclair/typebox'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import { ApiError } from '../../errors.js'
import { CreateBody, UpdateBody } from '../../http/schemas.js'
import type { Session } from '../../people/sessions.js'
import type { TokenFields } from '../../tokens/service.js'
import { confirmPath, recentlyProven, tokenMakingScope } from '../session.js'
import type { FieldError, FormError } from '../views/forms.js'
import type { TokenFormValues } from '../views/token-form.js'
import { FormRefusal, linesOf, quoted } from './token-refusals.js'

/** What a token form sent, kept as typed so that a refused form shows it again. */
export const readTokenForm = (f: URLSearchParams): TokenFormValues => ({
  note: f.get('note') ?? '',
  scopes: new Set(f.getAll('scopes')),
  allowedUrls: f.get('allowedUrls') ?? '',
  allowedIps: f.get('allowedIps') ?? '',
  expiresAt: f.get('expiresAt') ?? '',
  ...(f.has('expiresAtShown') ? { expiresAtShown: f.get('expiresAtShown') ?? '' } : {}),
})

/**
 * The `Expires at` field (a datetime-local, read as UTC) as the API's ISO text: seconds and a Z
 * added to what the browser sends; anything else as typed, for the token service to refuse.
 */
export function expiresAtOf(text: string): string | undefined {
  const value = text.trim()
  if (value === '') return undefined
  if (/^\d{4}-\d\d-\d\dT\d\d:\d\d$/.test(value)) return `${value}:00Z`
  if (/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?$/.test(value)) return `${value}Z`
  return value
}

/** An instant as the `Expires at` field shows it: UTC, to the minute. */
export const expiresAtField = (iso: string | undefined) =>
  iso === undefined ? '' : iso.slice(0, 16)

const bodies = {
  create: TypeCompiler.Compile(CreateBody),
  update: TypeCompiler.Compile(UpdateBody),
}

/**
 * What a new token needs that the API leaves optional: a note, so that the list names it, and a
 * scope, so that it can do something (the form starts with neither).
 */
export function missingOnCreate(values: TokenFormValues): FieldError[] {
  const missing: FieldError[] = []
  if (values.note.trim() === '') {
    missing.push({
      id: 'note',
      text: 'Enter a note: what the token is for, so that you recognise it later.',
    })
  }
  if (values.scopes.size === 0) missing.push({ id: 'scopes', text: 'Choose at least one scope.' })
  return missing
}

/**
 * The form as the API's body would be, checked by the API's own schema (the note's length and
 * the shape of every field) before the token service applies the rest of the rules; on create,
 * a note and a scope first (`missingOnCreate`). Refused with a FormRefusal.
 */
export function tokenFields(values: TokenFormValues, kind: keyof typeof bodies): TokenFields {
  const missing = kind === 'create' ? missingOnCreate(values) : []
  const urls = linesOf(values.allowedUrls)
  const ips = linesOf(values.allowedIps)
  // The token page sends the end it showed: unchanged, it is left as stored (to the millisecond,
  // and an end already past is not refused as one in the past).
  const unchanged =
    values.expiresAtShown !== undefined && values.expiresAt.trim() === values.expiresAtShown
  // Empty: none on a new token, removed from one that had it.
  const typed = expiresAtOf(values.expiresAt) ?? (kind === 'create' ? undefined : null)
  const expiresAt = unchanged ? undefined : typed
  const fields: TokenFields = {
    note: values.note,
    scopes: [...values.scopes],
    allowedUrls: urls.length > 0 ? urls : null,
    allowedIps: ips.length > 0 ? ips : null,
    ...(expiresAt === undefined ? {} : { expiresAt }),
  }
  const body =
    kind === 'create'
      ? {
          ...fields,
          allowedUrls: fields.allowedUrls ?? undefined,
          allowedIps: fields.allowedIps ?? undefined,
        }
      : fields
  const check = bodies[kind]
  if (!check.Check(body)) {
    const first = check.Errors(body).First()
    const path = first?.path ?? ''
    const at = describe(path, first?.schema, fields)
    if (at === undefined) {
      throw new ApiError(
        'invalidResources',
        `the ${path.split('/')[1] ?? 'form'} field is not valid`,
      )
    }
    // Told together with a missing note or scope, in the order of the form.
    const order = ['note', 'scopes', 'allowed-urls', 'allowed-ips', 'expires-at']
    const all = [...missing.filter((m) => m.id !== at.id), at]
    throw new FormRefusal(all.sort((a, b) => order.indexOf(a.id) - order.indexOf(b.id)))
  }
  if (missing.length > 0) throw new FormRefusal(missing, false)
  return fields
}

/** The first problem the schema found, at its field, in the form's words. */
function describe(
  path: string,
  schema: TSchema | undefined,
  fields: TokenFields,
): FieldError | undefined {
  const [, field = 'form', index] = path.split('/')
  const max = (schema as { maxLength?: number; maxItems?: number } | undefined) ?? {}
  const line = (list: readonly string[] | null | undefined) => quoted(list?.[Number(index)] ?? '')
  if (field === 'note' && max.maxLength !== undefined) {
    return { id: 'note', text: `The note may be at most ${max.maxLength} characters.` }
  }
  if (field === 'allowedUrls' && max.maxItems !== undefined) {
    return { id: 'allowed-urls', text: `Give at most ${max.maxItems} allowed URLs.` }
  }
  if (field === 'allowedUrls' && max.maxLength !== undefined) {
    const text = `${line(fields.allowedUrls)} is longer than ${max.maxLength} characters.`
    return { id: 'allowed-urls', text }
  }
  if (field === 'allowedIps' && max.maxItems !== undefined) {
    return { id: 'allowed-ips', text: `Give at most ${max.maxItems} IP addresses or ranges.` }
  }
  if (field === 'allowedIps') {
    return {
      id: 'allowed-ips',
      text: `${line(fields.allowedIps)} is not an IP address or CIDR block.`,
    }
  }
  if (field === 'expiresAt') {
    return { id: 'expires-at', text: 'Expires at must be a date and time (UTC).' }
  }
  return undefined
}

/**
 * A token that can make tokens keeps the account as an owner's invitation would: given only
 * within 10 minutes of a proof. The refusal links to "Confirm it's you", which comes back to
 * `next` (the form, filled in as it was where it fits in a link).
 */
export function tokenMakingRefusal(
  session: Session,
  now: number,
  makesTokens: boolean,
  next: string,
): FormError | undefined {
  if (!makesTokens || recentlyProven(session, now)) return undefined
  return {
    message: `Confirm it's you first: a token with ${tokenMakingScope} can make other tokens.`,
    details: 'it is given only within 10 minutes of a sign-in or a confirmation',
    link: { href: confirmPath(next), text: "Confirm it's you" },
  }
}

export const makesTokens = (scopes: Iterable<string>) => [...scopes].includes(tokenMakingScope)

/**
 * `path` with `fields` in its query, as a page reads them back (see `askedForm`); the longest
 * that fits in a `next` link (1,024 characters), else the bare path.
 */
export function filledIn(path: string, ...tries: [string, string][][]): string {
  for (const fields of tries) {
    const query = new URLSearchParams(fields.filter(([, value]) => value !== '')).toString()
    const url = query === '' ? path : `${path}?${query}`
    if (url.length <= 1024) return url
  }
  return path
}

/** The new-token form as `next` after a proof: every field, or the note and scopes. */
export function newTokenPath(v: TokenFormValues): string {
  const scopes = [...v.scopes].map((scope): [string, string] => ['scopes', scope])
  const note: [string, string] = ['note', v.note]
  return filledIn(
    '/account/tokens/new',
    [
      note,
      ...scopes,
      ['allowedUrls', v.allowedUrls],
      ['allowedIps', v.allowedIps],
      ['expiresAt', v.expiresAt],
    ],
    [note, ...scopes],
  )
}

/** A page's query as form fields: a form filled in by `filledIn`. */
export const askedForm = (url: string) =>
  new URLSearchParams(url.includes('?') ? url.slice(url.indexOf('?') + 1) : '')
