import type { TObject, TSchema } from '@sinclair/typebox'
import { TypeCompiler } from '@sinclair/typebox/compiler'
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
    if (httpPart !== 'querystring') return { error: new ApiError('invalidResources') }
    const first = check.Errors(value).First()
    const field = first?.path.split('/')[1] ?? ''
    const fieldSchema = (schema as TObject).properties[field] as
      | { errorMessage?: string }
      | undefined
    const kind = kindByMessage.get(fieldSchema?.errorMessage ?? '') ?? 'invalidResources'
    return { error: new ApiError(kind) }
  }
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
