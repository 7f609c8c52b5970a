import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'

// The shape of the house, as docs/development.md "Layout" describes it, held against the code:
// the import graph of src/ (type-only imports count), file sizes and function lengths.

const root = path.resolve(import.meta.dirname, '../..')
const src = path.join(root, 'src')

function walk(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name)
    return entry.isDirectory() ? walk(full) : [full]
  })
}

const files = walk(src).filter((f) => /\.(ts|js)$/.test(f))
const sources = files.filter((f) => f.endsWith('.ts'))
const text = new Map(files.map((f) => [f, readFileSync(f, 'utf8')]))
const rel = (file: string) => path.relative(src, file)

// Static imports and re-exports (`import type` too) and dynamic `import('…')` of relative paths.
const importSpec =
  /(?:^|\n)\s*(?:import|export)\s[^'";]*?from\s+['"](\.[^'"]+)['"]|import\(\s*['"](\.[^'"]+)['"]/g

function importsOf(file: string): string[] {
  const found = new Set<string>()
  for (const m of (text.get(file) ?? '').matchAll(importSpec)) {
    const spec = (m[1] ?? m[2] ?? '').replace(/\.js$/, '.ts')
    found.add(path.resolve(path.dirname(file), spec))
  }
  return [...found].filter((target) => text.has(target))
}

const graph = new Map(sources.map((f) => [f, importsOf(f)]))

/** The strongly connected components of more than one file (Tarjan), or a file importing itself. */
function cycles(edges: Map<string, string[]>): string[][] {
  let counter = 0
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const onStack = new Set<string>()
  const found: string[][] = []
  const visit = (v: string) => {
    index.set(v, counter)
    low.set(v, counter++)
    stack.push(v)
    onStack.add(v)
    for (const w of edges.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w)
        low.set(v, Math.min(low.get(v) as number, low.get(w) as number))
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v) as number, index.get(w) as number))
    }
    if (low.get(v) !== index.get(v)) return
    const component: string[] = []
    let w: string
    do {
      w = stack.pop() as string
      onStack.delete(w)
      component.push(w)
    } while (w !== v)
    if (component.length > 1 || (edges.get(v) ?? []).includes(v)) found.push(component.sort())
  }
  for (const v of edges.keys()) if (!index.has(v)) visit(v)
  return found
}

/** A file's room: its first folder under src/, or the file itself for src/x.ts. */
const room = (file: string) => rel(file).split(path.sep)[0]?.replace(/\.ts$/, '') ?? ''

const imports = (from: string, to: string) =>
  sources
    .filter((f) => rel(f).startsWith(`${from}/`))
    .flatMap((f) => (graph.get(f) ?? []).filter((t) => rel(t).startsWith(`${to}/`)).map(rel))

/** Folder pairs docs/development.md allows to import each other: lines "`a` ⇄ `b`: why". */
function allowedPairs(): Set<string> {
  const doc = readFileSync(path.join(root, 'docs/development.md'), 'utf8')
  const pairs = [...doc.matchAll(/`([\w-]+)` ⇄ `([\w-]+)`/g)]
  return new Set(pairs.flatMap(([, a, b]) => [`${a} ⇄ ${b}`, `${b} ⇄ ${a}`]))
}

/** Functions, methods and arrow bodies longer than `max` lines, by matching braces. */
function longFunctions(file: string, max: number): string[] {
  const lines = (text.get(file) ?? '').split('\n')
  // Strings, regular expressions and comments could hold braces: blanked before counting.
  const bare = lines.map((l) =>
    l
      .replace(/'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"/g, '""')
      .replace(/\/(?![/*])(?:[^/\\\n[]|\\.|\[(?:[^\]\\]|\\.)*\])+\/[dgimsuy]*/g, '/r/')
      .replace(/\/\/.*$/, ''),
  )
  const opensBody =
    /(=>\s*\{|\bfunction\b.*\{|^\s*(?:(?:public|private|protected|static|async|get|set|override)\s+)*[#\w]+\s*(?:<[^>]*>)?\s*\([^)]*\)\s*(?::[^{]*)?\{|^\s*\)\s*(?::[^{]*)?\{)\s*$/
  const statement = /^\s*(?:\}\s*)?(?:if|for|while|switch|catch|else|try|do)\b/
  const long: string[] = []
  bare.forEach((line, start) => {
    if (!opensBody.test(line) || statement.test(line)) return
    let depth = 0
    for (let i = start; i < bare.length; i++) {
      for (const c of bare[i] as string) depth += c === '{' ? 1 : c === '}' ? -1 : 0
      if (depth > 0) continue
      if (i - start + 1 > max) long.push(`${rel(file)}:${start + 1} (${i - start + 1} lines)`)
      return
    }
  })
  return long
}

describe('the layout of src/', () => {
  it('has no import cycle between files', () => {
    expect(cycles(graph).map((c) => c.map(rel))).toEqual([])
  })

  it('has no two folders importing each other, but for those docs/development.md explains', () => {
    const rooms = new Map<string, Set<string>>()
    for (const [from, targets] of graph)
      for (const to of targets) {
        if (room(from) === room(to)) continue
        rooms.set(room(from), (rooms.get(room(from)) ?? new Set()).add(room(to)))
      }
    const allowed = allowedPairs()
    const pairs = [...rooms].flatMap(([a, targets]) =>
      [...targets].filter((b) => a < b && rooms.get(b)?.has(a)).map((b) => `${a} ⇄ ${b}`),
    )
    expect(pairs.filter((p) => !allowed.has(p))).toEqual([])
  })

  it('has no two folders importing each other at any depth (a folder and its own subfolder too)', () => {
    // A file of src/ itself is a room of its own, as above (config.ts, context.ts, ...).
    const folder = (file: string) =>
      path.dirname(rel(file)) === '.' ? rel(file) : path.dirname(rel(file))
    const edges = new Map<string, Set<string>>()
    for (const [from, targets] of graph)
      for (const to of targets) {
        if (folder(from) === folder(to)) continue
        edges.set(folder(from), (edges.get(folder(from)) ?? new Set()).add(folder(to)))
      }
    const pairs = [...edges].flatMap(([a, targets]) =>
      [...targets].filter((b) => a < b && edges.get(b)?.has(a)).map((b) => `${a} ⇄ ${b}`),
    )
    expect(pairs).toEqual([])
  })

  it('decides verifications in src/verification alone: limits, usage counts, credit spending', () => {
    // The rate limiter's hit and refund, the meter's count of a verification, spending credits:
    // called from src/verification/ only (src/ratelimit and src/usage define them).
    const calls =
      /\.(?:hit|refund)\(|\bcount(?:Validation|Limited)\(|\bcredits\.spend\(|\busage\.record\(/
    const home = (f: string) =>
      ['verification', 'ratelimit', 'usage'].some((dir) => rel(f).startsWith(`${dir}${path.sep}`))
    const outside = sources
      .filter((f) => !home(f))
      .flatMap((f) =>
        (text.get(f) ?? '')
          .split('\n')
          .flatMap((line, i) => (calls.test(line) ? [`${rel(f)}:${i + 1}`] : [])),
      )
    expect(outside).toEqual([])
    // Within src/usage, the count of a verification is defined, never called.
    const usageCalls = sources
      .filter((f) => rel(f).startsWith(`usage${path.sep}`))
      .filter((f) => /[^\n]\.count(?:Validation|Limited)\(/.test(text.get(f) ?? ''))
    expect(usageCalls.map(rel)).toEqual([])
  })

  it('keeps the lower floors free of the token domain, and the dashboard off the database', () => {
    for (const lower of ['audit', 'webhooks', 'db', 'metrics'])
      expect(imports(lower, 'tokens')).toEqual([])
    expect(imports('dashboard', 'db')).toEqual([])
  })

  it('gives identity its own room and leaves accounts small', () => {
    const lines = (dir: string) =>
      sources
        .filter((f) => rel(f).startsWith(`${dir}/`))
        .reduce((n, f) => n + (text.get(f) ?? '').split('\n').length - 1, 0)
    expect(lines('people')).toBeGreaterThan(1000)
    // Accounts: creation, plans, token policy and named rate limits; people live elsewhere.
    expect(lines('accounts')).toBeLessThan(475)
  })

  it('has no file over 300 lines', () => {
    const over = files
      .map((f) => [rel(f), (text.get(f) ?? '').split('\n').length - 1] as const)
      .filter(([, n]) => n > 300)
    expect(over).toEqual([])
  })

  it('has no function over 80 lines', () => {
    // Migrations are never edited once shipped.
    const code = sources.filter((f) => !rel(f).startsWith(`db${path.sep}migrations`))
    expect(code.flatMap((f) => longFunctions(f, 80))).toEqual([])
  })
})
