import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { packageRoot } from '../config.js'

/** The dashboard's stylesheet and script, read once; served as files (the CSP allows no inline code). */
const folder = path.join(packageRoot, 'src', 'dashboard', 'assets')
const types: Record<string, string> = {
  'app.css': 'text/css; charset=utf-8',
  'app.js': 'text/javascript; charset=utf-8',
}

export interface Asset {
  body: Buffer
  type: string
  /** Part of the URL, so a new version is never taken from a cache. */
  version: string
}

export const assets = new Map<string, Asset>(
  Object.entries(types).map(([name, type]) => {
    const body = readFileSync(path.join(folder, name))
    const version = createHash('sha256').update(body).digest('hex').slice(0, 12)
    return [name, { body, type, version }]
  }),
)

export const assetUrl = (name: string) => `/account/assets/${name}?v=${assets.get(name)?.version}`
