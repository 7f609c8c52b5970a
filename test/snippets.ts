import { readFileSync } from 'node:fs'
import path from 'node:path'

const root = path.resolve(import.meta.dirname, '..')

export interface Snippet {
  page: string
  line: number
  mark: string | undefined
  code: string
}

/** The `js` blocks of a page (a path from the checkout), each with the marker on the line before it. */
export function snippets(page: string): Snippet[] {
  const lines = readFileSync(path.join(root, page), 'utf8').split('\n')
  const found: Snippet[] = []
  for (let i = 0; i < lines.length; i++) {
    if (lines[i] !== '```js') continue
    const end = lines.indexOf('```', i + 1)
    const mark = /^<!-- snippet: (.+) -->$/.exec(lines[i - 1] ?? '')?.[1]
    found.push({ page, line: i + 1, mark, code: lines.slice(i + 1, end).join('\n') })
    i = end
  }
  return found
}
