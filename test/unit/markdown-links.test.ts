import { execFileSync } from 'node:child_process'
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'

/**
 * Every relative link and image of every Markdown file of the repository points at a file that
 * exists, and every `#fragment` into a Markdown file names one of its headings (GitHub's slugs)
 * or an explicit `<a id>` / `<a name>` anchor. External links (any URL scheme) are not checked.
 */

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
const skippedDirs = new Set(['node_modules', 'dist', 'test-output', '.git'])

const skipped = (relative: string) => relative.split('/').some((part) => skippedDirs.has(part))

/** The repository's Markdown files, tracked or untracked (not ignored), relative to `root`. */
function markdownFiles(root: string): string[] {
  let listed: string[]
  try {
    const out = execFileSync(
      'git',
      ['ls-files', '-z', '--cached', '--others', '--exclude-standard', '--', '*.md'],
      { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] },
    )
    listed = out.split('\0').filter(Boolean)
  } catch {
    listed = walk(root, '')
  }
  // A tracked file deleted in the working tree is listed by git but is not there to check.
  return [...new Set(listed)]
    .filter((file) => !skipped(file) && existsSync(path.join(root, file)))
    .sort()
}

function walk(root: string, dir: string): string[] {
  const found: string[] = []
  for (const entry of readdirSync(path.join(root, dir), { withFileTypes: true })) {
    const relative = dir ? `${dir}/${entry.name}` : entry.name
    if (skippedDirs.has(entry.name)) continue
    if (entry.isDirectory()) found.push(...walk(root, relative))
    else if (entry.name.endsWith('.md')) found.push(relative)
  }
  return found
}

const blank = (s: string) => s.replace(/[^\n]/g, ' ')

/** The text with fenced code blocks and HTML comments blanked, offsets and lines kept. */
function blankBlocks(text: string): string {
  const lines = text.split('\n')
  let fence: { char: string; length: number } | undefined
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string
    const marker = /^ {0,3}(`{3,}|~{3,})/.exec(line)
    if (fence) {
      const closing = /^ {0,3}(`{3,}|~{3,})\s*$/.exec(line)
      if (closing?.[1]?.[0] === fence.char && (closing[1]?.length ?? 0) >= fence.length) {
        fence = undefined
      }
      lines[i] = blank(line)
    } else if (marker?.[1]) {
      fence = { char: marker[1][0] as string, length: marker[1].length }
      lines[i] = blank(line)
    }
  }
  return lines.join('\n').replace(/<!--[\s\S]*?-->/g, blank)
}

/** The text with code blocks, code spans and HTML comments blanked, offsets and lines kept. */
function blankCode(text: string): string {
  return blankBlocks(text).replace(/(?<!`)(`+)(?!`)[\s\S]*?(?<!`)\1(?!`)/g, blank)
}

/**
 * GitHub's heading anchor (github-slugger): lowercase, every character but letters, marks,
 * digits, `_`, `-` and spaces dropped, each space a `-`.
 */
function slug(heading: string): string {
  return heading
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-')
}

/** The text a heading renders to: inline Markdown and HTML removed. */
function headingText(raw: string): string {
  return raw
    .replace(/!\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/\[([^\]]*)\]\[[^\]]*\]/g, '$1')
    .replace(/<[^>]+>/g, '')
    .replace(/`/g, '')
    .replace(/(^|[^\p{L}\p{N}])_{1,2}(\S(?:.*?\S)?)_{1,2}(?=[^\p{L}\p{N}]|$)/gu, '$1$2')
    .trim()
}

/** Every anchor a Markdown file offers: heading slugs (duplicates numbered) and HTML ids. */
function anchors(text: string): Set<string> {
  const found = new Set<string>()
  const counts = new Map<string, number>()
  const add = (heading: string) => {
    const base = slug(headingText(heading))
    let name = base
    let n = counts.get(base) ?? 0
    while (found.has(name) && n < 1000) name = `${base}-${++n}`
    counts.set(base, n)
    found.add(name)
  }
  const lines = blankBlocks(text).split('\n')
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string
    const atx = /^ {0,3}#{1,6}(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/.exec(line)
    if (atx) {
      add(atx[1] ?? '')
      continue
    }
    const previous = lines[i - 1]
    if (
      /^ {0,3}(=+|-+)[ \t]*$/.test(line) &&
      previous !== undefined &&
      previous.trim() !== '' &&
      !/^ {0,3}([#>|*+-]|\d+[.)])/.test(previous)
    ) {
      add(previous)
    }
  }
  for (const match of blankCode(text).matchAll(
    /<[a-z][a-z0-9]*\s[^>]*?\b(?:id|name)\s*=\s*["']([^"']+)["']/gi,
  )) {
    found.add(match[1] as string)
  }
  return found
}

interface Link {
  line: number
  target: string
}

/** The destination of a link starting at `at` (just after `](`); undefined if there is none. */
function destination(text: string, at: number): string | undefined {
  let i = at
  while (text[i] === ' ' || text[i] === '\n') i++
  if (text[i] === '<') {
    const end = text.indexOf('>', i)
    return end < 0 ? undefined : text.slice(i + 1, end)
  }
  let depth = 0
  const start = i
  for (; i < text.length; i++) {
    const c = text[i]
    if (c === '\\') i++
    else if (c === '(') depth++
    else if (c === ')') {
      if (depth === 0) break
      depth--
    } else if (c === ' ' || c === '\n' || c === '\t') break
  }
  return text.slice(start, i)
}

/** Every link and image destination of a Markdown text, with its line. */
function links(text: string): Link[] {
  const code = blankCode(text)
  const lineOf = (offset: number) => code.slice(0, offset).split('\n').length
  const found: Link[] = []
  for (const match of code.matchAll(/\]\(/g)) {
    const target = destination(code, match.index + 2)
    if (target !== undefined) found.push({ line: lineOf(match.index), target })
  }
  for (const match of code.matchAll(/^ {0,3}\[[^\]\n]+\]:[ \t]*<?([^\s>]+)>?/gm)) {
    found.push({ line: lineOf(match.index), target: match[1] as string })
  }
  for (const match of code.matchAll(
    /<[a-z][a-z0-9]*\s[^>]*?\b(?:href|src)\s*=\s*["']([^"']*)["']/gi,
  )) {
    found.push({ line: lineOf(match.index), target: match[1] as string })
  }
  return found
}

/** What is wrong with the links of one Markdown file of the tree at `root`, one line each. */
function problems(root: string, file: string): string[] {
  const text = readFileSync(path.join(root, file), 'utf8')
  const found: string[] = []
  const anchorCache = new Map<string, Set<string>>()
  const anchorsOf = (target: string) => {
    let set = anchorCache.get(target)
    if (!set) {
      set = anchors(readFileSync(path.join(root, target), 'utf8'))
      anchorCache.set(target, set)
    }
    return set
  }
  for (const { line, target } of links(text)) {
    const where = `${file}:${line}: link "${target}"`
    if (target === '' || /^[a-z][a-z0-9+.-]*:/i.test(target)) continue // external (or empty)
    const hash = target.indexOf('#')
    const pathPart = (hash < 0 ? target : target.slice(0, hash)).replace(/\?.*$/, '')
    const fragment = hash < 0 ? undefined : target.slice(hash + 1)
    let decoded: string
    try {
      decoded = decodeURIComponent(pathPart)
    } catch {
      found.push(`${where}: the path is not valid percent-encoding`)
      continue
    }
    const resolved = decoded
      ? decoded.startsWith('/')
        ? path.normalize(decoded.slice(1))
        : path.normalize(path.join(path.dirname(file), decoded))
      : file
    if (resolved.startsWith('..') || path.isAbsolute(resolved)) {
      found.push(`${where}: points outside the repository`)
      continue
    }
    if (!existsSync(path.join(root, resolved))) {
      found.push(`${where}: ${resolved} does not exist`)
      continue
    }
    if (fragment === undefined || fragment === '' || !resolved.endsWith('.md')) continue
    let name: string
    try {
      name = decodeURIComponent(fragment)
    } catch {
      name = fragment
    }
    const offered = anchorsOf(resolved)
    if (!offered.has(name)) {
      const near = [...offered].filter((a) => a.includes(name) || name.includes(a)).slice(0, 3)
      found.push(
        `${where}: ${resolved} has no heading or anchor "#${name}"` +
          (near.length ? ` (did you mean ${near.map((a) => `#${a}`).join(', ')}?)` : ''),
      )
    }
  }
  return found
}

describe('GitHub heading slugs', () => {
  it('lowercases, drops punctuation but - and _, and turns each space into -', () => {
    expect(slug('Node.js versions')).toBe('nodejs-versions')
    expect(slug('Integrations: the APIs behind Tessera')).toBe(
      'integrations-the-apis-behind-tessera',
    )
    expect(slug('In process: @tessera/verifier')).toBe('in-process-tesseraverifier')
    expect(slug('snake_case and kebab-case')).toBe('snake_case-and-kebab-case')
    expect(slug('Under a supervisor, and shutting down')).toBe(
      'under-a-supervisor-and-shutting-down',
    )
    expect(slug('A  B')).toBe('a--b')
    expect(slug('Déjà vu')).toBe('déjà-vu')
  })

  it('numbers duplicate headings and reads inline code, links and explicit anchors', () => {
    const text = [
      '# Setup',
      '## Setup',
      '## Setup',
      '## The `serve` command',
      '## [Linked](other.md) heading',
      'Setext heading',
      '--------------',
      '<a id="custom"></a>',
      '<a name="legacy"></a>',
      '```sh',
      '# not a heading',
      '```',
    ].join('\n')
    expect([...anchors(text)].sort()).toEqual(
      [
        'setup',
        'setup-1',
        'setup-2',
        'the-serve-command',
        'linked-heading',
        'setext-heading',
        'custom',
        'legacy',
      ].sort(),
    )
  })
})

describe('the link checker', () => {
  const root = mkdtempSync(path.join(tmpdir(), 'tessera-links-'))
  afterAll(() => rmSync(root, { recursive: true, force: true }))

  it('finds a missing file, a missing anchor and a link out of the repository, not code', () => {
    mkdirSync(path.join(root, 'docs'))
    writeFileSync(path.join(root, 'docs/page.md'), '# Page\n\n## A section\n')
    writeFileSync(
      path.join(root, 'README.md'),
      [
        '# Readme',
        '[good](docs/page.md#a-section) [self](#readme) ![image](docs/page.md)',
        '[gone](docs/missing.md) and [bad anchor](docs/page.md#section)',
        '[outside](../elsewhere.md) [web](https://example.com/x.md) [mail](mailto:a@b.c)',
        '`[code](nowhere.md)`',
        '```',
        '[fenced](nowhere.md)',
        '```',
        '[ref]: docs/nothing.md',
      ].join('\n'),
    )
    expect(problems(root, 'README.md')).toEqual([
      'README.md:3: link "docs/missing.md": docs/missing.md does not exist',
      'README.md:3: link "docs/page.md#section": docs/page.md has no heading or anchor "#section" (did you mean #a-section?)',
      'README.md:4: link "../elsewhere.md": points outside the repository',
      'README.md:9: link "docs/nothing.md": docs/nothing.md does not exist',
    ])
  })
})

describe('Markdown links of the repository', () => {
  const files = markdownFiles(repoRoot)

  it('finds the Markdown files', () => {
    expect(files).toContain('README.md')
  })

  it.each(files)('%s: every relative link and anchor resolves', (file) => {
    const found = problems(repoRoot, file)
    expect(found, `broken links in ${file}:\n${found.join('\n')}`).toEqual([])
  })
})
