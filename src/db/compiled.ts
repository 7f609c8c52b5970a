import { type Compilable, CompiledQuery } from 'kysely'

/**
 * Kysely builds and compiles a query on every call, which on the hot paths costs about as much
 * as SQLite running it. A query whose SQL depends only on its shape (which optional clauses,
 * how many rows) is compiled once per shape and executor; later calls pass their parameters
 * to the same SQL. The first build checks that `parameters` are in Kysely's order, and a shape
 * for which they are not is simply always built.
 */
const texts = new WeakMap<object, Map<string, string | null>>()

interface HasExecutor {
  getExecutor(): { adapter: object; plugins: readonly unknown[] }
}

/**
 * What the SQL of a shape depends on: the dialect and the plugins. A transaction is a new object
 * each time but shares its database's adapter (one per Kysely instance): keyed by the adapter,
 * SQL compiled once serves the database and every one of its transactions. An executor with
 * plugins (none here) keeps a cache of its own.
 */
function cacheKey(executor: object): object {
  const e = executor as Partial<HasExecutor>
  if (typeof e.getExecutor !== 'function') return executor
  const { adapter, plugins } = e.getExecutor()
  return plugins.length === 0 ? adapter : executor
}

export function compiledOnce(
  executor: object,
  shape: string,
  parameters: readonly unknown[],
  build: () => Compilable,
): CompiledQuery {
  const key = cacheKey(executor)
  let byShape = texts.get(key)
  if (byShape === undefined) {
    byShape = new Map()
    texts.set(key, byShape)
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

/**
 * A list in runs whose lengths are powers of two up to `max`, longest first (300 → 256, 32, 8,
 * 4). A multi-row statement then takes one of log2(max) + 1 shapes, so the SQL texts of such
 * statements stay a small fixed set that the statement caches hold for good (on Node 24, a
 * prepared SQLite statement must never be collected: see `database.ts`), and none comes near
 * SQLite's limit of 32,766 parameters.
 */
export function powerOfTwoRuns<T>(list: readonly T[], max = 256): T[][] {
  const runs: T[][] = []
  let start = 0
  while (start < list.length) {
    const left = list.length - start
    const size = Math.min(max, 2 ** Math.floor(Math.log2(left)))
    runs.push(list.slice(start, start + size))
    start += size
  }
  return runs
}
