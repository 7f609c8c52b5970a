import type { TObject, TSchema } from '@sinclair/typebox'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import type { FastifySchemaCompiler } from 'fastify'
import { ApiError, type ErrorKind, errorTable } from '../errors.js'

const kindByMessage = new Map<string, ErrorKind>(
  Object.entries(errorTable).map(([kind, [, message]]) => [message, kind as ErrorKind]),
)

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
