import type { TObject, TSchema } from '@sinclair/typebox'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import { Errors, type ValueError, ValueErrorType } from '@sinclair/typebox/errors'
import type { FastifySchemaCompiler } from 'fastify'
import { ApiError, type ErrorKind, errorTable } from '../errors.js'
import { jsonDepthExceeds, limits } from './limits.js'

/** A message to its kind: the contract's own row, never a refusal that borrows its message. */
const kindByMessage = new Map<string, ErrorKind>()
for (const [kind, [, message]] of Object.entries(errorTable)) {
  if (!kindByMessage.has(message)) kindByMessage.set(message, kind as ErrorKind)
}

/**
 * Validates with TypeBox's compiled checker: no coercion, so a number is never taken for a
 * string. A failure becomes the contract error named by the failing field's `errorMessage`
 * (query) or `resources are invalid` (body).
 */
export const validatorCompiler: FastifySchemaCompiler<TSchema> = ({ schema, httpPart }) => {
  const check = TypeCompiler.Compile(schema)
  return (value: unknown) => {
    if (check.Check(value)) return { value }
    const first = check.Errors(value).First()
    if (httpPart !== 'querystring') {
      return { error: new ApiError('invalidResources', first && bodyDetails(first)) }
    }
    const field = first?.path.split('/')[1] ?? ''
    const fieldSchema = (schema as TObject).properties[field] as
      | { errorMessage?: string }
      | undefined
    const kind = kindByMessage.get(fieldSchema?.errorMessage ?? '') ?? 'invalidResources'
    return { error: new ApiError(kind) }
  }
}

/** " of 1 to 64 characters", " of at most 100", "": a schema's bounds, in words. */
function bounds(min: number | undefined, max: number | undefined, unit = '') {
  if (min !== undefined && max !== undefined) return ` of ${min} to ${max}${unit}`
  if (min !== undefined) return ` of at least ${min}${unit}`
  return max === undefined ? '' : ` of at most ${max}${unit}`
}

/** What a schema admits, in words: "an array of strings of at most 2048 characters". */
function admits(schema: TSchema, many = false): string {
  if (Array.isArray(schema.anyOf)) {
    return schema.anyOf.map((s: TSchema) => admits(s, many)).join(' or ')
  }
  if (schema.const !== undefined) return JSON.stringify(schema.const)
  const { type } = schema
  if (type === 'array') {
    const items = admits(schema.items, true)
    const size = bounds(schema.minItems, schema.maxItems, ` ${items}`)
    return `${many ? 'arrays' : 'an array'}${size || ` of ${items}`}`
  }
  if (type === 'string') {
    const size = bounds(schema.minLength, schema.maxLength, ' characters')
    return `${many ? 'strings' : 'a string'}${size}`
  }
  if (type === 'integer' || type === 'number') {
    const min: number | undefined = schema.minimum
    // Number.MAX_SAFE_INTEGER says "any size", not a bound a reader needs told.
    const max = schema.maximum === Number.MAX_SAFE_INTEGER ? undefined : schema.maximum
    const range =
      min !== undefined && max !== undefined ? ` from ${min} to ${max}` : bounds(min, max)
    return `${many ? `${type}s` : type === 'integer' ? 'an integer' : 'a number'}${range}`
  }
  if (type === 'boolean') return 'true or false'
  if (type === 'null') return 'null'
  return many ? 'objects' : 'an object'
}

/**
 * The error inside a union of a type and null (an update's `null` removes a field), for a value
 * of that type: what is wrong inside it, not only that it is neither.
 */
function deepest(error: ValueError): ValueError {
  if (error.type !== ValueErrorType.Union || error.value === null) return error
  const typed = (error.schema.anyOf as TSchema[]).filter((s) => s.type !== 'null')
  const inner = typed.length === 1 ? Errors(typed[0] as TSchema, error.value).First() : undefined
  // Not of that type at all: "an array or null" says it.
  if (inner === undefined || inner.path === '') return error
  return deepest({ ...inner, path: error.path + inner.path })
}

/**
 * A schema's refusal of a body, as `details`: the field by its path (`ratelimits[0].limit`)
 * and what it must be, e.g. "scopes must be an array of strings".
 */
export function bodyDetails(refusal: ValueError): string {
  const error = deepest(refusal)
  const field = error.path
    .split('/')
    .slice(1)
    .map((part, i) => (/^\d+$/.test(part) ? `[${part}]` : i === 0 ? part : `.${part}`))
    .join('')
  if (field === '') return 'the body must be a JSON object'
  if (error.type === ValueErrorType.ObjectRequiredProperty) return `${field} is required`
  if (error.type === ValueErrorType.ObjectAdditionalProperties)
    return `${field} is not a field here`
  const pattern =
    error.type === ValueErrorType.StringPattern ? ` matching ${error.schema.pattern}` : ''
  return `${field} must be ${admits(error.schema)}${pattern}`
}

/**
 * A request body as the API reads it, whatever its declared type: JSON within the depth limit
 * (the contract's 422 otherwise); an empty body is no body. Fastify's body parser (app.ts) and
 * the create fast path (http/ahead/create.ts).
 */
export function parseBody(text: string): unknown {
  if (text === '') return undefined
  if (jsonDepthExceeds(text, limits.jsonDepth)) {
    throw new ApiError('invalidResources', 'the body is nested too deeply')
  }
  try {
    return JSON.parse(text)
  } catch {
    throw new ApiError('invalidResources', 'the body is not valid JSON')
  }
}
