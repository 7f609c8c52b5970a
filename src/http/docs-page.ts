import { createHash } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import path from 'node:path'
import { promisify } from 'node:util'
import { gzip } from 'node:zlib'
import type { FastifyInstance, FastifyReply } from 'fastify'
import { packageRoot } from '../config.js'

/**
 * `GET /docs`: the OpenAPI document rendered by Swagger UI, from the installed swagger-ui-dist
 * package (no CDN). Plain routes: nothing is added to the API's hooks, and nothing is read
 * until the page is first asked for.
 */

const gzipped = promisify(gzip)

const js = 'text/javascript; charset=utf-8'
const css = 'text/css; charset=utf-8'
/** The only files served under /docs/assets: two of swagger-ui-dist, and our two. */
const sources = (): { name: string; file: string; type: string }[] => {
  const swaggerUi = path.dirname(
    createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'),
  )
  const ours = path.join(packageRoot, 'src', 'http', 'docs')
  return [
    { name: 'swagger-ui.css', file: path.join(swaggerUi, 'swagger-ui.css'), type: css },
    { name: 'swagger-ui-bundle.js', file: path.join(swaggerUi, 'swagger-ui-bundle.js'), type: js },
    { name: 'docs.css', file: path.join(ours, 'docs.css'), type: css },
    { name: 'docs.js', file: path.join(ours, 'docs.js'), type: js },
  ]
}

/**
 * As strict as the dashboard's, plus `connect-src 'self'` for Swagger UI's fetch of the
 * document and its "Try it out" requests. Swagger UI sets inline styles only through the
 * CSSOM (element.style), which style-src does not govern, so 'unsafe-inline' is not needed.
 * `img-src data:`: its stylesheet draws icons as data: URLs.
 */
export const docsCsp =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; object-src 'none'; frame-ancestors 'none'; form-action 'none'; base-uri 'none'"

const pageHeaders = {
  'content-security-policy': docsCsp,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
  'x-frame-options': 'DENY',
  // The page names its assets by content, so it is revalidated rather than kept.
  'cache-control': 'no-cache',
}

interface DocsAsset {
  body: Buffer
  gzip: Buffer
  type: string
}

interface Docs {
  page: string
  /** By versioned name (`swagger-ui-bundle.<hash>.js`), so each may be cached for good. */
  assets: Map<string, DocsAsset>
}

async function load(documentUrl: string): Promise<Docs> {
  const assets = new Map<string, DocsAsset>()
  const urls = new Map<string, string>()
  for (const { name, file, type } of sources()) {
    const body = await readFile(file)
    const hash = createHash('sha256').update(body).digest('hex').slice(0, 12)
    const ext = path.extname(name)
    const versioned = `${name.slice(0, -ext.length)}.${hash}${ext}`
    assets.set(versioned, { body, gzip: await gzipped(body), type })
    urls.set(name, `/docs/assets/${versioned}`)
  }
  const page = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Tessera token API reference</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${urls.get('swagger-ui.css')}">
<link rel="stylesheet" href="${urls.get('docs.css')}">
<script src="${urls.get('swagger-ui-bundle.js')}" defer></script>
<script src="${urls.get('docs.js')}" defer></script>
</head>
<body>
<main id="docs" data-url="${documentUrl}">
<noscript><p>This reference needs JavaScript. The OpenAPI document is at <a href="${documentUrl}">${documentUrl}</a>.</p></noscript>
</main>
</body>
</html>
`
  return { page, assets }
}

/** Whether the client takes gzip (and has not refused it with `q=0`). */
const takesGzip = (accept: string | undefined) =>
  accept !== undefined && /(?:^|,)\s*gzip\s*(?:,|$|;\s*q=(?!0(?:\.0*)?\s*(?:,|$)))/i.test(accept)

/** The page is for this origin only: the API's CORS headers are for token clients. */
const withoutCors = (reply: FastifyReply) =>
  reply.removeHeader('access-control-allow-origin').removeHeader('access-control-expose-headers')

export function docsPage(app: FastifyInstance, documentUrl = '/openapi.json') {
  let loading: Promise<Docs> | undefined
  const docs = () => {
    loading ??= load(documentUrl).catch((err) => {
      loading = undefined // a failed read is tried again by the next request
      throw err
    })
    return loading
  }

  // `/docs/` is the same page (the router ignores a trailing slash); its asset URLs are absolute.
  app.get('/docs', async (_request, reply) => {
    const { page } = await docs()
    return withoutCors(reply).headers(pageHeaders).type('text/html; charset=utf-8').send(page)
  })

  // Only names in the allow-list: a path such as `..%2fpackage.json` is no name of it.
  app.get('/docs/assets/:name', async (request, reply) => {
    const asset = (await docs()).assets.get((request.params as { name: string }).name)
    if (asset === undefined) return reply.callNotFound()
    withoutCors(reply)
      .header('x-content-type-options', 'nosniff')
      .header('cache-control', 'public, max-age=31536000, immutable')
      .header('vary', 'accept-encoding')
      .type(asset.type)
    if (!takesGzip(request.headers['accept-encoding'])) return reply.send(asset.body)
    return reply.header('content-encoding', 'gzip').send(asset.gzip)
  })
}
