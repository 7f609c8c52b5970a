import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import { packageRoot } from '../../config.js'

/** The dashboard's stylesheet and script, read once; served as files (the CSP allows no inline code). */
const folder = path.join(packageRoot, 'src', 'dashboard', 'assets')
const require = createRequire(import.meta.url)
const script = 'text/javascript; charset=utf-8'
/** Name, type, file: ours, and @simplewebauthn/browser's bundle as its package ships it. */
const files: [string, string, string][] = [
  ['app.css', 'text/css; charset=utf-8', path.join(folder, 'app.css')],
  ['app.js', script, path.join(folder, 'app.js')],
  ['passkeys.js', script, path.join(folder, 'passkeys.js')],
  [
    'webauthn.js',
    script,
    // The package exports no subpaths: from its main file up to its root.
    path.join(
      path.dirname(require.resolve('@simplewebauthn/browser')),
      '..',
      'dist',
      'bundle',
      'index.umd.min.js',
    ),
  ],
]

export interface Asset {
  body: Buffer
  type: string
  /** Part of the URL, so a new version is never taken from a cache. */
  version: string
}

export const assets = new Map<string, Asset>(
  files.map(([name, type, file]) => {
    const body = readFileSync(file)
    const version = createHash('sha256').update(body).digest('hex').slice(0, 12)
    return [name, { body, type, version }]
  }),
)

export const assetUrl = (name: string) => `/account/assets/${name}?v=${assets.get(name)?.version}`
