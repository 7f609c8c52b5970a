/**
 * A small reader of the Prometheus text format (0.0.4), strict enough to fail on anything a
 * scraper would refuse: every sample belongs to a family declared by `# TYPE`, every line parses.
 */
export interface Sample {
  name: string
  labels: Record<string, string>
  value: number
}

export interface Scrape {
  samples: Sample[]
  types: Map<string, string>
  /** The value of the sample with exactly these labels; 0 when there is none. */
  value(name: string, labels?: Record<string, string>): number
}

const sampleLine = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/
const labelPair = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(?:,|$)/y
const suffixes = ['_bucket', '_sum', '_count', '_total', '']

/** A Go float, as Prometheus reads it: NaN and Inf in any case (prom-client writes `Nan`). */
function number(text: string): number {
  const word = text.toLowerCase()
  if (word === 'nan') return Number.NaN
  if (word === '+inf' || word === 'inf') return Number.POSITIVE_INFINITY
  if (word === '-inf') return Number.NEGATIVE_INFINITY
  const n = Number(text)
  if (Number.isNaN(n)) throw new Error(`not a sample value: ${text}`)
  return n
}

function labelsOf(text: string, line: string): Record<string, string> {
  const labels: Record<string, string> = {}
  labelPair.lastIndex = 0
  while (labelPair.lastIndex < text.length) {
    const m = labelPair.exec(text)
    if (m === null) throw new Error(`labels do not parse: ${line}`)
    const [, key, raw] = m as unknown as [string, string, string]
    labels[key] = raw.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c))
  }
  return labels
}

export function parsePrometheus(text: string): Scrape {
  const samples: Sample[] = []
  const types = new Map<string, string>()
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('# HELP ')) continue
    if (line.startsWith('# TYPE ')) {
      const [name, type] = line.slice('# TYPE '.length).split(' ') as [string, string]
      types.set(name, type)
      continue
    }
    const m = sampleLine.exec(line)
    if (m === null) throw new Error(`not a sample: ${line}`)
    const [, name, labels, value] = m as unknown as [string, string, string | undefined, string]
    const family = suffixes
      .map((s) => (name.endsWith(s) ? name.slice(0, name.length - s.length) : undefined))
      .find((f) => f !== undefined && types.has(f))
    if (family === undefined) throw new Error(`a sample of no declared family: ${line}`)
    samples.push({ name, labels: labels ? labelsOf(labels, line) : {}, value: number(value) })
  }
  const same = (a: Record<string, string>, b: Record<string, string>) =>
    Object.keys(a).length === Object.keys(b).length &&
    Object.entries(b).every(([k, v]) => a[k] === v)
  return {
    samples,
    types,
    value: (name, labels = {}) =>
      samples.find((s) => s.name === name && same(s.labels, labels))?.value ?? 0,
  }
}
