import type { TSchema } from '@sinclair/typebox'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import { ApiError } from '../../errors.js'
import { CreateBody, UpdateBody } from '../../http/schemas.js'
import type { TokenFields } from '../../tokens/service.js'
import type { TokenFormValues } from '../views/tokens.js'

/** What a token form sent, kept as typed so that a refused form shows it again. */
export const readTokenForm = (f: URLSearchParams): TokenFormValues => ({
  note: f.get('note') ?? '',
  scopes: new Set(f.getAll('scopes')),
  allowedUrls: f.get('allowedUrls') ?? '',
  allowedIps: f.get('allowedIps') ?? '',
})

const bodies = {
  create: TypeCompiler.Compile(CreateBody),
  update: TypeCompiler.Compile(UpdateBody),
}

/**
 * The form as the API's body would be, checked by the API's own schema (the note's length and
 * the shape of every field) before the token service applies the rest of the rules.
 */
export function tokenFields(values: TokenFormValues, kind: keyof typeof bodies): TokenFields {
  const lines = (text: string) =>
    text
      .split(/\r?\n/)
      .map((line) => line.trim())
      .filter((line) => line !== '')
  const urls = lines(values.allowedUrls)
  const ips = lines(values.allowedIps)
  const fields = {
    note: values.note,
    scopes: [...values.scopes],
    allowedUrls: urls.length > 0 ? urls : null,
    allowedIps: ips.length > 0 ? ips : null,
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
    throw new ApiError('invalidResources', describe(first?.path ?? '', first?.schema))
  }
  return fields
}

const describe = (path: string, schema: TSchema | undefined) => {
  const field = path.split('/')[1] ?? 'form'
  const max = (schema as { maxLength?: number; maxItems?: number } | undefined) ?? {}
  if (field === 'note' && max.maxLength !== undefined) {
    return `the note may be at most ${max.maxLength} characters`
  }
  if (field === 'allowedUrls' && max.maxItems !== undefined) {
    return `a token may have at most ${max.maxItems} allowed URLs`
  }
  if (field === 'allowedIps' && max.maxItems !== undefined) {
    return `a token may have at most ${max.maxItems} IP ranges`
  }
  return `the ${field} field is not valid`
}
