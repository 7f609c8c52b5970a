import { type Compilable, CompiledQuery } from 'kysely'

/**
 * Kysely builds and compiles a query on every call, which on the hot paths costs about as much
 * as SQLite running it. A query whose SQL depends only on its shape (which optional clauses,
 * how many rows) is compiled once per shape and executor; later calls pass their parameters
 * to the same SQL. The first build checks that `parameters` are in Kysely's order, and a shape
 * for which they are not is simply always built.
 */
const texts = new WeakMap<object, Map<string, string | null>>()

export function compiledOnce(
  executor: object,
  shape: string,
  parameters: readonly unknown[],
  build: () => Compilable,
): CompiledQuery {
  let byShape = texts.get(executor)
  if (byShape === undefined) {
    byShape = new Map()
    texts.set(executor, byShape)
  }
  const text = byShape.get(shape)
  if (typeof text === 'string') return CompiledQuery.raw(text, parameters as unknown[])
  const compiled = build().compile()
  if (text === undefined && byShape.size < 256) {
    const same =
      compiled.parameters.length === parameters.length &&
      compiled.parameters.every((p, i) => p === parameters[i])
    byShape.set(shape, same ? compiled.sql : null)
  }
  return compiled
}
